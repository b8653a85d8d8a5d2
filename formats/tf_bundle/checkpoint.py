"""The :class:`~formats.core.model.Checkpoint` view of a tensor bundle."""
from __future__ import annotations

import os
from _operator import attrgetter, is_  # operator's C half, without operator.py (start-up)
from itertools import repeat

from formats.core.gc_pause import paused_gc
from formats.core import dtypes
from formats.core.errors import CheckpointError
from formats.core.imported import imported_numpy
from formats.core.model import CHUNK_BYTES, CHUNK_ELEMENTS, Checkpoint, FormatName, CheckpointProblem, Role, TensorEntry
from formats.io.crc import crc32c, unmask
from formats.io.protowire import WireError, read_varint
from formats.tf_bundle.reader import (OBJECT_GRAPH_KEY, OPEN_DATA_FILES, BundleReader, RawEntry, dtype_name,
                                      reference_dtype_problem)

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
    from concurrent.futures import Executor
    from typing import Any

    import numpy as np

    from formats.concepts.object_graph import EntryLabel, ObjectGraph
    from formats.core.provenance import PackedTexts
    from formats.io.spans import Group

__all__ = ["BundleTensor", "BundleCheckpoint", "open_bundle"]


_DTYPE_NAMES: dict[int, str] = {}
"""DataType number -> name, looked up once per tensor of an index (a million, for some); filled as numbers are met
(all 256 named at import cost a small checkpoint's command 0.9 million instructions)."""
_READER, _ROW, _LABELS, _KEY, _ROLE = map(attrgetter, ("_reader", "row", "_labels", "key", "role"))
_ANY_SIZE = 1 << 62
"""A size no stored tensor reaches (:meth:`BundleReader.rows_ranges` of any of them)."""


RANGE_COLUMNS_FROM = 1 << 16
"""Tensors from which :meth:`BundleTensor.stored_range_columns` imports numpy to find their ranges with arrays (a
tuple and two Python ints a tensor cost more than the import)."""


def _named_dtype(enum: int) -> str:
    name = dtype_name(enum)
    if 0 <= enum < 256:  # (a damaged index may hold any number: the table stays as small as ever)
        _DTYPE_NAMES[enum] = name
    return name


