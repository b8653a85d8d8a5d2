"""Reader for TensorFlow tensor bundles: ``prefix.index`` + ``prefix.data-NNNNN-of-NNNNN``.

The index is parsed once (it is small); data files are memory-mapped on first
use and never read until a tensor is asked for. Every offset, size and shape is
checked against the file before anything is allocated, and every read checks
the entry's CRC32C. See ``tensorflow/core/util/tensor_bundle/tensor_bundle.cc``.
"""
from __future__ import annotations

import _thread  # the lock primitive without importing threading (start-up)
import os
from itertools import chain

from formats.core import dtypes, shapes
from formats.core.dtypes import name_of as dtype_name
from formats.core.imported import imported_numpy

from formats.io import storage
from formats.io.crc import crc32c, crc32c_range, unmask
from formats.core.errors import (ChecksumError, CheckpointNotFoundError, CorruptCheckpointError,
                      UnsupportedError)
from formats.tf_bundle.datafile import IndexFile, RemoteFile, advise, is_map, open_data_file, open_index
from formats.io.sstable.scan import SCANNED_INDEX
from formats.io.sstable.table import Table
from formats.io.protowire import WireError, read_varint
from formats.tf_bundle.entry_wire import BundleHeader, RawEntry, parse_entry, parse_header
from formats.core.shapes import OBJECT_GRAPH_KEY, array_problem

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from typing import Any, Literal

    from formats.io.sstable.scan import ScannedBlock

    from formats.concepts.slice_key import Extent

    import numpy as np

__all__ = ["BundleReader", "RawEntry", "BundleHeader", "OBJECT_GRAPH_KEY", "data_file_name", "parse_header", "parse_entry"]

COMPACT_INDEX = 1 << 16
"""An index larger than this (bytes; about a thousand tensors) is held in arrays, a smaller one in lists."""

OPEN_DATA_FILES = 64
"""Data files of one bundle held open (mapped, and a descriptor for ``pread``) at once, beyond those being
read by a thread right now (never closed under it)."""

GRAPH_PIECE = 1 << 20
"""Bytes of a carried string (an object graph) read at a time into one buffer (:meth:`BundleReader.string_pieces`).
A new ``bytes`` a piece of 8 MiB each was left resident after the export: the C library serves blocks below the
largest it has freed (the decoded graph's bytes, 13 MB at 10^5 objects) from its heap and keeps them (+11 MiB)."""


def data_file_name(prefix: str, shard: int, num_shards: int) -> str:
    """``prefix.data-%05d-of-%05d``, as TensorFlow names data files."""
    return f"{prefix}.data-{shard:05d}-of-{num_shards:05d}"


def _index_blocks(data: bytes | IndexFile, path: str) -> Iterator[list[tuple[bytes, bytes]] | ScannedBlock]:
    """The index's entries a block at a time, checked as :func:`~formats.io.sstable.table.read_table` checks them
    (one block's held at once; values are ``bytes``, sliced from ``data``'s blocks): each block's pairs, or
    for a large index (at least :data:`~formats.io.sstable.scan.SCANNED_INDEX` bytes, or any once numpy is
    imported) each large block found with arrays (:meth:`~formats.io.sstable.table.Table.scanned`)."""
    table = Table(data, path, "index")
    if len(data) > COMPACT_INDEX and (len(data) >= SCANNED_INDEX or imported_numpy() is not None):  # (compact)
        import numpy as np

        for i in range(len(table.blocks)):
            yield table.scanned(i, np)  # type: ignore[misc]
    else:
        for i in range(len(table.blocks)):
            yield table.entries(i)  # type: ignore[misc]


def _first_entry(blocks: Iterator[list[tuple[bytes, bytes]] | ScannedBlock]) -> tuple[
        tuple[bytes, bytes] | None, Iterator[list[tuple[bytes, bytes]] | ScannedBlock]]:
    """The first entry of ``blocks`` (None when they hold none), and the blocks holding the entries after it."""
    for block in blocks:
        if len(block):
            if isinstance(block, list):
                return block[0], chain((block[1:],), blocks)
            return block.pair(0), chain((block.after_first(),), blocks)
    return None, blocks


