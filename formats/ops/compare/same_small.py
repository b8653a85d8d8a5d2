"""``diff`` of many small tensor pairs at once, found a span at a time.

:func:`same_small` reads the small tensors of a unit's pairs in spans, each side's CRC32C (an npz member's
CRC-32) checked (:func:`formats.io.spans.read_checked`), and compares each pair's bytes. A pair found the same is what
:func:`formats.ops.compare.diff.compare_entries` finds the same bytewise (one dtype, one shape, equal canonical
bytes, both checksums sound). For a pair of real numbers whose bytes differ, all finite on both sides and read
in one chunk, it gives the sums ``compare_entries`` accumulates for its statistics, computed for every such
pair of one dtype and one element count with one numpy call chain: each a row reduction of a ``(k, n)`` array,
the very bits of the flat reduction the per-pair path makes (see :mod:`formats.ops.inspect.row_stats`). Every
other pair - not small, not stored as a plain range of a local file, with a damaged side, a NaN or an Inf,
complex - is left to the per-pair comparison, which gives today's change or error.
"""
from __future__ import annotations

from itertools import count

from formats.core import dtypes
from formats.io.spans import LOCATE_AT_ONCE, SPAN_BYTES, read_checked, small_ranges

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from typing import Any

    from formats.core.model import TensorEntry
    from formats.io.spans import Range
    PairSums = tuple[int, int, float, float, float, float, float, float]

__all__ = ["same_small", "pair_sums"]

_REAL = ("float", "int", "bool")


def same_small(side_a: Sequence[TensorEntry], side_b: Sequence[TensorEntry], chunk_elements: int = 1 << 20,
               budget: int = SPAN_BYTES) -> dict[int, PairSums | None]:
    """Positions of the pairs of ``side_a`` and ``side_b`` (the tensors of A and of B, in pairs) of small tensors
    of one dtype and shape with sound checksums: None where they hold the same bytes; where they differ (real
    numbers, every one finite, at most ``chunk_elements``), ``(size, elements that differ, max |a-b|, sum |a-b|,
    sum (a-b)^2, sum a^2, sum b^2, sum a*b)``. About ``budget`` bytes of each side are held at once."""
    found: dict[int, PairSums | None] = {}
    batch: list[tuple[int, str, int]] = []
    ranges_a: list[Range | None] = []
    ranges_b: list[Range | None] = []
    total = 0
    for i, ea, eb, ra, rb in _located(side_a, side_b):
        if ea.dtype != eb.dtype or ea.shape != eb.shape or ea.nbytes != eb.nbytes:
            continue
        if ra is None or rb is None or _size(ra) != _size(rb):
            continue
        if batch and total + ra[2] > budget:
            _compare(batch, ranges_a, ranges_b, budget, chunk_elements, found)
            batch, ranges_a, ranges_b, total = [], [], [], 0
        batch.append((i, ea.dtype, ea.size))
        ranges_a.append(ra)
        ranges_b.append(rb)
        total += ra[2]
    if batch:
        _compare(batch, ranges_a, ranges_b, budget, chunk_elements, found)
    return found


def _located(side_a: Sequence[TensorEntry], side_b: Sequence[TensorEntry]) -> Iterator[tuple[Any, ...]]:
    """``(position, a, b, a's small range, b's)`` of each pair, each side's ranges found :data:`LOCATE_AT_ONCE` at a
    time by its class (:func:`~formats.io.spans.small_ranges`: a bundle's from its index's columns, an npz's
    members with their CRC-32)."""
    for first in range(0, len(side_a), LOCATE_AT_ONCE):
        part_a, part_b = side_a[first:first + LOCATE_AT_ONCE], side_b[first:first + LOCATE_AT_ONCE]
        yield from zip(count(first), part_a, part_b, small_ranges(part_a), small_ranges(part_b))


def _size(where: Range) -> int:
    """The tensor's bytes in a small range (an npz member's: after its ``.npy`` header)."""
    return where[2] - (where[4] if len(where) == 5 else 0)


def _compare(batch: list[tuple[int, str, int]], ranges_a: list[Range | None], ranges_b: list[Range | None],
             budget: int, chunk_elements: int, found: dict[int, PairSums | None]) -> None:
    """Read both sides of ``batch`` (``(position, dtype, size)``); put the equal pairs, and the sums of the
    differing ones this path takes, in ``found``."""
    pieces_a, pieces_b = read_checked(ranges_a, budget), read_checked(ranges_b, budget)
    groups: dict[tuple[str, int], list[tuple[int, memoryview, memoryview]]] = {}
    kinds: dict[str, str] = {}
    for (i, dtype, n), x, y in zip(batch, pieces_a, pieces_b):
        if x is None or y is None:
            continue
        if x.tobytes() == y.tobytes():
            found[i] = None
            continue
        kind = kinds.get(dtype)
        if kind is None:
            from formats.core.values import value_kind  # only past the first differing pair (start-up)

            kind = kinds[dtype] = value_kind(dtype)
        if kind in _REAL and n <= chunk_elements:
            groups.setdefault((dtype, n), []).append((i, x, y))
    for (dtype, n), members in groups.items():
        np_dtype = dtypes.by_name(dtype).numpy()
        a = _rows(b"".join(x for _, x, _ in members), np_dtype, n)
        b = _rows(b"".join(y for _, _, y in members), np_dtype, n)
        for (i, _, _), sums in zip(members, pair_sums(a, b)):
            if sums is not None:
                found[i] = sums


def _rows(data: bytes, np_dtype: object, n: int) -> object:
    import numpy as np

    return np.frombuffer(data, dtype=np_dtype).reshape(-1, n)  # type: ignore[call-overload]


def pair_sums(a: object, b: object) -> list[PairSums | None]:
    """For each row of ``a`` and ``b`` (``(k, n)`` arrays of one real dtype, as stored), what the per-pair path of
    ``diff`` accumulates over one chunk (``_differ_mask`` bytewise, then ``_Accumulator.add``); None for a row
    with a NaN or an Inf on either side."""
    import numpy as np

    x, y = np.asarray(a), np.asarray(b)
    k, n = x.shape
    itemsize = x.dtype.itemsize
    differ = (x.view(np.uint8).reshape(k, n, itemsize) != y.view(np.uint8).reshape(k, n, itemsize)).any(axis=2)
    from formats.core.values import as_float

    fa, fb = as_float(x), as_float(y)
    finite = np.isfinite(fa).all(axis=1) & np.isfinite(fb).all(axis=1)
    with np.errstate(over="ignore", invalid="ignore"):
        d = np.abs(fa - fb)
        top = d.max(axis=1)
        sums = (d.sum(axis=1), (d * d).sum(axis=1), (fa * fa).sum(axis=1), (fb * fb).sum(axis=1),
                (fa * fb).sum(axis=1))
    top = np.where(top > 0.0, top, 0.0)  # max(0.0, d.max())
    rows = zip(differ.sum(axis=1).tolist(), top.tolist(), *(s.tolist() for s in sums))
    return [(n, count, big, *rest) if ok else None
            for ok, (count, big, *rest) in zip(finite.tolist(), rows)]
