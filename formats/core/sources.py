"""Tensor values as writers and comparisons see them: a dtype, a shape, and bytes in bounded chunks.

A *source* is a numpy array (or anything ``numpy.asarray`` accepts), a :class:`TensorValue`
(an array with an explicit TensorFlow dtype, e.g. ``variant``, or a fixed-width scalar as its canonical bytes), or a
:class:`~formats.core.model.TensorEntry` of any opened checkpoint. Fixed-width values come out as
their canonical bytes (C order, little-endian) in chunks of at most ``chunk`` bytes: a bundle
tensor streams straight from its memory map with its CRC32C checked on the way, so a whole
checkpoint is never held in memory. Strings and variants come out as a list of ``bytes`` per
tensor.
"""
from __future__ import annotations


from formats.core import dtypes
from formats.core.arrays import apply_index, array_chunks, element_bytes
from formats.core.errors import UnsupportedError
from formats.core.model import CHUNK_BYTES, TensorEntry, kinds_of
from formats.core.records import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from typing import Any

    import numpy as np

__all__ = ["TensorValue", "Source", "CHUNK", "describe", "describe_all", "fixed_chunks", "elements", "element_bytes", "array_chunks",
           "apply_index"]

CHUNK = CHUNK_BYTES
"""Default chunk size in bytes for streaming copies and comparisons."""


@record(frozen=True)
class TensorValue:
    """A value with an explicit TensorFlow dtype name (``variant``, ``qint8``, ``string``, ...).

    ``value`` is converted with ``numpy.asarray``; for ``string`` and ``variant`` it holds
    ``bytes`` (``str`` is UTF-8 encoded; variant elements may also be protobuf messages).
    """

    value: Any
    dtype: str | None = None


if TYPE_CHECKING:
    Source = Any
else:
    Source = object  # the alias matters to type checkers only; typing stays unimported
"""A numpy array, a :class:`TensorValue`, a :class:`~formats.core.model.TensorEntry`, or array-like data."""


def describe(source: Source) -> tuple[dtypes.DType, tuple[int, ...]]:
    """The TensorFlow dtype and the shape of a source (reads nothing from a checkpoint entry)."""
    if isinstance(source, TensorEntry):
        return _entry_dtype(source), tuple(source.shape)
    if _scalar_string(source):
        return dtypes.by_enum(dtypes.STRING), ()  # type: ignore[return-value]
    raw = _raw_scalar(source)
    if raw is not None:
        return raw, ()
    arr, dt = _as_array(source)
    return dt, tuple(arr.shape)


def describe_all(sources: Sequence[Source]) -> list[tuple[dtypes.DType, tuple[int, ...]]]:
    """:func:`describe` of each of ``sources``, one tuple shared by those described alike. Where they are all
    checkpoint entries ckpt can read, or all entries of a class whose ``kinds_of`` finds their kinds (a bundle's, from
    its index's columns: a kind decides whether it can be read), each distinct kind is described once (100,000
    tensors of a few kinds: a few calls, the kinds found by C functions over them); else, or where one of those
    raises, a source at a time (so that the first source that cannot be written is the one named)."""
    from _operator import attrgetter
    from itertools import repeat

    values = list(sources)  # (one pass of the caller's sequence, which may make each as it is asked for)
    kinds = kinds_of(values)  # (a bundle's: from its index's columns)
    if kinds is None and values and all(map(isinstance, values, repeat(TensorEntry))) and \
            not any(map(attrgetter("unreadable"), values)):  # (an entry's description is its dtype's and shape's)
        kinds = list(zip(map(attrgetter("dtype"), values), map(tuple, map(attrgetter("shape"), values))))
    if kinds is not None:
        first = dict(zip(reversed(kinds), reversed(values)))  # (each kind's first source: the last one set)
        alike: dict[Any, Any] = {}  # (kinds of other shards are described alike)
        try:
            described = {kind: alike.setdefault(d, d) for kind, d in zip(first, map(describe, first.values()))}
        except UnsupportedError:
            pass
        else:
            return list(map(described.__getitem__, kinds))
    alike = {}
    return [alike.setdefault(d, d) for d in map(describe, values)]


def _raw_scalar(source: Source) -> dtypes.DType | None:
    """The dtype of a fixed-width scalar given as its canonical bytes (``TensorValue(b"\\x01" + 7 * b"\\0",
    "int64")``: a value planned without numpy, such as a ``save_counter``), else None."""
    if not (isinstance(source, TensorValue) and isinstance(source.value, bytes) and source.dtype not in (None, "string")):
        return None
    dt = dtypes.by_name(source.dtype)
    return dt if dt.fixed_width and len(source.value) == dt.itemsize else None


def _scalar_string(source: Source) -> bool:
    """Whether ``source`` is one string held as ``bytes``/``str`` (a serialized object graph, for instance):
    described and written without numpy."""
    if isinstance(source, TensorValue):
        return source.dtype in (None, "string") and isinstance(source.value, (bytes, str))
    return isinstance(source, (bytes, str))


def _entry_dtype(entry: TensorEntry) -> dtypes.DType:
    if entry.unreadable:
        raise UnsupportedError(_where(entry), f"tensor {entry.key!r}: {entry.unreadable}")
    try:
        dt = dtypes.by_name(entry.dtype)
    except ValueError:
        raise UnsupportedError(_where(entry), f"tensor {entry.key!r} has dtype {entry.dtype}, "
                               "which cannot be written") from None
    if dt.numpy_name is None:
        raise UnsupportedError(_where(entry), f"tensor {entry.key!r} has dtype {dt.name}, which cannot be written")
    return dt


def _where(entry: TensorEntry) -> str:
    return entry.files[0] if entry.files else ""


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


def elements(source: Source) -> list[bytes]:
    """The elements of a string or variant source as ``bytes``, in C order."""
    if isinstance(source, TensorEntry):
        return source.elements()
    if _scalar_string(source):
        return [element_bytes(source.value if isinstance(source, TensorValue) else source)]
    arr, _ = _as_array(source)
    return [element_bytes(x) for x in arr.reshape(-1)]


def fixed_chunks(source: Source, chunk: int = CHUNK, check: bool = True) -> Iterator[memoryview]:
    """Canonical bytes (C order, little-endian) of a fixed-width source, at most ``chunk`` bytes each.

    A checkpoint entry streams through :meth:`TensorEntry.byte_chunks` with its format's checks
    (a bundle's CRC32C: ``ChecksumError`` once the stream is consumed) unless ``check`` is False,
    for callers that checked those bytes already.
    """
    if isinstance(source, TensorEntry):
        return source.byte_chunks(chunk, check)
    if _raw_scalar(source) is not None:
        return iter((memoryview(source.value),))
    return array_chunks(_as_array(source)[0], chunk)
