"""A tensor's values, a piece at a time: chunked iteration, ``key[slice]`` parsing, safe display.

:func:`iter_chunks` yields a tensor's elements in C order as flat numpy arrays of at most
``chunk_elements`` elements. For a fixed-width, unpartitioned tensor of a TensorFlow bundle the
chunks are views straight into the memory-mapped data file and the entry's CRC32C is computed as
they stream by (a :class:`~formats.core.errors.ChecksumError` is raised when the last chunk has been
consumed), so memory stays bounded by one chunk. Every other entry (partitioned variables, strings,
variants, HDF5) is read whole with ``entry.read()`` and then cut into chunks.

Consumers must run an iterator to its end (that is when the checksum is compared) and must not keep
a chunk after asking for the next one.
"""
from __future__ import annotations


from formats.core import dtypes
from formats.core.errors import TensorNotFoundError, UsageError
from formats.core.model import CHUNK_ELEMENTS, Checkpoint, TensorEntry
from formats.core.object_keys import VALUE_SUFFIX

TYPE_CHECKING = False  # typing and concurrent.futures stay off the start-up path
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from concurrent.futures import Executor
    from typing import Any

    import numpy as np

__all__ = ["CHUNK_ELEMENTS", "iter_chunks", "paired_chunks", "iter_float_chunks", "as_float", "value_kind",
           "parse_key_slice", "parse_index", "read_slice", "selected_shape", "read_summary"]

_NUMERIC_KINDS = {"f": "float", "i": "int", "u": "int", "b": "bool", "c": "complex"}


def value_kind(dtype: str) -> str:
    """``float``, ``int``, ``bool``, ``complex``, ``bytes`` (string, variant) or ``other`` for a TF dtype name."""
    if dtype in ("string", "variant"):
        return "bytes"
    try:
        dt = dtypes.by_name(dtype.removesuffix("_ref"))
    except ValueError:
        return "other"
    if dt.numpy_name is None:
        return "other"
    if dt.name.startswith(("bfloat", "float")):
        return "float"
    if dt.name.startswith(("int", "uint", "qint", "quint")):
        return "int"
    return {"bool": "bool", "complex64": "complex", "complex128": "complex"}.get(dt.name, "other")


def iter_chunks(entry: TensorEntry, chunk_elements: int = CHUNK_ELEMENTS,
                crc_pool: Executor | None = None) -> Iterator[np.ndarray]:
    """The tensor's elements in C order (:meth:`TensorEntry.iter_chunks`); with ``crc_pool`` a format
    may run its checksums there, overlapping with the caller's work on the same chunk."""
    return entry.iter_chunks(chunk_elements, crc_pool)


def _size(chunk: Any) -> int:
    return chunk.size


def paired_chunks(a: Iterator[Any], b: Iterator[Any], length: Callable[[Any], int] = _size,
                  ) -> Iterator[tuple[Any, Any]]:
    """Pieces of equal length from two chunk streams over tensors of the same size, whatever chunk sizes
    each format yields (a partitioned variable streams slice by slice, a whole one in fixed chunks).
    Chunks are flat arrays, or with ``length=len`` byte buffers (``byte_chunks``).

    Each stream is advanced only once its current chunk is used up (chunks may be views valid until then),
    and both are run to their end, which is when formats compare their checksums.
    """
    x = y = None
    while True:
        if x is None or not length(x):
            x = next(a, None)
        if y is None or not length(y):
            y = next(b, None)
        if x is None or y is None:
            break
        n = min(length(x), length(y))
        if n:
            yield x[:n], y[:n]
        x, y = x[n:], y[n:]
    for _ in a:
        pass
    for _ in b:
        pass


def as_float(chunk: np.ndarray) -> np.ndarray:
    """A numeric chunk as float64 (complex128 for complex); bfloat16/float16/float8 go through float32."""
    import numpy as np

    if chunk.dtype.kind == "c":
        return chunk.astype(np.complex128)
    if chunk.dtype.kind not in "fiub":  # ml_dtypes (bfloat16, float8, int4) report kind 'V'
        chunk = chunk.astype(np.float32)
    return chunk.astype(np.float64)


def iter_float_chunks(entry: TensorEntry, chunk_elements: int = CHUNK_ELEMENTS) -> Iterator[np.ndarray]:
    """:func:`iter_chunks` converted with :func:`as_float` (numeric tensors only)."""
    for chunk in iter_chunks(entry, chunk_elements):
        yield as_float(chunk)


# -- key[slice] ------------------------------------------------------------------------------------
def _is_int(text: str) -> bool:
    """Whether ``text`` is a whole number as a slice writes it (``3``, ``-1``, ``+2``; no spaces, no ``_``),
    checked without a regular expression (``re`` stays off the start-up path)."""
    digits = text[1:] if text[:1] in "+-" else text
    return digits.isdecimal()  # what the regex \d matched: any Unicode decimal digit, as int() takes