class BundleTensor(TensorEntry):
    """A tensor stored in a bundle; :meth:`read` maps, checks the CRC32C and copies it out.

    ``name`` and ``role`` (and, for slots, ``slot_of``/``optimizer``/``slot_name``) are worked out
    on first use, for all entries at once: from the object graph for ``tf-object`` checkpoints,
    from the naming conventions of :mod:`formats.concepts.roles` for ``tf-name`` ones.
    """

    __slots__ = ("row", "_reader", "_labels")

    concurrent_reads = True

    def __init__(self, reader: BundleReader, row: int, labels: _Labels, key: str | None = None) -> None:
        """``key``: the row's key when the caller has it as text already (the same string, not another copy)."""
        # Not TensorEntry.__init__: it would set name/role eagerly, which are lazy properties here.
        columns = reader.entries
        dtype, self.shape, _, size = columns.kinds[columns.kind[row]]
        self.key = columns.texts[row] if key is None else key
        self.dtype = _DTYPE_NAMES.get(dtype) or _named_dtype(dtype)
        self.nbytes = reader.nbytes(columns.row(row)) if row in columns.slices else size
        self.row = row
        self._reader = reader
        self._labels = labels

    @property
    def raw(self) -> RawEntry:
        """The index entry (made from the index's columns when asked for: none is kept per tensor)."""
        return self._reader.entries.row(self.row)

    @property
    def name(self) -> str:  # type: ignore[override]
        """The TF1-style name: the attribute's ``full_name`` when the graph has one, else the key."""
        if not self._labels.object_based:
            return self.key  # what a name-based bundle's label says, without classifying every key
        return self._labels.name(self.key)

    @property
    def role(self) -> str:  # type: ignore[override]
        """``variable``, ``slot``, ``optimizer``, ``iterator``, ``save_counter``, ``object_graph`` or ``other``."""
        return self._labels.facts(self.key).role

    @property
    def slot_of(self) -> str | None:  # type: ignore[override]
        """For a slot: the key of the variable it belongs to."""
        return self._labels.facts(self.key).slot_of

    @property
    def optimizer(self) -> str | None:  # type: ignore[override]
        """For a slot or optimizer state: the optimizer (its object path, or its TF1 name)."""
        return self._labels.facts(self.key).optimizer

    @property
    def slot_name(self) -> str | None:  # type: ignore[override]
        """For a slot: the slot's name (``m``, ``v``, ``accumulator``...)."""
        return self._labels.facts(self.key).slot_name

    @property
    def label(self) -> EntryLabel:
        """Everything known about this key (:class:`formats.concepts.object_graph.EntryLabel`)."""
        return self._labels.get(self.key)

    @property
    def bundle(self) -> BundleReader:
        """The reader of the bundle this tensor is stored in."""
        return self._reader

    @property
    def files(self) -> tuple[str, ...]:
        """The index and the data file(s) the value is read from."""
        return self._reader.row_files(self.row)

    @property
    def partitions(self) -> int:
        """How many slices a partitioned variable is stored in (0 when stored whole): from the columns, no entry
        made."""
        return len(self._reader.entries.slices.get(self.row, ()))

    @property
    def unreadable(self) -> str | None:  # type: ignore[override]
        """Why TensorFlow's reader refuses this entry (a reference dtype), and so ckpt too; else None."""
        if not self.dtype.endswith("_ref"):  # (a known reference dtype's name, and only its, ends so: asked of
            return None                      # every tensor by every export, more than once)
        return reference_dtype_problem(self._reader.entries.kind_of(self.row)[0])

    def problem(self) -> str | None:
        """What :attr:`unreadable` says, or stored bytes that cannot hold the declared shape, found without reading
        the value (:meth:`BundleReader.row_problem`)."""
        return self._reader.row_problem(self.row)

    def read(self) -> np.ndarray:
        """The value as a numpy array; raises ChecksumError/CorruptCheckpointError on bad data."""
        return self._reader.read(self.raw)

    def elements(self) -> list[bytes]:
        """String and variant elements straight from the data file, checked against the stored checksums,
        without building an array (a partitioned variable is assembled whole first)."""
        if self.raw.slices or self.dtype not in ("string", "variant"):
            return TensorEntry.elements(self)
        return self._reader.elements(self.raw)

    def string_pieces(self) -> tuple[int, Iterator[bytes | memoryview]] | None:
        """A one-element string's bytes read a block at a time (:meth:`BundleReader.string_pieces`)."""
        return self._reader.string_pieces(self.raw)

    def iter_chunks(self, chunk_elements: int = CHUNK_ELEMENTS, pool: Executor | None = None) -> Iterator[np.ndarray]:
        """Fixed-width values stream as views into the memory map with the CRC32C computed on the way
        (on ``pool`` when given); variables partitioned along their first axis stream slice by slice;
        anything else is read whole and cut up."""
        stream = _streamable(self)
        if stream is not None:
            yield from _stream(*stream, chunk_elements, pool)
            return
        parts = _row_partitions(self)
        if parts is not None:
            reader, dt, slices = parts
            for raw in slices:
                yield from _stream(reader, raw, dt, chunk_elements, pool)
            return
        yield from TensorEntry.iter_chunks(self, chunk_elements)

    def byte_chunks(self, chunk: int = CHUNK_BYTES, check: bool = True) -> Iterator[memoryview]:
        """Canonical bytes straight from the memory map (CRC32C checked unless ``check`` is False)."""
        if self.raw.slices:
            return TensorEntry.byte_chunks(self, chunk, check)
        return _byte_stream(self._reader, self.raw, chunk, check)

    def stored_range(self) -> tuple[int, int, int, int] | None:
        """Where the bytes lie in the data file (see :meth:`BundleReader.stored_range`)."""
        return self._reader.row_range(self.row)

    def checked_bytes_range(self) -> tuple[int, int, int] | None:
        """Where a string tensor's stored bytes lie, checked (see :meth:`BundleReader.string_range`)."""
        return self._reader.string_range(self.raw)

    def element_equals(self, expected: bytes) -> bool | None:
        """Whether this one string holds ``expected``, compared as read (see :meth:`BundleReader.string_equals`)."""
        return self._reader.string_equals(self.raw, expected)

    @staticmethod
    def small_ranges(tensors: Sequence[BundleTensor], most: int) -> list[tuple[int, int, int, int] | None]:
        """:func:`formats.io.spans.small_range` of each of ``tensors`` (of this class), asked of their bundle's reader
        for all the rows of one bundle at once (:meth:`BundleReader.rows_ranges`)."""
        one = BundleTensor.rows_of_one(tensors)
        if one is not None:
            return one[0].rows_ranges(one[1], most)
        return [t._reader.rows_ranges([t.row], most)[0] for t in tensors]

    @staticmethod
    def stored_ranges(tensors: Sequence[Any]) -> list[tuple[int, int, int, int] | None] | None:
        """:meth:`stored_range` of each of ``tensors`` when they are all tensors of one bundle whose data files its
        reader keeps open together (:data:`~formats.tf_bundle.reader.OPEN_DATA_FILES`: beyond, a descriptor is closed
        for another, and its number may come back for another file), found a data layout at a time from its index's
        columns (:meth:`BundleReader.rows_ranges`); else None."""
        one = BundleTensor.rows_of_one(tensors)
        if one is None or len(one[0].data_paths) > OPEN_DATA_FILES:
            return None
        return one[0].rows_ranges(one[1], _ANY_SIZE)

    @staticmethod
    def stored_range_columns(tensors: Sequence[Any]) -> tuple[Any, Any, Any, Any] | None:
        """:meth:`stored_ranges` of ``tensors`` as four arrays (descriptors, offsets, sizes, CRC32Cs) where numpy is
        imported, the bundle's index is held in arrays and every one of them has a stored range
        (:meth:`BundleReader.rows_range_columns`); else None."""
        np = imported_numpy()
        if np is None and len(tensors) >= RANGE_COLUMNS_FROM:
            import numpy as np
        one = BundleTensor.rows_of_one(tensors) if np is not None else None
        if np is None or one is None or len(one[0].data_paths) > OPEN_DATA_FILES:
            return None
        return one[0].rows_range_columns(np, np.array(one[1], np.int64), _ANY_SIZE)

    @staticmethod
    def rows_of_one(tensors: Sequence[Any]) -> tuple[BundleReader, list[int]] | None:
        """``(reader, rows)`` when ``tensors`` (at least one) are all of this class and of one bundle (their rows in
        its index, in order), else None: found by C functions over them (no frame a tensor)."""
        if not tensors or type(tensors[0]) is not BundleTensor:
            return None
        reader = tensors[0]._reader
        if not all(map(is_, map(type, tensors), repeat(BundleTensor))) or \
                not all(map(is_, map(_READER, tensors), repeat(reader))):
            return None
        return reader, list(map(_ROW, tensors))

    @staticmethod
    def kinds_of(tensors: Sequence[Any]) -> list[int] | None:
        """The kind (in its index's columns: dtype, shape, shard and size) of each of ``tensors`` when they are all of
        this class and of one bundle (tensors of one kind are alike but for their key and bytes), else None."""
        one = BundleTensor.rows_of_one(tensors)
        return None if one is None else list(map(one[0].entries.kind.__getitem__, one[1]))

    @staticmethod
    def labels_of(tensors: Sequence[Any]) -> tuple[list[str], list[str]] | None:
        """``(names, roles)``: the :attr:`name` and :attr:`role` of each of ``tensors`` when they are all of this
        class and of one bundle, asked of its labels for all at once (:meth:`_Labels.names`, :meth:`_Labels.roles`);
        else None."""
        if BundleTensor.rows_of_one(tensors) is None:
            return None
        labels = tensors[0]._labels
        if not all(map(is_, map(_LABELS, tensors), repeat(labels))):
            return None
        kept = labels.kept_of(list(map(_ROW, tensors)))  # (asked before the rows were held, the graph let go of)
        if kept is not None:
            return kept
        keys = list(map(_KEY, tensors))
        return labels.names(keys), labels.roles(keys)

    def read_slice(self, index: tuple[Any, ...] | None) -> np.ndarray:
        """The CRC is checked chunk by chunk, then only ``value[index]`` is copied out of the mmap."""
        import numpy as np

        self._reader.check_array(self.raw)
        stream = _streamable(self)
        if stream is None:
            return TensorEntry.read_slice(self, index)
        for _ in self.iter_chunks():  # checks the CRC without holding more than one chunk
            pass
        reader, raw, dt = stream
        whole = np.frombuffer(reader.region(raw), dtype=dt.numpy()).reshape(raw.shape)
        from formats.core.arrays import apply_index

        picked = whole if index is None else apply_index(whole, index, self)
        out = np.array(picked, copy=True)
        if reader.header.big_endian and dt.itemsize > 1:
            out.byteswap(inplace=True)
        return out

    def check(self) -> None:
        """Every stored byte checked against its CRC32C (each slice of a partitioned variable)."""
        if self.raw.slices:
            for _, part in self._reader.slice_parts(self.raw):
                self._reader.check(part)
        else:
            self._reader.check(self.raw)


