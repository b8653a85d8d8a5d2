"""A ``TrackableObjectGraph`` decoded into columns: a few integer arrays over the serialized bytes, not Python
objects per node (a graph has a node per object: two million for a checkpoint of a million variables).

:func:`decode_columns` splits the graph as TensorFlow writes it - every node holding only children,
attributes, slot variables and ``has_checkpoint_values``, each sub-message's fields in field order with
lengths and ids of at most four bytes and valid UTF-8 text - into :class:`GraphColumns`: per node the
ranges of its children, attributes and slot variables (CSR offsets), per item its ids and the
``(start, stop)`` spans of its strings in the bytes. The nodes are found in one Python loop over the top
level; everything below is parsed a level at a time with numpy across all nodes at once. Anything else
(a registered saver, an unknown field, fields out of order, a repeated scalar, a long varint, bytes that
do not parse) gives None, and the caller decodes the graph with the generic decoder, which also words any
error. Decoding with it and with the generic decoder gives the same nodes (a test compares them).
"""
from __future__ import annotations

from _collections_abc import Sequence  # collections.abc's, without the collections package

from formats.concepts.object_graph import Attribute, ChildRef, ObjectNode, SlotVariableRef
from formats.core.arrays import sorted_unique

TYPE_CHECKING = False
if TYPE_CHECKING:
    from array import array
    from collections.abc import Iterator
    from typing import Any

__all__ = ["GraphColumns", "AttributeRows", "attribute_fields", "decode_columns"]

_TAGS = (0x0A, 0x12, 0x1A, 0x2A)
"""The one-byte tags of a node's fields this decodes (children, attributes, slot variables, has_checkpoint_values,
each length-delimited), in order."""

_FEW = 16
"""Nodes still holding fields when fewer than this many remain are finished in plain Python (a node with
100,000 children would otherwise take a numpy round per child)."""


_SPANS_AT_ONCE = 1 << 14
"""Spans made Python ints this many at a time (:meth:`GraphColumns.shared_texts`)."""


