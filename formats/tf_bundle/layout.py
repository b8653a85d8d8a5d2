"""Which data files an output bundle takes over whole from its input bundles.

A rename, a name <-> object conversion or a selection of every tensor of a data file writes the
same bytes again under other keys. :func:`plan_layout` finds the input data files whose every
stored byte goes to the output unchanged - each of their tensors is a source, once, and they tile
the file exactly - so the writer copies them in the kernel (``copy_file_range``) or hard-links
them, and writes only the index (and the tensors that are new) itself. Bytes are taken over only
from little-endian, local bundles, and never from a partitioned variable (its slices are
reassembled into one tensor).

A file may also hold the input's object graph (``_CHECKPOINTABLE_OBJECT_GRAPH``) when the output
does not take it over - a rename of an object-based checkpoint writes a new graph. Hard-linked
(``link``), the file is shared as it is and the new graph goes to a data file of its own: the old
one's bytes stay in the shared file, where no entry of the output's index points. Copied, the file
is taken over only when the old graph is last in it (as TensorFlow writes it), and only the bytes
before it are copied: a copy holds nothing but the output's tensors.
"""
from __future__ import annotations

import itertools
import math
import os

from formats.core import dtypes
from formats.core.errors import CheckpointError
from formats.core.imported import imported_numpy
from formats.io import storage
from formats.tf_bundle.checkpoint import BundleTensor
from formats.tf_bundle.reader import OBJECT_GRAPH_KEY, BundleReader, RawEntry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence
    from typing import Any

__all__ = ["Reused", "Layout", "Placed", "plan_layout", "stored_whole", "WholeCheck"]

_GRAPH = OBJECT_GRAPH_KEY.encode()


class Reused:
    """An input data file taken over whole: its path, size, the reader that knows its entries, and
    the positions (in the writer's list of sources) of the tensors stored in it."""

    __slots__ = ("path", "size", "reader", "shard", "positions", "rows")

    def __init__(self, path: str, size: int, reader: BundleReader, shard: int, positions: Sequence[int]) -> None:
        self.path, self.size, self.reader, self.shard = path, size, reader, shard
        self.positions: Sequence[int] = positions
        self.rows: Sequence[int] = []  # the row of the tensor at each of ``positions`` in ``reader``'s index


class Placed:
    """The positions of the sources taken over (``position in placed``, ``len(placed)``): a byte per source."""

    __slots__ = ("_mask", "_count")

    def __init__(self, size: int = 0, positions: Iterable[int] = ()) -> None:
        self._mask = bytearray(size)
        for p in positions:
            self._mask[p] = 1
        self._count = self._mask.count(1)

    def __contains__(self, position: object) -> bool:
        return isinstance(position, int) and 0 <= position < len(self._mask) and self._mask[position] == 1

    def __len__(self) -> int:
        return self._count

    def others(self, count: int) -> Iterator[int]:
        """The positions below ``count`` not taken over, in order (found a run of the mask at a time)."""
        mask, i = self._mask, 0
        while i < count:
            found = mask.find(0, i, count)
            if found < 0:
                yield from range(max(i, len(mask)), count)
                return
            end = mask.find(1, found, count)  # (past the mask, none is taken over)
            yield from range(found, count if end < 0 else end)
            if end < 0:
                return
            i = end

    def unplaced(self, count: int) -> bytes:
        """A byte for each position below ``count``: 1 where it is not taken over (for ``itertools.compress``)."""
        mask = bytes(self._mask[:count]).translate(_FLIPPED)
        return mask + b"\x01" * (count - len(mask))


_FLIPPED = bytes([1, 0, *bytes(254)])
"""``bytes.translate``'s table turning a mask's 0 into 1 and 1 into 0."""


class Layout:
    """``files``: the input data files taken over, in output order (each with the positions of its tensors among
    the sources, and their rows in its bundle's index); ``placed``: the positions of every source taken over."""

    def __init__(self, files: list[Reused], placed: Placed | None = None) -> None:
        self.files, self.placed = files, placed if placed is not None else Placed()

    def reused_bytes(self) -> int:
        """Bytes taken over from input data files."""
        return sum(f.size for f in self.files)


