"""``diff`` of many small tensor pairs at once: which pairs hold the same bytes, found a span at a time.

:func:`same_small` reads the small tensors of a unit's pairs in spans, each side's CRC32C checked
(:func:`formats.io.spans.read_checked`), and compares each pair's bytes. A pair found the same is what
:func:`formats.ops.compare.diff.compare_entries` finds the same bytewise (one dtype, one shape, equal canonical
bytes, both checksums sound); every other pair - of different stored checksums or bytes, not small, not stored
as a plain range of a local file, with a damaged side - is left to the per-pair comparison, which gives today's
change (and its statistics) or error.
"""
from __future__ import annotations

from formats.io.spans import SPAN_BYTES, read_checked, small_range

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from formats.core.model import Checkpoint

__all__ = ["same_small"]


def same_small(ca: Checkpoint, cb: Checkpoint, pairs: Sequence[tuple[str, str, str]],
               budget: int = SPAN_BYTES) -> set[int]:
    """Positions of ``pairs`` (``(name, key in A, key in B)``) whose tensors are small, of one dtype and shape,
    and hold the same bytes with sound checksums; about ``budget`` bytes of each side are held at once."""
    same: set[int] = set()
    batch: list[int] = []
    ranges_a: list[tuple[int, int, int, int] | None] = []
    ranges_b: list[tuple[int, int, int, int] | None] = []
    total = 0
    for i, (_, key_a, key_b) in enumerate(pairs):
        ea, eb = ca[key_a], cb[key_b]
        if ea.dtype != eb.dtype or ea.shape != eb.shape or ea.nbytes != eb.nbytes:
            continue
        ra = small_range(ea)
        rb = small_range(eb) if ra is not None else None
        if ra is None or rb is None or ra[2:] != rb[2:]:  # another size or checksum: the bytes differ
            continue
        if batch and total + ra[2] > budget:
            same.update(_equal(batch, ranges_a, ranges_b, budget))
            batch, ranges_a, ranges_b, total = [], [], [], 0
        batch.append(i)
        ranges_a.append(ra)
        ranges_b.append(rb)
        total += ra[2]
    if batch:
        same.update(_equal(batch, ranges_a, ranges_b, budget))
    return same


def _equal(batch: list[int], ranges_a: list[tuple[int, int, int, int] | None],
           ranges_b: list[tuple[int, int, int, int] | None], budget: int) -> list[int]:
    """The positions of ``batch`` whose two ranges read back whole, checked, and equal."""
    pieces_a, pieces_b = read_checked(ranges_a, budget), read_checked(ranges_b, budget)
    return [i for i, x, y in zip(batch, pieces_a, pieces_b)
            if x is not None and y is not None and x.tobytes() == y.tobytes()]
