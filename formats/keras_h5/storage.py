"""A dataset's values read from the bytes of the file by ckpt itself, in bounded blocks of rows.

What is read here: contiguous datasets (at their address, checked to lie inside the file), compact
ones (their bytes came with the probe) and chunked ones with deflate/shuffle filters
(:mod:`formats.keras_h5.chunks`). Everything else - variable-length strings, other filters, types
whose stored bytes are not numpy's - is read by libhdf5 in the isolated child (``H5Image.values``).

Every size is checked against what the file stores before memory is allocated for it.
"""
from __future__ import annotations

import math
import struct
from collections.abc import Iterator

from formats.core.errors import CorruptCheckpointError
from formats.io.zipped import MAX_EXPANSION
from formats.keras_h5 import chunks

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any
    import numpy as np

    from formats.keras_h5.image import H5Image
    from formats.keras_h5.tree import DatasetInfo

__all__ = ["storage_problem", "native", "read_rows", "read_whole", "SLACK"]

SLACK = 64 << 20
"""Never-written space reads as the fill value, so a little more than what is stored is fine."""
_STRING_SLACK = 1 << 20
_VLEN_BYTES = 16  # a variable-length element is stored as length, heap address and index


def storage_problem(info: DatasetInfo, nbytes: int, image_size: int) -> str | None:
    """Why the declared shape cannot be read from what the file stores, or None when they agree."""
    if info.error is not None:
        return info.error
    if info.layout == "external":
        return "stored in external file(s): not read"
    if info.layout == "virtual":
        return "stored in a virtual dataset mapping other files: not read"
    if info.layout not in ("contiguous", "chunked", "compact"):
        return f"unknown HDF5 storage layout ({info.layout})"
    if info.vlen or info.dtype.kind == "S":
        need = info.elements * (_VLEN_BYTES if info.vlen else info.dtype.itemsize)
        if need > info.stored * MAX_EXPANSION + _STRING_SLACK:
            return (f"declares {info.elements:,} strings but stores only {info.stored:,} bytes; "
                    "refusing to read them")
        if info.vlen:
            return None
    if info.layout == "contiguous":
        return _contiguous_problem(info, nbytes, image_size)
    if info.layout == "chunked":
        return _chunked_problem(info, nbytes)
    if info.stored < nbytes:
        return f"declares {nbytes:,} bytes but stores {info.stored:,}"
    return None


def _contiguous_problem(info: DatasetInfo, nbytes: int, image_size: int) -> str | None:
    if info.offset is None:  # never written: reads as the fill value
        return None if nbytes <= SLACK else f"declares {nbytes:,} bytes but none are stored"
    if info.stored != nbytes:
        return f"declares shape {info.shape} ({nbytes:,} bytes) but stores {info.stored:,} bytes"
    if info.offset + info.stored > image_size:
        return (f"data at bytes {info.offset:,}..{info.offset + info.stored:,} runs past the end of the file "
                f"({image_size:,} bytes): truncated?")
    return None


def _chunked_problem(info: DatasetInfo, nbytes: int) -> str | None:
    chunk = info.chunk or ()
    if len(chunk) != len(info.shape or ()) or not all(chunk):
        return f"chunk shape {list(chunk)} does not fit shape {list(info.shape or ())}"
    if math.prod(chunk) * info.dtype.itemsize > chunks.MAX_CHUNK_BYTES:
        return f"chunk shape {list(chunk)} is larger than HDF5 allows"
    if nbytes > info.stored * MAX_EXPANSION + SLACK:
        return (f"declares shape {info.shape} ({nbytes:,} bytes) but stores only {info.stored:,} bytes; "
                "refusing to allocate it")
    return None


def native(info: DatasetInfo) -> bool:
    """Whether ckpt reads this dataset's bytes itself (else libhdf5 does, isolated)."""
    if info.vlen or not info.raw:
        return False
    if info.layout == "chunked":
        return chunks.native(info)
    return info.layout in ("contiguous", "compact")


