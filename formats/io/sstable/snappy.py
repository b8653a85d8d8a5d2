"""Decoder for raw Snappy blocks (old TensorFlow wrote Snappy-compressed index blocks).

Pure Python, but linear in the compressed bytes: each element is one slice copy (an overlapping copy
repeats its pattern with one multiplication), never a loop over output bytes. TensorFlow wrote blocks
of 256 KiB; a block declaring more than :data:`MAX_BLOCK` bytes, or more than its compressed bytes can
encode (at best 64 bytes per 3-byte copy element), is refused before anything is allocated.
"""
from __future__ import annotations

from formats.io.protowire import WireError, read_varint

__all__ = ["decompress", "SnappyError", "MAX_BLOCK"]

MAX_BLOCK = 16 << 20
"""The largest decompressed block accepted (TensorFlow's tables use 256 KiB blocks)."""
_BEST = 64 / 3  # a 3-byte copy element produces at most 64 bytes


class SnappyError(ValueError):
    """The compressed bytes are not a valid Snappy block."""


def decompress(data: bytes | memoryview, max_length: int = MAX_BLOCK) -> bytes:
    """Decode one raw Snappy block; raise :class:`SnappyError` on any inconsistency."""
    n = len(data)
    try:
        length, pos = read_varint(data, 0, n, 5)
    except WireError:
        raise SnappyError("bad length varint") from None
    if length > max_length:
        raise SnappyError(f"declared length {length:,} is beyond the {max_length:,} bytes a block may hold")
    if length > _BEST * (n - pos) + 64:
        raise SnappyError(f"declared length {length:,} is impossible for {n:,} compressed bytes")
    out = bytearray()
    while pos < n:
        tag = data[pos]
        pos += 1
        if tag & 3 == 0:
            pos = _literal(data, pos, tag, out)
        else:
            size, offset, pos = _copy(data, pos, tag)
            _repeat(out, size, offset)
        if len(out) > length:
            raise SnappyError("output longer than declared")
    if len(out) != length:
        raise SnappyError(f"output is {len(out)} bytes, declared {length}")
    return bytes(out)


def _literal(data: bytes | memoryview, pos: int, tag: int, out: bytearray) -> int:
    size = (tag >> 2) + 1
    if size > 60:
        extra = size - 60
        if pos + extra > len(data):
            raise SnappyError("truncated literal length")
        size = int.from_bytes(data[pos:pos + extra], "little") + 1
        pos += extra
    if pos + size > len(data):
        raise SnappyError("literal runs past the end of the block")
    out += data[pos:pos + size]
    return pos + size


def _copy(data: bytes | memoryview, pos: int, tag: int) -> tuple[int, int, int]:
    """(length, offset, position after) of a copy element whose tag byte was read."""
    if tag & 3 == 1:
        if pos >= len(data):
            raise SnappyError("truncated copy")
        return ((tag >> 2) & 7) + 4, ((tag >> 5) << 8) | data[pos], pos + 1
    width = 2 if tag & 3 == 2 else 4
    if pos + width > len(data):
        raise SnappyError("truncated copy")
    return (tag >> 2) + 1, int.from_bytes(data[pos:pos + width], "little"), pos + width


def _repeat(out: bytearray, size: int, offset: int) -> None:
    """Append ``size`` bytes copied from ``offset`` bytes back; a copy longer than its offset overlaps its
    own output, which is the last ``offset`` bytes repeated."""
    if offset == 0 or offset > len(out):
        raise SnappyError("copy offset out of range")
    start = len(out) - offset
    if size <= offset:
        out += out[start:start + size]
    else:
        pattern = out[start:]
        out += (pattern * (size // offset + 1))[:size]
