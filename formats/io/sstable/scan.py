"""A data block's entries found with arrays (issue 38): where each key and value lies, found for all of a block's
restart points at once.

TensorFlow's ``BlockBuilder`` restarts prefix compression every 16 entries: each restart point is an entry that
shares nothing with the key before it, and the restart array lists where each one starts. The runs between
restart points are walked side by side, one entry of every run a step (16 steps a block, each a few array
operations over the runs), instead of one entry at a time; then each key is its run's previous key's first
``shared`` bytes and its own. A block laid out any other way (a restart point inside an entry or sharing bytes, a
varint past its bounds or longer than :func:`~formats.io.sstable.block.parse_block` reads, runs longer than
:data:`MAX_RUN`, keys wider than ``parse_block`` allows) is not scanned: :func:`scan_block` gives None, and the
caller parses it entry by entry with ``parse_block``, which names what is wrong. What a scan gives is what
``parse_block`` gives for the same block.

numpy is imported by the caller, only for an index large enough to repay its import (:data:`SCANNED_INDEX`).
"""
from __future__ import annotations

from formats.io.sstable.block import KEY_WIDENING

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ScannedBlock", "scan_block", "varints", "LISTED", "MAX_RUN", "MIN_SCANNED", "SCANNED_INDEX"]

MAX_RUN = 64
"""Entries between two restart points scanned at most (TensorFlow writes 16); a block with longer runs is parsed
entry by entry (each step of a scan is a few array operations: a run of thousands would cost more than it saves)."""

MIN_SCANNED = 1 << 15
"""Blocks smaller than this (bytes) are parsed entry by entry (TensorFlow's are 256 KiB; arrays' fixed cost
repays itself over a few hundred entries)."""

LISTED = 1024
"""Entries whose numbers are made Python lists at a time (a block's 8,000 at once held a megabyte of ints)."""

SCANNED_INDEX = 6 << 20
"""An index at least this large (bytes, about 200,000 tensors) has its blocks scanned even when numpy is not
imported yet (its import, about 0.13 s of CPU, is then repaid); a smaller one only when numpy is imported
already."""


class ScannedBlock:
    """One data block's entries as columns: the block's bytes, its keys (``bytes``, in order), and where each value
    starts and stops in the block (int64 arrays)."""

    __slots__ = ("block", "keys", "starts", "stops")

    def __init__(self, block: bytes, keys: list[bytes], starts: Any, stops: Any) -> None:
        self.block, self.keys, self.starts, self.stops = block, keys, starts, stops

    def __len__(self) -> int:
        return len(self.keys)

    def pair(self, i: int) -> tuple[bytes, bytes]:
        """Entry ``i`` as ``parse_block`` gives it: ``(key, value)``."""
        return self.keys[i], self.block[int(self.starts[i]):int(self.stops[i])]

    def after_first(self) -> ScannedBlock:
        """The block's entries but the first."""
        return ScannedBlock(self.block, self.keys[1:], self.starts[1:], self.stops[1:])


def varints(np: Any, d: Any, at: Any, limit: Any, most: int) -> tuple[Any, Any, Any]:
    """The varints at positions ``at`` (int64) of the bytes ``d`` (a uint8 array), each of at most ``most`` bytes, all
    before ``limit`` (a number, or an array like ``at``): their values (int64; bits beyond 63 lost), the positions
    after them, and which of them are whole (a varint that is not: its value and end are meaningless)."""
    whole = (at >= 0) & (at < limit)
    b = d[np.where(whole, at, 0)]
    values = (b & 0x7F).astype(np.int64)
    ends = at + 1
    going = np.flatnonzero(whole & (b >= 0x80))  # the varints with more bytes
    shift, k = 7, 1
    while len(going):
        if k == most:
            whole[going] = False
            break
        q = at[going] + k
        inside = q < (limit if np.ndim(limit) == 0 else limit[going])
        if not inside.all():
            whole[going[~inside]] = False
            going, q = going[inside], q[inside]
        b = d[q]
        values[going] |= (b & 0x7F).astype(np.int64) << shift
        ends[going] = q + 1
        going = going[b >= 0x80]
        shift, k = shift + 7, k + 1
    return values, ends, whole


def scan_block(np: Any, block: bytes) -> ScannedBlock | None:
    """``block``'s entries found a restart point's run at a time (see the module's docstring), or None when the
    block is not laid out as TensorFlow lays one out (then ``parse_block`` reads it, or says what is wrong)."""
    n = len(block)
    if n < 8:
        return None
    count = int.from_bytes(block[n - 4:], "little")
    if not 0 < count <= (n - 4) // 4:
        return None
    limit = n - 4 - 4 * count
    d = np.frombuffer(block, np.uint8)
    starts = np.frombuffer(block, "<u4", count, limit).astype(np.int64)
    if starts[0] != 0:
        return None
    stops = np.append(starts[1:], limit)  # where each run ends (a run ending where it starts, or before: no entry
    # of it fits, and the block is declined at the first step)
    runs, at = np.arange(count), starts
    previous = np.zeros(count, np.int64)  # the length of each run's last key
    steps: list[tuple[Any, Any, Any, Any, Any]] = []
    while len(runs):
        if len(steps) == MAX_RUN:
            return None
        shared, at, whole = varints(np, d, at, limit, 5)
        if not whole.all():
            return None
        own, at, whole = varints(np, d, at, limit, 5)
        if not whole.all():
            return None
        value_len, at, whole = varints(np, d, at, limit, 5)
        if not whole.all():
            return None
        key_stops = at + own
        value_stops = key_stops + value_len
        ends = stops[runs]
        if (shared > previous).any() or (value_stops > ends).any():
            return None  # (a restart point sharing bytes, or one inside an entry)
        steps.append((runs, shared, at, key_stops, value_stops))
        more = value_stops < ends
        runs, at, previous = runs[more], value_stops[more], (shared + own)[more]
    lengths = np.zeros(count, np.int64)  # entries in each run
    for i, (runs, *_) in enumerate(steps):
        lengths[runs] = i + 1
    first = np.cumsum(lengths) - lengths  # each run's first entry
    total = int(lengths.sum())
    shared_all, key_starts, key_stops, value_stops = (np.empty(total, np.int64) for _ in range(4))
    for i, (runs, shared, at, key_end, value_end) in enumerate(steps):
        rows = first[runs] + i
        shared_all[rows], key_starts[rows], key_stops[rows], value_stops[rows] = shared, at, key_end, value_end
    if int(shared_all.sum() + (key_stops - key_starts).sum()) > KEY_WIDENING * n + (1 << 20):
        return None  # (parse_block refuses it, naming the bound)
    keys: list[bytes] = []
    add = keys.append
    key = b""
    for at in range(0, total, LISTED):  # (a thousand entries' numbers as Python ints at a time)
        cut = slice(at, at + LISTED)
        for share, start, stop in zip(shared_all[cut].tolist(), key_starts[cut].tolist(), key_stops[cut].tolist()):
            key = key[:share] + block[start:stop] if share else block[start:stop]
            add(key)
    return ScannedBlock(block, keys, key_stops, value_stops)
