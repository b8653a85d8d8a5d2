"""Writer for the LevelDB-style SSTable under ``.index``, byte-compatible with TensorFlow's.

Follows ``tensorflow/core/lib/io/{table_builder,block_builder,format}.cc`` and
``table_options.h``: 256 KiB data blocks with a restart point every 16 entries,
an index block with a restart point at every entry whose keys are the shortest
separators TensorFlow's bytewise comparator picks, an empty metaindex block, a
5-byte trailer (type byte + masked CRC32C) after every block, no compression, and
the 48-byte footer ending in the magic number. Keys must arrive in strictly
increasing unsigned bytewise order.
"""
from __future__ import annotations

import struct
from _operator import itemgetter
from itertools import islice

from formats.core.imported import imported_numpy
from formats.io.crc import crc32c, mask
from formats.io.sstable.block import FOOTER_SIZE, MAGIC_BYTES, NO_COMPRESSION
from formats.io.protowire import encode_varint

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import BinaryIO

__all__ = ["TableWriter", "BLOCK_SIZE", "RESTART_INTERVAL", "shortest_separator", "short_successor"]

BLOCK_SIZE = 256 * 1024
RESTART_INTERVAL = 16
_OVERLY_LARGE_RATIO = 2
_ARRAYS_FROM = 256
"""Runs of fewer entries than this are added one at a time (arrays' fixed cost)."""
_first, _second = itemgetter(0), itemgetter(1)


def shortest_separator(start: bytes, limit: bytes) -> bytes:
    """TensorFlow's ``FindShortestSeparator``: a short key in ``[start, limit)``."""
    n = min(len(start), len(limit))
    i = 0
    while i < n and start[i] == limit[i]:
        i += 1
    if i >= n:
        return start  # one is a prefix of the other: do not shorten
    byte = start[i]
    if byte < 0xFF and byte + 1 < limit[i]:
        return start[:i] + bytes([byte + 1])
    return start


def short_successor(key: bytes) -> bytes:
    """TensorFlow's ``FindShortSuccessor``: a short key >= ``key`` (a run of 0xff stays as is)."""
    for i, byte in enumerate(key):
        if byte != 0xFF:
            return key[:i] + bytes([byte + 1])
    return key


_ONE_BYTE = [bytes((i,)) for i in range(0x80)]


def _shared_prefix(a: bytes, b: bytes) -> int:
    """How many leading bytes ``a`` and ``b`` share (their first ``n`` bytes compared as one big-endian number:
    the highest byte that differs is the first)."""
    n = min(len(a), len(b))
    x = int.from_bytes(a[:n], "big") ^ int.from_bytes(b[:n], "big")
    return n - (x.bit_length() + 7) // 8


class _Block:
    """``BlockBuilder``: prefix-compressed entries, then restart offsets and their count."""

    def __init__(self, restart_interval: int) -> None:
        self.interval = restart_interval
        self.reset()

    def reset(self) -> None:
        """Empty the block (one restart point at offset 0, as TensorFlow starts)."""
        self.buffer = bytearray()
        self.restarts = [0]
        self.counter = 0
        self.last_key = b""

    @property
    def empty(self) -> bool:
        """True when no entry was added since the last reset."""
        return not self.buffer

    def size_estimate(self) -> int:
        """``CurrentSizeEstimate``: bytes the finished block would take."""
        return len(self.buffer) + 4 * len(self.restarts) + 4

    def add(self, key: bytes, value: bytes) -> None:
        """Append one entry, sharing a prefix with the previous key unless at a restart point."""
        shared = 0
        if self.counter < self.interval:
            shared = _shared_prefix(self.last_key, key)
        else:
            self.restarts.append(len(self.buffer))
            self.counter = 0
        rest, n = len(key) - shared, len(value)
        self.buffer += (_ONE_BYTE[shared] + _ONE_BYTE[rest] + _ONE_BYTE[n] if shared < 0x80 and rest < 0x80 and n < 0x80
                        else encode_varint(shared) + encode_varint(rest) + encode_varint(n))
        self.buffer += key[shared:] if shared else key
        self.buffer += value
        self.last_key = key
        self.counter += 1

    def finish(self) -> bytes:
        """The block's bytes: entries, restart array, restart count."""
        tail = struct.pack(f"<{len(self.restarts) + 1}I", *self.restarts, len(self.restarts))
        return bytes(self.buffer) + tail


