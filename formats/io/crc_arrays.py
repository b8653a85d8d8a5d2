"""CRC32C of many small pieces of one buffer at once, with numpy (issue 38): a byte of every piece a step, by the
table TensorFlow's own ``crc32c`` portable code uses (Castagnoli, reflected: 0x82F63B78).

A C call a piece (the ``crc32c`` package) costs about a microsecond with the Python around it; a step here costs a
few array operations over all the pieces, so for pieces of a few dozen bytes - the tiny tensors of a checkpoint
with a million of them - a batch of thousands is checked in a fraction of the time. Larger pieces stay with the
C function (its hardware CRC is far faster per byte). numpy is the caller's: used where it is imported already.
"""
from __future__ import annotations

from formats.io.crc import MASK_DELTA

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["PIECE_BYTES", "crc32c_pieces", "mask_array", "unmask_array"]

PIECE_BYTES = 64
"""Pieces at most this long are checked with arrays (beyond, a piece at a time by the C function is cheaper)."""

_POLY = 0x82F63B78
_tables: dict[int, Any] = {}


def _table(np: Any) -> Any:
    """The 256 CRC32C values of one byte (made once)."""
    table = _tables.get(id(np))
    if table is None:
        t = np.arange(256, dtype=np.uint32)
        for _ in range(8):
            t = np.where(t & 1, (t >> 1) ^ np.uint32(_POLY), t >> 1).astype(np.uint32)
        table = _tables[id(np)] = t
    return table


def crc32c_pieces(np: Any, data: Any, starts: Any, size: int) -> Any:
    """The CRC32C (unmasked, uint32) of ``data[s:s + size]`` for each ``s`` of ``starts`` (int64); ``data`` is any
    bytes-like object holding every piece."""
    d = np.frombuffer(data, np.uint8)
    table = _table(np)
    crc = np.full(len(starts), 0xFFFFFFFF, np.uint32)
    for j in range(size):
        crc = table[(crc ^ d[starts + j]) & 0xFF] ^ (crc >> 8)
    return crc ^ np.uint32(0xFFFFFFFF)


def mask_array(np: Any, crcs: Any) -> Any:
    """:func:`~formats.io.crc.mask` of each of ``crcs`` (uint32), as uint32."""
    crcs = crcs.astype(np.uint32)
    return ((crcs >> 15) | (crcs << 17)) + np.uint32(MASK_DELTA)


def unmask_array(np: Any, masked: Any) -> Any:
    """:func:`~formats.io.crc.unmask` of each of ``masked`` (uint32), as uint32 (its arithmetic mod 2**32)."""
    rot = masked.astype(np.uint32) - np.uint32(MASK_DELTA)
    crcs = rot >> np.uint32(17)
    rot <<= np.uint32(15)
    crcs |= rot
    return crcs
