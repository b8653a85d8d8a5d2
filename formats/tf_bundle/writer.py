"""Writer for TensorFlow tensor bundles (``prefix.index`` + ``prefix.data-NNNNN-of-MMMMM``).

Byte-compatible with TensorFlow's ``BundleWriter``: tensors go to the data file in the order
they are given (densely packed, no alignment), the index lists them in bytewise key order
after the header, and every entry carries the masked CRC32C TensorFlow would compute.
Tensors stream from their source to the file in bounded chunks; ``shards`` spreads them over
several data files (``prefix.data-0000k-of-0000N``) as TensorFlow's sharded saving leaves them.

Bytes that do not change are not copied through Python: an input data file whose every tensor
is written unchanged (a rename, a name <-> object conversion, a selection of whole files; see
:mod:`formats.tf_bundle.layout`) is copied by the kernel (``copy_file_range``, a reflink where
the file system can) to the start of the output's data file, its entries keeping their
checksums, or with ``link`` hard-linked as a data file of its own. Data files are never modified
in place, so a linked file is shared safely.

Like every writer (:mod:`formats.io.writing`), the output is guarded against replacing an input,
written under temporary names in the output directory, flushed to disk and verified - new tensors
read back and compared with their sources, copied ones checked against their checksums from the
memory map, linked ones checked to be the input's own files - and only then put in place so that
a reader sees the old checkpoint, the new one or none (:mod:`formats.tf_bundle.publish`).
"""
from __future__ import annotations

from _collections_abc import Mapping, Sequence  # collections.abc's classes, without the collections package
import itertools
import math
import os
import sys
from _operator import itemgetter  # operator's C half, without operator.py (start-up)

from formats.core.gc_pause import gc_paused
from formats.core.names import name_bytes
from formats.core import dtypes
from formats.core.errors import (CorruptCheckpointError, InvalidOutputError, OutputExistsError, OutputIsInputError,
                                 VerificationError)
from formats.core.model import Checkpoint, TensorEntry
from formats.core.comparison import Digest, digest_update
from formats.core.sources import CHUNK, Source, TensorValue, describe, elements, fixed_chunks
from formats.io.background_sync import BackgroundSync as _BackgroundSync
from formats.io.atomic import ensure_space, make_parents, remove_created, sweep_temporaries
from formats.io.crc import crc32c, mask, unmask
from formats.io.writing import (OutputGuard, RowPairs, Stored, StoredRows, WriteReport, guard_output, planned_bytes,
                                sources_of)
from formats.io.zerocopy import copy_range, try_link
from formats.tf_bundle.checkpoint import BundleTensor
from formats.tf_bundle.encode import (encode_entry, encode_header, entry_parts, join_entry, string_layout,
                                      variant_layout)
from formats.tf_bundle.files import BundleFiles
from formats.tf_bundle.layout import Layout, Placed, WholeCheck, plan_layout
from formats.tf_bundle.origins import COPIED, FRESH, LINKED, by_key, key_bytes_of, record_key
from formats.tf_bundle.reader import OBJECT_GRAPH_KEY, BundleReader, data_file_name
from formats.io.sstable.writer import TableWriter
from formats.core.imported import imported_numpy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from typing import Any, BinaryIO

__all__ = ["write_checkpoint", "write_data_file", "index_bytes", "WriteReport", "OutputExistsError", "OutputIsInputError", "InvalidOutputError",
           "VerificationError"]


class _Placement:
    """Where the tensors of an input data file taken over whole went: at ``base`` of data file ``shard``, and how
    (``how``: copied, or the file linked). Their entries are the input's, offset by ``base``: each encoded as the
    index is written (:meth:`entry`), not held a tensor at a time through the write (at a million tensors, 50 MB)."""

    __slots__ = ("base", "shard", "how", "_parts")

    def __init__(self, base: int, shard: int, how: str) -> None:
        self.base, self.shard, self.how = base, shard, how
        self._parts: dict[tuple[int, int], tuple[bytes, bytes]] = {}  # (the input's kind, shard) -> entry fields

    def entry(self, source: BundleTensor) -> bytes:
        """The entry of the input's tensor ``source`` where it now lies."""
        columns, row = source.bundle.entries, source.row
        return _entry(self._parts, columns, row, self.shard, self.base + columns.offset[row])

    def entries(self, np: Any, columns: Any, rows: Any) -> list[bytes] | None:
        """The entries of the input's rows ``rows`` (an array; ``columns``: the input's index, held in arrays) where
        they now lie, the same bytes :meth:`entry` makes, made with arrays (a Python call a tensor was a tenth of a
        bundle writer's time at 10^6 tensors); None for an offset past 2**35 (a varint longer than five bytes)."""
        return _array_entries(np, self._parts, columns, rows, np.frombuffer(columns.offset, np.int64)[rows] + self.base,
                              self.shard)


