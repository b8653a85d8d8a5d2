"""The one comparison engine: what differs between two tensors, found in one bounded pass.

Equality is a comparison with no differences. :func:`compare_values` reads two tensors' headers (dtype,
shape) and then, when those agree, their values chunk by chunk, and returns a :class:`Comparison` whose
``kind`` says what differs (None: nothing) with the detail the callers need.

How each caller maps onto it:

* :mod:`formats.core.roundtrip` (every writer's read-back verification, ``verify --against``):
  ``compare_tensor(actual, expected)`` is ``compare_values(actual, expected, chunk=..., check_crc=...)``
  with the defaults - headers through :func:`~formats.core.sources.describe` (``strict``: an unreadable or
  unwritable entry is ``unreadable``), dtype checked before shape, values compared exactly (canonical bytes,
  CRC checked, both streams read to their end after a difference so a damaged tensor says so), a
  :class:`Digest` standing in for a source that is gone. "Any difference?" is ``kind is not None``; the
  :class:`~formats.core.roundtrip.Mismatch` message is made from ``dtypes``, ``shapes``, ``first``,
  ``size`` and ``digests``.
* :mod:`formats.ops.compare.diff` (``ckpt diff``): ``compare_entries`` calls it with ``strict=False``
  (the entries' own dtype names), ``shape_first=True``, ``values=not keys_only``, ``to_end=False`` (its
  statistics read both again), its stored-range comparison (``same_stored``, from ``formats.io``) and,
  with a tolerance, ``close`` (``numpy.isclose`` per pair of chunks). A ``shape`` or non-numeric ``dtype``
  result is its change as it is; a ``value`` (or a numeric ``dtype``) result gets its statistics on top;
  an ``unreadable`` one is raised again (``error``), as ``diff`` reports an unreadable side.

Values are compared: against a :class:`Digest`, by the sha256 of the canonical bytes; with ``close``, by
that predicate over pairs of element chunks (:meth:`TensorEntry.iter_chunks`); fixed-width values exactly,
as canonical bytes (C order, little-endian) - from :meth:`TensorEntry.byte_chunks` where the format
streams them (one ``memcmp`` per piece, no numpy unless a piece differs), else from element chunks;
strings and variants element by element (:meth:`TensorEntry.elements`).
"""
from __future__ import annotations

import math

from formats.core.errors import CheckpointError
from formats.core.model import CHUNK_ELEMENTS, TensorEntry
from formats.core.records import record
from formats.core.sources import CHUNK, Source, describe, elements, fixed_chunks
from formats.core.values import iter_chunks, paired_chunks

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    import numpy as np

__all__ = ["Comparison", "Digest", "compare_values", "first_difference", "tensor_digest", "digest_update"]

KINDS = ("dtype", "shape", "value", "unreadable")
"""What a :class:`Comparison` may find (``kind``); None when nothing differs."""


@record(frozen=True)
class Digest:
    """What a value was: dtype name, shape and the sha256 of its canonical bytes (see :func:`tensor_digest`)."""

    dtype: str
    shape: tuple[int, ...]
    sha256: str


@record(frozen=True)
class Comparison:
    """What :func:`compare_values` found.

    ``kind`` is None (the same), ``dtype``, ``shape``, ``value`` or ``unreadable``. ``dtypes`` and
    ``shapes`` are both sides' (as far as read); for ``value``: ``size`` elements, ``first`` the first
    element that differs (None when the comparison did not locate it), ``digests`` both sha256 when the
    expected side was a :class:`Digest`; for ``unreadable``: ``message`` and the ``error`` raised.
    """

    kind: str | None
    dtypes: tuple[str, str] = ("", "")
    shapes: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())
    first: int | None = None
    size: int = 0
    digests: tuple[str, str] | None = None
    message: str = ""
    error: Exception | None = None

    @property
    def same(self) -> bool:
        """True when nothing differs."""
        return self.kind is None


