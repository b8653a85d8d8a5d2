"""The bundle writer's read-back: is what was written under temporary names what was meant?

Each tensor is checked as its bytes got there (:mod:`formats.tf_bundle.writer`):

* written fresh: read back and compared with its source (or the digest taken while writing);
* copied by the kernel from an input data file: its bytes checked, straight from the memory map
  (no copy), against the checksum its entry carries - the input's own;
* in a hard-linked input data file: its entry checked to point at the input's bytes (same offset,
  size and checksum) in a file that is the input's own (same inode) - no byte is read.

Tensors are checked on ``jobs`` threads. A copied tensor whose bytes do not match is looked up in
its input: a damaged input is reported as such (not as a failed write).
"""
from __future__ import annotations

import os
from _bisect import bisect_right  # bisect's C half, without its module (start-up)
from itertools import repeat

from formats.core.errors import CheckpointError
from formats.core.parallel import map_ordered
from formats.core.roundtrip import Mismatch, RoundTripReport, compare_checkpoints
from formats.io.crc import crc32c, mask_all, unmask
from formats.core.imported import imported_numpy
from formats.io.crc_arrays import PIECE_BYTES, crc32c_pieces, mask_array
from formats.io.writing import check_roundtrip
from formats.tf_bundle.checkpoint import BundleCheckpoint
from formats.tf_bundle.origins import COPIED, FRESH, LINKED, record_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

__all__ = ["verify_written"]


def verify_written(temp: str, prefix: str, records: list[Any], hows: str | list[str], chunk: int,
                   jobs: int | None) -> RoundTripReport:
    """Check the bundle written at ``temp`` against ``records`` (each with its ``key`` and source, ``value``; one
    written fresh with what it is ``expected`` to hold), in the order of its index
    (:func:`~formats.tf_bundle.origins.sort_by_key`), each of which got there as ``hows`` says (one text: all of
    them); raises VerificationError on a mismatch."""
    ordered = records  # in the index's order, as the writer wrote it (sort_by_key)
    how = _Hows(hows, len(ordered))
    written = BundleCheckpoint(temp, like=map(record_key, ordered))  # the keys held as the records' strings
    try:
        texts = written.reader.entries.texts
        if len(texts) == len(ordered) and all(map(str.__eq__, texts, map(record_key, ordered))):
            report = _by_row(written, ordered, how, prefix, chunk, jobs)
        else:  # a key missing or unexpected: each tensor looked up by its key, every difference named
            report = _by_key(written, records, how, prefix, chunk, jobs)
    finally:
        written.close()
    return check_roundtrip(prefix, report)


class _Hows:
    """How each of the records (by their place in the index's order) got there: one text for them all, or a list."""

    __slots__ = ("_all", "_each", "_count")

    def __init__(self, hows: str | list[str], count: int) -> None:
        self._all: str = hows if isinstance(hows, str) else ""
        self._each: list[str] | None = None if isinstance(hows, str) else hows
        self._count = count  # the records'

    def __getitem__(self, i: int) -> str:
        return self._all if self._each is None else self._each[i]

    def rows(self, *ways: str) -> Sequence[int]:
        """The places of the records that got there one of ``ways``: a range when they all did, else an array (no int
        a row)."""
        each = self._each
        if each is None:
            return range(self._count) if self._all in ways else ()
        if all(map(ways.__contains__, each)):
            return range(len(each))
        from itertools import compress

        rows = compress(range(len(each)), map(ways.__contains__, each))
        if len(each) < _SMALL:  # (array imports collections: not for a small bundle)
            return list(rows)
        from array import array

        return array("q", rows)  # 8 bytes a row, no int held