def _array_entries(np: Any, kept: dict[tuple[int, int], tuple[bytes, bytes]], columns: Any, rows: Any, offsets: Any,
                   shard: int) -> list[bytes] | None:
    """The index entries of the input's rows ``rows`` (``columns``: its index, held in arrays) at ``offsets`` of the
    output's data file ``shard``, the same bytes :func:`_entry` makes of each, made with arrays (``kept``: the fields
    of each kind, as :func:`_kind_entry` keeps them); None for an offset past 2**35 (a varint longer than five
    bytes)."""
    from formats.io.sstable.write_arrays import _ranges, _varints

    if len(offsets) and int(offsets.max()) >= 1 << 35:
        return None
    kinds = np.frombuffer(columns.kind, np.uint32)[rows]
    crcs = np.frombuffer(columns.crc, np.uint32)[rows]
    used, local = np.unique(kinds, return_inverse=True)
    parts = [_kind_entry(kept, columns, kind, shard) for kind in used.tolist()]
    heads, tails = b"".join(head for head, _ in parts), b"".join(tail for _, tail in parts)
    head_sizes = np.array([len(head) for head, _ in parts], np.int64)
    tail_sizes = np.array([len(tail) for _, tail in parts], np.int64)
    head_at, tail_at = np.cumsum(head_sizes) - head_sizes, np.cumsum(tail_sizes) - tail_sizes
    has_offset, has_crc = offsets > 0, crcs != 0
    varints, varint_sizes = _varints(np, offsets[has_offset])
    offset_sizes = np.zeros(len(rows), np.int64)
    offset_sizes[has_offset] = 1 + varint_sizes
    sizes = head_sizes[local] + offset_sizes + tail_sizes[local] + 5 * has_crc
    ends = np.cumsum(sizes)
    starts = ends - sizes
    at = starts.copy()
    out = np.empty(int(ends[-1]) if len(ends) else 0, np.uint8)
    out[_ranges(np, at, head_sizes[local])] = np.frombuffer(heads, np.uint8)[_ranges(np, head_at[local],
                                                                                    head_sizes[local])]
    at += head_sizes[local]
    field = at[has_offset]
    out[field] = 0x20  # (field 4, varint: the offset)
    for i in range(5):
        more = varint_sizes > i
        if not more.any():
            break
        out[field[more] + 1 + i] = varints[more, i]
    at += offset_sizes
    out[_ranges(np, at, tail_sizes[local])] = np.frombuffer(tails, np.uint8)[_ranges(np, tail_at[local],
                                                                                    tail_sizes[local])]
    at += tail_sizes[local]
    field = at[has_crc]
    out[field] = 0x35  # (field 6, fixed32: the masked CRC32C, little-endian)
    crc_bytes = crcs[has_crc].astype("<u4").view(np.uint8).reshape(-1, 4)
    for i in range(4):
        out[field + 1 + i] = crc_bytes[:, i]
    joined = out.tobytes()
    return list(map(joined.__getitem__, map(slice, starts.tolist(), ends.tolist())))


class _Pair:
    """A tensor taken over whole, given as a pair with no ``key`` and ``value`` to lend (a ``(key, value)`` tuple),
    or whose key is not its text: its key's text and its source."""

    __slots__ = ("key", "value")

    def __init__(self, key: str, value: BundleTensor) -> None:
        self.key, self.value = key, value


class _Copied:
    """An input data file not taken over whole, some of whose tensors were copied as they lie (:class:`_Run`, or a
    kernel copy of a larger one): where each went, by its row in the input's index - its offset in the output
    (eight bytes a row of the index) and the output's data file. A tensor in one is written
    as the row given for it, like one taken over (:class:`_Taken`), its entry made from its source and its place as
    the index is written: an edit copying a million of the input's tensors holds 8 MB, not a :class:`_Record` a
    tensor (at a million, 250 MB). A row copied a second time is not placed here (it gets a record of its own)."""

    __slots__ = ("offsets", "shard", "shards", "_parts")
    how = COPIED

    def __init__(self, rows: int) -> None:
        self.offsets = memoryview(bytearray(8 * rows)).cast("q")  # each offset + 1 (0: not copied; no array module)
        self.shard = -1  # the output's data file of every tensor placed, while they share one
        self.shards: Any = None  # else each row's (four bytes a row of the index)
        self._parts: dict[tuple[int, int], tuple[bytes, bytes]] = {}  # (the input's kind, shard) -> entry fields

    def place(self, row: int, offset: int, shard: int) -> bool:
        """Row ``row`` of the input's index is copied to ``offset`` of data file ``shard``; False when it was
        already."""
        offsets = self.offsets
        if offsets[row]:
            return False
        offsets[row] = offset + 1
        if shard != self.shard and self.shards is None:
            if self.shard < 0:
                self.shard = shard
                return True
            first = self.shard.to_bytes(4, sys.byteorder, signed=True)  # every row placed so far: in the first
            self.shards = memoryview(bytearray(first * len(offsets))).cast("i")
        if self.shards is not None:
            self.shards[row] = shard
        return True

    def entries(self, np: Any, columns: Any, rows: Any) -> list[bytes] | None:
        """:meth:`entry` of the input's rows ``rows`` (an array, each copied; ``columns``: the input's index, held in
        arrays), made with arrays (:func:`_array_entries`) where every one went to one output data file; else None
        (each made one at a time)."""
        if self.shards is not None:
            return None
        offsets = np.frombuffer(self.offsets, np.int64)[rows] - 1
        if len(offsets) and int(offsets.min()) < 0:
            return None
        return _array_entries(np, self._parts, columns, rows, offsets, self.shard)

    def entry(self, source: BundleTensor) -> bytes:
        """The entry of the input's tensor ``source`` where it was copied."""
        columns, row = source.bundle.entries, source.row
        return _entry(self._parts, columns, row, self.shard if self.shards is None else self.shards[row],
                      self.offsets[row] - 1)


def _entry(parts: dict[tuple[int, int], tuple[bytes, bytes]], columns: Any, row: int, shard: int, offset: int) -> bytes:
    """The entry of row ``row`` of an input's index ``columns`` at ``offset`` of the output's data file ``shard``, the
    fields of each (kind, data file) made once and kept in ``parts`` (no kind tuple hashed a tensor)."""
    return join_entry(_kind_entry(parts, columns, columns.kind[row], shard), offset, columns.crc[row])


def _kind_entry(parts: dict[tuple[int, int], tuple[bytes, bytes]], columns: Any, kind: int,
                shard: int) -> tuple[bytes, bytes]:
    """The fields of an entry of the input's kind ``kind`` in the output's data file ``shard``, made once and kept
    in ``parts``."""
    found = parts.get((kind, shard))
    if found is None:
        dtype, shape, _, size = columns.kinds[kind]
        found = parts[(kind, shard)] = entry_parts(dtype, shape, shard, size)
    return found