def compare_values(a: Source, b: Source | Digest, *, chunk: int = CHUNK, chunk_elements: int = CHUNK_ELEMENTS,
                   check_crc: bool = True, strict: bool = True, shape_first: bool = False, values: bool = True,
                   close: Callable[[np.ndarray, np.ndarray], bool] | None = None,
                   same_stored: Callable[[TensorEntry, TensorEntry], bool | None] | None = None,
                   to_end: bool = True) -> Comparison:
    """Compare ``a`` with ``b`` (see the module doc): headers, then - with ``values`` - values.

    ``strict`` describes sources as writers see them (:func:`~formats.core.sources.describe`), else an
    entry by its own dtype name and shape. ``close(x, y)`` says whether two element chunks are the same
    (else values are compared exactly). ``same_stored(a, b)`` may answer for two entries without streaming
    them (None: stream). ``to_end`` reads both to the end after a difference (their checksums checked).
    A :class:`~formats.core.errors.CheckpointError` or ``ValueError`` on the way is an ``unreadable`` result.
    """
    try:
        return _compare(a, b, chunk, chunk_elements, check_crc, strict, shape_first, values, close, same_stored,
                        to_end)
    except CheckpointError as exc:
        return Comparison("unreadable", message=exc.message, error=exc)
    except ValueError as exc:
        return Comparison("unreadable", message=str(exc), error=exc)


def _header(source: Source | Digest, strict: bool) -> tuple[str, tuple[int, ...]]:
    if isinstance(source, Digest):
        return source.dtype, tuple(source.shape)
    if isinstance(source, TensorEntry) and not strict:
        return source.dtype, tuple(source.shape)
    dt, shape = describe(source)
    return dt.name, shape


