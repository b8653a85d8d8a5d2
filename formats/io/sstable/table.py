"""An SSTable opened lazily: the footer and index block at once, a data block only when one of its keys
is asked for (how TensorFlow reads a V1 checkpoint, whose values live in the table itself).

Over a memory map, blocks are checked and parsed in place: values come back as ``memoryview`` slices of
the map, so a large value is never copied before its consumer decodes it.
"""
from __future__ import annotations

from _collections import OrderedDict  # type: ignore[import-not-found]  # collections' C class, without the package
from _bisect import bisect_left  # bisect's C half, without its module (start-up)
from _operator import itemgetter, lt as _lt  # operator's C half, without operator.py (start-up)
from itertools import islice

from formats.core.errors import ChecksumError, CorruptCheckpointError
from formats.core.value_tuples import ValueTuple
from formats.io.sstable.block import (FOOTER_SIZE, MAGIC_BYTES, TRAILER_SIZE, BlockChecksumError, RangeReader,
                                      TableError, block_handle, parse_block, read_block)
from formats.io.sstable.scan import MIN_SCANNED, ScannedBlock, scan_block

__all__ = ["Table", "BlockRef", "read_table"]

_first = itemgetter(0)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from mmap import mmap
    from typing import Any

Buffer = bytes | memoryview
_CACHED_BLOCKS = 4


class BlockRef(ValueTuple):
    """One data block as the index block lists it: every key in it is ``<= separator``."""

    separator: bytes
    offset: int
    size: int


def _index(data: Buffer | mmap | RangeReader, what: str) -> list[BlockRef]:
    if len(data) < FOOTER_SIZE:
        raise TableError(f"file is {len(data)} bytes, shorter than the {FOOTER_SIZE}-byte footer")
    footer = len(data) - FOOTER_SIZE
    tail = data[footer:]  # (one read of a table read when asked for)
    if tail[-8:] != MAGIC_BYTES:
        raise TableError(f"bad magic number (not a TensorFlow {what} file, or truncated)")
    _, _, pos = block_handle(tail, 0, 40)
    index_offset, index_size, _ = block_handle(tail, pos, 40)
    refs: list[BlockRef] = []
    previous_end = 0
    for separator, handle in parse_block(read_block(data, index_offset, index_size, "index")):
        offset, size, _ = block_handle(handle, 0, len(handle))
        if offset < previous_end:
            raise TableError(f"data block at offset {offset} overlaps the previous block")
        if offset + size + TRAILER_SIZE > footer:
            raise TableError(f"data block [{offset}, {offset + size}) runs past the end of the table")
        if refs and separator <= refs[-1].separator:
            raise TableError(f"index keys are not increasing at block {len(refs)}")
        refs.append(BlockRef(bytes(separator), offset, size))
        previous_end = offset + size + TRAILER_SIZE
    return refs


class Table:
    """Random access to one table held in ``data`` (bytes, a memory map, or a memoryview of one), or read from it
    when asked for (a :class:`~formats.io.sstable.block.RangeReader`).

    Structural problems raise :class:`CorruptCheckpointError` (``ChecksumError`` for a block whose CRC32C
    does not match) naming ``path``; ``what`` names the table in messages (``index``, ``V1 table``).
    """

    def __init__(self, data: Buffer | mmap | RangeReader, path: str, what: str = "table") -> None:
        self.path = path
        self.what = what
        self._data = data
        try:
            self.blocks = _index(data, what)
        except TableError as exc:
            raise self._error(exc) from None
        self._separators = [b.separator for b in self.blocks]
        self._cache: OrderedDict[int, dict[bytes, Buffer]] = OrderedDict()

    def _error(self, exc: TableError) -> CorruptCheckpointError:
        kind = ChecksumError if isinstance(exc, BlockChecksumError) else CorruptCheckpointError
        return kind(self.path, f"corrupt {self.what}: {exc}")

    def entries(self, i: int) -> list[tuple[bytes, Buffer]]:
        """The ``(key, value)`` pairs of data block ``i``, its checksum and key order checked."""
        return self._pairs(i, self._read(i))

    def scanned(self, i: int, np: Any) -> ScannedBlock | list[tuple[bytes, Buffer]]:
        """Data block ``i``'s entries as a :class:`~formats.io.sstable.scan.ScannedBlock` when
        :func:`~formats.io.sstable.scan.scan_block` finds them (a block of at least
        :data:`~formats.io.sstable.scan.MIN_SCANNED` bytes laid out as TensorFlow lays one out), else as
        :meth:`entries` gives them; checked as :meth:`entries` checks them."""
        block = self._read(i)
        if len(block) >= MIN_SCANNED:
            found = scan_block(np, bytes(block))
            if found is not None and self._in_order(i, found.keys):
                return found
        return self._pairs(i, block)

    def _read(self, i: int) -> Buffer:
        ref = self.blocks[i]
        try:
            return read_block(self._data, ref.offset, ref.size, "data")
        except TableError as exc:
            raise self._error(exc) from None

    def _in_order(self, i: int, keys: list[bytes]) -> bool:
        """Whether ``keys`` (block ``i``'s) are strictly increasing, the first above the block before's separator,
        the last up to its own (compared in C, no Python step a key)."""
        lower = self._separators[i - 1] if i else None
        return bool(keys) and (lower is None or keys[0] > lower) and keys[-1] <= self._separators[i] and \
            all(map(_lt, keys, islice(keys, 1, None)))

    def _pairs(self, i: int, block: Buffer) -> list[tuple[bytes, Buffer]]:
        ref = self.blocks[i]
        try:
            pairs = parse_block(block)
        except TableError as exc:
            raise self._error(exc) from None
        if self._in_order(i, list(map(_first, pairs))):
            return pairs
        lower = self._separators[i - 1] if i else None
        for n, (key, _) in enumerate(pairs):  # the first key out of order, named
            if (n and key <= pairs[n - 1][0]) or (lower is not None and key <= lower) or key > ref.separator:
                raise CorruptCheckpointError(self.path, f"corrupt {self.what}: data block at offset {ref.offset}: "
                                             f"key {n} is out of order")
        return pairs

    def _block(self, i: int) -> dict[bytes, Buffer]:
        found = self._cache.get(i)
        if found is None:
            found = self._cache[i] = dict(self.entries(i))
            if len(self._cache) > _CACHED_BLOCKS:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(i)
        return found

    def get(self, key: bytes) -> Buffer | None:
        """The value stored under ``key``, or None."""
        i = bisect_left(self._separators, key)
        if i == len(self.blocks):
            return None
        return self._block(i).get(key)

    def close(self) -> None:
        """Forget cached blocks and release the view of ``data`` (so a memory map under it can close)."""
        self._cache.clear()
        if isinstance(self._data, memoryview):
            try:
                self._data.release()
            except BufferError:  # a value handed out still views it
                pass


def read_table(data: Buffer, path: str, what: str = "index") -> list[tuple[bytes, Buffer]]:
    """All ``(key, value)`` pairs of an SSTable held in ``data``, in file order, keys strictly increasing."""
    table = Table(data, path, what)
    pairs: list[tuple[bytes, Buffer]] = []
    for i in range(len(table.blocks)):
        pairs += table.entries(i)
    return pairs