class _Taken:
    """The input data files taken over whole, each a :class:`_Placement` by its reader and data file, and those some
    of whose tensors were copied as they lie, each a :class:`_Copied`. A tensor in one is written as the row given
    for it - a plan's row (``key``: its text, ``value``: its source), else a :class:`_Pair` - not as a
    :class:`_Record`: what a record would say of it is read here from its source (at a million tensors, a record
    and its position were 130 MB)."""

    __slots__ = ("_files", "_only")

    def __init__(self) -> None:
        self._files: dict[tuple[int, int], _Placement | _Copied] = {}
        self._only: _Placement | _Copied | None = None  # the one file, when there is one: no look-up a tensor

    def add(self, reader: Any, shard: int, placement: _Placement | _Copied) -> None:
        """Data file ``shard`` of ``reader``'s bundle went to ``placement``, or its tensors are copied as it says."""
        self._files[(id(reader), shard)] = placement
        self._only = placement if all(p is placement for p in self._files.values()) else None

    def copied(self, reader: Any, shard: int) -> _Copied | None:
        """Where the tensors copied from data file ``shard`` of ``reader``'s bundle went (one :class:`_Copied` for
        all of a bundle's files, made at the first); None when the file is taken over whole (a tensor of it written
        again is a copy of its own: a record)."""
        found = self._files.get((id(reader), shard))
        if found is None:
            found = next((p for (i, _), p in self._files.items() if i == id(reader) and type(p) is _Copied), None)
            self.add(reader, shard, found or _Copied(len(reader.entries.kind)))
            found = self._files[(id(reader), shard)]
        return found if type(found) is _Copied else None

    def placement(self, source: BundleTensor) -> _Placement | _Copied:
        """Where the data file of the taken-over or copied tensor ``source`` went."""
        if self._only is not None:
            return self._only
        columns = source.bundle.entries
        return self._files[(id(source.bundle), columns.kinds[columns.kind[source.row]][2])]

    @property
    def only(self) -> _Placement | _Copied | None:
        """Where the one input data file went, when there is one."""
        return self._only

    @property
    def entry(self) -> Callable[[BundleTensor], bytes]:
        """The index entry of a taken-over or copied tensor, from its source: the one file's own method when there
        is one (no look-up a tensor)."""
        return self._only.entry if self._only is not None else self._entry

    def _entry(self, source: BundleTensor) -> bytes:
        return self.placement(source).entry(source)

    def hows(self, items: list[Any], ways: set[str]) -> str | list[str]:
        """How each of ``items`` (the records of tensors written fresh or copied alone, whose ``ways`` are given,
        and the rows of those taken over or copied, in any order) got there (:mod:`~formats.tf_bundle.origins`): one
        text when every one got there the same way (no list a tensor)."""
        taken = {p.how for p in self._files.values()}
        ways = taken | ways
        if len(ways) <= 1:
            return ways.pop() if ways else FRESH
        if len(taken) <= 1:
            how = taken.pop() if taken else FRESH
            return [r.how if type(r) is _Record else how for r in items]
        return [r.how if type(r) is _Record else self.placement(r.value).how for r in items]


class _Record:
    """One tensor written fresh or copied alone: its key (as text: bytes of the index that are not UTF-8 kept as
    ``surrogateescape`` keeps them; the text given, not a copy, when it is valid) and entry proto, size, dtype and
    shape, what it is compared with when read back (``expected``: the source itself or a :class:`Digest`), how its
    bytes got there (``how``: written fresh, or copied from an input data file) and its source (``value``). (A
    tensor taken over or copied in a run has none: see :class:`_Taken`.)"""

    __slots__ = ("key", "entry", "size", "dtype", "shape", "expected", "how", "value")

    def __init__(self, key: str, entry: bytes, size: int, dtype: str, shape: tuple[int, ...], expected: Any = None,
                 how: str = FRESH, value: Any = None) -> None:
        self.key, self.entry, self.size, self.dtype, self.shape = key, entry, size, dtype, shape
        self.expected, self.how, self.value = expected, how, value


@gc_paused  # objects by the tensor (sources, the layout, records), none in a cycle: for every caller
def write_checkpoint(prefix: str | os.PathLike[str], tensors: Mapping[str, Source] | Iterable[tuple[str, Source]],
                     object_graph: Any = None, *, force: bool = False, verify: bool = True,
                     inputs: Iterable[str | Checkpoint] = (), chunk: int = CHUNK,
                     progress: Callable[[int, int], None] | None = None, link: bool = False,
                     jobs: int | None = None, shards: Sequence[int] | None = None) -> WriteReport:
    """Write a TensorFlow checkpoint at ``prefix`` that ``tf.train.load_checkpoint`` reads.

    ``tensors`` maps key -> source (numpy array, :class:`~formats.core.sources.TensorValue`, or a
    :class:`~formats.core.model.TensorEntry` of an opened checkpoint, streamed from its file), or is an
    iterable of ``(key, source)`` pairs; data is written in that order. ``object_graph`` (a
    serialized ``TrackableObjectGraph`` or the message) is stored as ``_CHECKPOINTABLE_OBJECT_GRAPH``.
    An existing output is refused unless ``force``; an output that would replace a file of an
    input (any bundle tensor's checkpoint, or ``inputs``) is always refused. With ``verify`` the
    result is read back (on ``jobs`` threads; None: every core) before it is put in place.
    ``link`` hard-links input data files taken over whole instead of copying them (where input and
    output share a file system; elsewhere they are copied, and the report says so).
    ``progress(bytes_done, tensors_done)`` is called as tensors are written. A URL prefix
    (``s3://...``) is written and verified locally, then uploaded (:mod:`formats.io.remote_write`).
    ``shards`` spreads the data over N files as TensorFlow's sharded saving does: the data file of
    each tensor in the order written (the object graph, written last, included), never decreasing;
    N is the largest plus one (no data file is then taken over whole). Default: one data file.
    """
    prefix = os.fspath(prefix)
    from formats.io import storage

    sources, inputs = sources_of(tensors), list(inputs)
    if storage.is_url(prefix):
        if link:
            raise InvalidOutputError(prefix, "an output behind a URL cannot share data files with its inputs")
        count = _shard_count(prefix, shards)
        guard_output(prefix, [prefix + ".index", *(data_file_name(prefix, k, count) for k in range(count))],
                     inputs=inputs, sources=sources, force=force, what="output checkpoint", marker=prefix + ".index")
        from formats.io.remote_write import write_then_upload

        return write_then_upload(prefix, lambda local: write_checkpoint(
            local, tensors, object_graph, verify=verify, inputs=inputs, chunk=chunk, progress=progress, jobs=jobs,
            shards=shards),
            force=force)
    pairs: Iterable[tuple[Any, Source]] = _pairs(tensors, object_graph)
    layout = Layout([])
    one = BundleTensor.rows_of_one(sources)  # tensors of one bundle: what is asked of each, asked of its columns
    if sources and shards is None:  # every source known up front: input data files may be taken over whole
        pairs = tensors.and_graph(_graph_pair(object_graph)) if isinstance(tensors, RowPairs) else list(pairs)
        layout = plan_layout(sources if len(sources) == len(pairs) else [source for _, source in pairs], link, one)
    fresh = object_graph is not None or not isinstance(pairs, _INDEXED) or len(pairs) > len(layout.placed)
    out = BundleFiles(prefix, layout, link, fresh, None if shards is None else _shard_count(prefix, shards))
    guard = guard_output(prefix, [out.final_index, *out.finals], inputs=inputs, sources=_by_files(sources, one),
                         force=force, what="output checkpoint", marker=out.final_index,
                         renamed=True)  # publish(): renames only
    sweep_temporaries(prefix)  # what killed writes of this prefix left
    created = make_parents(prefix)
    try:
        with out:
            fresh_bytes = _planned_bytes(sources, layout.placed, one)
            del one  # (a row a tensor: not held through the write)
            ensure_space(out.directory, fresh_bytes + (0 if link else layout.reused_bytes()), sources)
            report = _write(out, pairs, guard, chunk, verify, isinstance(tensors, Mapping), progress, jobs, shards,
                            guarded=bool(sources))
            out.publish(replace=force)
    except BaseException:
        remove_created(created)
        raise
    return report


