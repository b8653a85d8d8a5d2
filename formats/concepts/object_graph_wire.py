"""Straight-line decoding of a ``TrackableObjectGraph`` as TensorFlow writes it, on the hot path of opening an
object-based checkpoint (one node per object: a million for some).

:func:`fast_node` decodes one ``TrackableObject`` whose fields are only children, attributes, slot variables and
``has_checkpoint_values`` (each sub-message holding only its declared fields), with the semantics of
:func:`formats.concepts.proto.messages.decode` (the last value of a scalar wins, absent fields take their
defaults, strings must be UTF-8); anything else - a registered saver, an unknown field, another wire type - gives
None, and the caller decodes that node with the generic decoder (which also words any error).
':func:`node_spans` finds the nodes of a graph.
"""
from __future__ import annotations

from formats.concepts.object_graph import Attribute, ChildRef, ObjectNode, SlotVariableRef
from formats.io.protowire import WireError, read_varint

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["fast_node", "node_spans"]

def _int32(value: int) -> int:
    low = value & 0xFFFFFFFF
    return low - (1 << 32) if low >= 1 << 31 else low


def _fields(data: Any, pos: int, end: int) -> list[tuple[int, int, int]] | None:
    """``(tag, value or start, stop)`` of each field from ``pos`` to ``end``: varint fields (wire type 0) as
    ``(tag, value, -1)``, length-delimited ones (wire type 2) as ``(tag, start, stop)``; None for any other
    wire type, a tag beyond one byte, or bytes that do not parse."""
    out = []
    while pos < end:
        tag = data[pos]
        if tag >= 0x80 or tag < 0x08:
            return None
        wire = tag & 7
        pos += 1
        if pos >= end:
            return None
        b = data[pos]
        if b < 0x80:
            value, pos = b, pos + 1
        else:
            try:
                value, pos = read_varint(data, pos, end)
            except WireError:
                return None
        if wire == 0:
            out.append((tag, value, -1))
        elif wire == 2:
            if pos + value > end:
                return None
            out.append((tag, pos, pos + value))
            pos += value
        else:
            return None
    return out if pos == end else None


def node_spans(data: Any) -> list[tuple[int, int]] | None:
    """``(start, stop)`` of each node (field 1) of a serialized graph, or None when the graph holds anything
    else (the generic decoder then reads it)."""
    found = _fields(data, 0, len(data))
    if found is None or any(tag != 0x0A for tag, _, _ in found):
        return None
    return [(start, stop) for _, start, stop in found]


def _text(data: Any, start: int, stop: int) -> str:
    return bytes(data[start:stop]).decode("utf-8")  # UnicodeDecodeError: the caller falls back


def fast_node(index: int, data: Any, start: int, stop: int) -> ObjectNode | None:
    """Node ``index`` decoded from ``data[start:stop]``, or None when it holds more than this decodes."""
    found = _fields(data, start, stop)
    if found is None:
        return None
    node = ObjectNode(index)
    seen_has_values = False
    try:
        for tag, a, b in found:
            sub = _fields(data, a, b) if b >= 0 else None
            if sub is None:
                return None
            if tag == 0x0A:
                node_id, name = 0, ""
                for t, x, y in sub:
                    if t == 0x08:
                        node_id = _int32(x)
                    elif t == 0x12:
                        name = _text(data, x, y)
                    else:
                        return None
                node.children.append(ChildRef(node_id, name))
            elif tag == 0x12:
                texts = ["", "", ""]
                optional = False
                for t, x, y in sub:
                    if t in (0x0A, 0x12, 0x1A):
                        texts[(t >> 3) - 1] = _text(data, x, y)
                    elif t == 0x20:
                        optional = x != 0
                    else:
                        return None
                node.attributes.append(Attribute(texts[0], texts[1], texts[2], optional))
            elif tag == 0x1A:
                original, slot, variable = 0, "", 0
                for t, x, y in sub:
                    if t == 0x08:
                        original = _int32(x)
                    elif t == 0x12:
                        slot = _text(data, x, y)
                    elif t == 0x18:
                        variable = _int32(x)
                    else:
                        return None
                node.slot_variables.append(SlotVariableRef(original, slot, variable))
            elif tag == 0x2A and not seen_has_values:  # a second occurrence is merged: the generic decoder does
                seen_has_values = True
                value = False
                for t, x, _ in sub:
                    if t != 0x08:
                        return None
                    value = x != 0
                node.has_checkpoint_values = value
            else:
                return None
    except UnicodeDecodeError:
        return None
    return node