def _parse_item(part: str, text: str) -> Any:
    item = part.strip()
    if item == "...":
        return Ellipsis
    if _is_int(item):
        return int(item)
    bounds = [b.strip() for b in item.split(":")]
    if 2 <= len(bounds) <= 3 and all(not b or _is_int(b) for b in bounds):
        return slice(*(int(b) if b else None for b in bounds))
    raise ValueError(f"bad slice item {item!r} in [{text}]")


def parse_index(text: str) -> tuple[Any, ...]:
    """``"0:3, :"`` -> ``(slice(0, 3), slice(None))``; ints, ``a:b:c`` and ``...`` only (never eval)."""
    if not text.strip():
        return ()
    return tuple(_parse_item(part, text) for part in text.split(","))


def find_key(ckpt: Checkpoint, text: str) -> str | None:
    """The key ``text`` means: the key itself, else the one tensor whose variable name is ``text``
    (``dense/kernel`` in an object-based checkpoint) or whose object path it is (``net/l1/kernel``);
    None when nothing matches. Several matches raise, naming them."""
    if text in ckpt:
        return text
    if text + VALUE_SUFFIX in ckpt:
        return text + VALUE_SUFFIX
    named = [k for k, e in ckpt.items() if e.name == text]
    if len(named) > 1:
        variables = [k for k in named if ckpt[k].role == "variable"]
        named = variables if len(variables) == 1 else named
    if len(named) > 1:
        raise TensorNotFoundError(ckpt.path, f"{text!r} names {len(named)} tensors: {', '.join(sorted(named)[:5])}",
                                  hint="pass one of the keys")
    return named[0] if named else None


def parse_key_slice(ckpt: Checkpoint, text: str) -> tuple[str, tuple[Any, ...] | None, str]:
    """Split ``dense/kernel[0:3, :]`` into (key, index, slice text); a key that itself ends in ``]`` wins.
    The key part may also be a variable name or an object path (:func:`find_key`)."""
    found = find_key(ckpt, text)
    if found is not None:
        return found, None, ""
    if text.endswith("]"):
        for pos in [i for i, c in enumerate(text) if c == "["][::-1]:
            key, inner = find_key(ckpt, text[:pos]), text[pos + 1:-1]
            if key is not None:
                try:
                    return key, parse_index(inner), inner
                except ValueError as exc:
                    raise UsageError(ckpt.path, str(exc), hint="slices look like [0:3, :] or [2, ...]") from None
    raise TensorNotFoundError(ckpt.path, f"no tensor named {text!r}", hint=_did_you_mean(ckpt, text))


def _did_you_mean(ckpt: Checkpoint, text: str) -> str | None:
    """The spellings of the keys nearest to ``text`` (a key, object path or variable name, perhaps with a
    slice: ``net/l1/kernel[0]`` -> ``did you mean 'net/l1/_kernel[0]'?``), or None."""
    from formats.core.nearest import did_you_mean, key_spellings, nearest

    spellings = key_spellings(ckpt)
    near: list[str] = []
    if text.endswith("]") and "[" in text:
        at = text.rindex("[")
        near = [spelling + text[at:] for _, spelling in nearest(text[:at], spellings)]
    near = near or [spelling for _, spelling in nearest(text, spellings)]
    return did_you_mean(spelling for spelling in near if spelling != text)


def read_slice(entry: TensorEntry, index: tuple[Any, ...] | None) -> np.ndarray:
    """``entry``'s value, or just ``value[index]`` (:meth:`TensorEntry.read_slice`)."""
    return entry.read_slice(index)


def selected_shape(entry: TensorEntry, index: tuple[Any, ...] | None) -> tuple[int, ...]:
    """The shape of ``value[index]`` (the tensor's own when ``index`` is None), nothing read; a bad index is the
    UsageError :func:`read_slice` would raise."""
    import numpy as np

    from formats.core.arrays import apply_index

    if index is None:
        return tuple(entry.shape)
    return apply_index(np.broadcast_to(np.zeros((), np.uint8), entry.shape), index, entry).shape


def read_summary(entry: TensorEntry, edgeitems: int) -> np.ndarray:
    """What numpy's summarised printing of ``entry``'s whole value shows, read alone: along every axis longer
    than ``2 * edgeitems``, its first and last ``edgeitems`` elements with one between them (never shown; the
    axis stays longer than ``2 * edgeitems``, so printed with any ``threshold`` below its size it is summarised
    just as the whole value is, and numpy formats a summarised array from those elements alone). A 2 GiB
    embedding is 7 x 7 values, not 2 GiB."""
    import numpy as np

    axes = [np.r_[0:edgeitems + 1, n - edgeitems:n] if n > 2 * edgeitems else np.arange(n) for n in entry.shape]
    return entry.read_slice(np.ix_(*axes)) if axes else entry.read_slice(None)