def _by_files(sources: Sequence[Source], one: tuple[BundleReader, list[int]] | None) -> Sequence[Source]:
    """The sources an output is guarded against (:func:`~formats.io.writing.guard_output` checks the files each is
    read from): ``sources``, or when they are the tensors of one bundle with no partitioned variable (``one``: its
    reader and their rows, :meth:`BundleTensor.rows_of_one`), one of each kind (dtype, shape, data file, size: the
    tensors of a kind are read from the same files), found by C functions over the rows (no frame a tensor)."""
    if one is None or one[0].entries.slices:
        return sources
    last = dict(zip(map(one[0].entries.kind.__getitem__, one[1]), range(len(one[1]))))  # kind -> its last position
    return [sources[position] for position in sorted(last.values())]


def _planned_bytes(sources: Sequence[Source], placed: Placed, one: tuple[BundleReader, list[int]] | None) -> int:
    """:func:`~formats.io.writing.planned_bytes` of the sources not ``placed``: a bundle tensor stored whole, its
    stored size read from its index's columns (at 10^5 tensors, a tenth of an edit's CPU when each was described);
    when none is placed and they are the tensors of one bundle with no partitioned variable (``one``), summed by C
    functions over the columns (no frame a tensor)."""
    if one is not None and not placed and not one[0].entries.slices:
        columns = one[0].entries
        sizes = [size for _, _, _, size in columns.kinds]
        return sum(map(sizes.__getitem__, map(columns.kind.__getitem__, one[1])))
    total, others = 0, []
    for source in itertools.compress(sources, placed.unplaced(len(sources))):
        if type(source) is BundleTensor:
            columns, row = source.bundle.entries, source.row
            if row not in columns.slices:
                total += columns.kinds[columns.kind[row]][3]
                continue
        others.append(source)
    return total + planned_bytes(others)


def _write(out: BundleFiles, pairs: Iterable[tuple[Any, Source]], guard: OutputGuard, chunk: int, verify: bool,
           keep: bool, progress: Callable[[int, int], None] | None, jobs: int | None,
           shards: Sequence[int] | None, guarded: bool = False) -> WriteReport:
    """Write the data files and the index under temporary names, and verify them (fsyncs overlap the check).
    ``guarded``: every source was checked not to be read from an output file (:func:`guard_output`)."""
    report = WriteReport(out.prefix, "tf-name", [out.final_index, *out.finals])
    taken = _Taken()
    rows = _take_over(out, pairs, guard, progress, taken)  # the rows of the tensors taken over
    fresh = _write_fresh(out, pairs, guard, chunk, verify, keep, rows, taken, progress, shards, guarded)
    in_order = _in_order(out.layout, rows, fresh.rows)
    del rows
    report.contents = StoredRows(in_order, _stored)  # a Stored made when asked for
    report.tensors = len(in_order)
    report.bytes = fresh.bytes + sum(map(_tensor_bytes, out.layout.files))
    written = by_key(in_order)  # as the index lists them (given so, the very list)
    if _write_index(out, written, taken):
        report.format = "tf-object"
    for r in fresh.rows:
        if type(r) is _Record:
            r.entry = b""  # in the index now: not held through the read-back
    report.warnings += out.warnings
    if verify:
        from formats.tf_bundle.readback import verify_written

        report.accept(verify_written(out.temp, out.prefix, written, taken.hows(written, fresh.ways), chunk, jobs))
    out.finish_syncs()
    return report


def _in_order(layout: Layout, taken: list[Any], fresh: list[Any]) -> list[Any]:
    """The rows of the tensors taken over (``taken``: those of each of the ``layout``'s files in turn, by position)
    and ``fresh`` (the records or rows of the others, in order), in the order the tensors were given."""
    if not layout.files:
        return fresh  # (the very list)
    count = len(taken) + len(fresh)
    in_order: list[Any] = [None] * count
    done = 0
    for reused in layout.files:
        positions = reused.positions
        end = done + len(positions)
        if type(positions) is range and positions.step == 1:
            in_order[positions.start:positions.stop] = taken[done:end]
        else:
            for position, row in zip(positions, itertools.islice(taken, done, end)):
                in_order[position] = row
        done = end
    any(map(in_order.__setitem__, layout.placed.others(count), fresh))  # (each gives None)
    return in_order