def _by_row(written: BundleCheckpoint, records: list[Any], how: _Hows, prefix: str, chunk: int,
            jobs: int | None) -> RoundTripReport:
    """The read-back when the index holds the keys of ``records`` (sorted by key) in its rows, in order: a
    copied tensor is checked from the index's columns by its row, no tensor object made for it."""
    fresh = {records[row].key: records[row].expected for row in how.rows(FRESH)}
    report = compare_checkpoints({k: written[k] for k in fresh}, fresh, path=prefix, against="sources",
                                 chunk=chunk, check_crc=False, jobs=jobs)
    taken = how.rows(COPIED, LINKED)
    copied = how.rows(COPIED)  # bytes read: on every core
    columns = written.reader.entries
    batches = _batches(copied, list(columns.sizes_of(copied)))
    checked = map_ordered(lambda batch: _copied_rows(written, batch[0], records), batches, jobs,
                          weight=lambda batch: batch[1])
    found = {row: problem for (rows, _), problems in zip(batches, checked) if problems is not None
             for row, problem in zip(rows, problems) if problem is not None}  # the copied rows that do not match
    if len(copied) == len(taken):  # every tensor copied (none linked): no step a row
        report.mismatches += [Mismatch(records[row].key, "value", problem) for row, problem in found.items()]
    else:
        inodes = _Inodes()
        for row in taken:  # linked: entries and inodes compared, no byte read
            record = records[row]
            problem = _linked_row(written, row, record.value, inodes) if how[row] == LINKED else found.get(row)
            if problem is not None:
                report.mismatches.append(Mismatch(record.key, "value", problem))
    report.tensors += len(taken)
    report.bytes += sum(columns.sizes_of(taken))  # as written (checked above)
    return report


def _by_key(written: BundleCheckpoint, records: list[Any], how: _Hows, prefix: str, chunk: int,
            jobs: int | None) -> RoundTripReport:
    """The read-back by key: what is missing from the index, what it holds that was not written, and every
    tensor written compared with what was meant."""
    by_key = {r.key: (r, how[i]) for i, r in enumerate(records)}
    fresh = {k: r.expected for k, (r, way) in by_key.items() if way == FRESH}
    report = compare_checkpoints({k: written[k] for k in fresh if k in written}, fresh, path=prefix,
                                 against="sources", chunk=chunk, check_crc=False, jobs=jobs)
    report.mismatches += [Mismatch(k, "missing", "not in the output") for k in by_key if k not in written]
    report.mismatches += [Mismatch(k, "unexpected", "not in the source") for k in written if k not in by_key]
    taken = [k for k, (_, way) in by_key.items() if way != FRESH and k in written]
    inodes = _Inodes()
    for key in taken:
        (record, way), entry = by_key[key], written[key]
        problem = _copied_problem(entry, record.value) if way == COPIED else \
            _linked_problem(entry, record.value, inodes)
        if problem is not None:
            report.mismatches.append(Mismatch(key, "value", problem))
        report.bytes += entry.nbytes  # (as written)
    report.tensors += len(taken)
    return report


_SMALL = 4096
"""Fewer records than this: the places of some of them are a list (more: an array)."""

BATCH_BYTES = 1 << 20
"""Copied tensors are checked on the threads in batches of about this many bytes (a tensor as large alone):
one task per tensor costs more than checking a tiny one."""


def _batches(keys: Sequence[int], sizes: list[int]) -> list[tuple[Sequence[int], int]]:
    """``keys`` (rows) in runs of consecutive ones of about :data:`BATCH_BYTES` together (at most 4096), each
    with its bytes: the tasks of the read-back, in order (slices of ``keys``: of a range, ranges)."""
    out: list[tuple[Sequence[int], int]] = []
    begin = total = 0
    for end, size in enumerate(sizes):
        if end > begin and (total + size > BATCH_BYTES or end - begin >= 4096):
            out.append((keys[begin:end], total))
            begin, total = end, 0
        total += size
    if begin < len(sizes):
        out.append((keys[begin:], total))
    return out