def _streamable(entry: BundleTensor) -> tuple[Any, Any, dtypes.DType] | None:
    """(reader, raw entry, dtype) when ``entry`` can be streamed from a bundle's mmap, else None."""
    if entry.raw.slices:
        return None
    reader, raw = entry._reader, entry.raw
    dt = reader.dtype_of(raw)
    return (reader, raw, dt) if dt.fixed_width else None


def _row_partitions(entry: BundleTensor) -> tuple[Any, dtypes.DType, list[Any]] | None:
    """(reader, dtype, slice entries in order) when a partitioned bundle variable is split along axis 0
    only, into slices that tile it without gaps; None otherwise."""
    if not entry.raw.slices:
        return None
    reader, raw = entry._reader, entry.raw
    dt = reader.dtype_of(raw)
    if not dt.fixed_width or not raw.shape:
        return None
    parts = reader.slice_parts(raw)
    for extents, _ in parts:
        if any(not (n < 0 or (s == 0 and n == dim)) for (s, n), dim in zip(extents[1:], raw.shape[1:])):
            return None
    parts.sort(key=lambda p: p[0][0][0] if p[0][0][1] >= 0 else 0)
    row = 0
    for extents, _ in parts:
        start, length = extents[0] if extents[0][1] >= 0 else (0, raw.shape[0])
        if start != row:
            return None
        row = start + length
    return (reader, dt, [part for _, part in parts]) if row == raw.shape[0] else None


def _stream(reader: Any, raw: Any, dt: dtypes.DType, chunk_elements: int,
                   pool: Executor | None = None) -> Iterator[np.ndarray]:
    import numpy as np

    reader.check_fixed_size(raw, dt)
    npdt = dt.numpy()
    swap = reader.header.big_endian and dt.itemsize > 1
    step = max(1, chunk_elements) * dt.itemsize
    crc = 0
    for part in reader.chunks(raw, step):  # bounded resident memory, ranged reads for URLs
        # the checksum of a chunk runs on the pool while the caller works on that same chunk, and is
        # finished before the next chunk is asked for (which drops this chunk's pages)
        pending = pool.submit(crc32c, part, crc) if pool is not None else None
        if pending is None:
            crc = crc32c(part, crc)
        arr = np.frombuffer(part, dtype=npdt)
        yield arr.byteswap() if swap else arr
        if pending is not None:
            crc = pending.result()
    if crc != unmask(raw.crc32c):
        raise reader.checksum_error(raw, crc)


