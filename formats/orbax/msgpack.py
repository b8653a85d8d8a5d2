"""A bounded msgpack decoder for the files Orbax and T5X write with ``flax.serialization`` (T5X's ``checkpoint``,
Orbax's aggregate ``checkpoint`` of small leaves).

Only what those files use is decoded: nil, booleans, integers, floats, str, bin, arrays, maps and the ext
types flax defines (1: an ndarray, 2: a Python complex, 3: a numpy scalar), each ext kept as an :class:`Ext`
for the caller to interpret. Hostile input meets limits, never Python's recursion limit or a huge allocation:
at most :data:`MAX_DEPTH` levels of nesting, containers whose declared length cannot fit in the bytes left
are refused, and every failure is a :class:`MsgpackError` with the offset.
"""
from __future__ import annotations

import struct

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Ext", "MsgpackError", "unpack", "MAX_DEPTH"]

MAX_DEPTH = 64
"""Deepest nesting decoded (a T5X or Orbax tree is a few levels deep)."""


class MsgpackError(ValueError):
    """The bytes are not msgpack this decoder takes (the message says where and why)."""


class Ext:
    """A msgpack ext value: its type ``code`` and raw ``data``."""

    __slots__ = ("code", "data")

    def __init__(self, code: int, data: bytes) -> None:
        self.code = code
        self.data = data

    def __repr__(self) -> str:
        return f"Ext({self.code}, {len(self.data)} bytes)"


_FIXED = {0xCC: ">B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q", 0xD0: ">b", 0xD1: ">h", 0xD2: ">i", 0xD3: ">q",
          0xCA: ">f", 0xCB: ">d"}
_FIXEXT = {0xD4: 1, 0xD5: 2, 0xD6: 4, 0xD7: 8, 0xD8: 16}


class _Reader:
    def __init__(self, data: bytes | memoryview) -> None:
        self.data = memoryview(data)
        self.pos = 0

    def take(self, n: int) -> memoryview:
        if n > len(self.data) - self.pos:
            raise MsgpackError(f"truncated at byte {self.pos:,}: {n:,} bytes declared, "
                               f"{len(self.data) - self.pos:,} left")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def number(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def count(self, n: int, each: int) -> int:
        """``n`` items of at least ``each`` bytes must fit in what is left."""
        if n * each > len(self.data) - self.pos:
            raise MsgpackError(f"a container at byte {self.pos:,} declares {n:,} items, more than the "
                               f"{len(self.data) - self.pos:,} bytes left can hold")
        return n

    def value(self, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise MsgpackError(f"nested deeper than {MAX_DEPTH} levels at byte {self.pos:,}")
        b = self.take(1)[0]
        if b <= 0x7F:
            return b
        if b >= 0xE0:
            return b - 0x100
        if 0x80 <= b <= 0x8F:
            return self.map(b & 0x0F, depth)
        if 0x90 <= b <= 0x9F:
            return self.array(b & 0x0F, depth)
        if 0xA0 <= b <= 0xBF:
            return self.text(b & 0x1F)
        return self.tagged(b, depth)

    def tagged(self, b: int, depth: int) -> Any:
        simple = {0xC0: None, 0xC2: False, 0xC3: True}
        if b in simple:
            return simple[b]
        if b in _FIXED:
            return self.number(_FIXED[b])
        sizes = {0xD9: ">B", 0xDA: ">H", 0xDB: ">I"}
        if b in sizes:
            return self.text(self.number(sizes[b]))
        bins = {0xC4: ">B", 0xC5: ">H", 0xC6: ">I"}
        if b in bins:
            return bytes(self.take(self.number(bins[b])))
        if b in (0xDC, 0xDD):
            return self.array(self.number(">H" if b == 0xDC else ">I"), depth)
        if b in (0xDE, 0xDF):
            return self.map(self.number(">H" if b == 0xDE else ">I"), depth)
        if b in _FIXEXT:
            code = self.number(">b")
            return Ext(code, bytes(self.take(_FIXEXT[b])))
        exts = {0xC7: ">B", 0xC8: ">H", 0xC9: ">I"}
        if b in exts:
            n = self.number(exts[b])
            code = self.number(">b")
            return Ext(code, bytes(self.take(n)))
        raise MsgpackError(f"byte {self.pos - 1:,} is 0x{b:02x}, not a msgpack type")

    def text(self, n: int) -> str:
        raw = self.take(n)
        try:
            return str(raw, "utf-8")
        except UnicodeDecodeError:
            raise MsgpackError(f"a string at byte {self.pos - n:,} is not UTF-8") from None

    def array(self, n: int, depth: int) -> list[Any]:
        return [self.value(depth + 1) for _ in range(self.count(n, 1))]

    def map(self, n: int, depth: int) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for _ in range(self.count(n, 2)):
            key = self.value(depth + 1)
            if not isinstance(key, (str, int, bytes, bool)) and key is not None:
                raise MsgpackError(f"a map key before byte {self.pos:,} is a {type(key).__name__}")
            out[key] = self.value(depth + 1)
        return out


def unpack(data: bytes | memoryview) -> Any:
    """The one value ``data`` holds; :class:`MsgpackError` when it is not msgpack or has bytes after it."""
    reader = _Reader(data)
    value = reader.value(0)
    if reader.pos != len(reader.data):
        raise MsgpackError(f"{len(reader.data) - reader.pos:,} bytes follow the value that ends at byte {reader.pos:,}")
    return value
