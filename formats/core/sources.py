"""Tensor values as writers and comparisons see them: a dtype, a shape, and bytes in bounded chunks.

A *source* is a numpy array (or anything ``numpy.asarray`` accepts), a :class:`TensorValue`
(an array with an explicit TensorFlow dtype, e.g. ``variant``), or a
:class:`~formats.core.model.TensorEntry` of any opened checkpoint. Fixed-width values come out as
their canonical bytes (C order, little-endian) in chunks of at most ``chunk`` bytes: a bundle
tensor streams straight from its memory map with its CRC32C checked on the way, so a whole
checkpoint is never held in memory. Strings and variants come out as a list of ``bytes`` per
tensor.
"""
from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from formats.core import dtypes
from formats.io.crc import crc32c, unmask
from formats.core.errors import UnsupportedError
from formats.core.model import TensorEntry

if TYPE_CHECKING:
    import numpy as np

__all__ = ["TensorValue", "Source", "CHUNK", "describe", "fixed_chunks", "elements", "bundle_origin"]

CHUNK = 8 << 20
"""Default chunk size in bytes for streaming copies and comparisons."""


@dataclass(frozen=True)
class TensorValue:
    """A value with an explicit TensorFlow dtype name (``variant``, ``qint8``, ``string``, ...).

    ``value`` is converted with ``numpy.asarray``; for ``string`` and ``variant`` it holds
    ``bytes`` (``str`` is UTF-8 encoded; variant elements may also be protobuf messages).
    """

    value: Any
    dtype: str | None = None


Source = Any
"""A numpy array, a :class:`TensorValue`, a :class:`~formats.core.model.TensorEntry`, or array-like data."""


def describe(source: Source) -> tuple[dtypes.DType, tuple[int, ...]]:
    """The TensorFlow dtype and the shape of a source (reads nothing from a checkpoint entry)."""
    if isinstance(source, TensorEntry):
        return _entry_dtype(source), tuple(source.shape)
    arr, dt = _as_array(source)
    return dt, tuple(arr.shape)


def _entry_dtype(entry: TensorEntry) -> dtypes.DType:
    try:
        dt = dtypes.by_name(entry.dtype)
    except ValueError:
        raise UnsupportedError(_where(entry), f"tensor {entry.key!r} has dtype {entry.dtype}, "
                               "which cannot be written") from None
    if dt.numpy_name is None:
        raise UnsupportedError(_where(entry), f"tensor {entry.key!r} has dtype {dt.name}, which cannot be written")
    return dt


def _where(entry: TensorEntry) -> str:
    reader = getattr(entry, "_reader", None)
    return getattr(reader, "prefix", "") or ""


def _as_array(source: Source) -> tuple[np.ndarray, dtypes.DType]:
    import numpy as np

    wanted = source.dtype if isinstance(source, TensorValue) else None
    value = source.value if isinstance(source, TensorValue) else source
    if wanted is not None:
        dt = dtypes.by_name(wanted)
        if dt.numpy_name is None:
            raise ValueError(f"dtype {wanted} cannot be written")
        if dt.fixed_width:
            return np.asarray(value, dtype=dt.numpy()), dt
        return _object_array(value), dt
    if isinstance(value, (bytes, str)):
        return _object_array(value), dtypes.by_enum(dtypes.STRING)  # type: ignore[return-value]
    arr = np.asarray(value)
    dt = dtypes.from_numpy(arr.dtype)
    return (_object_array(arr) if not dt.fixed_width else arr), dt


def _object_array(value: Any) -> np.ndarray:
    import numpy as np

    if isinstance(value, (bytes, str)):
        out = np.empty((), dtype=object)
        out[()] = value
        return out
    arr = np.asarray(value)
    if arr.dtype == object:
        return arr
    out = np.empty(arr.shape, dtype=object)
    out.reshape(-1)[:] = list(arr.reshape(-1))
    return out