def plan_layout(sources: Sequence[Any], link: bool = False, one: tuple[BundleReader, list[int]] | None = None) -> Layout:
    """The input data files that ``sources`` (in writing order) use whole and unchanged; with ``link``, files
    whose object graph is not among them too (see the module doc). Read from the index's columns: no entry is
    made per tensor. ``one``: the reader and rows of the bundle tensors among ``sources`` when they are all of one
    bundle (:meth:`BundleTensor.rows_of_one`): the first of ``sources`` (any after them, an object graph written
    fresh, is not of a bundle)."""
    if one is not None and _too_few(*one):
        return Layout([])
    groups: dict[tuple[int, int], _Run] = {}
    empty: dict[tuple[int, int], list[int]] = {}  # tensors of no bytes: they keep their place in a file taken over
    readers: dict[int, BundleReader] = {}
    check = WholeCheck()
    shard = -1 if one is None or any(isinstance(s, BundleTensor) for s in sources[len(one[1]):]) else \
        _one_file(check, *one)
    if one is not None and shard >= 0:  # of one bundle, every one of them taken over from one data file: no loop
        reader, rows = one
        readers[id(reader)] = reader
        group = groups[(id(reader), shard)] = _Run()
        group.start, group.stop = 0, len(rows)
    else:
        rows = _grouped(sources, check.where, groups, empty, readers)
    files = []
    for (reader_id, shard), group in groups.items():
        reader = readers[reader_id]
        reused = _whole_file(reader, shard, group.positions(), rows, link)
        if reused is not None:
            offsets = reader.entries.offset
            kept = [p for p in empty.get((reader_id, shard), []) if offsets[rows[p]] <= reused.size]
            if kept:
                reused.positions = _compact(sorted([*reused.positions, *kept]))
            reused.rows = _compact(list(map(rows.__getitem__, reused.positions)))
            files.append(reused)
    files.sort(key=lambda f: f.positions[0])
    return Layout(files, Placed(len(sources), (p for reused in files for p in reused.positions)))


def _grouped(sources: Sequence[Any], where: Callable[[BundleReader, int], int], groups: dict[tuple[int, int], _Run],
             empty: dict[tuple[int, int], list[int]], readers: dict[int, BundleReader]) -> list[int]:
    """For :func:`plan_layout`: the position of each of ``sources`` that can be taken over (``where``) added to
    ``groups`` by its reader and data file, and of each tensor of no bytes to ``empty``; their readers by id in
    ``readers``. Returns the row of each bundle tensor in its reader's index by position (-1: none; a list, 8 bytes
    a row)."""
    rows = [-1] * len(sources)
    for position, source in enumerate(sources):
        if not isinstance(source, BundleTensor):
            continue
        reader, row = source.bundle, source.row
        rows[position] = row
        shard = where(reader, row)
        if shard >= 0:
            readers[id(reader)] = reader
            group = groups.get((id(reader), shard))
            if group is None:
                group = groups[(id(reader), shard)] = _Run()
            if group.stop == position and group.more is None:  # (_Run.add's usual case, inline: no call)
                group.stop += 1
            else:
                group.add(position)
        else:
            columns = reader.entries
            _, _, shard, size = columns.kinds[columns.kind[row]]
            if size == 0 and row not in columns.slices:
                empty.setdefault((id(reader), shard), []).append(position)
    return rows


def _one_file(check: WholeCheck, reader: BundleReader, rows: list[int]) -> int:
    """The data file of the tensors in ``rows`` of ``reader``'s index when each can be taken over
    (:meth:`WholeCheck.where`) and all lie in that one file, else -1: asked of each kind once, and of each row's
    offset by ``map`` over C functions (no Python step a tensor)."""
    columns = reader.entries
    if columns.slices or not rows:
        return -1
    kind_of = columns.kind
    used = set(map(kind_of.__getitem__, rows))
    limits = [-1] * len(columns.kinds)
    for kind in used:
        limits[kind] = check.limit(reader, kind)
    shards = {columns.kinds[kind][2] for kind in used}
    if len(shards) != 1 or min(map(limits.__getitem__, used)) < 0 or not all(map(
            int.__le__, map(columns.offset.__getitem__, rows), map(limits.__getitem__, map(kind_of.__getitem__, rows)))):
        return -1
    return shards.pop()


def _too_few(reader: BundleReader, rows: list[int]) -> bool:
    """Whether the tensors in ``rows`` of a bundle of one data file are too few to be every tensor stored in it but
    the object graph (an edit's selection: no file is taken over, found without a look at each tensor). Its stored
    tensors are at least those of a size, less its partitioned variables."""
    if len(reader.data_paths) != 1:
        return False
    columns = reader.entries
    sized = [1 if size else 0 for _, _, _, size in columns.kinds]
    return len(rows) + 1 < sum(map(sized.__getitem__, columns.kind)) - len(columns.slices)


