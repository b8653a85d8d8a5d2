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


def _varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """A varint at ``pos`` before ``end``; WireError or IndexError when there is none."""
    if pos >= end:
        raise WireError("truncated")
    b = data[pos]
    if b < 0x80:
        return b, pos + 1
    return read_varint(data, pos, end)


def fast_node(index: int, data: bytes, start: int, stop: int) -> ObjectNode | None:
    """Node ``index`` decoded from ``data[start:stop]`` (``bytes``), or None when it holds more than this
    decodes. One pass, no intermediate lists: a graph has a node per object, a million for some."""
    node = ObjectNode(index)
    seen_has_values = False
    pos = start
    try:
        while pos < stop:
            tag = data[pos]
            pos += 1
            if pos < stop and data[pos] < 0x80:  # the one-byte varint of most lengths, without a call
                length, pos = data[pos], pos + 1
            else:
                length, pos = _varint(data, pos, stop)
            end = pos + length
            if end > stop:
                return None
            if tag == 0x0A:  # children { node_id: 1, local_name: 2 }
                node_id, name = 0, ""
                while pos < end:
                    t = data[pos]
                    pos += 1
                    if pos < end and data[pos] < 0x80:
                        value, pos = data[pos], pos + 1
                    else:
                        value, pos = read_varint(data, pos, end) if pos < end else _varint(data, pos, end)
                    if t == 0x08:
                        low = value & 0xFFFFFFFF
                        node_id = low - (1 << 32) if low >= 1 << 31 else low
                    elif t == 0x12 and pos + value <= end:
                        name = data[pos:pos + value].decode("utf-8")
                        pos += value
                    else:
                        return None
                node.children.append(ChildRef(node_id, name))
            elif tag == 0x12:  # attributes { name: 1, full_name: 2, checkpoint_key: 3, optional_restore: 4 }
                texts = ["", "", ""]
                optional = False
                while pos < end:
                    t = data[pos]
                    pos += 1
                    if pos < end and data[pos] < 0x80:
                        value, pos = data[pos], pos + 1
                    else:
                        value, pos = read_varint(data, pos, end) if pos < end else _varint(data, pos, end)
                    if t in (0x0A, 0x12, 0x1A) and pos + value <= end:
                        texts[(t >> 3) - 1] = data[pos:pos + value].decode("utf-8")
                        pos += value
                    elif t == 0x20:
                        optional = value != 0
                    else:
                        return None
                node.attributes.append(Attribute(texts[0], texts[1], texts[2], optional))
            elif tag == 0x1A:  # slot_variables { original_variable_node_id: 1, slot_name: 2, slot_variable_node_id: 3 }
                ids = [0, 0]
                slot = ""
                while pos < end:
                    t = data[pos]
                    pos += 1
                    if pos < end and data[pos] < 0x80:
                        value, pos = data[pos], pos + 1
                    else:
                        value, pos = read_varint(data, pos, end) if pos < end else _varint(data, pos, end)
                    if t in (0x08, 0x18):
                        low = value & 0xFFFFFFFF
                        ids[t >> 4] = low - (1 << 32) if low >= 1 << 31 else low
                    elif t == 0x12 and pos + value <= end:
                        slot = data[pos:pos + value].decode("utf-8")
                        pos += value
                    else:
                        return None
                node.slot_variables.append(SlotVariableRef(ids[0], slot, ids[1]))
            elif tag == 0x2A and not seen_has_values:  # has_checkpoint_values { value: 1 }; twice: merged (generic)
                seen_has_values = True
                flag = False
                while pos < end:
                    t = data[pos]
                    pos += 1
                    if pos < end and data[pos] < 0x80:
                        value, pos = data[pos], pos + 1
                    else:
                        value, pos = read_varint(data, pos, end) if pos < end else _varint(data, pos, end)
                    if t != 0x08:
                        return None
                    flag = value != 0
                node.has_checkpoint_values = flag
            else:
                return None
            if pos != end:
                return None
    except (UnicodeDecodeError, WireError, IndexError):
        return None
    return node
