"""Blocks of the LevelDB-style SSTable TensorFlow uses for ``.index`` files and V1 checkpoints.

Layout (``tensorflow/core/lib/io/{table,block,format}.cc``): data blocks, a
metaindex block, an index block, then a 48-byte footer ending in a magic number.
Each block is followed by a 5-byte trailer (compression type + masked CRC32C).
Every structural field is bounds-checked; any inconsistency raises :class:`TableError`, which
:mod:`formats.io.sstable.table` turns into a CorruptCheckpointError naming the file.
"""
from __future__ import annotations

from formats.io.crc import crc32c, unmask
from formats.io.protowire import WireError, read_varint

TYPE_CHECKING = False
if TYPE_CHECKING:
    from mmap import mmap

__all__ = ["MAGIC", "FOOTER_SIZE", "TRAILER_SIZE", "TableError", "BlockChecksumError", "parse_block", "read_block",
           "block_handle", "RangeReader"]

MAGIC = 0xDB4775248B80FB57
MAGIC_BYTES = MAGIC.to_bytes(8, "little")
FOOTER_SIZE = 48
TRAILER_SIZE = 5
NO_COMPRESSION = 0
SNAPPY_COMPRESSION = 1
KEY_WIDENING = 32
"""Prefix compression lets a block's keys take more bytes than the block: TensorFlow restarts it every 16
entries, so its keys take at most about 16 times the block; more than this many times (plus 1 MiB) is refused."""


class TableError(ValueError):
    """A structural problem in a table; callers turn it into a CorruptCheckpointError naming the file."""


class BlockChecksumError(TableError):
    """A block whose bytes do not match the CRC32C in its trailer."""


class RangeReader:
    """A table's bytes read when asked for, not held: its length, and ``data[start:stop]`` (bytes; a slice only) -
    a table reader asks for its footer, then each block with its trailer in one piece."""

    def __len__(self) -> int:
        raise NotImplementedError

    def __getitem__(self, span: slice) -> bytes:
        raise NotImplementedError


def block_handle(data: bytes | memoryview | mmap, pos: int, limit: int) -> tuple[int, int, int]:
    """A BlockHandle (offset and size varints) at ``pos``, and the position after it."""
    try:
        offset, pos = read_varint(data, pos, limit)
        size, pos = read_varint(data, pos, limit)
    except WireError:
        raise TableError("varint runs past its bounds") from None
    return offset, size, pos


def read_block(data: bytes | memoryview | mmap | RangeReader, offset: int, size: int, what: str) -> bytes | memoryview:
    """The contents of the block at ``offset``: inside the table, its CRC32C checked, decompressed."""
    end = offset + size
    if end + TRAILER_SIZE > len(data) - FOOTER_SIZE:
        raise TableError(f"{what} block [{offset}, {end}) runs past the end of the table")
    where = offset  # (the block's offset in the file, for messages)
    if isinstance(data, RangeReader):  # the block and its trailer, read in one piece
        piece = data[offset:end + TRAILER_SIZE]
        if len(piece) != size + TRAILER_SIZE:
            raise TableError(f"{what} block [{offset}, {end}) runs past the end of the file (it shrank)")
        data, offset, end = piece, 0, size
    block = data[offset:end]
    kind = data[end]
    stored = int.from_bytes(data[end + 1:end + 5], "little")
    actual = crc32c(memoryview(data)[offset:end + 1])
    if unmask(stored) != actual:
        raise BlockChecksumError(f"{what} block at offset {where}: checksum mismatch "
                                 f"(stored {unmask(stored):#010x}, computed {actual:#010x})")
    if kind == NO_COMPRESSION:
        return block
    if kind == SNAPPY_COMPRESSION:
        from formats.io.sstable import snappy  # only compressed blocks need it

        try:
            return snappy.decompress(block)
        except snappy.SnappyError as exc:
            raise TableError(f"{what} block at offset {where}: bad Snappy data ({exc})") from None
    raise TableError(f"{what} block at offset {where}: unknown compression type {kind}")


def parse_block(block: bytes | memoryview) -> list[tuple[bytes, bytes | memoryview]]:
    """Decode one block's prefix-compressed entries into ``(key, value)`` pairs, checking every bound."""
    n = len(block)
    if n < 4:
        raise TableError("block shorter than its restart count")
    num_restarts = int.from_bytes(block[n - 4:], "little")
    if num_restarts > (n - 4) // 4:
        raise TableError(f"block claims {num_restarts} restart points in {n} bytes")
    limit = n - 4 - 4 * num_restarts
    entries: list[tuple[bytes, bytes | memoryview]] = []
    key = b""
    pos = 0
    allowed, made = KEY_WIDENING * n + (1 << 20), 0
    while pos < limit:
        shared = block[pos]
        if shared < 0x80 and pos + 2 < limit and block[pos + 1] < 0x80 and block[pos + 2] < 0x80:
            non_shared, value_len = block[pos + 1], block[pos + 2]
            pos += 3
        else:
            try:
                shared, pos = read_varint(block, pos, limit, 5)
                non_shared, pos = read_varint(block, pos, limit, 5)
                value_len, pos = read_varint(block, pos, limit, 5)
            except WireError:
                raise TableError("varint runs past its bounds") from None
        if shared > len(key):
            raise TableError(f"entry shares {shared} bytes with a {len(key)}-byte previous key")
        key_end = pos + non_shared
        value_end = key_end + value_len
        if value_end > limit:
            raise TableError("entry runs past the end of its block")
        key = key[:shared] + block[pos:key_end]
        made += len(key)
        if made > allowed:
            raise TableError(f"the keys of a {n:,}-byte block would take more than {allowed:,} bytes (each shares "
                             "more of the previous key than TensorFlow's restart points allow)")
        entries.append((key, block[key_end:value_end]))
        pos = value_end
    return entries
