"""The fields of a scanned block's ``BundleEntryProto`` values, walked with arrays (issue 38): for every value at
once, where its offset field lies, the offset, and its CRC32C.

A value is *usual* when it is fields 1, 2, 3 and 5 (dtype, shape, data file, size: any number of each, in any
order), at most one offset field (4, a varint of at most 9 bytes, as :func:`~formats.tf_bundle.columns.value_layout`
reads it) among them, and the CRC32C field (6) as its last five bytes. Two usual values whose bytes are the same
once their offset and CRC32C fields are left out (their *signature*) hold the same dtype, shape, data file and size:
:class:`~formats.tf_bundle.columns.IndexColumns` decodes the first of each signature in full with the reader's
checks, and reads the others as their offset and CRC32C. Every other value is decoded in full.
"""
from __future__ import annotations

from formats.io.sstable.scan import varints

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ValueFields", "value_fields"]

_FIELDS = 12
"""Fields of a value walked at most (TensorFlow writes at most six); a value with more is decoded in full."""


class ValueFields:
    """What :func:`value_fields` found: for each value, ``offsets`` (int64), ``crcs`` (uint32), the span of its
    offset field ``[cut_starts, cut_stops)`` (empty where it has none), where its CRC32C field starts
    (``crc_starts``), and whether it is usual (``usual``, bool)."""

    __slots__ = ("offsets", "crcs", "cut_starts", "cut_stops", "crc_starts", "usual")

    def __init__(self, offsets: Any, crcs: Any, cut_starts: Any, cut_stops: Any, crc_starts: Any,
                 usual: Any) -> None:
        self.offsets, self.crcs, self.cut_starts, self.cut_stops = offsets, crcs, cut_starts, cut_stops
        self.crc_starts, self.usual = crc_starts, usual


def value_fields(np: Any, d: Any, starts: Any, stops: Any) -> ValueFields:
    """The fields of the values at ``[starts, stops)`` of the bytes ``d`` (a uint8 array; int64 positions)."""
    count = len(starts)
    crc_at = stops - 5
    usual = crc_at >= starts
    usual[usual] = d[crc_at[usual]] == 0x35
    q = np.clip(crc_at + 1, 0, max(len(d) - 4, 0))
    crcs = (d[q].astype(np.uint32) | (d[q + 1].astype(np.uint32) << 8) | (d[q + 2].astype(np.uint32) << 16)
            | (d[q + 3].astype(np.uint32) << 24))
    offsets = np.zeros(count, np.int64)
    cut_starts, cut_stops = starts.copy(), starts.copy()
    seen = np.zeros(count, bool)  # an offset field met
    at = starts.copy()
    live = np.flatnonzero(usual)
    for _ in range(_FIELDS):
        live = live[at[live] < crc_at[live]]  # (those at their CRC32C field are done)
        if not len(live):
            break
        p = at[live]
        tags = d[p]
        ends_at = crc_at[live]
        value, end, whole = varints(np, d, p + 1, ends_at, 10)
        length = tags == 0x12
        offset = tags == 0x20
        usual_tag = length | offset | (tags == 0x08) | (tags == 0x18) | (tags == 0x28)
        bad = ~usual_tag | ~whole | (offset & (seen[live] | (end - p > 10)))  # (tag and at most 9 bytes)
        bad |= length & ((value < 0) | (value > ends_at - end))
        if bad.any():
            usual[live[bad]] = False
        next_at = np.where(length, end + value, end)
        hit = live[offset & ~bad]
        offsets[hit] = value[offset & ~bad]
        cut_starts[hit], cut_stops[hit] = p[offset & ~bad], end[offset & ~bad]
        seen[hit] = True
        at[live] = next_at
        live = live[~bad]
    usual &= at == crc_at  # (and none with more fields than a value has)
    return ValueFields(offsets, crcs, cut_starts, cut_stops, crc_at, usual)
