"""A ``TrackableObjectGraph`` written from arrays with numpy: the bytes
:func:`~formats.concepts.object_graph_codec.encode_graph_columns` writes, with no Python step a node or item.

The graph is given as columns (:class:`GraphArrays`): per node the CSR ranges of its children, attributes and
slot variable references, per item its ids and its strings (:class:`TextColumn`: spans of one buffer, such as the
bytes a graph was decoded from, or strings joined), and per node whether it has checkpoint values. Every field's
size is worked out for every item at once, then every node's, their places in the output by cumulative sums,
and the tags, varints and strings scattered into one buffer, the strings a batch of at most :data:`COPY_BYTES` at
a time (the index arrays of a batch are eight bytes a byte copied).

Fields are written as TensorFlow writes them, each omitted when empty or zero: a child's ``node_id`` and
``local_name``; an attribute's ``name``, ``full_name``, ``checkpoint_key`` and ``optional_restore``; a slot
reference's ``original_variable_node_id``, ``slot_name`` and ``slot_variable_node_id``; then the node's
``has_checkpoint_values`` (``BoolValue``, its ``value`` omitted when false).
"""
from __future__ import annotations

from formats.core.records import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["TextColumn", "GraphArrays", "encode_graph_arrays", "COPY_BYTES"]

COPY_BYTES = 1 << 16
"""String bytes copied into the output a batch at a time (a few index arrays of this many items)."""

_MAX_ID = 1 << 35
"""Ids and lengths are written in at most five varint bytes (larger: left to the encoder a node at a time)."""


@record
class TextColumn:
    """Strings as spans of one buffer: string ``i`` is ``buffer[starts[i]:starts[i] + lengths[i]]`` (valid UTF-8),
    but where ``extra`` holds another (``i -> bytes``: a few strings not in the buffer, such as renamed edges). Of
    Python strings (:meth:`of_strings`), the buffer is made a part at a time (:meth:`part`): ``strings`` holds them,
    ``buffer`` and ``starts`` are None."""

    buffer: Any  # numpy uint8 array
    starts: Any  # int32 or int64 arrays (a part's: int64)
    lengths: Any
    extra: dict[int, bytes]
    strings: Sequence[str] | None = None

    @classmethod
    def of_spans(cls, data: bytes, spans: Any, index: Any = None, extra: dict[int, bytes] | None = None) -> TextColumn:
        """The strings at ``spans`` (a ``(2, n)`` array of starts and stops) of ``data``; ``index``: only those at
        these positions, in this order; ``extra``: strings by position (of the result) replacing those spans'."""
        import numpy as np

        starts, stops = np.asarray(spans[0]), np.asarray(spans[1])  # (as the columns hold them: no copy)
        if index is not None:
            starts, stops = starts[index], stops[index]
        lengths = stops - starts
        extra = dict(extra or {})
        if extra:
            lengths = lengths.copy()
            lengths[list(extra)] = [len(b) for b in extra.values()]
        return cls(np.frombuffer(data, np.uint8) if data else np.zeros(0, np.uint8), starts, lengths, extra)

    @classmethod
    def of_strings(cls, strings: Sequence[str]) -> TextColumn | None:
        """The strings, each encoded when its part is asked for (their UTF-8 lengths now); None when one cannot be
        written as UTF-8 (a lone surrogate)."""
        import numpy as np

        try:  # (each string's bytes let go as soon as they are counted; int32: a part is made int64)
            lengths = np.fromiter(map(len, map(str.encode, strings)), np.int32, len(strings))
        except UnicodeEncodeError:
            return None
        return cls(None, None, lengths, {}, strings)

    def part(self, lo: int, hi: int) -> TextColumn:
        """Strings ``lo:hi`` (numbered from 0), with a buffer of their own."""
        import numpy as np

        if self.strings is None:
            extra = {i - lo: raw for i, raw in self.extra.items() if lo <= i < hi}
            return TextColumn(self.buffer, self.starts[lo:hi].astype(np.int64), self.lengths[lo:hi].astype(np.int64),
                              extra)
        raw = b"".join(map(str.encode, self.strings[lo:hi]))
        lengths = self.lengths[lo:hi].astype(np.int64)
        starts = np.zeros(len(lengths), np.int64)
        np.cumsum(lengths[:-1], out=starts[1:])
        return TextColumn(np.frombuffer(raw, np.uint8), starts, lengths, {})


