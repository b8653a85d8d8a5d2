"""numpy arrays as the rest of the library streams and indexes them: canonical bytes in bounded chunks,
string and variant elements as ``bytes``, and a checked ``value[index]``.

A leaf of :mod:`formats.core`: :mod:`formats.core.model` (whose :class:`~formats.core.model.TensorEntry`
uses these as its defaults) and :mod:`formats.core.sources` (which re-exports them) both import it, and it
imports neither. numpy is imported inside the functions, only when a value is handled.
"""
from __future__ import annotations

import sys

from formats.core.errors import UsageError

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any, Protocol

    import numpy as np

    class _Named(Protocol):
        """What :func:`apply_index` names in its error: a :class:`~formats.core.model.TensorEntry`'s key and
        shape (a protocol, so this leaf imports ``model`` not even for type checkers)."""

        @property
        def key(self) -> str: ...

        @property
        def shape(self) -> tuple[int, ...]: ...

__all__ = ["element_bytes", "apply_index", "array_chunks", "array_from_chunks", "sorted_unique"]


def element_bytes(element: Any) -> bytes:
    """One string or variant element as ``bytes`` (``str`` UTF-8 encoded, messages serialized)."""
    if isinstance(element, bytes):
        return element
    if isinstance(element, str):
        return element.encode("utf-8", "surrogateescape")
    if isinstance(element, (bytearray, memoryview)):
        return bytes(element)
    serialize = getattr(element, "SerializeToString", None)
    if serialize is not None:
        return serialize()
    import numpy as np

    if isinstance(element, np.bytes_):
        return bytes(element)
    raise ValueError(f"string or variant element of type {type(element).__name__} is not bytes or str")


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """``numpy.unique(values)`` of a 1-D array: its values sorted, each once. numpy 2 imports :mod:`numpy.ma` for
    that (to ask whether the array is masked), 1.3 MiB and 8 ms of a command that needs no masked array."""
    import numpy as np

    found = np.sort(values)
    if len(found) > 1:
        keep = np.empty(len(found), dtype=bool)
        keep[0] = True
        np.not_equal(found[1:], found[:-1], out=keep[1:])
        found = found[keep]
    return found


def apply_index(value: np.ndarray, index: tuple[Any, ...], entry: _Named) -> np.ndarray:
    """``value[index]``, or a UsageError naming the entry when the index does not fit its shape."""
    import numpy as np

    try:
        return np.asarray(value[index])
    except (IndexError, ValueError) as exc:
        raise UsageError(entry.key, f"bad slice for shape {list(entry.shape)}: {exc}") from None


def array_from_chunks(shape: tuple[int, ...], dtype: Any, pieces: Iterator[memoryview] | Iterator[bytes]) -> np.ndarray:
    """A new array of ``shape`` and ``dtype`` filled, in C order, from the byte ``pieces`` of its value (a reader's
    ``byte_chunks``: one piece in memory besides the array)."""
    import numpy as np

    out = np.empty(shape, dtype=dtype)
    flat = memoryview(out.reshape(-1).view(np.uint8)) if out.size else memoryview(b"")  # type: ignore[arg-type]
    done = 0
    for piece in pieces:
        flat[done:done + len(piece)] = piece
        done += len(piece)
    return out


def array_chunks(arr: np.ndarray, chunk: int) -> Iterator[memoryview]:
    """An array's canonical bytes (C order, little-endian) in chunks of at most ``chunk`` bytes."""
    import numpy as np

    if arr.dtype.byteorder == ">" or (arr.dtype.byteorder == "=" and sys.byteorder == "big"):
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    if arr.flags.c_contiguous:
        flat = arr.reshape(-1).view(np.uint8)
        for start in range(0, flat.size, chunk):
            yield memoryview(flat[start:start + chunk])  # type: ignore[arg-type]
        return
    yield from _rechunk(_row_blocks(arr, chunk), chunk)


def _row_blocks(arr: np.ndarray, chunk: int) -> Iterator[memoryview]:
    import numpy as np

    rows = max(1, chunk // max(1, arr[0].nbytes if arr.ndim else arr.nbytes))
    for start in range(0, arr.shape[0], rows):
        block = np.ascontiguousarray(arr[start:start + rows])
        yield memoryview(block.reshape(-1).view(np.uint8))  # type: ignore[arg-type]


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