def _byte_stream(reader: BundleReader, raw: RawEntry, chunk: int, check: bool) -> Iterator[memoryview]:
    dt = reader.dtype_of(raw)
    reader.check_fixed_size(raw, dt)
    swap = reader.header.big_endian and dt.itemsize > 1
    crc = 0
    for piece in reader.chunks(raw, chunk):  # pages dropped after use; ranged reads for URLs
        if check:
            crc = crc32c(piece, crc)
        yield _byteswapped(piece, dt) if swap else piece
    if check and crc != unmask(raw.crc32c):
        raise reader.checksum_error(raw, crc)


def _byteswapped(piece: memoryview, dt: dtypes.DType) -> memoryview:
    import numpy as np

    arr = np.frombuffer(piece, dtype=dt.numpy().newbyteorder(">"))
    return memoryview(arr.astype(dt.numpy())).cast("B")  # type: ignore[arg-type]


LARGE_GRAPH = 10_000
"""Objects of a graph whose memory :meth:`_Labels.forget_graph` gives back to the system (a smaller one's is not worth
the call)."""


class _Labels:
    """Names and roles of a bundle's keys, computed once on first request (the graph decoded then)."""

    def __init__(self, reader: BundleReader, object_based: bool) -> None:
        self._reader = reader
        self.object_based = object_based
        self._graph: ObjectGraph | None = None
        self._labels: Mapping[str, EntryLabel] | None = None
        self._variable: EntryLabel | None = None  # the label of every plain variable of a name-based bundle
        self._facts: Any = None  # the labels' way to answer facts() (set with them)
        self._kept: tuple[PackedTexts, list[str]] | None = None  # every row's name and role (keep_names_and_roles)

    def graph(self) -> ObjectGraph | None:
        """The decoded object graph (None for a name-based bundle)."""
        if self._graph is None and self.object_based:
            from formats.core.errors import CorruptCheckpointError
            from formats.concepts.object_graph_codec import decode_object_graph

            raw = self._reader.entries[OBJECT_GRAPH_KEY.encode()]
            if raw.dtype != 7 or raw.shape != () or raw.slices:
                raise CorruptCheckpointError(self._reader.index_path,
                                             f"{OBJECT_GRAPH_KEY} is not a scalar string")
            self._graph = decode_object_graph(self._reader.elements(raw)[0], self._reader.index_path)  # no numpy
        return self._graph

    def forget_graph(self) -> None:
        """Let go of the decoded graph and the labels of an object-based bundle (both made again when asked for);
        a name-based bundle's labels are kept. The memory of a graph of :data:`LARGE_GRAPH` objects or more is
        given back to the system (:func:`~formats.io.c_library.release_freed_memory`)."""
        if self.object_based:
            large = self._graph is not None and len(self._graph) >= LARGE_GRAPH
            self._graph = None
            self._labels = self._facts = self._kept = None
            if large:
                from formats.io.c_library import release_freed_memory

                release_freed_memory()

    def keep_names_and_roles(self) -> None:
        """Of an object-based bundle whose keys are its rows (no partitioned variable): every key's name and role
        asked now, a run at a time, kept by row (:meth:`kept_of` answers them), and the graph let go of. Nothing is
        kept where the graph cannot be decoded: the error comes when a label is asked for."""
        from formats.core.provenance import packed_labels

        if not self.object_based or self._kept is not None or self._reader.entries.slices:
            return
        try:
            kept = packed_labels(self._reader.entries.texts, lambda keys: (self.names(keys), self.roles(keys)))
        except CheckpointError:
            return
        self.forget_graph()
        self._kept = kept

    def kept_of(self, rows: list[int]) -> tuple[list[str], list[str]] | None:
        """The names and roles of ``rows`` kept by :meth:`keep_names_and_roles` (None when none are)."""
        if self._kept is None:
            return None
        names, roles = self._kept
        if rows and rows[-1] - rows[0] == len(rows) - 1 and rows == list(range(rows[0], rows[-1] + 1)):
            return names.slice(rows[0], rows[-1] + 1), roles[rows[0]:rows[-1] + 1]
        return names.take(rows), list(map(roles.__getitem__, rows))

    def get(self, key: str) -> EntryLabel:
        """The label of one key."""
        found = self.facts(key)
        if self._graph is not None and self._labels is not None:  # (KeyLabels: a model variable's made now)
            return self._labels[key]
        if found is self._variable:  # a name-based variable: its label made now, none is kept
            from formats.concepts.entry_label import EntryLabel

            return EntryLabel(key, str(Role.VARIABLE))
        return found

    def name(self, key: str) -> str:
        """The ``name`` of one key's label."""
        name_of = getattr(self._made(), "name_of", None)  # (KeyLabels': no label made)
        return name_of(key) if name_of is not None else self.get(key).name

    def facts(self, key: str) -> EntryLabel:
        """The label of one key but for its ``name`` (and an object-based one's ``node_id``), which may be another
        key's: a plain variable's is one label shared by them all, name- or object-based."""
        if self._labels is None:
            self._made()
        found = self._facts(key)
        if found is None:
            if self._variable is None:
                raise KeyError(key)
            return self._variable
        return found

    def names(self, keys: list[str]) -> list[str]:
        """The ``name`` of each of ``keys`` (:meth:`BundleTensor.name`'s): a name-based bundle's are its keys; an
        object-based one's asked of its labels for all at once (:meth:`~formats.concepts.object_graph.KeyLabels.names_of`)."""
        if not self.object_based:
            return keys
        many = getattr(self._made(), "names_of", None)
        return many(keys) if many is not None else list(map(self.name, keys))

    def roles(self, keys: list[str]) -> list[str]:
        """The ``role`` of each of ``keys`` (:meth:`facts`' of each): a name-based bundle's looked up by a C function
        (its plain variables' shared label the default), an object-based one's asked of its labels for all at once
        (:meth:`~formats.concepts.object_graph.KeyLabels.facts_of`)."""
        labels = self._made()
        if type(labels) is dict and self._variable is not None:
            return list(map(_ROLE, map(labels.get, keys, repeat(self._variable))))
        many = getattr(labels, "facts_of", None)
        if many is None:
            return list(map(_ROLE, map(self.facts, keys)))
        found = many(keys)
        if not all(found):  # a key not labelled: the KeyError facts() raises (object-based labels share no label)
            raise KeyError(next(k for k, label in zip(keys, found) if label is None))
        return list(map(_ROLE, found))

    def special_keys(self) -> list[str]:
        """The keys whose labels are held one by one (see :meth:`facts`): every other is a plain variable's."""
        labels = self._made()
        return list(getattr(labels, "special", labels))  # (KeyLabels: its special ones)

    def _made(self) -> Mapping[str, EntryLabel]:
        """The labels, computed on first use."""
        if self._labels is None:
            with paused_gc():  # a label per key of an object-based bundle
                self._labels = self._compute()
            self._facts = getattr(self._labels, "facts", self._labels.get)  # (KeyLabels': no label made)
        return self._labels

    def _compute(self) -> Mapping[str, EntryLabel]:
        """Every key's label (object-based); a name-based bundle's but its plain variables' (:attr:`_variable`)."""
        from formats.concepts.entry_label import EntryLabel
        from formats.concepts.roles import classify_names

        keys = self._reader.visible_texts()
        graph = self.graph()
        if graph is not None:
            from formats.concepts.object_graph import label_keys

            return label_keys(graph, keys)
        self._variable = EntryLabel("", str(Role.VARIABLE))
        return {k: EntryLabel(k, str(r.role), slot_of=r.slot_of, optimizer=r.optimizer, slot_name=r.slot_name)
                for k, r in classify_names(keys, every=False).items()}