@record
class GraphArrays:
    """A graph to write (see the module doc): node ``i``'s children are ``child_ptr[i]:child_ptr[i + 1]`` of
    ``child_id``/``child_name``, likewise its attributes (``attr_name``, ``attr_full``, ``attr_key``,
    ``attr_optional``) and slot references (``slot_original``, ``slot_name``, ``slot_id``); ``valued`` a byte a
    node (1: it has checkpoint values)."""

    child_ptr: Any
    child_id: Any
    child_name: TextColumn
    attr_ptr: Any
    attr_name: TextColumn
    attr_full: TextColumn
    attr_key: TextColumn
    attr_optional: Any
    slot_ptr: Any
    slot_original: Any
    slot_name: TextColumn
    slot_id: Any
    valued: bytes


def encode_graph_arrays(graph: GraphArrays) -> bytes | None:
    """The serialized graph, byte for byte what ``encode_graph_columns`` writes of the same nodes (every id a node
    of the graph: those encoders write an id past their table of varints, which only a dangling one can be, in
    three bytes; this in as few as protobuf does); None when an id is negative or past :data:`_MAX_ID` (the caller
    encodes a node at a time). Written :data:`NODES_AT_ONCE` nodes at a time (each batch's arrays a few times its
    items)."""
    import numpy as np
    from _io import BytesIO

    from formats.concepts.object_graph_codec import _tags

    tags = {name: tag[0] for name, tag in _tags().items()}
    ptrs = [np.asarray(a) for a in (graph.child_ptr, graph.attr_ptr, graph.slot_ptr)]  # (as given: int32 or int64,
    ids = [np.asarray(a) for a in (graph.child_id, graph.slot_original, graph.slot_id)]  # made int64 a batch at a time)
    for column in ids:
        if len(column) and (int(column.min()) < 0 or int(column.max()) >= _MAX_ID):
            return None
    count = len(ptrs[0]) - 1
    optional = np.asarray(graph.attr_optional, bool)
    wide = np.int64
    out = BytesIO()
    for a in range(0, count, NODES_AT_ONCE):
        b = min(count, a + NODES_AT_ONCE)
        (c_lo, c_hi), (a_lo, a_hi), (s_lo, s_hi) = ((int(ptr[a]), int(ptr[b])) for ptr in ptrs)
        part = GraphArrays(ptrs[0][a:b + 1].astype(wide) - c_lo, ids[0][c_lo:c_hi].astype(wide),
                           graph.child_name.part(c_lo, c_hi), ptrs[1][a:b + 1].astype(wide) - a_lo,
                           graph.attr_name.part(a_lo, a_hi), graph.attr_full.part(a_lo, a_hi),
                           graph.attr_key.part(a_lo, a_hi), optional[a_lo:a_hi], ptrs[2][a:b + 1].astype(wide) - s_lo,
                           ids[1][s_lo:s_hi].astype(wide), graph.slot_name.part(s_lo, s_hi),
                           ids[2][s_lo:s_hi].astype(wide), graph.valued[a:b])
        out.write(_encode_part(np, tags, part))
    return out.getvalue()


NODES_AT_ONCE = 1 << 14
"""Nodes written a batch at a time."""


def _encode_part(np: Any, t: dict[str, int], graph: GraphArrays) -> bytes:
    """:func:`encode_graph_arrays` of a batch of nodes (every column given as int64 arrays from 0)."""
    child_ptr, child_id, attr_ptr, slot_ptr = graph.child_ptr, graph.child_id, graph.attr_ptr, graph.slot_ptr
    slot_original, slot_id, optional = graph.slot_original, graph.slot_id, graph.attr_optional
    count = len(child_ptr) - 1
    valued = np.frombuffer(graph.valued, np.uint8).astype(bool)
    # every item's size, then every node's
    c_item = _int_size(np, child_id) + _text_size(np, graph.child_name.lengths)
    a_item = (_text_size(np, graph.attr_name.lengths) + _text_size(np, graph.attr_full.lengths)
              + _text_size(np, graph.attr_key.lengths) + 2 * optional)
    s_item = _int_size(np, slot_original) + _text_size(np, graph.slot_name.lengths) + _int_size(np, slot_id)
    ends = [_cumulative(np, 1 + _varint_size(np, item) + item) for item in (c_item, a_item, s_item)]
    sums = [end[ptr[1:]] - end[ptr[:-1]] for end, ptr in zip(ends, (child_ptr, attr_ptr, slot_ptr))]
    body = sums[0] + sums[1] + sums[2] + np.where(valued, 4, 2)
    node_end = _cumulative(np, 1 + _varint_size(np, body) + body)
    out = np.zeros(int(node_end[-1]), np.uint8)
    start = node_end[:-1]
    out[start] = t["nodes"]
    run = _varint(np, out, start + 1, body)  # where each node's body starts
    # each kind's items after the node's earlier kinds; an item's place: its node's run start plus the items before
    for kind, (item, end, ptr) in enumerate(zip((c_item, a_item, s_item), ends, (child_ptr, attr_ptr, slot_ptr))):
        owner = np.repeat(np.arange(count), np.diff(ptr))
        place = run[owner] + end[:-1] - end[ptr[:-1]][owner]
        out[place] = (t["children"], t["attributes"], t["slot_variables"])[kind]
        p = _varint(np, out, place + 1, item)
        if kind == 0:
            p = _int_field(np, out, p, t["node_id"], child_id)
            _text_field(np, out, p, t["local_name"], graph.child_name)
        elif kind == 1:
            p = _text_field(np, out, p, t["name"], graph.attr_name)
            p = _text_field(np, out, p, t["full_name"], graph.attr_full)
            p = _text_field(np, out, p, t["checkpoint_key"], graph.attr_key)
            out[p[optional]] = t["optional_restore"]
            out[p[optional] + 1] = 1
        else:
            p = _int_field(np, out, p, t["original_variable_node_id"], slot_original)
            p = _text_field(np, out, p, t["slot_name"], graph.slot_name)
            _int_field(np, out, p, t["slot_variable_node_id"], slot_id)
        run = run + sums[kind]
    out[run] = t["has_checkpoint_values"]
    out[run[valued] + 1] = 2
    out[run[valued] + 2] = t["value"]
    out[run[valued] + 3] = 1
    return out.tobytes()