def _tensor_bytes(reused: Any) -> int:
    """The bytes of the tensors of an input data file taken over (from its index's columns)."""
    return sum(reused.reader.entries.sizes_of(reused.rows))


def _stored(r: Any) -> Stored:
    """The report's line of the tensor ``r`` wrote (a record, or the row of a tensor taken over)."""
    if type(r) is _Record:
        return Stored(r.key, r.key, r.dtype, r.dtype, r.shape)
    source = r.value
    return Stored(r.key, r.key, source.dtype, source.dtype, source.shape)


_INDEXED = (list, RowPairs)
"""The pairs a write indexes by position (else it runs through them once)."""


def _pairs(tensors: Mapping[str, Source] | Iterable[tuple[str, Source]], object_graph: Any) -> Iterator[tuple[Any, Source]]:
    yield from tensors.items() if isinstance(tensors, Mapping) else tensors
    graph = _graph_pair(object_graph)
    if graph is not None:
        yield graph


def _graph_pair(object_graph: Any) -> tuple[str, TensorValue] | None:
    """The object graph's pair (given serialized or as the message), None for none."""
    if object_graph is None:
        return None
    graph = object_graph if isinstance(object_graph, bytes) else object_graph.SerializeToString()
    return OBJECT_GRAPH_KEY, TensorValue(graph, "string")


def _key_text(key: Any, prefix: str) -> str:
    """The text of the key ``key`` is written under: ``key`` itself when it is valid text (the same string, no
    copy held), else its bytes (:func:`_key_bytes`) decoded as the index reader decodes them."""
    if type(key) is str and key:
        try:
            key.encode("utf-8")  # valid: its bytes are its UTF-8 (checked, not kept)
            return key
        except UnicodeEncodeError:
            pass
    return _key_bytes(key, prefix).decode("utf-8", "surrogateescape")


def _key_bytes(key: Any, prefix: str) -> bytes:
    if type(key) is str:
        try:
            raw = key.encode("utf-8")  # valid text: what name_bytes gives, without its calls
        except UnicodeEncodeError:
            raw = name_bytes(key)
    else:
        raw = name_bytes(key if isinstance(key, bytes) else str(key))
    if not raw:
        raise InvalidOutputError(prefix, "the empty key is reserved for the bundle header")
    return raw


def _take_over(out: BundleFiles, pairs: Any, guard: OutputGuard, progress: Callable[[int, int], None] | None,
               taken: _Taken) -> list[Any]:
    """Put the input data files taken over whole in place: hard links (with ``link``), else kernel copies at
    the start of the data file, each added to ``taken``. Their entries keep their checksums; nothing passes through
    Python. The rows of their tensors, file after file: a plan's own row where its key is its text, else a
    :class:`_Pair`."""
    rows: list[Any] = []
    base = 0
    plan_rows = pairs.rows if type(pairs) is RowPairs else []
    given = len(plan_rows)
    output = guard.output
    for number, reused in enumerate(out.layout.files):
        how = LINKED
        if out.link:
            shard, offset = number, 0
            if not try_link(reused.path, out.temps[number]):
                out.warnings.append(f"{os.path.basename(reused.path)} copied, not linked: the output is on "
                                    "another file system")
                with open(out.temps[number], "xb") as f:
                    _copy_file(reused.path, f.fileno(), reused.size, 0)
                    os.fsync(f.fileno())
                how = COPIED
        else:
            shard, offset, how = 0, base, COPIED
            if out.data is None:
                out.open_data(0)
            _copy_flushing(reused.path, out.data.fileno(), reused.size, base)  # type: ignore[union-attr]
        base += reused.size
        taken.add(reused.reader, reused.shard, _Placement(offset, shard, how))
        for position in reused.positions:  # their sources guarded (guard_output)
            if position < given:
                row = plan_rows[position]  # (the plan's row itself: no pair made, no call)
                key = row.key
                if type(key) is str and key and key.isascii():
                    rows.append(row)
                    continue
                source = row.value
            else:
                key, source = pairs[position]
            rows.append(_row_of(plan_rows, position, key, _key_text(key, output), source))
        if progress is not None:
            progress(base, len(rows))
    if out.data is not None:
        out.data.seek(base)
    return rows


def _row_of(plan_rows: Sequence[Any], position: int, key: Any, text: str, source: BundleTensor) -> Any:
    """The row a tensor taken over or copied as it lies is written as (``key`` given for it, ``text`` its text): the
    plan's own row at ``position`` where the key is its text, else a :class:`_Pair`."""
    return plan_rows[position] if position < len(plan_rows) and text is key else _Pair(text, source)


def _copy_flushing(path: str, dst_fd: int, size: int, dst_offset: int) -> None:
    """Copy a whole input data file in the kernel, piece by piece, its pieces going to disk while the next
    ones are copied (rather than all of it at the final fsync)."""
    step = _BackgroundSync.EVERY
    with open(path, "rb") as src, _BackgroundSync(dst_fd) as syncer:  # an input is only ever opened read-only
        for start in range(0, size, step):
            n = min(step, size - start)
            copy_range(src.fileno(), dst_fd, n, start, dst_offset + start)
            syncer.wrote(n)


def _copy_file(path: str, dst_fd: int, size: int, dst_offset: int) -> None:
    _copy_range_of(path, dst_fd, size, 0, dst_offset)


def _copy_range_of(path: str, dst_fd: int, size: int, src_offset: int, dst_offset: int) -> None:
    with open(path, "rb") as src:  # an input is only ever opened read-only
        copy_range(src.fileno(), dst_fd, size, src_offset, dst_offset)


class _Fresh:
    """What :func:`_write_fresh` wrote: the ``rows`` of the tensors not taken over, in the order given - a
    :class:`_Record` for one written fresh or copied alone, the row given for one copied in a run of
    :class:`_Copied` - their ``bytes``, and the ``ways`` the records' bytes got there."""

    __slots__ = ("rows", "bytes", "ways")

    def __init__(self) -> None:
        self.rows: list[Any] = []
        self.bytes = 0
        self.ways: set[str] = set()