class _Tensors:
    """A bundle's tensors by key, in index order: what :class:`~formats.core.model.Checkpoint` holds as its
    entries. A :class:`BundleTensor` is made the first time its key is asked for (and then kept: the same key
    gives the same object); a key is found in the index's columns by bisection, so opening a bundle makes no
    object per tensor."""

    def __init__(self, reader: BundleReader, labels: _Labels) -> None:
        self._reader, self._labels = reader, labels
        self._columns = reader.entries
        self._rows = reader.visible_rows()
        self._hidden = None if isinstance(self._rows, range) else \
            set(range(len(self._columns))).difference(self._rows)  # the slices of partitioned variables
        self._made: list[BundleTensor | None] = []  # row -> its tensor once made (a slot per row, from the first)
        self._count = 0  # tensors made and kept

    def _slots(self) -> list[BundleTensor | None]:
        """``_made``, with a slot for every row of the index (8 bytes a row, where a dictionary of the tensors
        made took about 70 more each)."""
        if not self._made:
            self._made = [None] * len(self._columns)
        return self._made

    def _row(self, key: object) -> int:
        """The row of a visible ``key`` (a ``str``), or -1."""
        if not isinstance(key, str):
            return -1
        row = self._columns.find_text(key)
        return -1 if self._hidden is not None and row in self._hidden else row

    def _tensor(self, row: int) -> BundleTensor:
        made = self._slots()
        found = made[row]
        if found is None:
            found = made[row] = BundleTensor(self._reader, row, self._labels)
            self._count += 1
        return found

    def __getitem__(self, key: str) -> BundleTensor:
        if isinstance(key, str):  # _row and _tensor, inline: asked once or twice per tensor by every command
            row = self._columns.find_text(key)
            if row >= 0 and (self._hidden is None or row not in self._hidden):
                made = self._made or self._slots()
                found = made[row]
                if found is None:
                    found = made[row] = BundleTensor(self._reader, row, self._labels, key)
                    self._count += 1
                return found
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return self._row(key) >= 0

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[str]:
        texts = self._columns.texts
        return iter(texts) if isinstance(self._rows, range) else map(texts.__getitem__, self._rows)

    def values(self) -> Iterator[BundleTensor]:
        """Every tensor, in index order (those not asked for yet made now, all at once)."""
        made = self._slots()
        if self._count < len(self._rows):
            reader, labels = self._reader, self._labels
            with paused_gc():  # an object per tensor, none in a cycle
                for row in self._rows:
                    if made[row] is None:
                        made[row] = BundleTensor(reader, row, labels)
            self._count = len(self._rows)
        return map(made.__getitem__, self._rows)  # type: ignore[arg-type]  # every slot of a visible row filled

    def items(self) -> Iterator[tuple[str, BundleTensor]]:
        """``(key, tensor)`` pairs in index order."""
        for tensor in self.values():
            yield tensor.key, tensor

    def entries_of(self, keys: Iterable[str]) -> list[BundleTensor]:
        """The tensors of ``keys`` (KeyError for one not here): those made already, and the others made for the
        caller alone (a unit of work's: not kept, so a command's units hold a unit's tensors at a time)."""
        find, made, hidden = self._columns.find_text, self._made, self._hidden
        reader, labels = self._reader, self._labels
        out = []
        for key in keys:
            row = find(key)
            if row < 0 or hidden is not None and row in hidden:
                raise KeyError(key)
            found = made[row] if made else None
            out.append(BundleTensor(reader, row, labels, key) if found is None else found)
        return out

    def small_groups(self, keys: Sequence[str], want: Callable[[str, tuple[int, ...]], bool],
                     budget: int) -> Iterator[list[Group]]:
        """:func:`formats.io.spans.small_groups` of ``keys`` (KeyError for one not here), found from the columns: a
        row each is looked up and located (:meth:`BundleReader.row_locator`; ``want`` asked once per data layout),
        and no tensor is made."""
        from formats.io.spans import SMALL_BYTES, read_checked

        columns, find, hidden = self._columns, self._columns.find_text, self._hidden
        layouts, kind_of = columns.kinds, columns.kind
        locate = self._reader.row_locator(SMALL_BYTES, lambda kind: want(_dtype_text(layouts[kind][0]),
                                                                       layouts[kind][1]))
        positions: list[int] = []
        ranges: list[tuple[int, int, int, int] | None] = []
        kinds: list[int] = []
        total = 0
        for i, key in enumerate(keys):
            row = find(key)
            if row < 0 or hidden is not None and row in hidden:
                raise KeyError(key)
            where = locate(row)
            if where is None:
                continue
            if positions and total + where[2] > budget:
                yield _grouped(positions, kinds, read_checked(ranges, budget), layouts)
                positions, ranges, kinds, total = [], [], [], 0
            positions.append(i)
            ranges.append(where)
            kinds.append(kind_of[row])
            total += where[2]
        if positions:
            yield _grouped(positions, kinds, read_checked(ranges, budget), layouts)

    def nbytes_of(self, keys: Iterable[str]) -> list[int]:
        """The stored bytes of each of ``keys`` (KeyError for one not here), from the columns: no tensor made
        but for a partitioned variable's."""
        columns = self._columns
        sizes = [kind[3] for kind in columns.kinds]
        kind = columns.kind
        out = []
        for key in keys:
            row = self._row(key)
            if row < 0:
                raise KeyError(key)
            out.append(sizes[kind[row]] if row not in columns.slices else self._tensor(row).nbytes)
        return out

    def total_nbytes(self) -> int:
        """The stored bytes of every tensor, from the columns."""
        columns = self._columns
        if not columns.slices and isinstance(self._rows, range):
            sizes = [kind[3] for kind in columns.kinds]
            return sum(map(sizes.__getitem__, columns.kind))
        return sum(self.nbytes_of(self))