class GraphColumns:
    """The decoded graph as arrays (numpy: positions and ids int32 below 1 GiB of graph): ``child_ptr``/``attr_ptr``/``slot_ptr`` (length nodes + 1:
    node ``i``'s items are ``ptr[i]:ptr[i + 1]``), ``child_id`` and ``child_name`` (a ``(2, k)`` array of
    spans), ``attr_name``/``attr_full``/``attr_key`` spans and ``attr_optional``, ``slot_original``,
    ``slot_name`` spans and ``slot_id``, and ``has_values`` (-1 absent, 0, 1) per node; ``data`` the bytes."""

    def __init__(self, data: bytes, arrays: dict[str, Any]) -> None:
        self.data = data
        self.count = len(arrays["has_values"])
        self.child_ptr = arrays["child_ptr"]
        self.child_id = arrays["child_id"]
        self.child_name = arrays["child_name"]
        self.attr_ptr = arrays["attr_ptr"]
        self.attr_name = arrays["attr_name"]
        self.attr_full = arrays["attr_full"]
        self.attr_key = arrays["attr_key"]
        self.attr_optional = arrays["attr_optional"]
        self.slot_ptr = arrays["slot_ptr"]
        self.slot_original = arrays["slot_original"]
        self.slot_name = arrays["slot_name"]
        self.slot_id = arrays["slot_id"]
        self.has_values = arrays["has_values"]
        self._child_names: list[str] | None = None
        self._attributes: list[Attribute] | None = None
        self._keys_given: list[str] | None = None  # the attributes' keys as attribute_rows was given them

    def text(self, start: int, stop: int) -> str:
        """The string at ``data[start:stop]`` (valid UTF-8: checked when decoded)."""
        return self.data[start:stop].decode("utf-8")

    def texts(self, spans: Any, lo: int = 0, hi: int | None = None) -> list[str]:
        """The strings of ``spans[:, lo:hi]``."""
        d = self.data
        return [d[a:b].decode("utf-8") for a, b in zip(spans[0, lo:hi].tolist(), spans[1, lo:hi].tolist())]

    def shared_texts(self, spans: Any) -> list[str]:
        """The strings of every span, each distinct string decoded once and shared by the spans holding it (names
        repeat: every variable's attribute is ``VARIABLE_VALUE``, a model's layers are ``unit_0``... under each
        parent; a string per span was 63 bytes and more each)."""
        from itertools import tee

        first: dict[str, str] = {}  # each string to the first one equal to it (no bytes a span held: 15 MB at 10^5)
        share, cut = first.setdefault, self.data.__getitem__
        out: list[str] = []
        for lo in range(0, spans.shape[1], _SPANS_AT_ONCE):  # (the spans as ints a run at a time: 14 MB at 10^5)
            hi = lo + _SPANS_AT_ONCE
            texts = map(bytes.decode, map(cut, map(slice, spans[0, lo:hi].tolist(), spans[1, lo:hi].tolist())))
            out += map(share, *tee(texts))  # (all in C: no Python call a span)
        return out

    def child_name_of(self, edge: int) -> str:
        """One edge's local name as stored (decoded alone: :meth:`child_names` decodes every edge's)."""
        return self.text(int(self.child_name[0, edge]), int(self.child_name[1, edge]))

    def child_names(self) -> list[str]:
        """Every edge's local name, in the order of ``child_id`` (decoded once: every caller shares them)."""
        if self._child_names is None:
            self._child_names = self.shared_texts(self.child_name)
        return self._child_names

    def child_path_lengths(self) -> Any:
        """Every edge's escaped local name's length in characters, as a path holds it."""
        import numpy as np

        from formats.core.object_keys import escape_local_name

        lengths = self.child_name[1] - self.child_name[0]
        for e in _special_spans(np, self.data, self.child_name).tolist():
            lengths[e] = len(escape_local_name(self.child_name_of(e)))
        return lengths

    def attr_keys(self) -> list[str]:
        """Every attribute's ``checkpoint_key``, in the order of the attributes (decoded once: a list of those
        :meth:`attribute_rows` was given, the stored keys' own strings, when it was)."""
        if self._attributes is not None:
            return [a.checkpoint_key for a in self._attributes]
        if self._keys_given is not None:
            return list(self._keys_given)
        return self.texts(self.attr_key)

    def attr_key_runs(self) -> Iterator[list[str]]:
        """Every attribute's ``checkpoint_key``, as :meth:`attr_keys` gives them, in runs (each a new list): decoded
        :data:`_SPANS_AT_ONCE` at a time, or one run where they are held as strings already."""
        if self._attributes is not None or self._keys_given is not None:
            return iter((self.attr_keys(),))
        spans = self.attr_key
        return (self.texts(spans, lo, lo + _SPANS_AT_ONCE) for lo in range(0, spans.shape[1], _SPANS_AT_ONCE))

    def attributes(self, keys: list[str] | None = None) -> list[Attribute]:
        """Every attribute (over all nodes, in order), built once: every caller shares them; ``keys`` their
        checkpoint keys when known."""
        if self._attributes is None:
            self._attributes = [Attribute(n, f, k, o) for n, f, k, o in zip(
                self.shared_texts(self.attr_name), self.texts(self.attr_full),
                self.attr_keys() if keys is None else keys,
                self.attr_optional.tolist())]
        return self._attributes

    def attribute_rows(self, keys: list[str]) -> Sequence[Attribute]:
        """Every attribute as :meth:`attributes` gives them, ``keys`` their checkpoint keys, each made when asked for
        (:class:`AttributeRows`) unless they are all made already."""
        if self._attributes is not None:
            return self._attributes
        self._keys_given = keys
        return AttributeRows(self, keys)

    def has_notes(self) -> bool:
        """Whether any node has a ``note`` (never, for a graph decoded from bytes)."""
        return False

    def slot_names(self, lo: int = 0, hi: int | None = None) -> list[str]:
        """The ``slot_name`` of every slot variable reference, each distinct name decoded once (most are ``m`` and
        ``v``; the graph keeps them: :class:`~formats.concepts.object_graph.ObjectGraph`), or of those from ``lo`` to
        ``hi`` alone (a node built from the columns: :meth:`node`)."""
        return self.shared_texts(self.slot_name) if lo == 0 and hi is None else self.texts(self.slot_name, lo, hi)

    def all_nodes(self) -> list[ObjectNode]:
        """Every node as an :class:`ObjectNode`, built at once (for a caller that walks them all)."""
        children = [ChildRef(i, n) for i, n in zip(self.child_id.tolist(), self.child_names())]
        attributes = self.attributes()
        slots = [SlotVariableRef(o, n, s) for o, n, s in zip(self.slot_original.tolist(), self.slot_names(),
                                                             self.slot_id.tolist())]
        cp, ap, sp = self.child_ptr.tolist(), self.attr_ptr.tolist(), self.slot_ptr.tolist()
        flags = [None if f < 0 else bool(f) for f in self.has_values.tolist()]
        return [ObjectNode(i, children[cp[i]:cp[i + 1]], attributes[ap[i]:ap[i + 1]], slots[sp[i]:sp[i + 1]], None,
                           flags[i]) for i in range(self.count)]

    def node(self, index: int) -> ObjectNode:
        """Node ``index`` as an :class:`ObjectNode` (built now)."""
        node = ObjectNode(index)
        lo, hi = int(self.child_ptr[index]), int(self.child_ptr[index + 1])
        if hi > lo:
            node.children = [ChildRef(i, n) for i, n in zip(self.child_id[lo:hi].tolist(),
                                                              self.texts(self.child_name, lo, hi))]
        lo, hi = int(self.attr_ptr[index]), int(self.attr_ptr[index + 1])
        if hi > lo and self._attributes is not None:
            node.attributes = self._attributes[lo:hi]
        elif hi > lo:
            node.attributes = [Attribute(n, f, k, o) for n, f, k, o in zip(
                self.texts(self.attr_name, lo, hi), self.texts(self.attr_full, lo, hi),
                self.texts(self.attr_key, lo, hi), self.attr_optional[lo:hi].tolist())]
        lo, hi = int(self.slot_ptr[index]), int(self.slot_ptr[index + 1])
        if hi > lo:
            node.slot_variables = [SlotVariableRef(o, n, s) for o, n, s in zip(
                self.slot_original[lo:hi].tolist(), self.slot_names(lo, hi),
                self.slot_id[lo:hi].tolist())]
        flag = int(self.has_values[index])
        if flag >= 0:
            node.has_checkpoint_values = bool(flag)
        return node


