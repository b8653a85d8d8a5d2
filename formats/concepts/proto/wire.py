"""The protobuf wire format, by hand: varints, tags, and splitting a message into its fields.

ckpt reads and writes a handful of TensorFlow messages (the bundle index entries, the object
graph, variant payloads). Doing the wire format here instead of through generated ``*_pb2``
modules keeps ckpt installable beside any protobuf release (or none) and ``import formats``
fast. :mod:`formats.concepts.proto.messages` declares the messages on top of this module.

Wire types: 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32; groups (3 and 4) are used by
no message ckpt reads and are skipped like any unknown field, as protobuf does.
"""
from __future__ import annotations

import struct
from collections.abc import Iterator

__all__ = ["WireError", "Fields", "read_varint", "signed64", "iter_fields", "parse_fields", "encode_varint",
           "tag", "varint_field", "bytes_field", "fixed32_field", "VARINT", "FIXED64", "LEN", "FIXED32"]

VARINT, FIXED64, LEN, START_GROUP, END_GROUP, FIXED32 = 0, 1, 2, 3, 4, 5
_MASK64 = 0xFFFFFFFFFFFFFFFF

Fields = dict[int, list[object]]


class WireError(ValueError):
    """Bytes that are not a valid message of the expected type."""


def read_varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """The varint at ``pos`` (at most 10 bytes, value kept to 64 bits) and the position after it."""
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
            return result & _MASK64, pos
        shift += 7
    raise WireError("truncated or overlong varint")


def signed64(value: int) -> int:
    """A varint's 64 bits as a two's complement ``int64``."""
    return value - (1 << 64) if value >= 1 << 63 else value


def iter_fields(data: bytes, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int, int | bytes]]:
    """``(field number, wire type, value)`` for each field on the wire, in order.

    Values are ints for varint and fixed fields and ``bytes`` for length-delimited ones.
    """
    end = len(data) if end is None else end
    pos = start
    while pos < end:
        key, pos = read_varint(data, pos, end)
        number, wire = key >> 3, key & 7
        if number == 0 or key > 0xFFFFFFFF:
            raise WireError("field number 0" if number == 0 else "field number out of range")
        value: int | bytes
        if wire == VARINT:
            value, pos = read_varint(data, pos, end)
        elif wire == LEN:
            length, pos = read_varint(data, pos, end)
            if pos + length > end:
                raise WireError("length-delimited field runs past the message")
            value, pos = bytes(data[pos:pos + length]), pos + length
        elif wire == FIXED32:
            if pos + 4 > end:
                raise WireError("truncated fixed32")
            (value,), pos = struct.unpack_from("<I", data, pos), pos + 4
        elif wire == FIXED64:
            if pos + 8 > end:
                raise WireError("truncated fixed64")
            (value,), pos = struct.unpack_from("<Q", data, pos), pos + 8
        elif wire == START_GROUP:
            pos = _skip_group(data, pos, end, number)
            continue  # groups are unknown to every message ckpt reads: skipped, as protobuf keeps them unknown
        else:
            raise WireError(f"unexpected wire type {wire}")
        yield number, wire, value


def _skip_group(data: bytes, pos: int, end: int, number: int) -> int:
    """The position after the end-group tag matching a start-group of field ``number``."""
    stack = [number]
    while stack:
        if pos >= end:
            raise WireError("unterminated group")
        key, pos = read_varint(data, pos, end)
        inner, wire = key >> 3, key & 7
        if inner == 0 or key > 0xFFFFFFFF:
            raise WireError("bad field number in a group")
        if wire == END_GROUP:
            if inner != stack.pop():
                raise WireError("mismatched end of group")
        elif wire == START_GROUP:
            stack.append(inner)
        elif wire == VARINT:
            _, pos = read_varint(data, pos, end)
        elif wire == LEN:
            length, pos = read_varint(data, pos, end)
            pos += length
        elif wire in (FIXED32, FIXED64):
            pos += 4 if wire == FIXED32 else 8
        else:
            raise WireError(f"unexpected wire type {wire}")
        if pos > end:
            raise WireError("group runs past the message")
    return pos


def parse_fields(data: bytes, start: int = 0, end: int | None = None) -> Fields:
    """Split a message into field number -> values (ints for varint/fixed, bytes for length-delimited)."""
    fields: Fields = {}
    for number, _, value in iter_fields(data, start, end):
        fields.setdefault(number, []).append(value)
    return fields


def encode_varint(value: int) -> bytes:
    """Base-128 varint of a non-negative integer below 2**64."""
    if not 0 <= value <= _MASK64:
        raise ValueError(f"varint out of range: {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def tag(number: int, wire: int) -> bytes:
    """The key of a field: ``number << 3 | wire`` as a varint."""
    return encode_varint(number << 3 | wire)


def varint_field(number: int, value: int) -> bytes:
    """A varint field, omitted when 0 (proto3); negative values take ten bytes, as protobuf writes them."""
    if value == 0:
        return b""
    return tag(number, VARINT) + encode_varint(value & _MASK64)


def bytes_field(number: int, body: bytes) -> bytes:
    """A length-delimited field (a string, bytes or an embedded message), always written."""
    return tag(number, LEN) + encode_varint(len(body)) + body


def fixed32_field(number: int, value: int) -> bytes:
    """A ``fixed32`` field, omitted when 0 (proto3)."""
    if value == 0:
        return b""
    return tag(number, FIXED32) + struct.pack("<I", value)