def _grouped(positions: list[int], kinds: list[int], pieces: list[memoryview | None],
             layouts: list[tuple[int, tuple[int, ...], int, int]]) -> list[Group]:
    """The pieces read whole and sound, as :func:`formats.io.spans.small_groups`' groups (one per data layout)."""
    groups: dict[int, tuple[list[int], list[memoryview]]] = {}
    for i, kind, piece in zip(positions, kinds, pieces):
        if piece is None:
            continue
        members = groups.get(kind)
        if members is None:
            members = groups[kind] = ([], [])
        members[0].append(i)
        members[1].append(piece)
    return [(_dtype_text(layouts[kind][0]), layouts[kind][1], found, read) for kind, (found, read) in groups.items()]


def _dtype_text(enum: int) -> str:
    return _DTYPE_NAMES.get(enum) or _named_dtype(enum)


class BundleCheckpoint(Checkpoint):
    """An opened bundle: ``format`` is ``tf-object`` when it holds an object graph, else ``tf-name``.
    Entries may be read from several threads at once (data files are shared read-only maps)."""

    concurrent_reads = True

    def __init__(self, prefix: str, like: Iterator[str] | None = None) -> None:
        """``like``: the keys' texts as expected, in order (a writer's read-back: see
        :class:`~formats.tf_bundle.columns.IndexColumns`)."""
        with paused_gc():
            self.reader = BundleReader(prefix, like)
        object_based = OBJECT_GRAPH_KEY.encode() in self.reader.entries
        self._labels = _Labels(self.reader, object_based)
        entries = _Tensors(self.reader, self._labels)
        fmt = FormatName.TF_OBJECT if object_based else FormatName.TF_NAME
        super().__init__(prefix, fmt, entries)  # type: ignore[arg-type]

    def nbytes_of(self, keys: Iterable[str]) -> list[int]:
        """The stored bytes of each of ``keys``, from the index's columns (no tensor made per key)."""
        try:
            return self._entries.nbytes_of(keys)  # type: ignore[attr-defined]
        except KeyError as e:
            self[e.args[0]]  # the usual TensorNotFoundError
            raise

    def total_nbytes(self) -> int:
        """The stored bytes of every tensor, from the index's columns."""
        return int(self._entries.total_nbytes())  # type: ignore[attr-defined]

    def small_groups(self, keys: Sequence[str], want: Callable[[str, tuple[int, ...]], bool],
                     budget: int) -> Iterator[list[Group]]:
        """:func:`formats.io.spans.small_groups` of ``keys``, from the index's columns (no tensor made per key)."""
        try:
            yield from self._entries.small_groups(keys, want, budget)  # type: ignore[attr-defined]
        except KeyError as e:
            self[e.args[0]]  # the usual TensorNotFoundError
            raise

    def entries_of(self, keys: Iterable[str]) -> list[TensorEntry]:
        """The tensors of ``keys``: those not asked for before made for the caller alone (not kept)."""
        try:
            return self._entries.entries_of(keys)  # type: ignore[attr-defined]
        except KeyError as e:
            self[e.args[0]]  # the usual TensorNotFoundError
            raise

    def items_maybe_not_variables(self) -> Iterator[tuple[str, TensorEntry]]:
        """``(key, entry)`` of the tensors the labels hold one by one (every other is a plain variable), in the
        labels' order."""
        entries = self._entries
        return ((key, entries[key]) for key in self._labels.special_keys())

    @property
    def object_graph(self) -> ObjectGraph | None:
        """The decoded :class:`~formats.concepts.object_graph.ObjectGraph` (decoded on first use), or None for tf-name."""
        return self._labels.graph()

    def forget_object_graph(self) -> None:
        """See :meth:`Checkpoint.forget_object_graph`: the graph and the labels made from it."""
        self._labels.forget_graph()

    def keep_names_and_roles(self) -> None:
        """See :meth:`Checkpoint.keep_names_and_roles` (:meth:`_Labels.keep_names_and_roles`)."""
        self._labels.keep_names_and_roles()

    @property
    def files(self) -> list[str]:
        """The index and every data file."""
        return [self.reader.index_path, *self.reader.data_paths]

    def remote_sizes(self) -> dict[str, int | None]:
        """The sizes of the data files behind URLs looked up so far."""
        return dict(self.reader.remote_sizes)

    def know_remote_sizes(self, sizes: dict[str, int | None]) -> None:
        """Take these data files' sizes (those not looked up here yet)."""
        mine = set(self.reader.data_paths)
        for path, size in sizes.items():
            if path in mine:
                self.reader.remote_sizes.setdefault(path, size)

    @property
    def metadata(self) -> dict[str, Any]:
        """Header fields of the bundle."""
        h = self.reader.header
        return {"num_shards": h.num_shards, "endianness": "big" if h.big_endian else "little",
                "producer": h.producer, "min_consumer": h.min_consumer}

    def problems(self) -> list[CheckpointProblem]:
        """Missing data files, byte ranges that run past their data file or overlap, bytes after the
        last tensor (but an unreferenced object graph: :func:`_unreferenced_string`), and an object graph that
        does not decode (or refers to nodes it does not have)."""
        missing = [CheckpointProblem(os.path.basename(self.reader.data_paths[shard]), message)
                   for shard, message in sorted(self.reader.missing.items())]
        return missing + _layout_problems(self.reader) + self._graph_problems()

    def _graph_problems(self) -> list[CheckpointProblem]:
        if self.format != FormatName.TF_OBJECT:
            return []
        try:
            self._labels.graph()
        except CheckpointError as exc:
            return [CheckpointProblem(OBJECT_GRAPH_KEY, exc.message)]
        return []

    def close(self) -> None:
        """Unmap the data files."""
        self.reader.close()