def _node_tags(data: bytes) -> array[int] | None:
    """Where each field of the graph starts, taken as nodes with lengths of up to four bytes (the tags are
    checked by the caller, all at once); None when the lengths do not end at the end of the bytes. An array of C
    ints (of 64-bit ones from 1 GiB of graph on): a list of them held an int object each (72 MB at 2 * 10^6 nodes,
    the peak of opening a graph of 10^6 variables)."""
    from array import array

    found = array("i" if len(data) < 1 << 30 else "q")
    add = found.append
    n = len(data)
    p = 0
    try:
        while p < n:  # the one sequential walk: as few operations per node as can be
            add(p)
            length = data[p + 1]
            if length < 0x80:
                p += length + 2
            else:
                b = data[p + 2]
                if b < 0x80:
                    p += (length & 0x7F | b << 7) + 3
                else:
                    c = data[p + 3]
                    if c < 0x80:
                        p += (length & 0x7F | (b & 0x7F) << 7 | c << 14) + 4
                    else:  # (a node of 2 MiB or more: an optimizer's of a million slot variables)
                        d = data[p + 4]
                        if d >= 0x80:
                            return None
                        p += (length & 0x7F | (b & 0x7F) << 7 | (c & 0x7F) << 14 | d << 21) + 5
    except IndexError:
        return None
    return found if p == n else None


class _Bytes:
    """The graph's bytes as a numpy array, read at positions clipped to the array (a read past a field's end
    is caught by the caller's bounds check)."""

    def __init__(self, np: Any, data: bytes) -> None:
        self.np = np
        self.d = np.frombuffer(data, dtype=np.uint8) if data else np.zeros(1, np.uint8)
        self.last = len(self.d) - 1

    def at(self, pos: Any) -> Any:
        return self.d[self.np.minimum(pos, self.last)].astype(pos.dtype)

    def varint(self, pos: Any) -> tuple[Any, Any] | None:
        """The varints (up to four bytes) at ``pos`` and the positions after them; None when any is longer."""
        np = self.np
        value = self.at(pos)
        size = np.ones_like(pos)
        more = value >= 0x80
        if more.any():
            value = value & 0x7F
            for shift in (7, 14, 21):
                b = self.at(pos + size)
                value = np.where(more, value | (b & 0x7F) << shift, value)
                size = size + more
                more = more & (b >= 0x80)
                if not more.any():
                    break
            else:
                return None
        return value, pos + size