def _tiles(columns: Any, stored: Sequence[int], size: int) -> bool:
    """Whether the tensors in rows ``stored`` of the index's ``columns`` (none of no bytes) lie end to end from the
    file's start to ``size``, no gap and no overlap. A large index's run of rows (numpy imported) is checked with
    arrays; otherwise rows written in the index's order are walked, and others checked by :func:`_tiles_by_marks`
    where its marks cost no more than a sort, else sorted by offset."""
    offsets, kinds, kind_of = columns.offset, columns.kinds, columns.kind
    np = imported_numpy()
    if np is not None and len(stored) >= _ARRAYS and (arrays := columns.arrays_of(np, stored)) is not None and \
            max(size_ for _, _, _, size_ in kinds) * len(stored) < 1 << 62:  # (their sums fit in int64)
        # a large index's run of rows, with arrays: in order of offset (a stable sort, as below), each offset the
        # sum of the sizes before it
        starts, sizes = arrays[1], np.array([size_ for _, _, _, size_ in kinds], np.int64)[arrays[0]]
        if not (starts[1:] >= starts[:-1]).all():
            order = np.argsort(starts, kind="stable")
            starts, sizes = starts[order], sizes[order]
        ends = np.cumsum(sizes)
        return bool(starts[0] == 0 and (starts[1:] == ends[:-1]).all() and ends[-1] == size)
    if not all(map(int.__le__, map(offsets.__getitem__, stored),
                   map(offsets.__getitem__, itertools.islice(stored, 1, None)))):  # (written out of the index's order)
        found = _tiles_by_marks(columns, stored, size)
        if found is not None:
            return found
        stored = sorted(stored, key=offsets.__getitem__)
    end = 0
    for row in stored:
        if offsets[row] != end:
            return False  # a gap or an overlap
        end += kinds[kind_of[row]][3]
    return end == size


_ARRAYS = 4096
"""A run of at least this many rows is checked for :func:`_tiles` with arrays (where numpy is imported)."""


