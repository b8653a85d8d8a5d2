"""A small, strict decoder for raw Snappy blocks (old TensorFlow wrote Snappy-compressed index blocks).

Pure Python: index blocks are at most a few hundred KiB, and TensorFlow has not
written compressed blocks since 1.2, so this is a compatibility path, not a hot one.
"""
from __future__ import annotations

from formats.io.wire import WireError, read_varint

__all__ = ["decompress", "SnappyError"]

# Snappy's best case is a 3-byte copy element producing 64 bytes; a declared length
# above this ratio cannot be honest, so it is refused before anything is allocated.
_MAX_RATIO = 32


class SnappyError(ValueError):
    """The compressed bytes are not a valid Snappy block."""


def decompress(data: bytes) -> bytes:
    """Decode one raw Snappy block; raise :class:`SnappyError` on any inconsistency."""
    try:
        length, pos = read_varint(data, 0, len(data), 5)
    except WireError:
        raise SnappyError("bad length varint") from None
    if length > _MAX_RATIO * max(len(data), 1):
        raise SnappyError(f"declared length {length} is impossible for {len(data)} compressed bytes")
    out = bytearray()
    n = len(data)
    while pos < n:
        tag = data[pos]
        pos += 1
        kind = tag & 3
        if kind == 0:
            size = (tag >> 2) + 1
            if size > 60:
                extra = size - 60
                if pos + extra > n:
                    raise SnappyError("truncated literal length")
                size = int.from_bytes(data[pos:pos + extra], "little") + 1
                pos += extra
            if pos + size > n:
                raise SnappyError("literal runs past the end of the block")
            out += data[pos:pos + size]
            pos += size
            continue
        if kind == 1:
            if pos >= n:
                raise SnappyError("truncated copy")
            size = ((tag >> 2) & 7) + 4
            offset = ((tag >> 5) << 8) | data[pos]
            pos += 1
        else:
            width = 2 if kind == 2 else 4
            if pos + width > n:
                raise SnappyError("truncated copy")
            size = (tag >> 2) + 1
            offset = int.from_bytes(data[pos:pos + width], "little")
            pos += width
        if offset == 0 or offset > len(out):
            raise SnappyError("copy offset out of range")
        if len(out) + size > length:
            raise SnappyError("output longer than declared")
        start = len(out) - offset
        for i in range(size):  # copies may overlap their own output
            out.append(out[start + i])
        if len(out) > length:
            raise SnappyError("output longer than declared")
    if len(out) != length:
        raise SnappyError(f"output is {len(out)} bytes, declared {length}")
    return bytes(out)
