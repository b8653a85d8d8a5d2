"""Protocol-buffer wire-format primitives: enough to decode TensorFlow's messages without the protobuf runtime.

A message is split into field number -> values (:func:`parse_fields`); typed accessors pick a
field's last scalar (proto3 semantics) or its sub-messages, and check the wire type on the way.
Every length is bounded by the message it sits in; nothing recurses.
"""
from __future__ import annotations

import struct

__all__ = ["WireError", "Fields", "read_varint", "signed", "parse_fields", "last_int", "messages"]

Buffer = bytes | memoryview
Fields = dict[int, list[object]]


class WireError(ValueError):
    """Bytes that are not a valid message of the expected type."""


def read_varint(data: Buffer, pos: int, end: int) -> tuple[int, int]:
    """A base-128 varint at ``pos`` that ends before ``end`` (at most 10 bytes), as an unsigned
    64-bit value, and the position after it."""
    byte = data[pos] if pos < end else 0x80
    if byte < 0x80:
        return byte, pos + 1
    result = shift = 0
    limit = min(end, pos + 10)
    while pos < limit:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7
    raise WireError("truncated or overlong varint")


def signed(value: int) -> int:
    """An unsigned 64-bit varint value read as the int64 it encodes."""
    return value - (1 << 64) if value >= 1 << 63 else value


def parse_fields(data: Buffer, start: int = 0, end: int | None = None) -> Fields:
    """Split a message into field number -> values (ints for varint/fixed, bytes-like for length-delimited:
    slices of ``data``, so a memoryview in gives views out)."""
    end = len(data) if end is None else end
    fields: Fields = {}
    pos = start
    while pos < end:
        tag, pos = read_varint(data, pos, end)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise WireError("field number 0")
        if wire == 0:
            value, pos = read_varint(data, pos, end)
        elif wire == 2:
            length, pos = read_varint(data, pos, end)
            if pos + length > end:
                raise WireError("length-delimited field runs past the message")
            value, pos = data[pos:pos + length], pos + length
        elif wire == 5:
            if pos + 4 > end:
                raise WireError("truncated fixed32")
            (value,), pos = struct.unpack_from("<I", data, pos), pos + 4
        elif wire == 1:
            if pos + 8 > end:
                raise WireError("truncated fixed64")
            (value,), pos = struct.unpack_from("<Q", data, pos), pos + 8
        else:
            raise WireError(f"unsupported wire type {wire}")
        fields.setdefault(number, []).append(value)
    return fields


def last_int(fields: Fields, number: int, default: int = 0) -> int:
    """The last value of a scalar field (proto3: the last one wins), ``default`` when absent."""
    values = fields.get(number)
    if not values:
        return default
    value = values[-1]
    if not isinstance(value, int):
        raise WireError(f"field {number} has the wrong wire type")
    return value


def messages(fields: Fields, number: int) -> list[Buffer]:
    """Every occurrence of a length-delimited field (sub-messages, strings, packed arrays)."""
    values = fields.get(number, [])
    if not all(isinstance(v, (bytes, memoryview)) for v in values):
        raise WireError(f"field {number} has the wrong wire type")
    return values  # type: ignore[return-value]
