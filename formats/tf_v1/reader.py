"""Reader for TensorFlow's V1 checkpoints (``Saver(write_version=V1)``): one SSTable per file.

Each file's entry under the empty key lists the tensors and the slices of them that file stores
(``SavedSliceMeta``); each slice's values are one more entry, under the OrderedCode key of
(name, slice) (``tensorflow/core/util/tensor_slice_reader.cc``). A sharded save writes one such file
per device, ``prefix-00000-of-00003`` ..., opened together through their pattern.

Files are memory-mapped after checking they are regular files; opening parses only each table's index
block and meta entry, and a slice's block is read (and its CRC32C checked) when its values are asked for.
"""
from __future__ import annotations

import mmap
import os

from formats.concepts.slice_key import Extent, encode_slice_key
from formats.core.errors import CheckpointNotFoundError, CorruptCheckpointError, UnsupportedError
from formats.io import storage
from formats.io.sstable.table import Table
from formats.io.protowire import Buffer, WireError
from formats.tf_v1.meta import FileMeta, decode_file_meta, decode_saved_slice
from formats.concepts.tiling import format_extents
from formats.core.records import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["V1Reader", "TensorInfo", "SliceRef", "open_table", "CHECKPOINT_VERSION"]

CHECKPOINT_VERSION = 1
"""TensorFlow's ``TF_CHECKPOINT_VERSION``: the V1 layout version this reader understands."""


@record(frozen=True)
class SliceRef:
    """One stored slice: its extents and the index of the file holding it."""

    extents: tuple[Extent, ...]
    file: int


@record
class TensorInfo:
    """A tensor as the meta entries of all files declare it."""

    name: bytes
    dtype: int
    shape: tuple[int, ...]
    slices: list[SliceRef] = field(default_factory=list)

    @property
    def key(self) -> str:
        """The name as text (undecodable bytes kept via surrogateescape, so it round-trips)."""
        return self.name.decode("utf-8", "surrogateescape")


def open_table(path: str) -> tuple[Any, Table]:
    """A read-only map of a V1 file and the table over it (a FIFO or device is refused unopened)."""
    try:
        with storage.open_regular(path) as f:
            if os.fstat(f.fileno()).st_size == 0:
                raise CorruptCheckpointError(path, "file is empty")
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except FileNotFoundError:
        raise CheckpointNotFoundError(path, "no such file") from None
    except IsADirectoryError:
        raise CorruptCheckpointError(path, "not a regular file (a device, pipe or directory)") from None
    except (OSError, ValueError) as exc:
        if isinstance(exc, CorruptCheckpointError):
            raise
        raise CheckpointNotFoundError(path, f"cannot read ({exc})") from None
    return mm, Table(memoryview(mm), path, "V1 table")


class V1Reader:
    """Every file of one V1 checkpoint: their tables, and the tensors their meta entries declare."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths
        self._maps: list[Any] = []
        self.tables: list[Table] = []
        self.metas: list[FileMeta] = []
        try:
            for path in paths:
                mm, table = open_table(path)
                self._maps.append(mm)
                self.tables.append(table)
                self.metas.append(self._meta(table))
            self.tensors = self._merge()
        except BaseException:
            self.close()
            raise

    def _meta(self, table: Table) -> FileMeta:
        value = table.get(b"")
        if value is None:
            raise CorruptCheckpointError(table.path, "not a V1 checkpoint: no SavedTensorSliceMeta entry")
        try:
            meta = decode_file_meta(value)
        except (WireError, ValueError) as exc:
            raise CorruptCheckpointError(table.path, f"corrupt V1 meta entry: {exc}") from None
        if meta.min_consumer > CHECKPOINT_VERSION or CHECKPOINT_VERSION in meta.bad_consumers:
            raise UnsupportedError(table.path, f"written for readers of checkpoint version {meta.min_consumer} "
                                   f"or later; ckpt reads version {CHECKPOINT_VERSION}")
        return meta

    def _merge(self) -> dict[bytes, TensorInfo]:
        """One :class:`TensorInfo` per name across files; the files must agree on dtype and shape."""
        tensors: dict[bytes, TensorInfo] = {}
        for index, meta in enumerate(self.metas):
            for sm in meta.tensors:
                info = tensors.get(sm.name)
                if info is None:
                    info = tensors[sm.name] = TensorInfo(sm.name, sm.dtype, sm.shape)
                elif (info.dtype, info.shape) != (sm.dtype, sm.shape):
                    raise CorruptCheckpointError(
                        self.paths[index], f"tensor {info.key!r} is declared with shape {list(sm.shape)} "
                        f"and dtype {sm.dtype}, another file says {list(info.shape)} and {info.dtype}")
                info.slices += [SliceRef(tuple(extents), index) for extents in sm.slices]
        return tensors

    def slice_values(self, info: TensorInfo, ref: SliceRef) -> Buffer:
        """The ``TensorProto`` bytes of one slice, after checking the entry is that slice's."""
        table = self.tables[ref.file]
        value = table.get(encode_slice_key(info.name, list(ref.extents)))
        where = f"tensor {info.key!r}: slice {format_extents(ref.extents)}"
        if value is None:
            raise CorruptCheckpointError(table.path, f"{where} has no entry in the table")
        try:
            name, extents, data = decode_saved_slice(value)
        except WireError as exc:
            raise CorruptCheckpointError(table.path, f"{where}: corrupt SavedSlice ({exc})") from None
        if name != info.name or [tuple(e) for e in extents] != list(ref.extents):
            raise CorruptCheckpointError(table.path, f"{where}: the entry holds {format_extents(extents)} "
                                         f"of {name.decode('utf-8', 'surrogateescape')!r}")
        return data

    def drop_pages(self) -> None:
        """Let the kernel reclaim the mapped pages read so far (they stay in the page cache), so reading
        a large checkpoint keeps resident memory near one tensor."""
        for mm in self._maps:
            try:
                mm.madvise(mmap.MADV_DONTNEED)
            except (OSError, ValueError, AttributeError):  # closed, or no madvise on this platform
                pass

    def file_size(self, index: int) -> int:
        """Bytes in file ``index``."""
        return len(self._maps[index])

    def close(self) -> None:
        """Drop cached blocks and unmap every file."""
        for table in self.tables:
            table.close()
        for mm in self._maps:
            try:
                mm.close()
            except BufferError:  # an array still views it; the OS frees it with the last view
                pass
        self._maps.clear()