def _write_fresh(out: BundleFiles, pairs: Iterable[tuple[Any, Source]], guard: OutputGuard, chunk: int,
                 verify: bool, keep: bool, taken_rows: list[Any], taken: _Taken,
                 progress: Callable[[int, int], None] | None = None, shards: Sequence[int] | None = None,
                 guarded: bool = False) -> _Fresh:
    """Write every tensor not taken over, in the order given (``taken_rows``: the rows of those taken over), to the
    fresh data file - or, with ``shards``, to the data file of its number, one file after the other. A bundle
    tensor stored whole is copied as it lies and written as its row, its run's place kept in ``taken``. A key
    written twice is refused as the index is written (:func:`_write_index`: neighbours once sorted), not looked up
    in a set of every key here."""
    fresh = _Fresh()
    if out.fresh_shard is None:
        return fresh
    rows, ways = fresh.rows, fresh.ways
    plan_rows = pairs.rows if type(pairs) is RowPairs else []
    given = len(plan_rows)
    output = guard.output
    count = len(taken_rows)  # the tensors written so far (for ``progress``)
    groups = _numbered(out, pairs, shards)
    group = next(groups, None)
    before = sum(f.size for f in out.layout.files)  # the bytes and tensors _take_over reported
    done = before
    for shard in range(out.fresh_shard, out.shards):
        data = out.data if shard == out.fresh_shard and out.data is not None else out.open_data(shard)
        offset = data.tell()
        items = group[1] if group is not None and group[0] == shard else ()
        whole = WholeCheck()
        run = _Run(data, taken)
        take = run.take
        with _BackgroundSync(data.fileno()) as syncer:
            for position, key, source in items:
                text = key if type(key) is str and key and key.isascii() else _key_text(key, output)  # (ASCII: valid)
                if not guarded:  # a source met here first (a one-shot iterator's)
                    guard.check_source(source)
                size = -1  # (copied as it lies: its bytes)
                if type(source) is BundleTensor:
                    size = take(source, offset, shard, whole)
                    if size < 0:
                        run.flush()
                        size = _copy_alone(data, source, offset, shard, whole, taken)
                if size >= 0:  # (the plan's row itself where its key is its text: _row_of, inline)
                    rows.append(plan_rows[position] if position < given and text is key else _Pair(text, source))
                else:
                    run.flush()
                    record = _write_tensor(data, text, source, offset, chunk, verify, keep, shard, whole=whole)
                    size = record.size
                    ways.add(record.how)
                    rows.append(record)
                offset += size
                done += size
                count += 1
                syncer.wrote(size)
                if progress is not None:
                    progress(done, count)
            run.flush()
            data.flush()
            syncer.close()
        out.sync_in_background(data)
        if group is not None and group[0] == shard:
            group = next(groups, None)
    fresh.bytes = done - before
    return fresh


def _numbered(out: BundleFiles, pairs: Iterable[tuple[Any, Source]],
              shards: Sequence[int] | None) -> Iterator[tuple[int, Iterator[tuple[int, Any, Source]]]]:
    """``(shard, its tensors)`` for each data file written to, in order, its tensors ``(position, key, source)``
    among those not taken over: by the shard numbers given (never decreasing, one per tensor, the object graph
    included), else all of them in the fresh data file."""
    if shards is None:
        yield out.fresh_shard, _not_placed(out, pairs)  # type: ignore[misc]
        return
    yield from ((shard, (item[1:] for item in items))
                for shard, items in itertools.groupby(_shard_numbered(out, pairs, shards), key=_FIRST))


_FIRST = itemgetter(0)


def _not_placed(out: BundleFiles, pairs: Iterable[tuple[Any, Source]]) -> Iterator[tuple[int, Any, Source]]:
    """``(position, key, source)`` of every tensor not taken over, in order (a plan's rows read as they are: no pair
    made for one)."""
    placed = out.layout.placed
    if type(pairs) is RowPairs:
        plan_rows, given = pairs.rows, len(pairs.rows)
        for position in placed.others(len(pairs)):
            if position < given:
                row = plan_rows[position]
                yield position, row.key, row.value
            else:
                yield (position, *pairs[position])
    elif isinstance(pairs, _INDEXED):
        yield from ((position, *pairs[position]) for position in placed.others(len(pairs)))
    else:
        yield from ((position, key, source) for position, (key, source) in enumerate(pairs) if position not in placed)


def _shard_numbered(out: BundleFiles, pairs: Iterable[tuple[Any, Source]],
                    shards: Sequence[int]) -> Iterator[tuple[int, int, Any, Source]]:
    """``(shard, position, key, source)`` for every tensor not taken over, by the shard numbers given."""
    numbers, previous = iter(shards), 0
    for item in _not_placed(out, pairs):
        shard = next(numbers, None)
        if shard is None or shard < previous:
            raise InvalidOutputError(out.prefix, "shards must give a never-decreasing data file number for every "
                                     "tensor, the object graph included" if shard is not None else
                                     "fewer shard numbers than tensors (the object graph included)")
        previous = shard
        yield (shard, *item)
    if next(numbers, None) is not None:
        raise InvalidOutputError(out.prefix, "more shard numbers than tensors (the object graph included)")


def _shard_count(prefix: str, shards: Sequence[int] | None) -> int:
    """How many data files ``shards`` asks for (1 when None)."""
    if shards is None:
        return 1
    if any(not isinstance(s, int) or s < 0 for s in shards):
        raise InvalidOutputError(prefix, "shard numbers must be integers from 0")
    return max(shards, default=0) + 1