class BundleReader:
    """Low-level access to one bundle: its header, raw entries and data files."""

    def __init__(self, prefix: str, like: Iterator[str] | None = None) -> None:
        """``like``: the keys' texts as expected, in order (see :class:`~formats.tf_bundle.columns.IndexColumns`)."""
        self.prefix = prefix
        self.index_path = prefix + ".index"
        from formats.tf_bundle.columns import IndexColumns

        data = open_index(self.index_path)  # (a large local one read a block at a time)
        try:
            first, blocks = _first_entry(_index_blocks(data, self.index_path))
            if first is None or first[0] != b"":
                raise CorruptCheckpointError(self.index_path, "corrupt index: no bundle header entry")
            self.header = parse_header(first[1], self.index_path)
            self.entries = IndexColumns((), self.index_path, self.header.num_shards,
                                        compact=len(data) > COMPACT_INDEX, like=like, blocks=blocks)
        finally:
            if isinstance(data, IndexFile):
                data.close()
        n = self.header.num_shards
        self.data_paths = [data_file_name(prefix, i, n) for i in range(n)]
        self._shard_files: dict[int, tuple[tuple[str, ...], tuple[str, ...]]] = {}  # see data_files
        self._maps: dict[int, Any] = {}
        self._fds: dict[int, int] = {}  # the mapped files, for pread
        self._reading: dict[int, int] = {}  # shard -> threads reading its descriptor now (never closed then)
        self._lock = _thread.allocate_lock()  # maps are opened on first use, maybe by several threads at once
        self.remote_sizes: dict[str, int | None] = {}  # a URL's data files, as found when opened
        self._missing: dict[int, str] | None = None
        self._kind_problems: dict[int, tuple[str | None, int | None]] = {}  # see row_problem
        if not storage.is_url(prefix):  # a URL's data files are looked up when first needed (see shard_missing)
            self._missing = self._missing_files()

    # -- structure -------------------------------------------------------------------------
    @property
    def missing(self) -> dict[int, str]:
        """Shard -> why its data file cannot be read, for every data file (behind a URL: all looked up at once,
        on first use)."""
        if self._missing is None:
            with self._lock:
                if self._missing is None:
                    self._missing = self._missing_files()
        return self._missing

    def shard_missing(self, shard: int) -> str | None:
        """Why data file ``shard`` cannot be read (it does not exist), or None. Behind a URL, when not every
        file has been looked up, this one is (its size kept for reading): a unit of work on a cluster worker
        asks about the files it reads, not about all of them."""
        if self._missing is not None:
            return self._missing.get(shard)
        path = self.data_paths[shard]
        if path not in self.remote_sizes:
            self.remote_sizes.update(storage.file_sizes([path]))
        return None if self.remote_sizes[path] is not None else self._missing_message(shard)

    def _missing_message(self, shard: int) -> str:
        return f"data file missing (shard {shard + 1} of {len(self.data_paths)} of {self.prefix})"

    def _missing_files(self) -> dict[int, str]:
        """Shard -> why its data file cannot be read (it does not exist). The index alone still lists
        every key; reading a value from a missing shard raises CheckpointNotFoundError."""
        if storage.is_url(self.prefix):  # one metadata request per data file not yet looked up, all at once
            self.remote_sizes.update(storage.file_sizes([p for p in self.data_paths if p not in self.remote_sizes]))
            gone = {path for path, size in self.remote_sizes.items() if size is None}
        else:
            gone = {path for path in self.data_paths if not os.path.isfile(path)}
        return {i: self._missing_message(i) for i, path in enumerate(self.data_paths) if path in gone}

    def visible_texts(self) -> list[str]:
        """Keys TensorFlow lists, as text (:attr:`~formats.tf_bundle.columns.IndexColumns.texts`): every entry
        except the slice keys of partitioned variables."""
        texts = self.entries.texts
        return list(texts) if not self.entries.slices else [texts[i] for i in self.visible_rows()]

    def visible_rows(self) -> range | list[int]:
        """The rows (:class:`~formats.tf_bundle.columns.IndexColumns`) of :meth:`visible_texts`, in index order."""
        columns = self.entries
        if not columns.slices:
            return range(len(columns))
        from formats.concepts.slice_key import encode_slice_key  # partitioned variables only

        hidden = {encode_slice_key(columns.keys[i], s) for i, slices in columns.slices.items() for s in slices}
        return [i for i, k in enumerate(columns.keys) if k not in hidden]

    def data_files(self, e: RawEntry) -> tuple[str, ...]:
        """The data files an entry's value is read from (for a partitioned variable, its slices'), in order."""
        if e.slices:
            from formats.concepts.slice_key import encode_slice_key

            parts = (self.entries.get(encode_slice_key(e.key, s)) for s in e.slices)
            shards = sorted({p.shard_id for p in parts if p is not None and p.size})
            return tuple(self.data_paths[i] for i in shards if 0 <= i < len(self.data_paths))
        return self._files_of_shard(e.shard_id if e.size else -1)[0]

    def files(self, e: RawEntry) -> tuple[str, ...]:
        """The index and the data files an entry's value is read from (:meth:`data_files`)."""
        if e.slices:
            return (self.index_path, *self.data_files(e))
        return self._files_of_shard(e.shard_id if e.size else -1)[1]

    def row_files(self, row: int) -> tuple[str, ...]:
        """:meth:`files` of the entry in ``row`` of :attr:`entries` (no entry made for a tensor stored whole)."""
        if row in self.entries.slices:
            return self.files(self.entries.row(row))
        _, _, shard, size = self.entries.kind_of(row)
        return self._files_of_shard(shard if size else -1)[1]

    def _files_of_shard(self, shard: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``(data files, index and data files)`` of a tensor stored whole in ``shard`` (-1: no bytes), each
        tuple made once per shard (a writer asks for every tensor's)."""
        found = self._shard_files.get(shard)
        if found is None:
            data = (self.data_paths[shard],) if 0 <= shard < len(self.data_paths) else ()
            found = self._shard_files[shard] = (data, (self.index_path, *data))
        return found

    def nbytes(self, e: RawEntry) -> int:
        """Stored bytes of an entry; for a partitioned variable, of all its slices."""
        if not e.slices:
            return e.size
        from formats.concepts.slice_key import encode_slice_key

        parts = (self.entries.get(encode_slice_key(e.key, s)) for s in e.slices)
        return sum(p.size for p in parts if p is not None)

    # -- data files ------------------------------------------------------------------------
    def _map(self, shard: int) -> Any:
        """The map of data file ``shard``, opened on first use. At most :data:`OPEN_DATA_FILES` stay open (a
        bundle may have thousands of shards, a process a thousand descriptors): the least recently used
        is closed for a new one (its map when the last view of it is gone)."""
        m = self._maps.get(shard)
        if m is not None:
            if len(self._maps) > 1:
                with self._lock:
                    if shard in self._maps:
                        self._maps[shard] = self._maps.pop(shard)  # the most recently used last
            return m
        problem = self.shard_missing(shard)
        if problem is not None:
            raise CheckpointNotFoundError(self.data_paths[shard], problem)
        with self._lock:
            m = self._maps.get(shard)
            if m is None:
                if len(self._maps) >= OPEN_DATA_FILES:
                    idle = [k for k in self._maps if not self._reading.get(k)]  # least recently used first
                    for k in idle[:len(self._maps) - OPEN_DATA_FILES + 1]:
                        self._forget(k)
                m, fd = open_data_file(self.data_paths[shard], self.remote_sizes.get(self.data_paths[shard]))
                if fd is not None:
                    self._fds[shard] = fd
                self._maps[shard] = m
        return m

    def _forget(self, shard: int) -> None:
        """Close data file ``shard`` (its map once no array views it: the last reference unmaps it)."""
        self._maps.pop(shard, None)
        fd = self._fds.pop(shard, None)
        if fd is not None:
            os.close(fd)

    def file_size(self, shard: int) -> int:
        """Current size of a data file in bytes."""
        return len(self._map(shard))

    def peek(self, shard: int, offset: int, size: int) -> bytes:
        """Up to ``size`` bytes of data file ``shard`` from ``offset`` (fewer at its end)."""
        m = self._map(shard)
        if isinstance(m, RemoteFile):
            return bytes(m.read(offset, min(offset + size, len(m))))
        return bytes(m[offset:offset + size])

    def region(self, e: RawEntry) -> memoryview:
        """The stored bytes of a non-partitioned entry, checked to lie inside its data file."""
        if e.size == 0:
            return memoryview(b"")
        m = self._map(e.shard_id)
        self._check_bounds(e, m)
        if isinstance(m, RemoteFile):
            return memoryview(m.read(e.offset, e.offset + e.size))
        return memoryview(m)[e.offset:e.offset + e.size]

    def _check_bounds(self, e: RawEntry, m: Any) -> None:
        if e.offset + e.size > len(m):
            raise CorruptCheckpointError(
                self.data_paths[e.shard_id], f"tensor {e.name!r} at bytes [{e.offset}, {e.offset + e.size}) "
                f"runs past the end of the file ({len(m)} bytes; truncated?)")

    def chunks(self, e: RawEntry, size: int = storage.CHUNK) -> Iterator[memoryview]:
        """The stored bytes of a non-partitioned entry in order, at most ``size`` bytes at a time
        (slices of the mmap locally; ranged reads, a few in flight, for remote files)."""
        if e.size == 0:
            return
        m = self._map(e.shard_id)
        self._check_bounds(e, m)
        if isinstance(m, RemoteFile):
            for data in storage.iter_ranges(m.path, e.offset, e.offset + e.size, size):
                yield memoryview(data)
            return
        view = memoryview(m)
        for start in range(e.offset, e.offset + e.size, size):
            stop = min(start + size, e.offset + e.size)
            yield view[start:stop]  # pages fault in as they are read (without the GIL, in crc32c or numpy)
            advise(m, start, stop, "MADV_DONTNEED")  # keep resident memory to about one chunk

    def close(self) -> None:
        """Unmap every data file."""
        for m in self._maps.values():
            if is_map(m):
                try:
                    m.close()
                except BufferError:  # an array still views it; the OS frees it with the last view
                    pass
        self._maps.clear()
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    # -- checks and reads ------------------------------------------------------------------
    def checksum_error(self, e: RawEntry, actual: int, what: str = "checksum mismatch") -> ChecksumError:
        """The error for an entry whose data gives CRC ``actual`` instead of the index's."""
        return ChecksumError(self.data_paths[e.shard_id],
                             f"tensor {e.name!r}: {what} (index says {unmask(e.crc32c):#010x}, "
                             f"data gives {actual:#010x})")

    def dtype_of(self, e: RawEntry) -> dtypes.DType:
        """The entry's dtype, or an UnsupportedError for an unknown DataType number or a reference dtype."""
        refused = reference_dtype_problem(e.dtype)
        if refused is not None:
            raise UnsupportedError(self.index_path, f"tensor {e.name!r}: {refused}")
        dt = dtypes.by_enum(e.dtype)
        if dt is None or dt.numpy_name is None:
            raise UnsupportedError(self.index_path, f"tensor {e.name!r} has dtype {dtype_name(e.dtype)}, "
                                   "which has no array counterpart")
        return dt

    def check(self, e: RawEntry) -> int:
        """Verify one non-partitioned entry without building an array; return the bytes checked."""
        dt = self.dtype_of(e)
        if dt.fixed_width:
            self.check_fixed_size(e, dt)
            actual = self._crc(e)
            if actual != unmask(e.crc32c):
                raise self.checksum_error(e, actual)
        elif _is_string(dt):
            self._read_strings(e, keep=False)  # checked where it lies: one string (a graph) is not copied
        else:
            self._read_variants(e)
        return e.size

    def stored_range(self, e: RawEntry) -> tuple[int, int, int, int] | None:
        """``(fd, offset, size, crc32c)`` of a non-partitioned, little-endian, fixed-width entry stored whole in a
        local data file; None otherwise (and for an entry whose sizes or bounds are wrong: reading it the usual
        way says why)."""
        return None if e.slices else self._range(e.dtype, e.shape, e.shard_id, e.offset, e.size, e.crc32c)

    def string_range(self, e: RawEntry) -> tuple[int, int, int] | None:
        """``(fd, offset, size)`` of a string entry stored whole in a local data file, checked now as
        :meth:`elements` checks it (lengths, their checksum, the CRC32C; read a buffer at a time, nothing kept);
        None for another entry. A corrupt entry raises as :meth:`elements` does."""
        dt = dtypes.by_enum(e.dtype)
        if e.slices or dt is None or not _is_string(dt) or not e.size:
            return None
        self.check_array(e)
        self._read_strings(e, keep=False)  # (maps the data file: its descriptor is then open)
        fd = self._fds.get(e.shard_id)
        return None if fd is None else (fd, e.offset, e.size)

    def row_range(self, row: int) -> tuple[int, int, int, int] | None:
        """:meth:`stored_range` of the entry in ``row`` of :attr:`entries` (read from the columns, no entry made)."""
        columns = self.entries
        if row in columns.slices:
            return None
        dtype, shape, shard, size = columns.kinds[columns.kind[row]]
        return self._range(dtype, shape, shard, columns.offset[row], size, columns.crc[row])

    def rows_ranges(self, rows: Iterable[int], most: int) -> list[tuple[int, int, int, int] | None]:
        """:meth:`row_range` of each of ``rows`` whose entry holds at most ``most`` bytes (None for a bigger one),
        found a data layout at a time (:meth:`row_locator`)."""
        return list(map(self.row_locator(most), rows))

    def rows_range_columns(self, np: Any, rows: Any, most: int) -> tuple[Any, Any, Any, Any] | None:
        """:meth:`rows_ranges` of ``rows`` (an int64 array) as four arrays - descriptors (int32), offsets and sizes
        (int64), CRC32Cs (uint32) - where every row has one and the index is held in arrays (a large one); else
        None. Each data layout asked once (:meth:`_layout_range`), every row's offset and checksum taken with
        arrays: no tuple, nor a Python int, a tensor."""
        columns = self.entries
        if type(columns.offset) is list or columns.slices and not columns.slices.keys().isdisjoint(rows.tolist()):
            return None
        count = len(columns.offset)
        every = len(rows) == count and (not count or bool((rows[1:] > rows[:-1]).all()))  # (every row, in order)
        pick = slice(None) if every else rows  # (every row: the columns' own arrays, no copy of them)
        kinds = np.frombuffer(columns.kind, np.uint32)[pick]
        used, local = np.unique(kinds, return_inverse=True)
        del kinds
        found = [self._layout_range(dtype, shape, shard, size, most)
                 for dtype, shape, shard, size in map(columns.kinds.__getitem__, used.tolist())]
        if None in found:
            return None
        layouts = np.array(found, np.int64)  # (fd, size, bytes in the file) of each kind
        offsets = np.frombuffer(columns.offset, np.int64)[pick]
        if len(offsets) and bool((offsets > (layouts[:, 2] - layouts[:, 1])[local]).any()):
            return None
        fds, sizes = layouts[:, 0].astype(np.int32)[local], layouts[:, 1][local]
        del local
        from formats.io.crc_arrays import unmask_array

        return fds, offsets, sizes, unmask_array(np, np.frombuffer(columns.crc, np.uint32)[pick])

    def row_locator(self, most: int, take: Callable[[int], bool] | None = None
                    ) -> Callable[[int], tuple[int, int, int, int] | None]:
        """A function giving :meth:`row_range` of a row whose entry holds at most ``most`` bytes and whose layout
        ``take`` takes (given its index in ``entries.kinds``; all by default), else None. What a data layout
        (dtype, shape, file, size) decides is asked once per layout, not once per row (a unit of 4,096 tiny tensors
        of one layout: one check, then an offset and a CRC32C each)."""
        columns = self.entries
        kinds, offsets, crcs, slices, layouts_of = columns.kind, columns.offset, columns.crc, columns.slices, \
            columns.kinds
        layouts: dict[int, tuple[int, int, int] | None] = {}  # kind -> (fd, size, bytes in the file), or None

        def locate(row: int) -> tuple[int, int, int, int] | None:
            kind = kinds[row]
            where = layouts.get(kind, _UNKNOWN)
            if where is _UNKNOWN:
                where = layouts[kind] = None if take is not None and not take(kind) else \
                    self._layout_range(*layouts_of[kind], most)
            if where is None or slices and row in slices:
                return None
            fd, size, limit = where
            offset = offsets[row]
            return (fd, offset, size, unmask(crcs[row])) if offset + size <= limit else None

        return locate

    def _layout_range(self, dtype: int, shape: tuple[int, ...], shard: int, size: int,
                      most: int) -> tuple[int, int, int] | None:
        """``(fd, size, length of the file's map)`` of entries of this layout whose bytes :meth:`_range` would
        locate (checked there: one entry at offset 0 asks every question but the offset's), else None."""
        if not 0 < size <= most:
            return None
        found = self._range(dtype, shape, shard, 0, size, 0)
        if found is None:
            return None
        return found[0], size, len(self._maps[shard])

    def _range(self, dtype: int, shape: tuple[int, ...], shard: int, offset: int, size: int,
               crc: int) -> tuple[int, int, int, int] | None:
        if not size or self.header.big_endian or (self._missing != {}  # looked up, none missing
                                                  and self.shard_missing(shard) is not None):
            return None
        itemsize = _RANGE_ITEMSIZE.get(dtype, -1)
        if itemsize == -1:
            dt = dtypes.by_enum(dtype)
            itemsize = _RANGE_ITEMSIZE[dtype] = dt.itemsize if dt is not None and dt.numpy_name is not None \
                and dt.fixed_width and reference_dtype_problem(dtype) is None else None
        if itemsize is None or size != shapes.elements(shape) * itemsize:
            return None
        m = self._maps.get(shard) if len(self._maps) == 1 else None  # else _map keeps the most recently used last
        if m is None:
            m = self._map(shard)
        fd = self._fds.get(shard)
        if fd is None or offset + size > len(m):
            return None
        return fd, offset, size, unmask(crc)

    def _crc(self, e: RawEntry) -> int:
        """The CRC32C of a fixed-width entry's stored bytes: read with ``pread`` where :meth:`stored_range` says
        where they lie (no mapping, no GIL), else streamed in chunks (which report a missing or short file)."""
        with self._lock:
            self._reading[e.shard_id] = self._reading.get(e.shard_id, 0) + 1
        try:
            where = self.stored_range(e)
            if where is None:
                actual = 0
                for chunk in self.chunks(e):
                    actual = crc32c(chunk, actual)
                return actual
            fd, offset, size, _ = where
            crc = crc32c_range(fd, offset, size)
        finally:
            with self._lock:
                self._reading[e.shard_id] -= 1
        if crc is None:
            raise CorruptCheckpointError(self.data_paths[e.shard_id], f"tensor {e.name!r} at bytes "
                                         f"[{offset}, {offset + size}) runs past the end of the file "
                                         "(truncated while being read?)")
        return crc

    def check_array(self, e: RawEntry) -> dtypes.DType:
        """The entry's dtype, or UnsupportedError when numpy cannot hold its value (unknown dtype, more than
        64 dimensions, a shape too large for any array)."""
        dt = self.dtype_of(e)
        if dt.fixed_width and not e.slices:
            self.check_fixed_size(e, dt)  # stored bytes that do not match the shape are corruption first
        unfit = array_problem(e.shape, dt.itemsize)
        if unfit is not None:
            raise UnsupportedError(self.index_path, f"tensor {e.name!r} has {unfit}")
        return dt

    def row_problem(self, row: int) -> str | None:
        """Why the entry in ``row`` of :attr:`entries` cannot be what its metadata declares, found without reading
        it: a reference dtype (TensorFlow's reader refuses it), or, stored whole, a fixed-width dtype whose stored
        bytes are not what its shape needs (:meth:`check_fixed_size`'s message); else None. What a kind decides is
        worked out once a kind (a dictionary look-up a row), no entry made."""
        columns = self.entries
        kind = columns.kind[row]
        found = self._kind_problems.get(kind)
        if found is None:
            found = self._kind_problems[kind] = self._kind_problem(columns.kinds[kind])
        refused, needs = found
        if refused is not None or needs is None or row in columns.slices:
            return refused
        e = columns.row(row)  # (a rare entry: made to be named as check_fixed_size names it)
        return (f"tensor {e.name!r}: {e.size} bytes stored, but shape {list(e.shape)} of "
                f"{self.dtype_of(e).name} needs {needs}")

    @staticmethod
    def _kind_problem(kind: tuple[int, tuple[int, ...], int, int]) -> tuple[str | None, int | None]:
        """``(refusal, bytes needed)`` of a kind ``(dtype, shape, shard, size)``: :func:`reference_dtype_problem`,
        and the bytes its shape needs where a fixed-width dtype stored whole would need other than ``size``."""
        dtype, shape, _, size = kind
        refused = reference_dtype_problem(dtype)
        dt = dtypes.by_enum(dtype)
        if dt is None or not dt.fixed_width:
            return refused, None
        needs = shapes.elements(shape) * dt.itemsize
        return refused, None if needs == size else needs

    def check_fixed_size(self, e: RawEntry, dt: dtypes.DType) -> None:
        """Raise unless a fixed-width entry stores exactly the bytes its shape needs."""
        expected = shapes.elements(e.shape) * dt.itemsize
        if e.size != expected:
            raise CorruptCheckpointError(
                self.index_path, f"tensor {e.name!r}: {e.size} bytes stored, but shape {list(e.shape)} "
                f"of {dt.name} needs {expected}")

    def _fixed_region(self, e: RawEntry, dt: dtypes.DType) -> memoryview:
        self.check_fixed_size(e, dt)
        return self.region(e)

    def read(self, e: RawEntry) -> np.ndarray:
        """The entry's value as a numpy array (a partitioned variable assembled whole)."""
        dt = self.check_array(e)
        if e.slices:
            return self._read_partitioned(e)
        if dt.fixed_width:
            return self._read_fixed(e, dt)
        import numpy as np

        values = self._read_strings(e) if _is_string(dt) else self._read_variants(e)
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out.reshape(e.shape)

    def elements(self, e: RawEntry) -> list[bytes]:
        """A whole string or variant entry's elements as ``bytes`` (checked; no numpy); a fixed-width entry's
        are not bytes: ValueError."""
        dt = self.check_array(e)
        if dt.fixed_width or e.slices:
            raise ValueError(f"tensor {e.name!r} of {dt.name} has no byte-string elements")
        return self._read_strings(e) if _is_string(dt) else self._read_variants(e)

    def _read_fixed(self, e: RawEntry, dt: dtypes.DType) -> np.ndarray:
        import numpy as np

        buf = self._fixed_region(e, dt)
        actual = crc32c(buf)
        if actual != unmask(e.crc32c):
            raise self.checksum_error(e, actual)
        arr = np.frombuffer(buf, dtype=dt.numpy()).copy()
        if self.header.big_endian and dt.itemsize > 1:
            arr.byteswap(inplace=True)
        return arr.reshape(e.shape)

    def _read_strings(self, e: RawEntry, keep: bool = True) -> list[bytes]:
        """The elements of a string entry, checked (lengths, their checksum, the CRC32C of it all); with ``keep``
        False only checked (nothing returned)."""
        n = shapes.prod(e.shape)
        if e.size == 0 and n == 0:
            return []
        data, lengths, pos, crc = self._string_lengths(e, n)
        # one string is read, not mapped (no page of the file joins the process), or with keep False only checked
        # a buffer at a time (crc32c_range: no copy either)
        one = self._pread(e, pos) if n == 1 and keep else None
        fd = self._fds.get(e.shard_id) if n == 1 and not keep else None
        whole = crc32c(one, crc) if one is not None else \
            crc32c_range(fd, e.offset + pos, e.size - pos, crc) if fd is not None else None
        if whole != unmask(e.crc32c):  # (read where it is mapped, as before: a descriptor closed under us)
            one, whole = None, crc32c(memoryview(data)[pos:], crc)
        if whole != unmask(e.crc32c):
            raise self.checksum_error(e, whole)
        if not keep:
            return []
        if n == 1:
            return [bytes(data[pos:]) if one is None else one]
        assert isinstance(data, bytes)  # (n > 1: one copy, sliced)
        values = []
        for length in lengths:
            values.append(data[pos:pos + length])
            pos += length
        return values

    def string_equals(self, e: RawEntry, expected: bytes | memoryview) -> bool | None:
        """Whether the string entry ``e`` of one element holds ``expected``, its stored bytes read a buffer at a time
        with ``pread`` and compared on the way, checked as :meth:`elements` checks them (a ChecksumError when they
        do not match their CRC32C): the read-back of an object graph (130 MB at 10^6 objects) holds no copy of it.
        None for another entry, or one not in an open local file (the caller reads the elements)."""
        found = self._one_string(e)
        if found is None:
            return None
        length, pos, crc, fd = found
        from formats.core.memcmp import same_bytes

        want = memoryview(expected).cast("B")
        equal = [length == len(want)]

        def compare(piece: memoryview, at: int) -> None:
            if equal[0] and not same_bytes(piece, want[at:at + len(piece)]):
                equal[0] = False

        whole = crc32c_range(fd, e.offset + pos, e.size - pos, crc, compare)
        if whole is None:  # the file ends first (cut under us): the mapped bytes say what is wrong
            return None
        if whole != unmask(e.crc32c):
            raise self.checksum_error(e, whole)
        return equal[0]

    def string_pieces(self, e: RawEntry, block: int = GRAPH_PIECE) -> tuple[int, Iterator[bytes | memoryview]] | None:
        """The one element of the local string entry ``e`` of one element: its length, and its bytes ``block`` at a
        time read with ``preadv`` into one buffer (the file's map not touched), their CRC32C checked once the last
        is read (a ChecksumError then): an object graph a writer carries (130 MB at 10^6 objects) is never held
        whole. Each piece is a view of that buffer, good until the next is asked for. None for another entry, or
        one not in an open local file (the caller reads the elements)."""
        found = self._one_string(e)
        if found is None:
            return None
        length, pos, crc, fd = found

        def pieces() -> Iterator[bytes | memoryview]:
            found, at = crc, pos
            buffer = memoryview(bytearray(min(block, e.size - at)))
            while at < e.size:
                n = os.preadv(fd, [buffer[:e.size - at]], e.offset + at)
                if not n:
                    raise CorruptCheckpointError(self.data_paths[e.shard_id], f"tensor {e.name!r}: the file ends "
                                                 f"{e.size - at:,} bytes before it")
                piece = buffer[:n]
                found = crc32c(piece, found)
                at += n
                yield piece
            if found != unmask(e.crc32c):
                raise self.checksum_error(e, found)

        return length, pieces()

    def _one_string(self, e: RawEntry) -> tuple[int, int, int, int] | None:
        """For a local string entry ``e`` of one element, unsliced: its length, where its bytes start, the CRC32C up to
        there (the length's checksum checked) and the data file's descriptor; None for any other entry."""
        dt = dtypes.by_enum(e.dtype)
        if e.slices or dt is None or not _is_string(dt) or shapes.prod(e.shape) != 1:
            return None
        self.check_array(e)
        _, lengths, pos, crc = self._string_lengths(e, 1)
        fd = self._fds.get(e.shard_id)
        return None if fd is None else (lengths[0], pos, crc, fd)

    def _string_lengths(self, e: RawEntry, n: int) -> tuple[bytes | memoryview, list[int], int, int]:
        """The stored bytes of the string entry ``e`` of ``n`` elements (mapped for one, else copied), the elements'
        lengths, where the first element starts and the CRC32C up to there, the lengths' checksum checked."""
        if n + 4 > e.size:
            raise CorruptCheckpointError(
                self.index_path, f"tensor {e.name!r}: {n} strings cannot fit in {e.size} stored bytes")
        # one string (an object graph: megabytes at 10^5 objects) is copied once, from the map; many small ones are
        # sliced from one copy (a slice of bytes is quicker than of a memoryview)
        data: bytes | memoryview = self.region(e) if n == 1 else bytes(self.region(e))
        order: Literal["big", "little"] = "big" if self.header.big_endian else "little"
        lengths, packed, pos = [], bytearray(), 0
        try:
            for _ in range(n):
                length, pos = read_varint(data, pos, len(data))
                lengths.append(length)
                packed += length.to_bytes(4 if length <= 0xFFFFFFFF else 8, order)
        except WireError:
            raise CorruptCheckpointError(self.data_paths[e.shard_id],
                                         f"tensor {e.name!r}: string lengths run past the tensor") from None
        crc = crc32c(packed)
        if pos + 4 > len(data):
            raise CorruptCheckpointError(self.data_paths[e.shard_id], f"tensor {e.name!r}: no length checksum")
        stored = int.from_bytes(data[pos:pos + 4], order)
        if unmask(stored) != crc:
            raise ChecksumError(self.data_paths[e.shard_id], f"tensor {e.name!r}: string length checksum "
                                f"mismatch (stored {unmask(stored):#010x}, lengths give {crc:#010x})")
        crc = crc32c(data[pos:pos + 4], crc)
        pos += 4
        if pos + sum(lengths) != len(data):
            raise CorruptCheckpointError(self.data_paths[e.shard_id], f"tensor {e.name!r}: string lengths "
                                         f"add up to {sum(lengths)} bytes, {len(data) - pos} are stored")
        return data, lengths, pos, crc

    def _pread(self, e: RawEntry, start: int) -> bytes | None:
        """The stored bytes of the local entry ``e`` from ``start`` on, read with ``pread`` (one copy; the file's map
        is not touched, so its pages do not count in the process's memory: an object graph of 13 MB at 10^5
        objects was resident twice, mapped and copied); None when there is no descriptor or the read falls short."""
        fd = self._fds.get(e.shard_id)
        if fd is None:
            return None
        try:
            found = os.pread(fd, e.size - start, e.offset + start)
        except OSError:
            return None
        return found if len(found) == e.size - start else None

    def _read_variants(self, e: RawEntry) -> list[bytes]:
        n = shapes.prod(e.shape)
        if e.size == 0:
            if n:
                raise CorruptCheckpointError(self.index_path, f"tensor {e.name!r}: {n} variants, no bytes")
            return []
        if 5 * n > e.size:
            raise CorruptCheckpointError(
                self.index_path, f"tensor {e.name!r}: {n} variant elements cannot fit in {e.size} bytes")
        data = bytes(self.region(e))
        where = self.data_paths[e.shard_id]
        values, crc, pos = [], 0, 0
        for i in range(n):
            try:
                length, pos = read_varint(data, pos, len(data))
            except WireError:
                raise CorruptCheckpointError(where, f"tensor {e.name!r}: variant {i} length is corrupt") from None
            if pos + length + 4 > len(data):
                raise CorruptCheckpointError(where, f"tensor {e.name!r}: variant {i} runs past the tensor")
            crc = crc32c(length.to_bytes(8, "little"), crc)
            crc = crc32c(memoryview(data)[pos:pos + length], crc)
            values.append(data[pos:pos + length])
            pos += length
            stored = int.from_bytes(data[pos:pos + 4], "little")
            if unmask(stored) != crc:
                raise ChecksumError(where, f"tensor {e.name!r}: checksum after variant {i} does not match "
                                    f"(stored {unmask(stored):#010x}, computed {crc:#010x})")
            crc = crc32c(data[pos:pos + 4], crc)
            pos += 4
        if pos != len(data):
            raise CorruptCheckpointError(where, f"tensor {e.name!r}: {len(data) - pos} stray bytes after variants")
        if crc != unmask(e.crc32c):
            raise self.checksum_error(e, crc)
        return values

    def slice_parts(self, e: RawEntry) -> list[tuple[list[Extent], RawEntry]]:
        """The (extents, entry) of each stored slice of a partitioned variable, all validated: the slices
        tile the shape exactly (:func:`~formats.concepts.tiling.tiling_problem`) and each has its entry."""
        from formats.concepts.slice_key import encode_slice_key
        from formats.concepts.tiling import format_extents, slice_box, tiling_problem

        problem = tiling_problem(e.shape, e.slices)
        if problem is not None:
            raise CorruptCheckpointError(self.index_path, f"partitioned tensor {e.name!r}: {problem}")
        parts = []
        for extents in e.slices:
            part = self.entries.get(encode_slice_key(e.key, extents))
            if part is None:
                raise CorruptCheckpointError(self.index_path, f"partitioned tensor {e.name!r}: slice "
                                             f"{format_extents(extents)} has no entry")
            shape = tuple(stop - start for start, stop in slice_box(e.shape, extents))
            if part.shape != shape or part.dtype != e.dtype or part.slices or not self._plausible(part):
                raise CorruptCheckpointError(self.index_path, f"partitioned tensor {e.name!r}: slice "
                                             f"{format_extents(extents)} entry does not match its extent")
            parts.append((extents, part))
        return parts

    def _plausible(self, e: RawEntry) -> bool:
        """Whether the entry's stored size can hold its shape and lies inside its data file."""
        dt = dtypes.by_enum(e.dtype)
        n = shapes.prod(e.shape)
        if dt is None:
            return False
        if dt.fixed_width:
            fits = e.size == n * dt.itemsize
        else:
            fits = e.size >= (n + 4 if _is_string(dt) else 5 * n)
        return fits and (e.size == 0 or (0 <= e.shard_id < len(self.data_paths)
                                         and e.offset + e.size <= self.file_size(e.shard_id)))

    def _read_partitioned(self, e: RawEntry) -> np.ndarray:
        import numpy as np

        dt = self.dtype_of(e)
        parts = self.slice_parts(e)
        out = np.empty(e.shape, dtype=dt.numpy())
        for extents, part in parts:  # they tile the shape: every element is written once
            index = tuple(slice(s, s + n) if n >= 0 else slice(None) for s, n in extents)
            out[index] = self.read(part)
        return out


_UNKNOWN: Any = object()
"""A data layout :meth:`BundleReader.rows_ranges` has not looked at yet."""

_RANGE_ITEMSIZE: dict[int, int | None] = {}
"""DataType number -> its item size when :meth:`BundleReader.stored_range` may give its entries' bytes as they lie
(fixed-width, with an array counterpart, not a reference dtype), else None; worked out once per dtype."""


def reference_dtype_problem(enum: int) -> str | None:
    """Why TensorFlow's checkpoint reader refuses an entry of DataType ``enum`` (a reference dtype, ``DT_*_REF``:
    it aborts with "Unexpected type"), or None."""
    if enum <= dtypes.REFERENCE or dtypes.by_enum(enum) is None:
        return None
    return (f"reference dtype {dtype_name(enum)} ({enum}): TensorFlow's checkpoint reader refuses it (a checkpoint "
            "stores values, never references)")


def _is_string(dt: dtypes.DType) -> bool:
    """``string`` or ``string_ref`` (a reference dtype is stored as its base type): stored as strings,
    not as variants."""
    return dt.enum in (dtypes.STRING, dtypes.STRING + 100)
