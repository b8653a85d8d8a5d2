"""Chunked HDF5 datasets decoded by ckpt itself, never by libhdf5: each stored chunk is read from the
file, checked, inflated with :mod:`zlib` into a buffer no larger than the chunk and unshuffled.

libhdf5 trusts a chunk to inflate to the chunk's size (one that inflates to less crashes it); here a
chunk that inflates to any other size is a one-line error, and memory is bounded by one block of rows.
Only the filters Keras and h5py use by default are decoded: deflate (gzip) and shuffle. A dataset with
any other filter is read through libhdf5 in the isolated child instead (:func:`native`).
"""
from __future__ import annotations

import math
import zlib

from formats.core.errors import CorruptCheckpointError
from formats.core.records import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    import numpy as np

    from formats.keras_h5.tree import DatasetInfo

__all__ = ["DEFLATE", "SHUFFLE", "native", "ChunkIndex", "decode_chunk", "MAX_CHUNK_BYTES"]

DEFLATE, SHUFFLE = 1, 2
MAX_CHUNK_BYTES = 1 << 32
"""HDF5 stores a chunk's size in 32 bits."""
_OPTIONAL = 0x1  # H5Z_FLAG_OPTIONAL: the filter may have been skipped for a chunk (then its mask bit is set)
_EXPANSION = 1100  # no deflate stream expands by more than ~1032x


def native(info: DatasetInfo) -> bool:
    """Whether ckpt decodes this chunked dataset itself (only deflate and shuffle filters)."""
    return all(f[0] in (DEFLATE, SHUFFLE) for f in info.filters)


@record(frozen=True)
class StoredChunk:
    """Where one chunk is: its offset in the dataset (elements), filter mask, file address and size."""

    offset: tuple[int, ...]
    mask: int
    address: int
    size: int


class ChunkIndex:
    """A dataset's chunk table, checked against its shape and the file's size, grouped by first-axis offset."""

    def __init__(self, info: DatasetInfo, rows: list[Any], image_size: int, where: str) -> None:
        self.info = info
        self.where = where
        self.chunk: tuple[int, ...] = info.chunk or ()
        self.chunk_bytes = math.prod(self.chunk) * info.dtype.itemsize
        self.by_row: dict[int, list[StoredChunk]] = {}
        seen: set[tuple[int, ...]] = set()
        for row in rows:
            stored = self._checked(row, image_size)
            if stored.offset in seen:
                raise self.error(f"two chunks stored for offset {list(stored.offset)}")
            seen.add(stored.offset)
            self.by_row.setdefault(stored.offset[0], []).append(stored)

    def error(self, message: str) -> CorruptCheckpointError:
        """A CorruptCheckpointError about this dataset."""
        return CorruptCheckpointError(self.where, f"{self.info.path}: {message}")

    def _checked(self, row: Any, image_size: int) -> StoredChunk:
        shape = self.info.shape or ()
        try:
            offset, mask, address, size = tuple(int(v) for v in row[0]), int(row[1]), int(row[2]), int(row[3])
        except (TypeError, ValueError, IndexError):
            raise self.error("malformed chunk table") from None
        if len(offset) != len(shape) or any(o < 0 or o % c or o >= max(s, 1) for o, c, s in
                                            zip(offset, self.chunk, shape)):
            raise self.error(f"a chunk at offset {list(offset)} lies outside shape {list(shape)}")
        if size <= 0 or address < 0 or address + size > image_size:
            raise self.error(f"chunk at offset {list(offset)}: bytes {address:,}..{address + size:,} lie outside "
                             f"the file ({image_size:,} bytes)")
        if size > _stored_limit(self.info, self.chunk_bytes, mask):
            raise self.error(f"chunk at offset {list(offset)} stores {size:,} bytes, more than a chunk of "
                             f"{self.chunk_bytes:,} bytes can need")
        if self.chunk_bytes > size * _EXPANSION + (1 << 20):
            raise self.error(f"chunk at offset {list(offset)} stores {size:,} bytes for {self.chunk_bytes:,}; "
                             "refusing to inflate it")
        return StoredChunk(offset, mask, address, size)

    def in_rows(self, first: int) -> list[StoredChunk]:
        """The stored chunks whose first-axis offset is ``first``."""
        return self.by_row.get(first, [])