def _fill(info: DatasetInfo, shape: tuple[int, ...]) -> np.ndarray:
    import numpy as np

    if info.fill is not None and len(info.fill) == info.dtype.itemsize and any(info.fill):
        value = np.frombuffer(info.fill, dtype=info.dtype)[0]
        return np.full(shape, value, dtype=info.dtype)
    return np.zeros(shape, dtype=info.dtype)


def read_rows(image: H5Image, info: DatasetInfo, start: int, stop: int, block_bytes: int) -> Iterator[np.ndarray]:
    """Rows ``start:stop`` of a natively read dataset, in blocks of at most ``block_bytes`` (at least one
    row), each an array of shape ``(k, *shape[1:])``; a scalar is one block of shape ``()``."""
    import numpy as np

    shape = info.shape or ()
    if not shape:
        yield read_whole(image, info)
        return
    row_bytes = math.prod(shape[1:]) * info.dtype.itemsize
    if not row_bytes:  # rows of no elements: nothing is stored, whatever the number of rows
        yield _fill(info, (stop - start, *shape[1:]))
        return
    max_rows = max(1, block_bytes // row_bytes)
    if info.layout == "chunked":
        index = image.chunk_index(info)
        for a, b in chunks.row_runs(index, start, stop, max_rows):
            yield chunks.slab_rows(index, a, b, image.read, _fill(info, (b - a, *shape[1:])))
        return
    for a in range(start, stop, max_rows):
        b = min(stop, a + max_rows)
        if info.layout == "compact":
            whole = np.frombuffer(_compact(image, info), dtype=info.dtype).reshape(shape)
            yield whole[a:b].copy()
        elif info.offset is None:
            yield _fill(info, (b - a, *shape[1:]))
        else:
            out = np.empty((b - a, *shape[1:]), dtype=info.dtype)
            image.read_into(info.offset + a * row_bytes, out.reshape(-1).view(np.uint8))
            yield out


def _compact(image: H5Image, info: DatasetInfo) -> bytes:
    nbytes = info.elements * info.dtype.itemsize
    if info.compact is None or len(info.compact) != nbytes:
        raise CorruptCheckpointError(image.path, f"{info.path}: compact data holds "
                                                 f"{len(info.compact or b''):,} bytes, the shape needs {nbytes:,}")
    return info.compact


def read_whole(image: H5Image, info: DatasetInfo) -> np.ndarray:
    """The whole value in the stored numpy type (object array of bytes for variable-length strings)."""
    import numpy as np

    shape = info.shape or ()
    if not native(info):
        return _isolated(image, info)
    if not shape:
        if info.layout == "compact":
            return np.frombuffer(_compact(image, info), dtype=info.dtype).reshape(()).copy()
        if info.offset is None:
            return _fill(info, ())
        out = np.empty((), dtype=info.dtype)
        image.read_into(info.offset, out.reshape(-1).view(np.uint8))
        return out
    out = np.empty(shape, dtype=info.dtype)
    at = 0
    for block in read_rows(image, info, 0, shape[0], 8 << 20):
        out[at:at + len(block)] = block
        at += len(block)
    return out


def _isolated(image: H5Image, info: DatasetInfo) -> np.ndarray:
    """Values libhdf5 reads in the isolated child, checked to have the declared size."""
    import numpy as np

    raw = image.values(info)
    if not info.vlen:
        nbytes = info.elements * info.dtype.itemsize
        if len(raw) != nbytes:
            raise CorruptCheckpointError(image.path, f"{info.path}: read {len(raw):,} bytes, the shape needs {nbytes:,}")
        return np.frombuffer(raw, dtype=info.dtype).reshape(info.shape or ()).copy()
    items: list[Any] = []
    at = 0
    view = memoryview(raw)
    while at < len(raw) and len(items) < info.elements:
        (n,) = struct.unpack_from("<Q", raw, at)
        if at + 8 + n > len(raw):
            break
        items.append(bytes(view[at + 8:at + 8 + n]))
        at += 8 + n
    if len(items) != info.elements or at != len(raw):
        raise CorruptCheckpointError(image.path, f"{info.path}: the strings read do not match the shape "
                                                 f"{list(info.shape or ())}")
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out.reshape(info.shape or ())