def _copied_rows(written: BundleCheckpoint, rows: Sequence[int], records: list[Any]) -> list[str | None] | None:
    """:func:`_copied_problem` of the tensor in each of ``rows`` (``records[row]`` wrote it), or None when every one
    matches its checksum (no list a batch held to the end of the read-back): the fixed-width tensors lying end to
    end in a data file read with one ``pread`` (of at most :data:`BATCH_BYTES`) and their CRC32Cs taken over it,
    from the index's columns; any other tensor, and one whose bytes do not match, checked alone."""
    reader = written.reader
    columns = reader.entries
    offsets, crcs, kinds, kind = columns.offset, columns.crc, columns.kinds, columns.kind
    sizes = [size for _, _, _, size in kinds]
    plain: dict[int, bool] = {}  # kind -> whether its tensors lie as plain byte ranges (bounds: checked by pread)

    def whole(row: int) -> bool:
        if row in columns.slices:
            return False
        found = plain.get(kind[row])
        if found is None:
            where = reader.row_range(row)
            found = plain[kind[row]] = where is not None and where[2] <= BATCH_BYTES
        return found

    def alone(k: int) -> None:
        row = rows[k]
        problems[k] = _copied_problem(written[columns.texts[row]], records[row].value)

    if _sound_run(reader, rows, whole):
        return None
    problems: list[str | None] = [None] * len(rows)
    i = 0
    while i < len(rows):
        if not whole(rows[i]):
            alone(i)
            i += 1
            continue
        shard = kinds[kind[rows[i]]][2]
        start = offsets[rows[i]]
        end, j = start + kinds[kind[rows[i]]][3], i + 1
        while j < len(rows):
            row = rows[j]
            _, _, in_shard, size = kinds[kind[row]]
            if in_shard != shard or offsets[row] != end or end + size - start > BATCH_BYTES or not whole(row):
                break
            end += size
            j += 1
        fd = os.open(reader.data_paths[shard], os.O_RDONLY)
        try:
            view = memoryview(os.pread(fd, end - start, start))
        finally:
            os.close(fd)
        length = len(view)
        for k in range(i, j):
            row = rows[k]
            at = offsets[row] - start
            size = sizes[kind[row]]
            if at + size > length or crc32c(view[at:at + size]) != unmask(crcs[row]):
                alone(k)
        i = j
    return problems if problems.count(None) != len(problems) else None


SOUND_RUN_ROWS = 64
"""Fewer copied rows than this are checked one by one (a small bundle's writing imports no ``array``)."""


def _sound_run(reader: Any, rows: Sequence[int], whole: Callable[[int], bool]) -> bool:
    """Whether ``rows`` are tensors of one data layout in one data file (each a plain byte range, ``whole``), read
    in windows of at most :data:`BATCH_BYTES` (one ``pread`` each, by offset) and every one matching the checksum
    its entry carries. The usual batch of tiny tensors, checked without a Python step per tensor: the columns
    gathered, the pieces sliced and their CRC32Cs taken, all by ``map`` over C functions, masked at once
    (:func:`~formats.io.crc.mask_all`) and compared with the stored ones. False when any of that does not hold
    (the caller then checks the rows one by one, which names what is wrong)."""
    columns = reader.entries
    n = len(rows)
    if n < SOUND_RUN_ROWS or columns.slices and any(map(columns.slices.__contains__, rows)):
        return False
    np = imported_numpy()
    found = None if np is None else columns.arrays_of(np, rows)  # (a large index's run of rows: arrays)
    if found is not None:
        kind_of, found_offsets, found_crcs = found
        if (kind_of != kind_of[0]).any():
            return False
        kind = int(kind_of[0])
    else:
        kinds = set(map(columns.kind.__getitem__, rows))
        if len(kinds) != 1:
            return False
        kind = kinds.pop()
    _, _, shard, size = columns.kinds[kind]
    if size <= 0 or size > BATCH_BYTES or not whole(rows[0]):
        return False
    if np is not None and size <= PIECE_BYTES:  # tiny tensors: a byte of each a step, with arrays
        if found is None:  # (rows listed, or a small index's list columns: their columns gathered into arrays)
            found_offsets = np.fromiter(map(columns.offset.__getitem__, rows), np.int64, n)
            found_crcs = np.fromiter(map(columns.crc.__getitem__, rows), np.uint64, n)
        return _sound_arrays(np, reader.data_paths[shard], size, found_offsets, found_crcs)
    offsets = list(map(columns.offset.__getitem__, rows))
    order = sorted(range(n), key=offsets.__getitem__)
    offsets = list(map(offsets.__getitem__, order))
    got: list[int] = []
    fd = os.open(reader.data_paths[shard], os.O_RDONLY)
    try:
        first = 0
        while first < n:  # a window: the tensors from ``first`` whose bytes end within BATCH_BYTES of its start
            start = offsets[first]
            last = bisect_right(offsets, start + BATCH_BYTES - size, first + 1)
            data = os.pread(fd, offsets[last - 1] + size - start, start)
            if len(data) != offsets[last - 1] + size - start:
                return False
            at = list(map(int.__sub__, offsets[first:last], repeat(start)))
            got += map(crc32c, map(data.__getitem__, map(slice, at, map(int.__add__, at, repeat(size)))))
            first = last
    finally:
        os.close(fd)
    from array import array  # (array imports collections: not for a small bundle)

    return mask_all(got) == array("Q", map(columns.crc.__getitem__, map(rows.__getitem__, order)))  # (as stored)