def _fields(np: Any, b: _Bytes, data: bytes, starts: Any, stops: Any) -> list[list[Any]] | None:
    """Every field of the node bodies ``[starts, stops)``, grouped by tag: for each of :data:`_TAGS`, a list of
    its fields' ``[node, start, stop]`` arrays in the order of the bytes (each group its own arrays, so that a
    group decoded is let go); only those tags (length-delimited, one byte); None for anything else."""
    node = np.arange(len(starts), dtype=starts.dtype)
    pos, end = starts, stops
    rounds: list[list[Any]] = [[], [], [], []]  # node, tag, start, stop: a field of each node per round
    live = pos < end
    node, pos, end = node[live], pos[live], end[live]
    is_tag = np.zeros(256, dtype=bool)  # (not numpy.isin: for a few values it imports numpy.ma, 1.3 MiB)
    is_tag[list(_TAGS)] = True
    while len(node) >= _FEW:
        tag = b.d[np.minimum(pos, b.last)]  # (uint8)
        if not is_tag[tag].all():
            return None  # a registered saver (0x22), an unknown field or another wire type: the generic decoder
        got = b.varint(pos + 1)
        if got is None:
            return None
        length, start = got
        stop = start + length
        if (stop > end).any():
            return None
        for column, found in zip(rounds, (node, tag, start, stop)):
            column.append(found)
        live = stop < end
        node, pos, end = node[live], stop[live], end[live]
    rest = _slow_fields(data, node.tolist(), pos.tolist(), end.tolist())
    if rest is None or not set(rest[1]).issubset(_TAGS):
        return None
    for i, (column, found) in enumerate(zip(rounds, rest)):
        column.append(np.asarray(found, dtype=np.uint8 if i == 1 else starts.dtype))
    places = np.zeros(256, np.uint8)
    places[list(_TAGS)] = range(len(_TAGS))
    place = places[np.concatenate(rounds[1])]  # each field's tag's place among the four (uint8)
    rounds[1].clear()
    start = np.concatenate(rounds[2])
    rounds[2].clear()
    # each tag's fields in the bytes' order (by start), a tag at a time: its positions and their sort are a group's
    # size, not every field's (the sort's 64-bit positions of every field were the peak of a large graph's decoding)
    index = np.int32 if len(start) < 1 << 31 else np.int64
    orders = []
    for p in range(len(_TAGS)):
        mine = np.flatnonzero(place == p)
        orders.append(mine[np.argsort(start[mine], kind="stable")].astype(index))
        del mine
    del place
    groups: list[list[Any]] = [[] for _ in _TAGS]
    for i in (0, 2, 3):  # a column at a time: its fields and the groups made of them alive together
        column = start if i == 2 else np.concatenate(rounds[i])
        rounds[i].clear()
        for group, order in zip(groups, orders):
            group.append(column[order])
        del column
        if i == 2:
            del start
    return groups


def _slow_fields(data: bytes, nodes: list[int], pos: list[int], ends: list[int]) -> tuple[list[int], ...] | None:
    """:func:`_fields` for the few nodes left, a field at a time."""
    out: tuple[list[int], list[int], list[int], list[int]] = ([], [], [], [])
    from formats.io.protowire import WireError, read_varint

    for node, p, end in zip(nodes, pos, ends):
        while p < end:
            tag = data[p]
            if tag >= 0x80 or tag & 7 != 2:
                return None
            try:
                length, p = read_varint(data, p + 1, end, 4)
            except WireError:
                return None
            if p + length > end:
                return None
            out[0].append(node)
            out[1].append(tag)
            out[2].append(p)
            p += length
            out[3].append(p)
    return out