def write_data_file(out: BinaryIO, pairs: Iterable[tuple[str, Source]], shard: int, prefix: str = "",
                    chunk: int = CHUNK) -> list[tuple[bytes, bytes]]:
    """Write ``pairs`` one after another into ``out``, from its start, as data file number ``shard`` of a bundle
    (each tensor's bytes as :func:`write_checkpoint` writes them, none copied in the kernel: ``out`` may be a
    stream to object storage); return each tensor's ``(key, entry)``, its row of the index. One data file of a
    checkpoint written by a unit on a cluster (:mod:`formats.ops.edit.on_cluster`)."""
    rows: list[tuple[bytes, bytes]] = []
    offset = 0
    for key, source in pairs:
        record = _write_tensor(out, _key_text(key, prefix), source, offset, chunk, False, True, shard, kernel=False)
        rows.append((key_bytes_of(record.key), record.entry))
        offset += record.size
    return rows


def index_bytes(num_shards: int, rows: Iterable[tuple[bytes, bytes]]) -> bytes:
    """A bundle's index: the header for ``num_shards`` data files, then ``rows`` (``(key, entry)``) by key."""
    import io

    table = TableWriter(buffer := io.BytesIO())
    table.add(b"", encode_header(num_shards=num_shards))
    table.add_all(sorted(rows))
    table.finish()
    return buffer.getvalue()


def _write_tensor(out: BinaryIO, key: str, source: Source, offset: int, chunk: int,
                  verify: bool, keep: bool, shard: int = 0, kernel: bool = True,
                  whole: WholeCheck | None = None) -> _Record:
    copied = _kernel_copy(out, source, offset, whole) if kernel else None
    if copied is not None:
        dtype, shape, size, crc = copied
        return _Record(key, encode_entry(dtype, shape, offset, size, crc, shard), size, source.dtype, shape,
                       how=COPIED, value=source)
    dt, shape = describe(source)
    name = key
    h = _sha256() if verify and not (keep or _unchanging(source)) else None
    if dt.fixed_width:
        size, crc = _copy_fixed(out, source, chunk, h)
        expected_size = math.prod(shape) * dt.itemsize
        if size != expected_size:
            raise CorruptCheckpointError(name, f"source gave {size} bytes for shape {list(shape)} of {dt.name}, "
                                         f"expected {expected_size}")
    else:
        values = elements(source)
        if len(values) != math.prod(shape):
            raise CorruptCheckpointError(name, f"source gave {len(values)} elements for shape {list(shape)}")
        pieces, crc = (string_layout if dt.enum == dtypes.STRING else variant_layout)(values)
        size = 0
        for piece in pieces:
            out.write(piece)
            size += len(piece)
        for value in values if h is not None else ():
            digest_update(h, value)
    entry = encode_entry(dt.enum, shape, offset, size, mask(crc), shard)
    expected = source if h is None else Digest(dt.name, shape, h.hexdigest())
    return _Record(key, entry, size, dt.name, tuple(shape), expected if verify else None)


def _unchanging(source: Source) -> bool:
    """Whether a source can be compared with what was written after the write, as it is: a checkpoint entry,
    or an immutable string (the object graph); other values get a digest taken while they are written."""
    return isinstance(source, TensorEntry) or (isinstance(source, TensorValue) and isinstance(source.value, (bytes, str)))


SMALL_COPY = 1 << 16
"""A tensor of at most this many bytes is copied through the output's buffer, not by a kernel copy of its own
(opening its data file, flushing the output and seeking again cost more than the bytes, once per tensor)."""


def _kernel_copy(out: BinaryIO, source: Source, offset: int,
                 whole: WholeCheck | None = None) -> tuple[int, tuple[int, ...], int, int] | None:
    """Copy a bundle tensor's stored bytes (any dtype) straight from its data file in the kernel; the dtype,
    shape, size and masked CRC32C of its entry (read from the index's columns), or None when it has none to take
    over (see :func:`formats.tf_bundle.layout.stored_whole`; ``whole``: the check, kept over the tensors of one
    write)."""
    if not isinstance(source, BundleTensor):
        return None
    reader, row = source.bundle, source.row
    shard = (whole or WholeCheck()).where(reader, row)
    if shard < 0:
        return None
    columns = reader.entries
    dtype, shape, _, size = columns.kinds[columns.kind[row]]
    _copy_stored(out, reader, shard, columns.offset[row], size, offset)
    return dtype, shape, size, columns.crc[row]


def _copy_alone(out: BinaryIO, source: BundleTensor, offset: int, shard: int, whole: WholeCheck,
                taken: _Taken) -> int:
    """Copy a bundle tensor stored whole to ``offset`` of data file ``shard`` (``out``), its place kept in its file's
    :class:`_Copied` (no record); its size, or -1 when it is not copied so (not stored whole, or copied already: it
    is written with a record)."""
    reader, row = source.bundle, source.row
    where = whole.where(reader, row)
    if where < 0:
        return -1
    columns = reader.entries
    size = columns.kinds[columns.kind[row]][3]
    at = columns.offset[row]
    copied = taken.copied(reader, where)
    if copied is None or not copied.place(row, offset, shard):
        return -1
    _copy_stored(out, reader, where, at, size, offset)
    return size


def _copy_stored(out: BinaryIO, reader: Any, shard: int, at: int, size: int, offset: int) -> None:
    """Copy ``size`` bytes at ``at`` of data file ``shard`` of ``reader``'s bundle to ``offset`` of ``out``: a tiny
    tensor's through the buffer, else in the kernel."""
    if size <= SMALL_COPY and out.tell() == offset:  # a tiny tensor: its bytes through the buffer
        data = reader.peek(shard, at, size)
        if len(data) == size:
            out.write(data)
            return
    out.flush()
    _copy_range_of(reader.data_paths[shard], out.fileno(), size, at, offset)
    out.seek(offset + size)