def _stored_limit(info: DatasetInfo, chunk_bytes: int, mask: int) -> int:
    """The most bytes a chunk can occupy: its size when no deflate applies to it, else the size plus
    deflate's worst-case overhead (5 bytes per 16 KiB block, and a header)."""
    deflated = any(f[0] == DEFLATE and not mask & (1 << i) for i, f in enumerate(info.filters))
    return chunk_bytes + chunk_bytes // 1000 + 1024 if deflated else chunk_bytes


def decode_chunk(index: ChunkIndex, stored: StoredChunk, raw: bytes) -> Any:
    """A chunk's bytes (a bytes-like object) with its filters undone (in reverse order, skipping those
    its mask skipped)."""
    data = raw
    filters = index.info.filters
    for position in range(len(filters) - 1, -1, -1):
        if stored.mask & (1 << position):
            continue
        ident, _, values = filters[position]
        if ident == DEFLATE:
            data = _inflate(index, stored, data)
        elif ident == SHUFFLE:
            data = _unshuffle(data, index.info.dtype.itemsize)
        else:
            raise index.error(f"filter {ident} is not decoded here")
    if len(data) != index.chunk_bytes:
        raise index.error(f"chunk at offset {list(stored.offset)} holds {len(data):,} bytes, "
                          f"the chunk size is {index.chunk_bytes:,}")
    return data


def _inflate(index: ChunkIndex, stored: StoredChunk, data: bytes) -> bytes:
    """Inflate into at most the chunk's size: a stream giving fewer or more bytes is an error."""
    where = f"chunk at offset {list(stored.offset)}"
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, index.chunk_bytes)
    except zlib.error as exc:
        raise index.error(f"{where} does not inflate ({exc})") from None
    if inflater.unconsumed_tail:
        raise index.error(f"{where} inflates to more than the chunk size ({index.chunk_bytes:,} bytes)")
    if not inflater.eof:
        raise index.error(f"{where}: its deflate stream is truncated ({len(out):,} of {index.chunk_bytes:,} bytes)")
    if len(out) != index.chunk_bytes:
        raise index.error(f"{where} inflates to {len(out):,} bytes, the chunk size is {index.chunk_bytes:,}")
    return out


def _unshuffle(data: Any, itemsize: int) -> Any:
    """HDF5's shuffle filter undone: byte planes back into elements (a remainder stays as stored)."""
    import numpy as np

    if itemsize <= 1 or len(data) < itemsize:
        return data
    count = len(data) // itemsize
    planes = np.frombuffer(data, dtype=np.uint8, count=count * itemsize).reshape(itemsize, count)
    out = np.empty(len(data), dtype=np.uint8)
    for byte in range(itemsize):
        out[byte:count * itemsize:itemsize] = planes[byte]
    out[count * itemsize:] = np.frombuffer(data, dtype=np.uint8)[count * itemsize:]
    return out


def slab_rows(index: ChunkIndex, start: int, stop: int, read: Any, fill: np.ndarray) -> np.ndarray:
    """Rows ``start:stop`` (within one first-axis run of chunks, or rows where none is stored) assembled
    from the chunks that hold them.

    ``read(address, size)`` returns stored bytes; ``fill`` is the array of the rows pre-filled with the
    fill value, written into and returned.
    """
    import numpy as np

    info = index.info
    shape = info.shape or ()
    first = start - start % index.chunk[0]
    for stored in index.in_rows(first):
        chunk = np.frombuffer(decode_chunk(index, stored, read(stored.address, stored.size)),
                              dtype=info.dtype).reshape(index.chunk)
        lo, hi = start - first, min(stop - first, index.chunk[0])
        dest = [slice(0, hi - lo)]
        src = [slice(lo, hi)]
        for o, c, s in zip(stored.offset[1:], index.chunk[1:], shape[1:]):
            n = min(c, s - o)
            dest.append(slice(o, o + n))
            src.append(slice(0, n))
        fill[tuple(dest)] = chunk[tuple(src)]
    return fill


def row_runs(index: ChunkIndex, start: int, stop: int, max_rows: int) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` row ranges covering ``start:stop``: none longer than ``max_rows``, none crossing a
    first-axis chunk boundary where chunks are stored; rows without stored chunks (fill value) are taken
    together, so never-written space costs no per-chunk work."""
    import bisect

    step = index.chunk[0]
    stored = sorted(index.by_row)
    at = start
    while at < stop:
        first = at - at % step
        if first in index.by_row:
            end = min(stop, first + step, at + max(1, max_rows))
        else:
            following = bisect.bisect_right(stored, at)
            bound = stored[following] if following < len(stored) else stop
            end = min(stop, bound, at + max(1, max_rows))
        yield at, end
        at = end