class _Reader:
    """Sub-messages ``[pos, end)`` (one per item), read field by field in field order, all at once."""

    def __init__(self, np: Any, b: _Bytes, pos: Any, end: Any) -> None:
        self.np, self.b, self.pos, self.end = np, b, pos.copy(), end
        self.ok = True

    def _take(self, tag: int) -> Any:
        """Which items hold field ``tag`` next."""
        return (self.pos < self.end) & (self.b.at(self.pos) == tag)

    def _read(self, tag: int) -> tuple[Any, Any, Any] | None:
        """Where field ``tag`` comes next: ``(items, varint, position after it)``, or None when none has it."""
        here = self.np.flatnonzero((self.pos < self.end) & (self.b.at(self.pos) == tag))
        if not len(here):
            return None
        got = self.b.varint(self.pos[here] + 1)
        if got is None:
            self.ok = False
            return None
        return here, got[0], got[1]

    def varint(self, tag: int) -> Any:
        """The varint field ``tag`` (0 where absent)."""
        value = self.np.zeros_like(self.pos)
        got = self._read(tag)
        if got is not None:
            here, found, after = got
            value[here] = found
            self.pos[here] = after
        return value

    def text(self, tag: int) -> Any:
        """The string field ``tag`` as a ``(2, items)`` span array (empty where absent)."""
        spans = self.np.stack([self.pos, self.pos])
        got = self._read(tag)
        if got is not None:
            here, length, start = got
            spans[0, here] = start
            spans[1, here] = self.pos[here] = start + length
        return spans

    def done(self) -> bool:
        """Whether every item was read to its end exactly, nothing left over."""
        return self.ok and bool((self.pos == self.end).all())


class AttributeRows(Sequence[Attribute]):
    """Every attribute of a graph in columns, each :class:`Attribute` made when asked for from its position: its name
    (one string for all that share it), its full name decoded from the graph's bytes (:meth:`full_name`, without
    the attribute), its checkpoint key from the keys given. Attributes made all at once and held were 140 bytes
    each, their full names 70 more: 21 MB at 10^5 variables."""

    __slots__ = ("_columns", "names", "keys", "_starts", "_stops", "_optional")

    def __init__(self, columns: GraphColumns, keys: list[str]) -> None:
        from formats.concepts.object_graph_table import item_view

        self._columns, self.keys = columns, keys
        self.names = columns.shared_texts(columns.attr_name)
        spans = columns.attr_full  # (views of the columns' own arrays: no copy)
        self._starts, self._stops = item_view(spans[0]), item_view(spans[1])
        self._optional = item_view(columns.attr_optional)

    @property
    def columns(self) -> GraphColumns:
        """The graph's columns these rows read (the full names' spans: ``columns.attr_full``)."""
        return self._columns

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, k: Any) -> Any:
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(len(self)))]
        return Attribute(self.names[k], self.full_name(k), self.keys[k], bool(self._optional[k]))

    def full_name(self, k: int) -> str:
        """The full name of the attribute at ``k``."""
        return self._columns.data[self._starts[k]:self._stops[k]].decode("utf-8")


def attribute_fields(attributes: Sequence[Attribute]) -> tuple[Sequence[str], Sequence[str], Any]:
    """Every attribute's name, checkpoint key and full name (a function of its position), by position, read from
    :class:`AttributeRows` without making an attribute (from the attributes themselves when they are made
    already)."""
    if isinstance(attributes, AttributeRows):
        return attributes.names, attributes.keys, attributes.full_name
    fulls = [a.full_name for a in attributes]
    return [a.name for a in attributes], [a.checkpoint_key for a in attributes], fulls.__getitem__


def decode_columns(data: bytes) -> GraphColumns | None:
    """The graph in ``data`` as :class:`GraphColumns`, or None when it holds anything this does not decode
    (the module doc)."""
    found = _node_tags(data)
    if not found:
        return None
    import numpy as np

    b = _Bytes(np, data)
    tags = np.frombuffer(found, dtype=found.typecode)  # positions and varints (C int: int32; long long: int64)
    del found
    if (b.at(tags) != 0x0A).any():
        return None
    got = b.varint(tags + 1)
    if got is None:  # pragma: no cover - _node_tags read the same lengths
        return None
    count = len(tags)
    groups = _fields(np, b, data, got[1], got[1] + got[0])
    del tags, got  # (where each node's fields are: three arrays a node, 23 MB at 2 * 10^6 nodes, not needed again)
    if groups is None:
        return None
    arrays: dict[str, Any] = {}
    ok = True
    for group, decode in zip(groups, (_children, _attributes, _slots, _has_values)):  # in the order of _TAGS
        node, start, stop = group
        group.clear()
        ok = ok and decode(np, b, node, start, stop, count, arrays)
        del node, start, stop  # decoded: let go before the next group's arrays are made
    if not ok or not _utf8(np, b, data, [arrays[k] for k in ("child_name", "attr_name", "attr_full", "attr_key",
                                                              "slot_name")]):
        return None
    return GraphColumns(data, arrays)