class TableWriter:
    """``TableBuilder`` without compression: ``add`` keys in increasing order, then ``finish``."""

    def __init__(self, out: BinaryIO, block_size: int = BLOCK_SIZE) -> None:
        self.out = out
        self.block_size = block_size
        self.offset = 0
        self.data = _Block(RESTART_INTERVAL)
        self.index = _Block(1)
        self.last_key: bytes | None = None
        self.pending: tuple[int, int] | None = None  # handle of a written block awaiting its index key
        self.closed = False

    def add(self, key: bytes, value: bytes) -> None:
        """Add one entry; raises ValueError unless ``key`` sorts strictly after the previous key."""
        if self.closed:
            raise ValueError("table already finished")
        if self.last_key is not None:
            if key <= self.last_key:
                raise ValueError(f"keys must be strictly increasing: {key!r} after {self.last_key!r}")
            if len(key) + len(value) >= _OVERLY_LARGE_RATIO * self.block_size:
                self._flush()
        if self.pending is not None:
            assert self.last_key is not None
            self._add_index(shortest_separator(self.last_key, key))
        self.last_key = key
        data = self.data
        data.add(key, value)
        if len(data.buffer) + 4 * len(data.restarts) + 4 >= self.block_size:  # data.size_estimate()
            self._flush()

    def add_all(self, pairs: Iterable[tuple[bytes, bytes]]) -> None:
        """:meth:`add` each pair in turn (the same bytes, the same errors), in one loop: an index of a million
        entries without three calls per entry; once numpy is imported, runs of entries laid with arrays
        (:func:`~formats.io.sstable.write_arrays.lay_run`)."""
        if self.closed:
            raise ValueError("table already finished")
        np = imported_numpy()
        if np is None:
            self._add_each(pairs)
            return
        from formats.io.sstable.write_arrays import RUN, lay_run

        pairs = iter(pairs)
        while True:
            run = list(islice(pairs, RUN))
            if len(run) < _ARRAYS_FROM or not lay_run(np, self, list(map(_first, run)), list(map(_second, run))):
                self._add_each(run)
            if len(run) < RUN:
                return

    def _add_each(self, pairs: Iterable[tuple[bytes, bytes]]) -> None:
        data = self.data
        interval, block_size = data.interval, self.block_size
        large = _OVERLY_LARGE_RATIO * block_size
        one = _ONE_BYTE
        last = self.last_key
        for key, value in pairs:
            if last is not None:
                if key <= last:
                    raise ValueError(f"keys must be strictly increasing: {key!r} after {last!r}")
                if len(key) + len(value) >= large:
                    self._flush()
            if self.pending is not None:
                self._add_index(shortest_separator(last, key))  # type: ignore[arg-type]
            self.last_key = last = key
            if data.counter < interval:  # _Block.add, inline
                previous = data.last_key
                n = min(len(previous), len(key))
                shared = n - ((int.from_bytes(previous[:n], "big") ^ int.from_bytes(key[:n], "big")).bit_length()
                              + 7) // 8
            else:
                data.restarts.append(len(data.buffer))
                data.counter = shared = 0
            rest, size = len(key) - shared, len(value)
            buffer = data.buffer
            buffer += (one[shared] + one[rest] + one[size] if shared < 0x80 and rest < 0x80 and size < 0x80
                       else encode_varint(shared) + encode_varint(rest) + encode_varint(size))
            buffer += key[shared:] if shared else key
            buffer += value
            data.last_key = key
            data.counter += 1
            if len(buffer) + 4 * len(data.restarts) + 4 >= block_size:  # data.size_estimate()
                self._flush()

    def finish(self) -> int:
        """Write the last data block, the metaindex and index blocks and the footer; return the file size."""
        self._flush()
        self.closed = True
        meta = self._write_block(_Block(RESTART_INTERVAL))
        if self.pending is not None:
            assert self.last_key is not None
            self._add_index(short_successor(self.last_key))
        index = self._write_block(self.index)
        footer = _encode_handle(*meta) + _encode_handle(*index)
        footer = footer.ljust(FOOTER_SIZE - len(MAGIC_BYTES), b"\x00") + MAGIC_BYTES
        self.out.write(footer)
        self.offset += len(footer)
        return self.offset

    def _index_before(self, key: bytes) -> None:
        """The index entry of the block written last, separating its last key from ``key``, the next."""
        assert self.last_key is not None
        self._add_index(shortest_separator(self.last_key, key))

    def _add_index(self, key: bytes) -> None:
        assert self.pending is not None
        self.index.add(key, _encode_handle(*self.pending))
        self.pending = None

    def _flush(self) -> None:
        if self.data.empty:
            return
        self.pending = self._write_block(self.data)

    def _write_block(self, block: _Block) -> tuple[int, int]:
        raw = block.finish()
        block.reset()
        kind = bytes([NO_COMPRESSION])
        trailer = kind + struct.pack("<I", mask(crc32c(kind, crc32c(raw))))
        handle = (self.offset, len(raw))
        self.out.write(raw)
        self.out.write(trailer)
        self.offset += len(raw) + len(trailer)
        return handle


def _encode_handle(offset: int, size: int) -> bytes:
    return encode_varint(offset) + encode_varint(size)