class _Run:
    """Tiny bundle tensors copied as they lie: those adjacent in one input data file gathered into one read and one
    write of the output (:data:`RUN_BYTES` at most), each run's place kept in its file's :class:`_Copied` (an
    edit's selection of 100,000 tiny tensors: a few hundred reads, not one per tensor, and no record a tensor)."""

    def __init__(self, out: BinaryIO, taken: _Taken) -> None:
        self.out, self.taken = out, taken
        self.reader: Any = None
        self.shard = -1
        self.start = self.end = 0
        self.copied: _Copied | None = None  # where the input's tensors went
        self.pieces: list[tuple[int, int, int]] = []  # (offset in the input, size, offset in the output)

    def take(self, source: BundleTensor, offset: int, shard: int, whole: WholeCheck) -> int:
        """The size of ``source`` when it is a tiny tensor stored whole, taken to be written at ``offset`` of data
        file ``shard`` (its bytes to follow at :meth:`flush`, its place kept in its file's :class:`_Copied`), else
        -1 (copied already, or not a tiny tensor stored whole)."""
        reader, row = source.bundle, source.row
        columns = reader.entries
        size = columns.kinds[columns.kind[row]][3]
        if size > SMALL_COPY:
            return -1
        where = whole.where(reader, row)
        if where < 0:
            return -1
        at = columns.offset[row]
        if reader is not self.reader or where != self.shard or at != self.end or self.end - self.start >= RUN_BYTES:
            copied = self.taken.copied(reader, where)
            if copied is None or not copied.place(row, offset, shard):
                return -1
            self.flush()
            self.reader, self.shard, self.start, self.end, self.copied = reader, where, at, at, copied
        elif not self.copied.place(row, offset, shard):  # type: ignore[union-attr]
            return -1
        self.pieces.append((at, size, offset))
        self.end = at + size
        return size

    def flush(self) -> None:
        """Write the bytes of the tensors taken since the last flush."""
        if not self.pieces:
            return
        data = self.reader.peek(self.shard, self.start, self.end - self.start)
        if len(data) == self.end - self.start:
            self.out.write(data)
        else:  # the input shorter than its index says: each tensor copied as it can be (the read-back tells)
            for at, size, offset in self.pieces:
                self.out.flush()
                _copy_range_of(self.reader.data_paths[self.shard], self.out.fileno(), size, at, offset)
                self.out.seek(offset + size)
        self.pieces = []
        self.reader = self.copied = None


RUN_BYTES = 1 << 20
"""The bytes of tiny tensors gathered into one read at most."""


def _sha256() -> Any:
    import hashlib

    return hashlib.sha256()


def _copy_fixed(out: BinaryIO, source: Source, chunk: int, h: Any) -> tuple[int, int]:
    # bytes copied unchanged from a bundle: their CRC is the stored one, checked as they stream by
    same_bytes = (isinstance(source, BundleTensor) and not source.raw.slices
                  and not source.bundle.header.big_endian)
    size = crc = 0
    for piece in fixed_chunks(source, chunk):
        out.write(piece)
        if not same_bytes:
            crc = crc32c(piece, crc)
        size += len(piece)
        if h is not None:
            h.update(piece)
    return size, unmask(source.raw.crc32c) if same_bytes else crc


def _write_index(out: BundleFiles, records: list[Any], taken: _Taken) -> bool:
    """The index of ``records`` (sorted by key, :func:`~formats.tf_bundle.origins.by_key`), flushed to disk in the
    background (joined before publishing); whether it holds an object graph. A key written twice is refused, named."""
    keys, after = map(record_key, records), map(record_key, itertools.islice(records, 1, None))
    if any(map(str.__eq__, keys, after)):  # neighbours once sorted (no set of every key, no list of them)
        twice = next(a for a, b in zip(map(record_key, records), map(record_key, records[1:])) if a == b)
        raise InvalidOutputError(out.prefix, f"duplicate key {twice!r}")
    graph = OBJECT_GRAPH_KEY in map(record_key, records)
    index = out.index
    assert index is not None
    _write_table(index, out.shards, records, taken)
    if out.settled_index is not None:  # the same index under the shard count the bundle settles at
        with open(out.settled_index, "xb") as settled:
            _write_table(settled, out.shards - out.empty, records, taken)
            settled.flush()
            os.fsync(settled.fileno())
    if out.syncing:  # data going to disk: the index goes too while the read-back checks what was written
        out.sync_in_background(index)
    else:  # only the index is new (linked data files): a thread would cost more than it overlaps
        index.flush()
        os.fsync(index.fileno())
    return graph


def _write_table(f: BinaryIO, shards: int, records: list[Any], taken: _Taken) -> None:
    table = TableWriter(f)
    table.add(b"", encode_header(num_shards=shards))
    table.add_all(zip(map(_record_key_bytes, records), _entries(records, taken)))
    table.finish()


def _record_key_bytes(record: Any) -> bytes:
    return record.key.encode("utf-8", "surrogateescape")  # (key_bytes_of, inline)


def _entries(records: list[Any], taken: _Taken) -> Iterator[bytes]:
    """Each record's entry: its own, or made from its source where it was taken over or copied; those of the one
    input data file taken over whole or copied from made a run of :data:`ENTRIES_AT_ONCE` with arrays, once numpy is
    imported (a large index was found with arrays) and the input's index is held in arrays."""
    entry, only, np = taken.entry, taken.only, imported_numpy()

    def one_at_a_time(run: list[Any]) -> Iterator[bytes]:
        return (r.entry if type(r) is _Record else entry(r.value) for r in run)

    first = next((r for r in records if type(r) is not _Record), None)
    if np is None or only is None or first is None or type(first.value.bundle.entries.offset) is list or \
            len(records) < ENTRIES_AT_ONCE:
        yield from one_at_a_time(records)
        return
    columns = first.value.bundle.entries
    for lo in range(0, len(records), ENTRIES_AT_ONCE):
        run = records[lo:lo + ENTRIES_AT_ONCE]
        ours = [type(r) is not _Record for r in run]
        rows = np.array([r.value.row for r in itertools.compress(run, ours)], np.int64)
        made = only.entries(np, columns, rows) if len(rows) else []
        if made is None:
            yield from one_at_a_time(run)
        elif len(made) == len(run):
            yield from made
        else:
            them = iter(made)
            yield from (next(them) if mine else r.entry for r, mine in zip(run, ours))


ENTRIES_AT_ONCE = 4096
"""Entries of tensors taken over made at once with arrays (see :func:`_entries`)."""