def _ptr(np: Any, node: Any, count: int) -> Any:
    """CSR offsets of items belonging to ``node`` (sorted): int32 below 2**31 items, as the ids are."""
    ptr = np.zeros(count + 1, dtype=np.int32 if len(node) < 1 << 31 else np.int64)
    np.cumsum(np.bincount(node, minlength=count), out=ptr[1:])
    return ptr


def _children(np: Any, b: _Bytes, node: Any, start: Any, stop: Any, count: int, out: dict[str, Any]) -> bool:
    r = _Reader(np, b, start, stop)
    out["child_id"] = r.varint(0x08)
    out["child_name"] = r.text(0x12)
    out["child_ptr"] = _ptr(np, node, count)
    return r.done()


def _attributes(np: Any, b: _Bytes, node: Any, start: Any, stop: Any, count: int, out: dict[str, Any]) -> bool:
    r = _Reader(np, b, start, stop)
    out["attr_name"] = r.text(0x0A)
    out["attr_full"] = r.text(0x12)
    out["attr_key"] = r.text(0x1A)
    out["attr_optional"] = r.varint(0x20) != 0
    out["attr_ptr"] = _ptr(np, node, count)
    return r.done()


def _slots(np: Any, b: _Bytes, node: Any, start: Any, stop: Any, count: int, out: dict[str, Any]) -> bool:
    r = _Reader(np, b, start, stop)
    out["slot_original"] = r.varint(0x08)
    out["slot_name"] = r.text(0x12)
    out["slot_id"] = r.varint(0x18)
    out["slot_ptr"] = _ptr(np, node, count)
    return r.done()


def _has_values(np: Any, b: _Bytes, node: Any, start: Any, stop: Any, count: int, out: dict[str, Any]) -> bool:
    if len(node) and (np.diff(node) == 0).any():
        return False  # the field twice: merged, as the generic decoder does
    r = _Reader(np, b, start, stop)
    value = r.varint(0x08)
    flags = np.full(count, -1, dtype=np.int8)
    flags[node] = value != 0
    out["has_values"] = flags
    return r.done()


def _utf8(np: Any, b: _Bytes, data: bytes, spans: list[Any]) -> bool:
    """Whether every string is valid UTF-8: the strings holding a byte beyond ASCII are decoded to see. Each of
    ``spans`` is in the order of the bytes already (a group's items are), so none is merged or sorted."""
    for group, holding in zip(spans, _spans_holding(np, data, [(s[0], s[1]) for s in spans], lambda c: c >= 0x80)):
        starts, stops = group
        for i in holding.tolist():
            try:
                data[starts[i]:stops[i]].decode("utf-8")
            except UnicodeDecodeError:
                return False
    return True