def _layout_problems(reader: BundleReader, arrays: bool = True) -> list[CheckpointProblem]:
    """Byte ranges that run past their file or overlap, and bytes after the last tensor: for each data file, its
    ranges in order (start, stop, row), each past the file's end, each starting before the furthest end of those
    before it (overlapping the first range that reached that end), then the bytes after the furthest end. A large
    index's ranges are checked with arrays (:func:`_layout_arrays`) unless ``arrays`` is False."""
    columns = reader.entries
    rows = len(columns.kind)
    if arrays and not isinstance(columns.offset, list) and \
            (rows >= LAYOUT_ARRAYS or rows >= LAYOUT_ARRAYS_IMPORTED and imported_numpy() is not None):
        return _layout_arrays(reader)
    problems: list[CheckpointProblem] = []
    stored = [(shard, size) if size and shard >= 0 else None for _, _, shard, size in columns.kinds]
    ranges: dict[int, list[tuple[int, int, int]]] = {}  # shard -> (start, stop, row), in the order of the rows
    for row, (kind, start) in enumerate(zip(columns.kind, columns.offset)):
        where = stored[kind]
        if where is not None and row not in columns.slices:
            found = ranges.get(where[0])
            if found is None:
                found = ranges[where[0]] = []
            found.append((start, start + where[1], row))
    for shard, path in enumerate(reader.data_paths):
        if shard in reader.missing:
            continue
        size = reader.file_size(shard)
        name = os.path.basename(path)
        end = 0
        last = -1
        spans = ranges.get(shard, [])
        spans.sort()  # already in order, as TensorFlow writes them: one pass
        for start, stop, row in spans:
            if stop > size:
                problems.append(_past_end(columns, row, start, stop, name, size))
            if start < end:
                problems.append(_overlapping(columns, row, start, stop, last, name))
            if stop > end:
                end, last = stop, row
        problems += _after_last(reader, shard, end, size, name)
    return problems