def _to_bytes(element: Any) -> bytes:
    if isinstance(element, bytes):
        return element
    if isinstance(element, str):
        return element.encode("utf-8", "surrogateescape")
    if isinstance(element, (bytearray, memoryview)):
        return bytes(element)
    serialize = getattr(element, "SerializeToString", None)
    if serialize is not None:
        return serialize()  # type: ignore[no-any-return]
    import numpy as np

    if isinstance(element, np.bytes_):
        return bytes(element)
    raise ValueError(f"string or variant element of type {type(element).__name__} is not bytes or str")


def elements(source: Source) -> list[bytes]:
    """The elements of a string or variant source as ``bytes``, in C order."""
    if isinstance(source, TensorEntry):
        arr = source.read()
    else:
        arr, _ = _as_array(source)
    return [_to_bytes(x) for x in arr.reshape(-1)]


def bundle_origin(source: Source) -> Any:
    """The :class:`~formats.tf_bundle.reader.BundleReader` a bundle tensor streams from, else None."""
    if isinstance(source, TensorEntry):
        reader = getattr(source, "_reader", None)
        if reader is not None and hasattr(reader, "region"):
            return reader
    return None


def fixed_chunks(source: Source, chunk: int = CHUNK, check: bool = True) -> Iterator[memoryview]:
    """Canonical bytes (C order, little-endian) of a fixed-width source, at most ``chunk`` bytes each.

    A bundle tensor's CRC32C is checked as it streams by (``ChecksumError`` once the stream is
    consumed) unless ``check`` is False, for callers that checked those bytes already.
    """
    reader = bundle_origin(source)
    if reader is not None and not source.raw.slices:  # type: ignore[union-attr]
        return _bundle_chunks(reader, source.raw, chunk, check)  # type: ignore[union-attr]
    arr = source.read() if isinstance(source, TensorEntry) else _as_array(source)[0]
    return _array_chunks(arr, chunk)


def _bundle_chunks(reader: Any, raw: Any, chunk: int, check: bool) -> Iterator[memoryview]:
    dt = reader.dtype_of(raw)
    reader.check_fixed_size(raw, dt)
    swap = reader.header.big_endian and dt.itemsize > 1
    crc = 0
    for piece in reader.chunks(raw, chunk):  # pages dropped after use; ranged reads for URLs
        if check:
            crc = crc32c(piece, crc)
        yield _byteswapped(piece, dt) if swap else piece
    if check and crc != unmask(raw.crc32c):
        raise reader.checksum_error(raw, crc)


def _byteswapped(piece: memoryview, dt: dtypes.DType) -> memoryview:
    import numpy as np

    arr = np.frombuffer(piece, dtype=dt.numpy().newbyteorder(">"))
    return memoryview(arr.astype(dt.numpy())).cast("B")


def _array_chunks(arr: np.ndarray, chunk: int) -> Iterator[memoryview]:
    import numpy as np

    if arr.dtype.byteorder == ">" or (arr.dtype.byteorder == "=" and sys.byteorder == "big"):
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    if arr.flags.c_contiguous:
        flat = arr.reshape(-1).view(np.uint8)
        for start in range(0, flat.size, chunk):
            yield memoryview(flat[start:start + chunk])
        return
    yield from _rechunk(_row_blocks(arr, chunk), chunk)


def _row_blocks(arr: np.ndarray, chunk: int) -> Iterator[memoryview]:
    import numpy as np

    rows = max(1, chunk // max(1, arr[0].nbytes if arr.ndim else arr.nbytes))
    for start in range(0, arr.shape[0], rows):
        block = np.ascontiguousarray(arr[start:start + rows])
        yield memoryview(block.reshape(-1).view(np.uint8))


def _rechunk(pieces: Iterator[memoryview], chunk: int) -> Iterator[memoryview]:
    """Regroup arbitrary pieces into chunks of exactly ``chunk`` bytes (the last may be shorter)."""
    pending = bytearray()
    for piece in pieces:
        pending += piece
        while len(pending) >= chunk:
            yield memoryview(bytes(pending[:chunk]))
            del pending[:chunk]
    if pending:
        yield memoryview(bytes(pending))