def _cumulative(np: Any, sizes: Any) -> Any:
    """``[0, s0, s0 + s1, ...]``."""
    out = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=out[1:])
    return out


def _varint_size(np: Any, values: Any) -> Any:
    """Bytes of each value's varint (values in ``[0, 2**35)``)."""
    size = np.ones(len(values), np.int64)
    for bits in (7, 14, 21, 28):
        size += values >= (1 << bits)
    return size


def _int_size(np: Any, values: Any) -> Any:
    """Bytes of an integer field of each value (omitted when zero)."""
    return np.where(values != 0, 1 + _varint_size(np, values), 0)


def _text_size(np: Any, lengths: Any) -> Any:
    """Bytes of a string field of each length (omitted when empty)."""
    return np.where(lengths > 0, 1 + _varint_size(np, lengths) + lengths, 0)


def _varint(np: Any, out: Any, places: Any, values: Any) -> Any:
    """Write each value's varint at its place; the places after them."""
    size = _varint_size(np, values)
    for k in range(5):
        chosen = size > k
        if not chosen.any():
            break
        byte = (values[chosen] >> (7 * k)) & 0x7F
        out[places[chosen] + k] = byte | np.where(size[chosen] > k + 1, 0x80, 0)
    return places + size


def _int_field(np: Any, out: Any, places: Any, tag: int, values: Any) -> Any:
    """Write an integer field (tag and varint) of each non-zero value at its place; the places after them."""
    chosen = values != 0
    where = places[chosen]
    out[where] = tag
    _varint(np, out, where + 1, values[chosen])
    return places + _int_size(np, values)


def _text_field(np: Any, out: Any, places: Any, tag: int, texts: TextColumn) -> Any:
    """Write a string field (tag, length and bytes) of each non-empty string at its place; the places after them."""
    lengths = texts.lengths
    chosen = lengths > 0
    where = places[chosen]
    out[where] = tag
    body = _varint(np, out, where + 1, lengths[chosen])
    _copy(np, out, body, texts, np.flatnonzero(chosen))
    return places + _text_size(np, lengths)


def _copy(np: Any, out: Any, places: Any, texts: TextColumn, index: Any) -> None:
    """Copy the strings ``index`` of ``texts`` to ``places`` (one each), a batch of at most :data:`COPY_BYTES` bytes
    (or one string) at a time; those in ``texts.extra`` one by one."""
    starts, lengths = texts.starts[index], texts.lengths[index]
    if texts.extra:  # (index ascends: each of them found by bisection)
        lengths = lengths.copy()
        for i, raw in texts.extra.items():
            k = int(np.searchsorted(index, i))
            if k < len(index) and index[k] == i:
                out[places[k]:places[k] + len(raw)] = np.frombuffer(raw, np.uint8)
                lengths[k] = 0
    end = _cumulative(np, lengths)
    first, n = 0, len(lengths)
    while first < n:
        last = max(first + 1, int(np.searchsorted(end, end[first] + COPY_BYTES, "right")) - 1)
        size = lengths[first:last]
        offsets = np.arange(int(end[last] - end[first])) - np.repeat(end[first:last] - end[first], size)
        out[np.repeat(places[first:last], size) + offsets] = texts.buffer[np.repeat(starts[first:last], size) + offsets]
        first = last