def _sound_arrays(np: Any, path: str, size: int, offsets: Any, crcs: Any) -> bool:
    """:func:`_sound_run` of tiny tensors (``size`` bytes, at most :data:`~formats.io.crc_arrays.PIECE_BYTES`) in
    the data file at ``path`` whose ``offsets`` and stored ``crcs`` are arrays (:meth:`IndexColumns.arrays_of`, or
    gathered from listed rows): ordered, windowed and compared with arrays, no Python step a tensor."""
    if not (offsets[1:] >= offsets[:-1]).all():
        order = np.argsort(offsets, kind="stable")
        offsets, crcs = offsets[order], crcs[order]
    got: list[Any] = []
    fd = os.open(path, os.O_RDONLY)
    try:
        first, n = 0, len(offsets)
        while first < n:  # a window: the tensors from ``first`` whose bytes end within BATCH_BYTES of its start
            start = int(offsets[first])
            last = first + 1 + int(np.searchsorted(offsets[first + 1:], start + BATCH_BYTES - size, "right"))
            length = int(offsets[last - 1]) + size - start
            data = os.pread(fd, length, start)
            if len(data) != length:
                return False
            got.append(crc32c_pieces(np, data, offsets[first:last] - start, size))
            first = last
    finally:
        os.close(fd)
    return bool((mask_array(np, np.concatenate(got)) == crcs).all())


def _copied_problem(entry: Any, source: Any) -> str | None:
    """Why bytes copied from ``source``'s data file do not match its checksum; raises the input's own
    error when the input is what is damaged."""
    try:
        entry.check()
        return None
    except CheckpointError as exc:
        source.check()  # the input's bytes: a ChecksumError here names the input
        return f"copied bytes do not match their checksum: {exc.message}"


class _Inodes:
    """``(st_dev, st_ino)`` of data files, each looked up once per read-back."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[int, int]] = {}

    def of(self, path: str) -> tuple[int, int]:
        """The file's device and inode number."""
        if path not in self._known:
            st = os.stat(path)
            self._known[path] = (st.st_dev, st.st_ino)
        return self._known[path]


def _linked_row(written: BundleCheckpoint, row: int, source: Any, inodes: _Inodes) -> str | None:
    """:func:`_linked_problem` of the tensor in ``row`` of the written index, read from the columns of both
    indexes (a linked tensor is an input's :class:`BundleTensor`, stored whole)."""
    mine, theirs = written.reader.entries, source.bundle.entries
    dtype, shape, shard, size = mine.kinds[mine.kind[row]]
    raw_dtype, raw_shape, raw_shard, raw_size = theirs.kinds[theirs.kind[source.row]]
    if (raw_dtype, raw_shape, raw_size, theirs.offset[source.row], theirs.crc[source.row]) != \
            (dtype, shape, size, mine.offset[row], mine.crc[row]) or row in mine.slices:
        return "the index entry does not point at the input's bytes"
    if inodes.of(written.reader.data_paths[shard]) != inodes.of(source.bundle.data_paths[raw_shard]):
        return "the data file is not the input's own (not a hard link of it)"
    return None


def _linked_problem(entry: Any, source: Any, inodes: _Inodes) -> str | None:
    """Why a tensor in a linked data file is not the input's: another entry, or another file."""
    raw, mine = source.raw, entry.raw
    if (raw.dtype, tuple(raw.shape), raw.offset, raw.size, raw.crc32c) != \
            (mine.dtype, tuple(mine.shape), mine.offset, mine.size, mine.crc32c):
        return "the index entry does not point at the input's bytes"
    ours = inodes.of(entry.bundle.data_paths[mine.shard_id])
    if ours != inodes.of(source.bundle.data_paths[raw.shard_id]):
        return "the data file is not the input's own (not a hard link of it)"
    return None