def _tiles_by_marks(columns: Any, stored: Sequence[int], size: int) -> bool | None:
    """:func:`_tiles` with no sort: a byte marks each tensor's start, in units of the sizes' greatest common divisor.
    The tensors tile the file when one starts at 0, each ends where one starts or at the file's end, and their sizes
    add up to it: from 0, tensors follow one another to the end, covering it with the sizes of all of them - so no
    two start together and none is left over. Made by ``map`` over C functions: no int object is held a tensor (a
    sort makes a list, a key and an int a tensor: 77 bytes). None when the marks would take more than
    :data:`MARKS_PER_ROW` bytes a row."""
    offsets, kind_of = columns.offset, columns.kind
    every = type(stored) is range and stored.step == 1 and stored.start == 0 and stored.stop == len(offsets)
    repeat = itertools.repeat

    def starts() -> Iterator[int]:  # (every row: the column itself)
        return iter(offsets) if every else map(offsets.__getitem__, stored)

    def kinds() -> Iterator[int]:
        return iter(kind_of) if every else map(kind_of.__getitem__, stored)

    sizes = [size_ for _, _, _, size_ in columns.kinds]
    unit = 0
    for kind in set(kinds()):
        unit = math.gcd(unit, sizes[kind])
    if unit <= 0 or size // unit > MARKS_PER_ROW * len(stored) + 4096:
        return None
    if sum(map(sizes.__getitem__, kinds())) != size or size % unit or min(starts()) != 0 or \
            unit > 1 and any(map(int.__mod__, starts(), repeat(unit))):
        return False
    marks = bytearray(size // unit + 1)
    try:  # (a start or an end past the file's end: IndexError)
        any(map(marks.__setitem__, map(int.__floordiv__, starts(), repeat(unit)), repeat(1)))  # (each gives None)
        marks[-1] = 1  # the file's end
        ends = map(int.__add__, starts(), map(sizes.__getitem__, kinds()))
        return all(map(marks.__getitem__, map(int.__floordiv__, ends, repeat(unit))))
    except IndexError:
        return False


MARKS_PER_ROW = 64
"""The bytes a row :func:`_tiles_by_marks` may mark with at most (a file of large tensors of odd sizes is sorted)."""


class _Run:
    """Positions, given in ascending order: a range while they follow one another (no int object a position),
    else a list."""

    __slots__ = ("start", "stop", "more")

    def __init__(self) -> None:
        self.start = self.stop = -1
        self.more: list[int] | None = None

    def add(self, position: int) -> None:
        """``position``, after those added."""
        if self.more is not None:
            self.more.append(position)
        elif self.stop < 0:
            self.start, self.stop = position, position + 1
        elif position == self.stop:
            self.stop += 1
        else:
            self.more = [*range(self.start, self.stop), position]

    def positions(self) -> Sequence[int]:
        """Those added."""
        return self.more if self.more is not None else range(self.start, self.stop)


def stored_whole(source: Any) -> RawEntry | None:
    """The stored entry of a bundle tensor whose bytes can be taken over as they are, else None."""
    return WholeCheck()(source)


class WholeCheck:
    """:func:`stored_whole` of many sources: what it checks of a reader and of a kind of entry (dtype, shape,
    data file, size: :class:`~formats.tf_bundle.columns.IndexColumns`' kinds) worked out once for all its
    tensors, from the index's columns (no entry made for a tensor that cannot be taken over)."""

    def __init__(self) -> None:
        self._limits: dict[tuple[int, int], int] = {}  # (reader, kind) -> the last offset that fits, or -1
        self._readers: dict[int, BundleReader] = {}  # held, so that their ids stay theirs

    def __call__(self, source: Any) -> RawEntry | None:
        if not isinstance(source, BundleTensor):
            return None
        reader, row = source.bundle, source.row
        return reader.entries.row(row) if self.where(reader, row) >= 0 else None

    def where(self, reader: BundleReader, row: int) -> int:
        """The data file of the tensor in ``row`` of ``reader``'s index when its bytes can be taken over as they
        are stored, else -1."""
        columns = reader.entries
        kind = columns.kind[row]
        limit = self._limits.get((id(reader), kind))
        if limit is None:
            limit = self.limit(reader, kind)
        if limit < 0 or columns.offset[row] > limit or row in columns.slices:
            return -1
        return columns.kinds[kind][2]

    def limit(self, reader: BundleReader, kind: int) -> int:
        """The last offset at which a tensor of ``kind`` (in ``reader``'s index's columns) lies whole in its data
        file, or -1 when none of that kind can be taken over as stored (:func:`_last_offset`), worked out once."""
        limit = self._limits.get((id(reader), kind))
        if limit is None:
            limit = self._limits[(id(reader), kind)] = _last_offset(reader, *reader.entries.kinds[kind])
            self._readers[id(reader)] = reader
        return limit


def _last_offset(reader: BundleReader, dtype: int, shape: tuple[int, ...], shard: int, size: int) -> int:
    """The largest offset at which an entry of this kind lies in its data file whole, or -1 when no entry of this
    kind can be taken over as it is stored."""
    if size == 0 or reader.header.big_endian or storage.is_url(reader.prefix):
        return -1
    if not 0 <= shard < len(reader.data_paths) or shard in reader.missing:
        return -1
    dt = dtypes.by_enum(dtype)
    if dt is None or dt.numpy_name is None or (dt.fixed_width and size != math.prod(shape) * dt.itemsize):
        return -1  # what the entry declares cannot be: reading it the usual way says why
    try:
        return reader.file_size(shard) - size
    except CheckpointError:
        return -1


def _compact(numbers: list[int]) -> Sequence[int]:
    """``numbers`` as a range when they are one (a file's tensors written in a run, in index order: the usual
    case), which holds no int object a tensor (at a million, 36 MB for positions and rows); else the list."""
    if numbers and numbers[-1] - numbers[0] == len(numbers) - 1 and \
            all(map(int.__eq__, numbers, range(numbers[0], numbers[-1] + 1))):
        return range(numbers[0], numbers[-1] + 1)
    return numbers


def _whole_file(reader: BundleReader, shard: int, positions: Sequence[int], rows: list[int],
                link: bool) -> Reused | None:
    """The data file, when the sources at ``positions`` (their rows in ``reader``'s index in ``rows``) are every
    stored tensor of it but perhaps the object graph, once each, tiling it; its ``size`` is what is taken over
    (see the module doc). Checked with a byte a row of the index and by ``map`` over C functions: no set, no tuple
    and no int object made a tensor (at a million tensors, 150 MB)."""
    columns = reader.entries
    kind_of = columns.kind
    used = bytearray(len(kind_of))  # a byte a row of the index: set for each row written
    any(map(used.__setitem__, map(rows.__getitem__, positions), itertools.repeat(1)))  # (each gives None)
    count = used.count(1)
    if count != len(positions):
        return None  # a tensor written twice: its second copy needs bytes of its own
    here = {kind for kind, (_, _, in_shard, size) in enumerate(columns.kinds) if size and in_shard == shard}
    slices = columns.slices
    stored: Sequence[int] = range(len(kind_of)) if not slices and all(map(here.__contains__, kind_of)) else \
        [row for row, kind in enumerate(kind_of) if kind in here and row not in slices]  # ascending
    graph_row = columns.find(_GRAPH)
    graph = graph_row in stored and not used[graph_row]  # the input's graph: the output has its own
    if len(stored) != count + graph or not all(map(used.__getitem__, filter(graph_row.__ne__, stored))):
        return None  # (as many rows written as stored, each stored one written: the very rows)
    del used
    path = reader.data_paths[shard]
    try:
        size = os.stat(path).st_size
    except OSError:
        return None
    offsets, kinds = columns.offset, columns.kinds
    if not _tiles(columns, stored, size):
        return None
    if graph and not link:
        if offsets[graph_row] + kinds[kind_of[graph_row]][3] != size:
            return None  # the old graph between tensors: a copy would carry it
        size = offsets[graph_row]
    return Reused(path, size, reader, shard, positions)
