"""ckpt's provenance record: what ``convert --to npz|safetensors`` writes beside the tensors so that
reading the file back restores what the export could not keep.

The record is JSON: ``{"source": path, "format": name, "tensors": [{"key", "source_key",
"object_path", "full_name", "role", "dtype", "shape"}, ...]}``, an item's fields in that order. A field whose value
is its default is left out of the item (:data:`DEFAULTS`: ``source_key`` and ``full_name`` the item's ``key``,
``object_path`` ``""``, ``role`` ``"variable"``), as every reader of the record since its first (:func:`_record`)
takes it: a name-based export's item is then its key, dtype and shape, a third of its text (the record was most of
an ``.npz`` of many small tensors, four bytes a character). Where no item says more than the file, the record lists
none (:func:`without_plain`). npz files hold it in the member
``__ckpt_provenance__.npy`` (a 0-d unicode array), safetensors files in
``__metadata__["ckpt.provenance"]``. A record that is damaged or disagrees with the file is
reported and ignored (the file's own keys and dtypes stand).
"""
from __future__ import annotations

import itertools
from itertools import repeat
from _operator import add, attrgetter  # operator's C half, without operator.py (start-up)

from formats.core.bounded_json import load_json
from formats.core.dtypes import by_name
from formats.core.model import FormatName, Role
from formats.core.records import record
from formats.core.value_tuples import ValueTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from typing import Any, TypeVar

    T = TypeVar("T")

__all__ = ["PROVENANCE_MEMBER", "PROVENANCE_KEY", "TensorRecord", "RecordColumns", "Provenance", "parse_provenance",
           "restored_dtype", "in_record_order", "as_written", "without_plain", "MAX_RECORD_BYTES", "record_pieces",
           "item_of", "DEFAULTS", "PackedTexts", "packed_labels",
           "OBJECT_GRAPH_MEMBER", "OBJECT_GRAPH_METADATA", "MAX_CARRIED_GRAPH_BYTES", "CarriedGraph",
           "GRAPH_CARRIERS"]

PROVENANCE_MEMBER = "__ckpt_provenance__"
"""The npz member name (without ``.npy``) holding the record."""
PROVENANCE_KEY = "ckpt.provenance"
"""The safetensors ``__metadata__`` key holding the record."""
MAX_RECORD_BYTES = 256 << 20
OBJECT_GRAPH_MEMBER = "__ckpt_object_graph__"
"""The npz member name (without ``.npy``) holding an object-based source's serialized object graph (a 1-D
``uint8`` array of its bytes), written where every tensor went under its own key: ``convert --to tf-object`` of
the export writes that graph again (:mod:`formats.ops.convert.keys_to_object`)."""
OBJECT_GRAPH_METADATA = "ckpt.object_graph"
"""The safetensors ``__metadata__`` key holding that graph (base64: metadata values are strings)."""
GRAPH_CARRIERS = (FormatName.NPZ, FormatName.SAFETENSORS)
"""The exports that carry an object-based source's graph (:data:`OBJECT_GRAPH_MEMBER`, :data:`OBJECT_GRAPH_METADATA`)."""
MAX_CARRIED_GRAPH_BYTES = 1 << 30
"""A carried graph larger than this is not read (a bundle's own graph is one tensor, at most some hundreds of MB)."""


class CarriedGraph:
    """An object-based source's serialized graph (``entry``: its ``_CHECKPOINTABLE_OBJECT_GRAPH``) as a writer carries
    it: read when it is written, a piece at a time where the source can (a bundle's, a block at a time with
    ``pread``, its CRC32C checked: 130 MB at 10^6 objects never held whole), else whole."""

    __slots__ = ("entry",)

    def __init__(self, entry: Any) -> None:
        self.entry = entry

    def pieces(self) -> tuple[int, Iterable[bytes | memoryview]]:
        """The graph's size in bytes and its bytes in pieces (each written before the next is asked for: a piece
        may be a view of one buffer)."""
        found = self.entry.string_pieces()
        if found is not None:
            return found
        whole = self.entry.elements()[0]
        return len(whole), (whole,)


