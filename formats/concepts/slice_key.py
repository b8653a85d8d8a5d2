"""Slice keys of partitioned variables: TensorFlow's ``EncodeTensorNameSlice`` and its inverse.

Keys are built with OrderedCode (``core/lib/strings/ordered_code.cc``):
``NumIncreasing(0) String(name) NumIncreasing(rank)`` then, per dimension,
``SignedNumIncreasing(start) SignedNumIncreasing(length)``; length -1 means the whole dimension.
"""
from __future__ import annotations

from formats.core.names import name_bytes

__all__ = ["encode_slice_key", "decode_slice_key", "SliceKeyError", "Extent"]

Extent = tuple[int, int]  # (start, length); length -1 = the whole dimension

_HEADER = [(0, 0), (0x80, 0), (0xC0, 0), (0xE0, 0), (0xF0, 0), (0xF8, 0), (0xFC, 0), (0xFE, 0),
           (0xFF, 0), (0xFF, 0x80), (0xFF, 0xC0)]


class SliceKeyError(ValueError):
    """Bytes that are not a valid encoded slice key."""


def _num_increasing(value: int) -> bytes:
    body = value.to_bytes((value.bit_length() + 7) // 8, "big") if value else b""
    return bytes([len(body)]) + body


def _escape(value: bytes) -> bytes:
    out = bytearray()
    for byte in value:
        out.append(byte)
        if byte == 0x00:
            out.append(0xFF)
        elif byte == 0xFF:
            out.append(0x00)
    return bytes(out)


def _signed_length(x: int) -> int:
    n = 1
    while x >= 1 << (7 * n - 1):
        n += 1
    return n


def _signed_num_increasing(value: int) -> bytes:
    x = ~value if value < 0 else value
    if x < 64:
        return bytes([0x80 ^ (value & 0xFF)])
    n = _signed_length(x)
    raw = bytearray((value % (1 << (8 * n))).to_bytes(n, "big"))
    raw[0] ^= _HEADER[n][0]
    raw[1] ^= _HEADER[n][1]
    return bytes(raw)


def encode_slice_key(name: str | bytes, extents: list[Extent]) -> bytes:
    """The index key under which one slice of the partitioned variable ``name`` is stored."""
    raw = name_bytes(name)
    out = [_num_increasing(0), _escape(raw) + b"\x00\x01", _num_increasing(len(extents))]
    for start, length in extents:
        out.append(_signed_num_increasing(start))
        out.append(_signed_num_increasing(length))
    return b"".join(out)


class _Cursor:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise SliceKeyError("slice key ends early")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def num_increasing(self) -> int:
        length = self.take(1)[0]
        if length > 8:
            raise SliceKeyError(f"number of {length} bytes")
        return int.from_bytes(self.take(length), "big")

    def string(self) -> bytes:
        out = bytearray()
        while True:
            byte = self.take(1)[0]
            if byte == 0x00:
                follow = self.take(1)[0]
                if follow == 0x01:
                    return bytes(out)
                if follow != 0xFF:
                    raise SliceKeyError("bad escape in name")
            elif byte == 0xFF and self.take(1)[0] != 0x00:
                raise SliceKeyError("bad escape in name")
            out.append(byte)

    def signed(self) -> int:
        first = self.take(1)[0]
        negative = not first & 0x80
        flip = 0xFF if negative else 0
        head = first ^ flip
        if head != 0xFF:
            n = 8 - (head ^ 0xFF).bit_length()
        else:
            if self.pos >= len(self.data):
                raise SliceKeyError("slice key ends early")
            second = self.data[self.pos] ^ flip
            if second < 0x80:
                n = 8
            elif second < 0xC0:
                n = 9
            elif second == 0xC0 and self.pos + 1 < len(self.data) and self.data[self.pos + 1] ^ flip < 0x80:
                n = 10
            else:
                raise SliceKeyError("signed number longer than 64 bits")
        raw = bytearray(b ^ flip for b in bytes([first]) + self.take(n - 1))
        raw[0] ^= _HEADER[n][0]
        if n > 1:
            raw[1] ^= _HEADER[n][1]
        magnitude = int.from_bytes(raw, "big")
        value = ~magnitude if negative else magnitude
        if not -(1 << 63) <= value < (1 << 63):
            raise SliceKeyError("signed number out of int64 range")
        return value


def decode_slice_key(key: bytes) -> tuple[bytes, list[Extent]]:
    """Split an encoded slice key into the variable name and its (start, length) extents."""
    cur = _Cursor(key)
    if cur.num_increasing() != 0:
        raise SliceKeyError("slice key does not start with 0")
    name = cur.string()
    rank = cur.num_increasing()
    if rank > 64:
        raise SliceKeyError(f"rank {rank} is implausible")
    extents = [(cur.signed(), cur.signed()) for _ in range(rank)]
    if cur.pos != len(key):
        raise SliceKeyError("trailing bytes after slice key")
    return name, extents
