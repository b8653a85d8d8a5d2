"""A run of a table's entries laid into data blocks with arrays (issue 38): what ``TableWriter.add`` does an entry at
a time - the prefix each key shares with the one before, where a restart point falls, where a block fills, the
entries' bytes - done for a run of entries at once.

Used by :meth:`~formats.io.sstable.writer.TableWriter.add_all` for runs of :data:`RUN` entries once numpy is imported
(:func:`~formats.core.imported.imported_numpy`: a large source's index was found with arrays); a run that needs
``add``'s own checks (a key not after the one before, an overly large pair, a key wider than :data:`WIDEST`) is added
one entry at a time, which raises as ``add`` raises. The bytes written are the same either way (tested on generated
tables, block by block).
"""
from __future__ import annotations

from _operator import lt as _lt  # operator's C half, without operator.py (start-up)
from itertools import chain, islice, repeat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["RUN", "WIDEST", "lay_run"]

RUN = 4096
"""Entries laid at once (their keys, padded to the widest, are one array of RUN x width bytes)."""

WIDEST = 512
"""Keys wider than this (bytes) send their run to the entry-at-a-time path (the padded array would be too wide)."""


def _varints(np: Any, values: Any) -> tuple[Any, Any]:
    """The varint bytes of each of ``values`` (non-negative, below 2**35) as rows of a ``len(values) x 5`` array, and
    their lengths."""
    rows = np.zeros((len(values), 5), np.uint8)
    lengths = np.ones(len(values), np.int64)
    v = values.astype(np.int64)
    for i in range(5):
        more = v >= 0x80
        rows[:, i] = (v & 0x7F) | np.where(more, 0x80, 0)
        v = v >> 7
        lengths += more
        if not more.any():
            break
    return rows, lengths


def _ranges(np: Any, starts: Any, lengths: Any) -> Any:
    """The positions ``starts[i], starts[i] + 1, ... starts[i] + lengths[i] - 1`` of every ``i``, in order."""
    total = int(lengths.sum())
    ends = np.cumsum(lengths)
    return np.arange(total, dtype=np.int64) + np.repeat(starts - (ends - lengths), lengths)


def lay_run(np: Any, writer: Any, keys: list[bytes], values: list[bytes]) -> bool:
    """Add ``keys`` and ``values`` to ``writer`` (a :class:`~formats.io.sstable.writer.TableWriter`) as ``add`` would,
    with arrays; False, with nothing added, when the run needs ``add``'s own checks."""
    last = writer.last_key
    n = len(keys)
    if not n or (last is not None and not keys[0] > last) or not all(map(_lt, keys, islice(keys, 1, None))):
        return False
    key_lengths = np.fromiter(map(len, keys), np.int64, n)
    value_lengths = np.fromiter(map(len, values), np.int64, n)
    if int(key_lengths.max()) > WIDEST or int((key_lengths + value_lengths).max()) >= 2 * writer.block_size:
        return False  # (an overly large pair flushes the block before it: add decides)
    data = writer.data
    joined_keys = b"".join(keys)
    joined_values = b"".join(values)
    # the prefix each key shares with the one before (the first: with the block's last key, if any)
    previous = data.last_key if len(data.last_key) <= WIDEST else None
    if previous is None:
        return False
    width = int(max(key_lengths.max(), len(previous))) + 1
    lengths = np.concatenate(([len(previous)], key_lengths))
    padded = np.frombuffer(b"".join(map(bytes.ljust, chain((previous,), keys), repeat(width), repeat(b"\0"))),
                           np.uint8).reshape(n + 1, width)  # (each key padded with zeros: compared up to the shorter)
    differ = padded[1:] != padded[:-1]
    first = np.where(differ.any(axis=1), differ.argmax(axis=1), width)
    shared = np.minimum(first, np.minimum(lengths[1:], lengths[:-1]))
    key_starts = np.cumsum(key_lengths) - key_lengths
    value_starts = np.cumsum(value_lengths) - value_lengths
    # each entry's bytes at a restart point (sharing nothing) and elsewhere: its three varints, key bytes, value
    value_bytes = _varint_len(np, value_lengths) + value_lengths
    at_restart = 1 + _varint_len(np, key_lengths) + key_lengths + value_bytes
    sharing = _varint_len(np, shared) + _varint_len(np, key_lengths - shared) + key_lengths - shared + value_bytes
    interval, block_size = data.interval, writer.block_size
    at = 0
    if writer.pending is not None:
        writer._index_before(keys[0])
    while at < n:
        in_block = interval * (len(data.restarts) - 1) + data.counter  # entries in the block so far
        j = in_block + np.arange(n - at)
        restart = j % interval == 0
        sizes = np.where(restart, at_restart[at:], sharing[at:])
        filled = len(data.buffer) + np.cumsum(sizes)
        count = len(data.restarts) + np.cumsum(restart & (j > 0))
        full = filled + 4 * count + 4 >= block_size
        stop = int(full.argmax()) + 1 if full.any() else n - at  # entries of this block in the run
        restart, sizes = restart[:stop], sizes[:stop]
        own = np.where(restart, 0, shared[at:at + stop])
        data.restarts += (filled[:stop] - sizes)[restart & (j[:stop] > 0)].tolist()  # (the block's first: listed)
        _emit(np, data, joined_keys, joined_values, key_starts[at:at + stop], own, key_lengths[at:at + stop] - own,
              value_starts[at:at + stop], value_lengths[at:at + stop], sizes)
        data.last_key = keys[at + stop - 1]
        done = in_block + stop
        data.counter = (done - 1) % interval + 1
        writer.last_key = keys[at + stop - 1]
        at += stop
        if full.any():
            writer._flush()
            if at < n:
                writer._index_before(keys[at])
    return True


def _varint_len(np: Any, values: Any) -> Any:
    """The bytes of each of ``values``' varints (at most 5)."""
    return 1 + (values >= 0x80) + (values >= 1 << 14) + (values >= 1 << 21) + (values >= 1 << 28)


def _emit(np: Any, data: Any, joined_keys: bytes, joined_values: bytes, key_starts: Any, own: Any, rest: Any,
          value_starts: Any, value_lengths: Any, sizes: Any) -> None:
    """Append entries (``sizes`` bytes each) to the block ``data``: each its three varints, its key but the ``own``
    bytes it shares, its value."""
    heads = [_varints(np, own), _varints(np, rest), _varints(np, value_lengths)]
    out = np.empty(int(sizes.sum()), np.uint8)
    at = np.cumsum(sizes) - sizes  # (within what is appended)
    for rows, lengths in heads:
        for i in range(5):
            has = lengths > i
            if not has.any():
                break
            out[at[has] + i] = rows[has, i]
        at += lengths
    keys = np.frombuffer(joined_keys, np.uint8)
    out[_ranges(np, at, rest)] = keys[_ranges(np, key_starts + own, rest)]
    at += rest
    if len(joined_values):
        out[_ranges(np, at, value_lengths)] = np.frombuffer(joined_values, np.uint8)[_ranges(np, value_starts,
                                                                                             value_lengths)]
    data.buffer += out.tobytes()