_ROLES = {r.value for r in Role}
_UNSIGNED = {1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"}


class TensorRecord(ValueTuple):
    """What the export knew about one tensor: its key in the file, the source's key, object path,
    full (TF1-style / Keras) name, role, dtype and shape (a value tuple: one is made for each item of a record
    read, and a frozen record's seven ``object.__setattr__`` calls were most of an item's parse, 1.7 µs)."""

    key: str
    source_key: str
    object_path: str
    full_name: str
    role: str
    dtype: str
    shape: tuple[int, ...]


_FIELDS = ("key", "source_key", "object_path", "full_name", "role", "dtype", "shape")
"""An item's fields, in the order its JSON text names them."""
_VARIABLE = Role.VARIABLE.value
_NO_PATH = ""
DEFAULTS = {"object_path": _NO_PATH, "role": _VARIABLE}
"""The value an item's field has when the item leaves it out (and ``source_key``, ``full_name``: the item's key):
what :func:`_record` reads and :func:`item_of` and :meth:`RecordColumns.texts` leave out."""
_PREFIXES = tuple(f', "{field}": ' for field in _FIELDS)
"""The text before each field's value in an item (the first's: ``{"key": ``)."""
_KEY_AT, _SOURCE_AT, _PATH_AT, _NAME_AT, _ROLE_AT, _DTYPE_AT, _SHAPE_AT = range(len(_FIELDS))
_FEW = (_PATH_AT, _ROLE_AT, _DTYPE_AT, _SHAPE_AT)
"""The fields of few values, each value's text made once a run (the last, the shape, a list of numbers)."""
_TEXTS_KEPT = 4096
"""Texts of the values of a column of few values (roles, dtypes, object paths, shapes) kept from one run to the
next (more: made again in each run that has them)."""


def _labels(entries: list[Any]) -> tuple[list[Any], Iterable[Any]]:
    """The names and the roles of ``entries``: asked of their class for all at once where it can (a bundle's
    tensors: ``labels_of``), else of each."""
    many = getattr(type(entries[0]), "labels_of", None) if entries else None
    labels = many(entries) if many is not None else None
    return labels if labels is not None else (list(map(_NAME, entries)), map(_ROLE, entries))


def item_of(key: str, source_key: str, object_path: str, full_name: str, role: str, dtype: str,
            shape: Any) -> dict[str, Any]:
    """A tensor's item: its fields in :data:`_FIELDS`' order, those whose value is their default left out (see the
    module doc)."""
    item: dict[str, Any] = {"key": key}
    if source_key != key:
        item["source_key"] = source_key
    if object_path != _NO_PATH:
        item["object_path"] = object_path
    if full_name != key:
        item["full_name"] = full_name
    if role != _VARIABLE:
        item["role"] = role
    item["dtype"] = dtype
    item["shape"] = list(shape)
    return item


class PackedTexts:
    """Strings appended one after another and read back a run at a time, held as one ``str`` a run of
    :data:`PACKED_RUN` joined by NUL (a run holding a NUL stays a list): a name of 25 characters costs 26 bytes, not
    the 88 of a ``str`` and its place in a list (an export of 10^5 tensors kept 8 MiB of names at its peak)."""

    __slots__ = ("_runs", "_tail", "_run")

    def __init__(self) -> None:
        self._run = PACKED_RUN
        self._runs: list[str | list[str]] = []  # each of self._run strings
        self._tail: list[str] = []  # the strings after them

    def __len__(self) -> int:
        return len(self._runs) * self._run + len(self._tail)

    def append(self, text: str) -> None:
        """Add ``text`` after the others."""
        self._tail.append(text)
        if len(self._tail) == self._run:
            self._pack()

    def extend(self, texts: Iterable[str]) -> None:
        """Add ``texts`` after the others, in order."""
        tail, run = self._tail, self._run
        for text in texts:
            tail.append(text)
            if len(tail) == run:
                self._pack()
                tail = self._tail

    def _pack(self) -> None:
        joined = "\0".join(self._tail)
        self._runs.append(self._tail if joined.count("\0") != self._run - 1 else joined)
        self._tail = []

    def _texts(self, run: int) -> list[str]:
        """The strings of run ``run`` (the last: those after the packed runs)."""
        held = self._runs[run] if run < len(self._runs) else self._tail
        return held.split("\0") if isinstance(held, str) else held

    def slice(self, first: int, stop: int) -> list[str]:
        """The strings from ``first`` to ``stop`` (as ``list[first:stop]`` gives them)."""
        first, stop, _ = slice(first, stop).indices(len(self))
        size = self._run
        found: list[str] = []
        for run in range(first // size, -(-stop // size)):
            base = run * size
            found += self._texts(run)[max(first - base, 0):stop - base]
        return found

    def take(self, positions: Iterable[int]) -> list[str]:
        """The strings at ``positions`` (each in range), in that order (a run's split once while positions stay in
        it)."""
        size, held, texts = self._run, -1, []
        found: list[str] = []
        for position in positions:
            run, at = divmod(position, size)
            if run != held:
                texts, held = self._texts(run), run
            found.append(texts[at])
        return found


def packed_labels(items: list[Any], ask: Callable[[list[Any]], tuple[Iterable[Any], Iterable[Any]]]
                  ) -> tuple[PackedTexts, list[Any]]:
    """The names (each one's text, packed: :class:`PackedTexts`) and the roles of ``items``, asked of ``ask``
    (``items`` -> their names and roles) :data:`_ITEMS_AT_ONCE` at a time."""
    names: PackedTexts = PackedTexts()
    roles: list[Any] = []
    for first in range(0, len(items), _ITEMS_AT_ONCE):
        found, kinds = ask(items[first:first + _ITEMS_AT_ONCE])
        names.extend(map(str, found))  # (what :meth:`RecordColumns._columns` makes of each)
        roles += kinds
    return names, roles


PACKED_RUN = 1024
"""Strings :class:`PackedTexts` joins into one (taken as one is made)."""


class RecordColumns:
    """The items of the tensors a writer is to write (an export's, an extraction's): their output keys and their
    entries, two lists, no dict a tensor. Each item's ``source_key``, ``full_name``, ``role``, ``dtype`` and
    ``shape`` are its entry's (``str`` of its name and role), its ``object_path`` ``object_path(source_key)`` (all
    ``""`` when None). Iterating gives each item's dict, made as it is reached; :meth:`texts` gives their JSON text
    a run at a time, made from the columns (each key escaped by the C encoder, each value of a column of few values
    once a run)."""

    __slots__ = ("keys", "entries", "object_path", "_labelled")

    def __init__(self, object_path: Callable[[str], str] | None = None, keys: list[str] | None = None,
                 entries: list[Any] | None = None) -> None:
        self.keys: list[str] = [] if keys is None else keys
        self.entries: list[Any] = [] if entries is None else entries
        self.object_path = object_path
        self._labelled: tuple[PackedTexts, list[Any]] | None = None  # every entry's name and role (label_now)

    def add(self, key: str, entry: Any) -> None:
        """Add the item of ``entry``, written as ``key``."""
        self.keys.append(key)
        self.entries.append(entry)
        if self._labelled is not None:
            self._labelled[0].append(str(entry.name))
            self._labelled[1].append(entry.role)

    def label_now(self) -> None:
        """Ask every entry's name and role now, a run at a time, and keep them (the names' texts packed,
        :class:`PackedTexts`; the roles, a few shared values, in a list): the caller may then let go of what
        answered them - an object-based source's decoded graph - before the items are written (an export of 10^5
        tensors decoded the graph while it wrote the record, every row held: 42 MiB more at that point)."""
        self._labelled = packed_labels(self.entries, _labels)

    def _names_roles(self, first: int, stop: int) -> tuple[list[Any], Iterable[Any]]:
        """The names and the roles of the entries from ``first`` to ``stop`` (those kept by :meth:`label_now`, else
        asked now)."""
        if self._labelled is not None:
            return self._labelled[0].slice(first, stop), self._labelled[1][first:stop]
        return _labels(self.entries[first:stop])

    def __len__(self) -> int:
        return len(self.keys)

    def _columns(self, first: int, stop: int) -> list[list[Any]]:
        """The items' fields from ``first`` to ``stop``, a list a field in :data:`_FIELDS`' order (shapes tuples)."""
        entries = self.entries[first:stop]
        source_keys = list(map(_KEY, entries))
        paths = [""] * len(entries) if self.object_path is None else list(map(self.object_path, source_keys))
        names, roles = self._names_roles(first, stop)
        return [self.keys[first:stop], source_keys, paths, list(map(str, names)), list(map(str, roles)),
                list(map(_DTYPE, entries)), list(map(tuple, map(_SHAPE, entries)))]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for first in range(0, len(self.keys), _ITEMS_AT_ONCE):
            yield from itertools.starmap(item_of, zip(*self._columns(first, first + _ITEMS_AT_ONCE)))

    def plain(self, named: Callable[[str], bool]) -> bool:
        """Whether no item says more than the file does without it: each one's fields but its key, dtype and shape
        at their defaults (:data:`DEFAULTS`; the source key and full name the key) and each dtype one the file names
        as it is (``named``: a bfloat16 an npz stores as uint16 is not). A reader without the items then finds each
        tensor as its item says (see :func:`without_plain`). Asked a run of items at a time, and answered at the
        first that says more (an object-based export's first)."""
        if self.object_path is not None and any(map(self.object_path, map(_KEY, self.entries))):
            return False
        roles = {DEFAULTS["role"]}
        for first in range(0, len(self.keys), _ITEMS_AT_ONCE):  # (the fields :meth:`_columns` gives, compared
            keys, entries = self.keys[first:first + _ITEMS_AT_ONCE], self.entries[first:first + _ITEMS_AT_ONCE]
            names, kinds = self._names_roles(first, first + _ITEMS_AT_ONCE)  # as they are: no str made of each)
            if list(map(_KEY, entries)) != keys or names != keys or set(kinds) != roles or \
                    not all(map(named, set(map(_DTYPE, entries)))):
                return False
        return True

    def written_as(self, rows: Any) -> bool:
        """Whether ``rows`` (each with ``key``, ``dtype``, ``shape``) are the items', in their order, each written
        with its entry's dtype and shape."""
        return (len(rows) == len(self.keys) and list(map(_KEY, rows)) == self.keys
                and list(map(_DTYPE, rows)) == list(map(_DTYPE, self.entries))
                and list(map(_SHAPE, rows)) == list(map(_SHAPE, self.entries)))

    def texts(self, at_once: int) -> Iterator[str]:
        """``json.dumps(list(self))`` without its brackets, ``at_once`` items a piece (pieces to be joined by
        ``", "``): each field's text (what precedes its value and the value) a column at a time, a field left out
        where its value is its default (a whole column at once where none differs: a name-based export's source
        keys, full names, object paths and roles), and an item's texts joined in C."""
        from formats.core.json_writer import dumps, encode_basestring_ascii as encode

        kept: dict[int, dict[Any, str]] = {at: {} for at in _FEW}  # a column's value -> its text
        for first in range(0, len(self.keys), at_once):
            runs = self._columns(first, first + at_once)
            keys = runs[_KEY_AT]
            key_texts = list(map(encode, keys))
            parts: list[Any] = [list(map(add, repeat('{"key": '), key_texts))]
            for at in range(_SOURCE_AT, len(_FIELDS)):
                values, prefix = runs[at], _PREFIXES[at]
                if at in kept:
                    made = kept[at]
                    found = {value: made.get(value) for value in set(values)}
                    for value, text in found.items():
                        if text is None:
                            text = "" if _FIELDS[at] in DEFAULTS and DEFAULTS[_FIELDS[at]] == value else \
                                prefix + (encode(value) if at != _SHAPE_AT else dumps(list(value)))
                            found[value] = text
                            if len(made) < _TEXTS_KEPT:
                                made[value] = text
                    if set(found.values()) != {""}:
                        parts.append(list(map(found.__getitem__, values)))
                elif values != keys:  # (else every value is the key's: none written)
                    parts.append(["" if value == key else prefix + encode(value) for value, key in zip(values, keys)])
            parts.append(repeat("}"))
            yield ", ".join(map("".join, zip(*parts)))


_KEY, _NAME, _ROLE, _DTYPE, _SHAPE = map(attrgetter, ("key", "name", "role", "dtype", "shape"))


@record
class Provenance:
    """A parsed record: the source it was exported from, its tensors by key, and what was wrong with it."""

    source: str | None = None
    format: str | None = None
    tensors: dict[str, TensorRecord] | None = None
    problems: list[str] | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"source", "format", "tensors"}`` for a checkpoint's metadata."""
        return {"source": self.source, "format": self.format, "tensors": len(self.tensors or {})}


def _record(item: Any, dtypes: set[str]) -> TensorRecord | None:
    """The record of one item (its fields left out or of the wrong type: their defaults), or None where its key,
    dtype or shape is missing or wrong; ``dtypes``: the dtype names found good so far (each asked of
    :func:`~formats.core.dtypes.by_name` once)."""
    if not isinstance(item, dict):
        return None
    get = item.get
    key, dtype, shape = get("key"), get("dtype"), get("shape")
    if not isinstance(key, str) or not isinstance(dtype, str) or not isinstance(shape, list):
        return None
    if shape and not (set(map(type, shape)) <= _INT and min(shape) >= 0):  # (bool, float and the rest refused)
        return None
    if dtype not in dtypes:
        try:
            by_name(dtype)
        except (KeyError, ValueError):
            return None
        dtypes.add(dtype)
    role, source_key, object_path, full_name = get("role"), get("source_key"), get("object_path"), get("full_name")
    return TensorRecord(key, source_key if isinstance(source_key, str) else key,
                        object_path if isinstance(object_path, str) else _NO_PATH,
                        full_name if isinstance(full_name, str) else key,
                        role if role in _ROLES else _VARIABLE, dtype, tuple(shape))


_INT = {int}


def parse_provenance(raw: bytes | str, path: str) -> Provenance:
    """The record in ``raw``; problems (not exceptions) for a damaged one."""
    from formats.core.errors import CorruptCheckpointError

    try:
        data = load_json(raw, path, "the provenance record", max_bytes=MAX_RECORD_BYTES, max_depth=8)
    except CorruptCheckpointError as exc:
        return Provenance(problems=[f"{exc.message}; ignored"])
    items = data.get("tensors") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return Provenance(problems=["the provenance record lists no tensors; ignored"])
    tensors: dict[str, TensorRecord] = {}
    bad = 0
    dtypes: set[str] = set()
    for item in items:
        record = _record(item, dtypes)
        if record is None or record.key in tensors:
            bad += 1
            continue
        tensors[record.key] = record
    problems = [f"{bad} provenance record item(s) are malformed or repeated; ignored"] if bad else []
    source, fmt = data.get("source"), data.get("format")
    return Provenance(source if isinstance(source, str) else None, fmt if isinstance(fmt, str) else None,
                      tensors, problems)


def restored_dtype(stored: str, shape: tuple[int, ...], record: TensorRecord | None) -> tuple[str, str | None]:
    """``(dtype to present, problem or None)`` for a tensor stored as ``stored`` with ``shape``.

    The recorded dtype wins when it is the stored one or when the export stored it as the unsigned
    integer of its width (bfloat16 as uint16); a record that disagrees otherwise is reported.
    """
    if record is None or record.dtype == stored:
        return stored, None
    if record.shape != shape:
        return stored, f"provenance records shape {list(record.shape)}, the file stores {list(shape)}; ignored"
    want = by_name(record.dtype)
    if want.fixed_width and _UNSIGNED.get(want.itemsize) == stored:
        return record.dtype, None
    return stored, f"provenance records dtype {record.dtype}, the file stores {stored}; read as {stored}"


def in_record_order(entries: dict[str, T], records: dict[str, TensorRecord]) -> dict[str, T]:
    """``entries`` in the record's order (the source's), those it does not list after, as they were."""
    first = {k: entries[k] for k in records if k in entries}
    first.update({k: e for k, e in entries.items() if k not in first})
    return first


def as_written(record: dict[str, Any] | None, rows: Any, needed: bool = False) -> dict[str, Any] | None:
    """The record to store beside ``rows`` (each with ``key``, ``dtype``, ``shape``): ``record``'s items with the
    dtype and shape each row is written with (an edit that casts keeps the record true), plus an item for each
    row it does not list; None when there is no ``record`` and none is ``needed`` (a dtype the file cannot
    name, which only the record restores). Its ``"tensors"`` is ``record``'s own :class:`RecordColumns` where
    ``rows`` are its items as they are (an export's, an extraction's: their text made from the columns), else a
    generator, made an item at a time as a writer reaches it (:func:`record_pieces`) and consumed once: neither
    the items nor their list are held."""
    if record is None and not needed:
        return None
    record = dict(record or {})
    items = record.get("tensors")
    if not (isinstance(items, RecordColumns) and items.written_as(rows)):  # (else the record says it already)
        record["tensors"] = _items_as_written(items or (), rows)
    return record


def without_plain(record: dict[str, Any] | None, named: Callable[[str], bool]) -> dict[str, Any] | None:
    """``record`` (as :func:`as_written` gives it) with no item where none says more than the file
    (:meth:`RecordColumns.plain`; ``named``: whether the file names a dtype as it is): ``"tensors": []``. Every
    reader of the record since its first takes a tensor it does not list as its file has it (its key its name, a
    variable, the dtype and shape stored) and in the file's order, which is the items' (an npz's members and a
    safetensors header's entries are written in it): what each item said. A name-based export of 10^5 tiny
    tensors then has a record of a few dozen bytes, not 40 MB of UTF-32 to write, read back and parse."""
    items = record.get("tensors") if record is not None else None
    if isinstance(items, RecordColumns) and items.plain(named):
        return {**record, "tensors": []}  # type: ignore[dict-item]
    return record


def _items_as_written(items: Any, rows: Any) -> Iterator[Any]:
    """:func:`as_written`'s items: each of ``items`` (any iterable, reached once) as it is when its row is written
    as it says (an extraction's, a conversion's: every item), else a new dict with the row's dtype and shape; then
    an item for each row ``items`` does not list."""
    pending = iter(rows)  # the rows not met yet, in order, while the items follow them (no dict a row: 29 MB at 10^6)
    ahead = next(pending, None)
    written: dict[str, Any] | None = None  # the rows not met yet, by key, once an item does not follow them

    def unmet() -> Iterator[Any]:
        """The rows not met yet, in order (before ``written`` is made)."""
        return itertools.chain(() if ahead is None else (ahead,), pending)

    for item in items:
        key = item.get("key") if isinstance(item, dict) else None
        if written is None and ahead is not None and key == ahead.key:
            row, ahead = ahead, next(pending, None)
        elif key is None:
            row = None
        else:
            if written is None:
                written = {r.key: r for r in unmet()}
            row = written.pop(key, None)
        if row is not None:
            shape = list(row.shape)
            if item.get("dtype") != row.dtype or item.get("shape") != shape:  # else the item says it already: kept,
                item = {**item, "dtype": row.dtype, "shape": shape}  # not copied (a dict a tensor: 26 MB at 100k)
        yield item
    for r in written.values() if written is not None else unmet():
        yield {"key": r.key, "dtype": r.dtype, "shape": list(r.shape)}


_ITEMS_AT_ONCE = 1024
"""Items of a record's ``"tensors"`` :func:`record_pieces` encodes with one call of
:func:`~formats.core.json_writer.dumps` (``json.dumps``'s text, without importing json)."""


def record_pieces(record: dict[str, Any]) -> Iterator[str]:
    """``json.dumps(record)`` a piece at a time, its ``"tensors"`` :data:`_ITEMS_AT_ONCE` items at a time: the
    items may be :class:`RecordColumns` (encoded from the columns) or any iterable (a generator making each dict as
    it is reached is consumed once), so neither the whole text nor a dict per tensor is held (a record of 100,000
    tensors was 24 MB of text and 50 MB of dicts and chunks). A list's items are separated by ``", "`` as the
    record's are, so a run of items is their list's text without its brackets."""
    from formats.core.json_writer import dumps

    items = record.get("tensors")
    if items is None:
        yield dumps(record)
        return
    names = list(record)
    at = names.index("tensors")
    before = dumps({name: record[name] for name in names[:at]})[:-1]  # "{...", without its "}"
    after = dumps({name: record[name] for name in names[at + 1:]})[1:]  # "...}", without its "{"
    yield before + (", " if at else "") + '"tensors": ['
    separator = ""
    for text in items.texts(_ITEMS_AT_ONCE) if isinstance(items, RecordColumns) else _runs(items, dumps):
        yield separator + text
        separator = ", "
    yield "]" + (", " + after if at + 1 < len(names) else "}")


def _runs(items: Any, dumps: Any) -> Iterator[str]:
    """The text of ``items`` (any iterable, reached once), :data:`_ITEMS_AT_ONCE` a run, each its list's text
    without its brackets."""
    run = []
    for item in items:
        run.append(item)
        if len(run) >= _ITEMS_AT_ONCE:
            yield dumps(run)[1:-1]
            run = []
    if run:
        yield dumps(run)[1:-1]