LAYOUT_ARRAYS = 1 << 18
"""Rows from which an index's byte ranges are checked with arrays, importing numpy: a range at a time costs about
1.5 us, numpy's import some 100 ms of a name-based ``verify`` that needs it for nothing else (at 10^5 tensors it
was 11 % slower with it)."""
LAYOUT_ARRAYS_IMPORTED = 1 << 12
"""... and from which they are, numpy imported already."""


def _layout_arrays(reader: BundleReader) -> list[CheckpointProblem]:
    """:func:`_layout_problems` with arrays: every row's range found at once from the index's columns, a data file's
    sorted (by start, stop and row, as tuples sort) where they are not in order already, the furthest end before
    each range a running maximum; only the ranges found wrong are looked at one by one. (At 10^6 tensors a tuple
    a range was 130 MB and 1.5 s of ``verify``.)"""
    import numpy as np

    columns = reader.entries
    kinds = columns.kinds
    kind = np.asarray(columns.kind, np.int64)
    shard_of = np.array([shard if size and shard >= 0 else -1 for _, _, shard, size in kinds], np.int64)
    size_of = np.array([size for _, _, _, size in kinds], np.int64)
    offset = np.asarray(columns.offset, np.int64)
    if int(offset.max(initial=0)) + int(size_of.max(initial=0)) >= 1 << 62:  # (ends past 64 bits: Python's ints)
        return _layout_problems(reader, arrays=False)
    in_shard = shard_of[kind]
    if columns.slices:
        in_shard[np.fromiter(columns.slices, np.int64, len(columns.slices))] = -1
    stored = np.flatnonzero(in_shard >= 0)  # the rows with bytes in a data file, grouped by it (rows in order)
    by_shard = np.argsort(in_shard[stored], kind="stable")
    stored = stored[by_shard]
    bounds = np.searchsorted(in_shard[stored], np.arange(len(reader.data_paths) + 1))
    del in_shard, by_shard
    problems: list[CheckpointProblem] = []
    for shard, path in enumerate(reader.data_paths):
        if shard in reader.missing:
            continue
        size = reader.file_size(shard)
        name = os.path.basename(path)
        rows = stored[bounds[shard]:bounds[shard + 1]]
        starts = offset[rows]
        stops = starts + size_of[kind[rows]]
        if len(rows) and not bool((starts[1:] > starts[:-1]).all()):  # (by start, then stop; lexsort is stable and
            order = np.lexsort((stops, starts))  # the rows ascend, so ties of both stay in the order of the rows)
            rows, starts, stops = rows[order], starts[order], stops[order]
        end = np.maximum.accumulate(stops) if len(rows) else stops  # the furthest end up to each range
        before = np.concatenate(([0], np.maximum(end[:-1], 0)))  # ... before it (0 for the first)
        past, overlap = stops > size, starts < before
        if past.any() or overlap.any():
            reaching = np.maximum.accumulate(np.where(stops > before, np.arange(len(rows)), 0))  # the first to reach it
            for i in np.flatnonzero(past | overlap).tolist():
                row, start, stop = int(rows[i]), int(starts[i]), int(stops[i])
                if past[i]:
                    problems.append(_past_end(columns, row, start, stop, name, size))
                if overlap[i]:
                    problems.append(_overlapping(columns, row, start, stop, int(rows[reaching[i - 1]]), name))
        problems += _after_last(reader, shard, max(int(end[-1]), 0) if len(rows) else 0, size, name)
    return problems


def _past_end(columns: Any, row: int, start: int, stop: int, name: str, size: int) -> CheckpointProblem:
    """The problem of the range ``[start, stop)`` of ``row`` running past its data file's ``size``."""
    return CheckpointProblem(columns.texts[row], f"bytes [{start}, {stop}) run past the end of {name} ({size} "
                             "bytes): truncated?")


def _overlapping(columns: Any, row: int, start: int, stop: int, last: int, name: str) -> CheckpointProblem:
    """The problem of the range ``[start, stop)`` of ``row`` overlapping that of row ``last``."""
    return CheckpointProblem(columns.texts[row], f"bytes [{start}, {stop}) overlap {columns.texts[last]!r} in {name}")


def _after_last(reader: BundleReader, shard: int, end: int, size: int, name: str) -> list[CheckpointProblem]:
    """The bytes of a data file after its last tensor's (``end``), but an unreferenced object graph's."""
    if size > end and not _unreferenced_string(reader, shard, end, size):
        return [CheckpointProblem(name, f"{size - end} bytes after the last tensor")]
    return []


def _unreferenced_string(reader: BundleReader, shard: int, start: int, size: int) -> bool:
    """Whether the bytes from ``start`` to the end of the data file are one DT_STRING scalar as a bundle
    stores it (varint64 length, masked CRC32C of the length, the bytes): an object graph no entry refers
    to, which ``rename --link`` of an object-based checkpoint leaves in the data file it shares."""
    head = reader.peek(shard, start, 14)
    try:
        length, pos = read_varint(head, 0, len(head))
    except WireError:
        return False
    stored = head[pos:pos + 4]
    packed = length.to_bytes(4 if length <= 0xFFFFFFFF else 8, "little")
    return (len(stored) == 4 and start + pos + 4 + length == size
            and unmask(int.from_bytes(stored, "little")) == crc32c(packed))


def open_bundle(prefix: str) -> BundleCheckpoint:
    """Open the bundle with this prefix (``prefix.index`` must exist)."""
    return BundleCheckpoint(os.fspath(prefix))