def _compare(a: Source, b: Source | Digest, chunk: int, chunk_elements: int, check_crc: bool, strict: bool,
             shape_first: bool, values: bool, close: Callable[[np.ndarray, np.ndarray], bool] | None,
             same_stored: Callable[[TensorEntry, TensorEntry], bool | None] | None, to_end: bool) -> Comparison:
    dt_a, shape_a = _header(a, strict)
    dt_b, shape_b = _header(b, strict)
    dts, shapes = (dt_a, dt_b), (shape_a, shape_b)
    for kind in (("shape", "dtype") if shape_first else ("dtype", "shape")):
        if (dt_a != dt_b) if kind == "dtype" else (shape_a != shape_b):
            return Comparison(kind, dts, shapes)
    if not values:
        return Comparison(None, dts, shapes)
    size = math.prod(shape_a)

    def differ(first: int | None = None, digests: tuple[str, str] | None = None) -> Comparison:
        return Comparison("value", dts, shapes, first, size, digests)

    if isinstance(b, Digest):
        got = tensor_digest(a, chunk)
        return Comparison(None, dts, shapes) if got == b.sha256 else differ(digests=(got, b.sha256))
    if close is not None:
        return _by_chunks(a, b, chunk_elements, close, dts, shapes, size)
    from formats.core import dtypes

    fixed = dtypes.by_name(dt_a.removesuffix("_ref")).fixed_width
    if not fixed:
        if same_stored is not None and isinstance(a, TensorEntry) and isinstance(b, TensorEntry) and \
                same_stored(a, b):  # (only "the same" is taken: unequal stored bytes may hold equal strings)
            return Comparison(None, dts, shapes)
        if size == 1 and isinstance(a, TensorEntry) and not isinstance(b, TensorEntry):  # (a written object graph)
            same = a.element_equals(elements(b)[0])
            if same is not None:
                return Comparison(None, dts, shapes) if same else differ(0)
        left, right = elements(a), elements(b)
        for i, (x, y) in enumerate(zip(left, right)):
            if x != y:
                return differ(i)
        return Comparison(None, dts, shapes)
    if isinstance(a, TensorEntry) and isinstance(b, TensorEntry):
        if same_stored is not None:
            same = same_stored(a, b)
            if same is not None:
                return Comparison(None, dts, shapes) if same else differ()
        if not (_streams_bytes(a) and _streams_bytes(b)):
            return _by_chunks(a, b, chunk_elements, None, dts, shapes, size)
    xs, ys = fixed_chunks(a, chunk, check_crc), fixed_chunks(b, chunk, check_crc)
    at = first_difference(xs, ys)
    if at is None:
        return Comparison(None, dts, shapes)
    if to_end:  # read both to the end: a damaged stored tensor then says so (ChecksumError)
        for _ in xs:
            pass
        for _ in ys:
            pass
    itemsize = dtypes.by_name(dt_a.removesuffix("_ref")).itemsize
    return differ(at // itemsize)


def _streams_bytes(entry: TensorEntry) -> bool:
    """Whether the entry's format streams its bytes itself (the contract's default reads the whole value)."""
    return type(entry).byte_chunks is not TensorEntry.byte_chunks


def _element_chunks(source: Source, chunk_elements: int) -> Iterator[Any]:
    if isinstance(source, TensorEntry):
        return iter_chunks(source, chunk_elements)
    from formats.core.sources import _as_array

    flat = _as_array(source)[0].reshape(-1)
    return (flat[i:i + chunk_elements] for i in range(0, flat.size, chunk_elements))


def _by_chunks(a: Source, b: Source, chunk_elements: int, close: Callable[[np.ndarray, np.ndarray], bool] | None,
               dts: tuple[str, str], shapes: tuple[tuple[int, ...], tuple[int, ...]], size: int) -> Comparison:
    """Pairs of element chunks, both run to their end: by ``close``, else by canonical bytes."""
    first: int | None = None
    differs = False
    done = 0
    for x, y in paired_chunks(_element_chunks(a, chunk_elements), _element_chunks(b, chunk_elements)):
        if not differs:
            if close is not None:
                differs = not close(x, y)
            else:
                at = _first_unequal(_canonical(x), _canonical(y))
                if at is not None:
                    differs, first = True, done + at // x.dtype.itemsize
        done += x.size
    return Comparison("value", dts, shapes, first, size) if differs else Comparison(None, dts, shapes)


def _canonical(x: np.ndarray) -> memoryview:
    from formats.core.arrays import array_chunks

    return memoryview(b"".join(array_chunks(x, max(1, x.nbytes))))


def first_difference(xs: Iterator[memoryview], ys: Iterator[memoryview]) -> int | None:
    """Byte offset of the first difference between two byte streams (their lengths included), else None."""
    empty = memoryview(b"")
    x, y, pos = empty, empty, 0
    while True:
        while not x:
            x = next(xs, None)  # type: ignore[arg-type]
            if x is None:
                break
        while not y:
            y = next(ys, None)  # type: ignore[arg-type]
            if y is None:
                break
        if x is None or y is None:
            return None if x is None and y is None else pos
        n = min(len(x), len(y))
        at = _first_unequal(x[:n], y[:n])
        if at is not None:
            return pos + at
        x, y, pos = x[n:], y[n:], pos + n


def _first_unequal(a: memoryview, b: memoryview) -> int | None:
    from formats.core.memcmp import same_bytes

    if same_bytes(a, b):  # the usual case, without the GIL; numpy only to find where they differ
        return None
    import numpy as np

    u = np.frombuffer(a, dtype=np.uint8)
    v = np.frombuffer(b, dtype=np.uint8)
    whole = len(u) // 8 * 8
    if np.array_equal(u[:whole].view(np.uint64), v[:whole].view(np.uint64)) and np.array_equal(u[whole:], v[whole:]):
        return None
    return int(np.flatnonzero(u != v)[0])


def digest_update(h: Any, element: bytes) -> None:
    """Feed one string/variant element to a digest: 8-byte little-endian length, then the bytes."""
    h.update(len(element).to_bytes(8, "little"))
    h.update(element)


def tensor_digest(source: Source, chunk: int = CHUNK) -> str:
    """sha256 of a value's canonical bytes (the corpus manifest's scheme), computed in bounded memory."""
    dt, _ = describe(source)
    import hashlib

    h = hashlib.sha256()
    if dt.fixed_width:
        for piece in fixed_chunks(source, chunk):
            h.update(piece)
    else:
        for element in elements(source):
            digest_update(h, element)
    return h.hexdigest()
