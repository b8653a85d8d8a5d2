"""Protocol-buffer wire-format primitives: TensorFlow's messages without the protobuf runtime.

ckpt reads and writes a handful of TensorFlow messages (bundle index entries, the object graph,
variant payloads, V1 slice metadata). Doing the wire format here instead of through generated
``*_pb2`` modules keeps ckpt installable beside any protobuf release (or none) and ``import
formats`` fast. A message is split into its fields (:func:`iter_fields`, :func:`parse_fields`);
typed accessors pick a field's last scalar (proto3) or its sub-messages; the ``*_field``
functions encode. :mod:`formats.concepts.proto.messages` declares whole messages on top of this.
:class:`Message` is the lazy form for large messages (a SavedModel's ``MetaGraphDef``): fields split
once into zero-copy ``memoryview`` slices, nested messages decoded only when asked for, at most
``max_fields`` fields per message, recursion left to callers (:data:`MAX_DEPTH`). The SSTable code
reads its varints here too (:func:`read_varint` with ``max_bytes=5`` for LevelDB's varint32).
Every length is bounded by the message it sits in; every loop is iterative.

Wire types: 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32; groups (3 and 4) are used by
no message ckpt reads and are skipped like any unknown field, as protobuf does.
"""
from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from mmap import mmap

__all__ = ["WireError", "Buffer", "Fields", "read_varint", "signed", "iter_fields", "parse_fields", "last_int",
           "messages", "Message", "MAX_FIELDS", "MAX_DEPTH", "encode_varint", "tag", "varint_field", "bytes_field",
           "fixed32_field", "VARINT", "FIXED64", "LEN", "START_GROUP", "END_GROUP", "FIXED32"]

VARINT, FIXED64, LEN, START_GROUP, END_GROUP, FIXED32 = 0, 1, 2, 3, 4, 5
_MASK64 = 0xFFFFFFFFFFFFFFFF
MAX_FIELDS = 1 << 20
"""Default limit on the fields of one :class:`Message`."""
MAX_DEPTH = 64
"""Nesting limit for callers that follow recursive message types."""

Buffer = bytes | bytearray | memoryview
Fields = dict[int, list[int | Buffer]]


class WireError(ValueError):
    """Bytes that are not a valid message of the expected type."""


def read_varint(data: Buffer | mmap, pos: int, end: int, max_bytes: int = 10) -> tuple[int, int]:
    """A base-128 varint at ``pos`` that ends before ``end`` (at most ``max_bytes`` bytes: 10 for a
    varint64, 5 for LevelDB's varint32), as an unsigned 64-bit value (higher bits dropped, as
    protobuf and LevelDB do), and the position after it."""
    byte = data[pos] if pos < end else 0x80
    if byte < 0x80:
        return byte, pos + 1
    result = shift = 0
    limit = min(end, pos + max_bytes)
    while pos < limit:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result & _MASK64, pos
        shift += 7
    raise WireError("truncated or overlong varint")


def signed(value: int) -> int:
    """An unsigned 64-bit varint value read as the int64 it encodes."""
    return value - (1 << 64) if value >= 1 << 63 else value


def iter_fields(data: Buffer, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int, int | Buffer]]:
    """``(field number, wire type, value)`` for each field on the wire, in order.

    Values are ints for varint and fixed fields and slices of ``data`` for length-delimited ones
    (a memoryview in gives views out); groups are skipped.
    """
    end = len(data) if end is None else end
    pos = start
    while pos < end:
        key, pos = read_varint(data, pos, end)
        number, wire = key >> 3, key & 7
        if number == 0 or key > 0xFFFFFFFF:
            raise WireError("field number 0" if number == 0 else "field number out of range")
        value: int | Buffer
        if wire == VARINT:
            value, pos = read_varint(data, pos, end)
        elif wire == LEN:
            length, pos = read_varint(data, pos, end)
            if pos + length > end:
                raise WireError("length-delimited field runs past the message")
            value, pos = data[pos:pos + length], pos + length
        elif wire == FIXED32:
            if pos + 4 > end:
                raise WireError("truncated fixed32")
            value, pos = int.from_bytes(data[pos:pos + 4], "little"), pos + 4
        elif wire == FIXED64:
            if pos + 8 > end:
                raise WireError("truncated fixed64")
            value, pos = int.from_bytes(data[pos:pos + 8], "little"), pos + 8
        elif wire == START_GROUP:
            pos = _skip_group(data, pos, end, number)
            continue  # groups are unknown to every message ckpt reads: skipped, as protobuf keeps them unknown
        else:
            raise WireError(f"unexpected wire type {wire}")
        yield number, wire, value


def _skip_group(data: Buffer, pos: int, end: int, number: int) -> int:
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


def parse_fields(data: Buffer, start: int = 0, end: int | None = None) -> Fields:
    """Split a message into field number -> values (ints for varint/fixed, slices of ``data`` for
    length-delimited)."""
    fields: Fields = {}
    for number, _, value in iter_fields(data, start, end):
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


class Message:
    """One serialized message, split into fields on construction (at most ``max_fields``, else WireError);
    typed accessors by field number with proto3 rules (the last value of a singular field wins)."""

    __slots__ = ("_fields",)

    def __init__(self, data: Buffer, max_fields: int = MAX_FIELDS) -> None:
        fields: dict[int, list[int | memoryview]] = {}
        view = data if isinstance(data, memoryview) else memoryview(data)
        for count, (number, _, value) in enumerate(iter_fields(view), 1):
            if count > max_fields:
                raise WireError(f"more than {max_fields:,} fields in one message")
            fields.setdefault(number, []).append(value)  # type: ignore[arg-type]
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
        return signed(self.uint(number, default))

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


_ONE_BYTE = [bytes((i,)) for i in range(0x80)]


def encode_varint(value: int) -> bytes:
    """Base-128 varint of a non-negative integer below 2**64."""
    if 0 <= value < 0x80:
        return _ONE_BYTE[value]  # field tags, small sizes and dimensions: most varints written
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
    return tag(number, FIXED32) + value.to_bytes(4, "little")
