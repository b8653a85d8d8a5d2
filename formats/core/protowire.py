"""Protocol-buffer wire format, decoded by hand: no protobuf runtime, every step bounded.

A :class:`Message` splits one serialized message into its fields once (field number -> values:
ints for varint and fixed-width fields, zero-copy ``memoryview`` slices for length-delimited
ones) and answers typed questions about them with proto3 semantics (the last value of a
singular field wins; repeated scalars may be packed). Nested messages are decoded only when
asked for, so callers walk exactly the fields they need and skip the rest (a SavedModel's
``graph_def``) without copying it. Decoding is iterative; callers that follow recursive types
carry their own depth limit (:data:`MAX_DEPTH`). A message may hold at most ``max_fields``
fields, so a small hostile file cannot make millions of Python objects.

Bytes that do not parse raise :class:`WireError` (a ``ValueError``); callers turn it into a
checkpoint error that names their file.
"""
from __future__ import annotations

import struct
from collections.abc import Iterator

__all__ = ["MAX_DEPTH", "MAX_FIELDS", "Message", "WireError", "iter_fields", "read_varint", "signed64"]

MAX_FIELDS = 1 << 20
"""Default limit on the fields of one message."""
MAX_DEPTH = 64
"""Nesting limit for callers that follow recursive message types."""

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5

Buffer = bytes | bytearray | memoryview
Value = int | memoryview


class WireError(ValueError):
    """Bytes that are not a valid message of the expected type."""


def read_varint(data: Buffer, pos: int, end: int) -> tuple[int, int]:
    """The varint at ``pos`` (at most 10 bytes, reduced to 64 bits) and the position after it."""
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


def signed64(value: int) -> int:
    """A varint read as a two's-complement int64 (``-1`` is stored as ten bytes)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def iter_fields(data: Buffer) -> Iterator[tuple[int, int, Value]]:
    """``(field number, wire type, value)`` for each field of a message, in order."""
    view = data if isinstance(data, memoryview) else memoryview(data)
    end = len(view)
    pos = 0
    while pos < end:
        tag, pos = read_varint(view, pos, end)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise WireError("field number 0")
        value: Value
        if wire == VARINT:
            value, pos = read_varint(view, pos, end)
        elif wire == LENGTH:
            length, pos = read_varint(view, pos, end)
            if length > end - pos:
                raise WireError("length-delimited field runs past the message")
            value, pos = view[pos:pos + length], pos + length
        elif wire == FIXED32:
            if pos + 4 > end:
                raise WireError("truncated fixed32")
            (value,), pos = struct.unpack_from("<I", view, pos), pos + 4
        elif wire == FIXED64:
            if pos + 8 > end:
                raise WireError("truncated fixed64")
            (value,), pos = struct.unpack_from("<Q", view, pos), pos + 8
        else:
            raise WireError(f"unsupported wire type {wire}")
        yield number, wire, value


class Message:
    """One serialized message, split into fields on construction; typed accessors by field number."""

    __slots__ = ("_fields",)

    def __init__(self, data: Buffer, max_fields: int = MAX_FIELDS) -> None:
        fields: dict[int, list[Value]] = {}
        for count, (number, _, value) in enumerate(iter_fields(data), 1):
            if count > max_fields:
                raise WireError(f"more than {max_fields:,} fields in one message")
            fields.setdefault(number, []).append(value)
        self._fields = fields

    def has(self, number: int) -> bool:
        """Whether the field occurs at all."""
        return number in self._fields

    def count(self, number: int) -> int:
        """How many times the field occurs."""
        return len(self._fields.get(number, ()))

    def uint(self, number: int, default: int = 0) -> int:
        """The last value of a scalar field (unsigned), or ``default``."""
        values = self._fields.get(number)
        if not values:
            return default
        value = values[-1]
        if not isinstance(value, int):
            raise WireError(f"field {number} is length-delimited where a number was expected")
        return value

    def int64(self, number: int, default: int = 0) -> int:
        """The last value of an ``int64``/``int32``/enum field, sign restored."""
        return signed64(self.uint(number, default))

    def flag(self, number: int) -> bool:
        """The last value of a ``bool`` field."""
        return bool(self.uint(number))

    def blob(self, number: int) -> bytes:
        """The last value of a ``bytes`` field (``b""`` when absent)."""
        views = self.views(number)
        return bytes(views[-1]) if views else b""

    def text(self, number: int) -> str:
        """The last value of a ``string`` field (invalid UTF-8 kept as surrogate escapes)."""
        return self.blob(number).decode("utf-8", "surrogateescape")

    def texts(self, number: int) -> list[str]:
        """Every value of a ``repeated string`` field."""
        return [bytes(v).decode("utf-8", "surrogateescape") for v in self.views(number)]

    def views(self, number: int) -> list[memoryview]:
        """Every value of a length-delimited field, as zero-copy slices."""
        values = self._fields.get(number, [])
        for value in values:
            if not isinstance(value, memoryview):
                raise WireError(f"field {number} is a number where a length-delimited value was expected")
        return values  # type: ignore[return-value]

    def message(self, number: int, max_fields: int = MAX_FIELDS) -> Message | None:
        """A singular message field (its occurrences merged, as protobuf does), or None when absent."""
        views = self.views(number)
        if not views:
            return None
        return Message(views[0] if len(views) == 1 else b"".join(views), max_fields)

    def messages(self, number: int, max_fields: int = MAX_FIELDS) -> Iterator[Message]:
        """Each value of a ``repeated`` message field, decoded as it is reached."""
        for view in self.views(number):
            yield Message(view, max_fields)

    def packed_ints(self, number: int) -> list[int]:
        """Every value of a ``repeated`` scalar varint field, packed or not (unsigned)."""
        out: list[int] = []
        for value in self._fields.get(number, []):
            if isinstance(value, int):
                out.append(value)
                continue
            pos, end = 0, len(value)
            while pos < end:
                item, pos = read_varint(value, pos, end)
                out.append(item)
        return out

    def map_entries(self, number: int) -> Iterator[tuple[str, memoryview]]:
        """The ``(key, serialized value)`` pairs of a ``map<string, Message>`` field, in stored order."""
        for entry in self.messages(number, max_fields=16):
            views = entry.views(2)
            yield entry.text(1), views[-1] if views else memoryview(b"")