def _spans_holding(np: Any, data: bytes, groups: list[tuple[Any, Any]], chosen: Any) -> list[Any]:
    """For each ``(starts, stops)`` of ``groups`` (spans disjoint and sorted by start, no span of one group
    overlapping another's), the indices of its spans holding a byte ``chosen`` selects; the bytes scanned once, a
    chunk at a time (a few arrays of a chunk's size at most). Which bytes of a chunk lie in some span is marked
    from the spans' ends (a running sum), so that the chosen bytes outside every span - most of a large graph's
    bytes beyond ASCII, its varints' - are not looked up among the spans (at 10^6 variables, millions of them)."""
    d = np.frombuffer(data, dtype=np.uint8)
    # every position in one dtype, the spans' own where it holds them all (spans converted only then): a value
    # searched for in an array of another dtype converts the whole array first (a Python int in int32 spans:
    # 2 x 10^6 spans converted twice a chunk, 137 times, at 10^6 variables)
    groups = [(np.asarray(starts), np.asarray(stops)) for starts, stops in groups]
    index = np.result_type(np.int32 if len(d) < (1 << 31) - 1 else np.int64, *(a.dtype for g in groups for a in g))
    groups = [(starts.astype(index, copy=False), stops.astype(index, copy=False)) for starts, stops in groups]
    if sum(int(stops.sum(dtype=np.int64) - starts.sum(dtype=np.int64)) for starts, stops in groups) * 3 < len(d):
        return [_gathered_holding(np, d, starts, stops, chosen) for starts, stops in groups]
    found: list[list[Any]] = [[] for _ in groups]
    for i in range(0, len(d), _CHUNK):
        chunk = d[i:i + _CHUNK]
        at = np.flatnonzero(chosen(chunk))
        if not len(at):
            continue
        edges = np.zeros(len(chunk) + 1, np.int8)  # +1 where a span starts, -1 where it stops (disjoint: 0 or 1)
        first, past = index.type(i), index.type(i + len(chunk))
        for starts, stops in groups:
            lo, hi = int(np.searchsorted(stops, first, "right")), int(np.searchsorted(starts, past))
            if lo < hi:  # (a group's spans are disjoint: no two of them start, or stop, at one byte)
                edges[np.maximum(starts[lo:hi] - i, 0)] += 1
                edges[np.minimum(stops[lo:hi] - i, len(chunk))] -= 1
        at = (at[np.cumsum(edges[:-1], dtype=np.int8)[at] > 0] + i).astype(index, copy=False)
        if not len(at):
            continue
        for (starts, stops), into in zip(groups, found):
            if not len(starts):
                continue
            inside = np.searchsorted(starts, at, side="right") - 1
            inside = inside[(inside >= 0) & (at < stops[np.maximum(inside, 0)])]
            if len(inside):
                into.append(sorted_unique(inside))
    return [sorted_unique(np.concatenate(f)) if f else np.zeros(0, np.int64) for f in found]


def _gathered_holding(np: Any, d: Any, starts: Any, stops: Any, chosen: Any) -> Any:
    """The indices of the spans ``starts``/``stops`` (in any order) holding a byte ``chosen`` selects, the spans'
    bytes gathered :data:`_GATHERED` at a time (or one span longer than that, as it lies): where the spans hold a few
    of the bytes (a graph's local names: a ninth of its bytes at 10^6 variables), only those are scanned."""
    sizes = stops.astype(np.int64) - starts
    ends = np.cumsum(sizes)
    found: list[Any] = []
    first, n = 0, len(sizes)
    while first < n:
        base = int(ends[first - 1]) if first else 0
        last = max(first + 1, int(np.searchsorted(ends, np.int64(base + _GATHERED), "right")))
        if last == first + 1 and sizes[first] > _GATHERED:
            if chosen(d[starts[first]:stops[first]]).any():
                found.append(np.array([first], np.int64))
        else:
            size, run_ends = sizes[first:last], ends[first:last] - base
            places = np.repeat(starts[first:last] - (run_ends - size), size) + np.arange(run_ends[-1])
            hits = np.flatnonzero(chosen(d[places]))
            if len(hits):
                found.append(sorted_unique(np.searchsorted(run_ends, hits, "right")) + first)
        first = last
    return np.concatenate(found) if found else np.zeros(0, np.int64)


_CHUNK = 1 << 20
"""Bytes scanned at a time for non-ASCII ones (a boolean array of this many at most)."""
_GATHERED = 1 << 17
"""Bytes of spans gathered at a time (their positions: 8 bytes each)."""


def _special_spans(np: Any, data: bytes, spans: Any) -> Any:
    """Indices of the spans holding a ``.``, a ``/`` or a byte beyond ASCII (their escaped length in characters
    is not their length in bytes)."""
    if not spans.shape[1]:
        return np.zeros(0, np.int64)
    def special(c: Any) -> Any:
        return (c == 0x2E) | (c == 0x2F) | (c >= 0x80)

    starts = spans[0]
    if not (starts[1:] < starts[:-1]).any():  # in the order of the bytes (as decoded): no sort
        return _spans_holding(np, data, [(starts, spans[1])], special)[0]
    order = np.argsort(starts, kind="stable")
    return order[_spans_holding(np, data, [(starts[order], spans[1][order])], special)[0]]
