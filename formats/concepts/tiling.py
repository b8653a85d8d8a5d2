"""Whether the slices a checkpoint declares for a partitioned tensor (in a V1 checkpoint or a bundle) tile
its shape exactly: every slice inside the shape, no two overlapping, no element left out. Pure arithmetic
on the extents: nothing is allocated in proportion to the shape, and the work is bounded by the number
of slices."""
from __future__ import annotations

import math
from itertools import pairwise

from formats.concepts.slice_key import Extent

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["Box", "SliceError", "slice_box", "volume", "tiling_problem", "format_extents", "MAX_SLICES"]

Box = tuple[tuple[int, int], ...]
"""A slice as (start, stop) per dimension."""

MAX_SLICES = 1 << 16
"""More slices than this for one tensor are refused (TensorFlow partitions into at most a few hundred)."""
MAX_GRID_CELLS = 1 << 22
MAX_PAIRWISE = 1 << 12


def format_extents(extents: Sequence[Extent]) -> str:
    """``[(0, 4), (0, -1)]`` -> ``[0:4, :]`` (Python slice notation; ``:`` for a whole dimension)."""
    return "[" + ", ".join(":" if n < 0 else f"{s}:{s + n}" for s, n in extents) + "]"


class SliceError(ValueError):
    """A slice that does not fit the shape it is a slice of."""


def slice_box(shape: tuple[int, ...], extents: Sequence[Extent]) -> Box:
    """The (start, stop) per dimension of a slice of ``shape``; SliceError when it does not fit it."""
    if len(extents) != len(shape):
        raise SliceError(f"slice {format_extents(extents)} has rank {len(extents)}, the tensor rank {len(shape)}")
    box = []
    for (start, length), dim in zip(extents, shape):
        if length < 0:
            if start != 0 or length != -1:
                raise SliceError(f"slice {format_extents(extents)} has an extent without a length that does "
                                 "not start at 0")
            box.append((0, dim))
        elif start < 0 or start + length > dim:
            raise SliceError(f"slice {format_extents(extents)} lies outside shape {list(shape)}")
        else:
            box.append((start, start + length))
    return tuple(box)


def volume(box: Box) -> int:
    """The number of elements in a box."""
    return math.prod(stop - start for start, stop in box)


def tiling_problem(shape: tuple[int, ...], slices: Sequence[Sequence[Extent]]) -> str | None:
    """Why ``slices`` do not tile ``shape`` exactly (outside it, overlapping, leaving a gap), or None."""
    if not slices:
        return "no slice of it is stored"
    if len(slices) > MAX_SLICES:
        return f"{len(slices)} slices, more than the {MAX_SLICES} ckpt reads for one tensor"
    try:
        boxes = [slice_box(shape, extents) for extents in slices]
    except SliceError as exc:
        return str(exc)
    overlap = _first_overlap(boxes)
    if isinstance(overlap, str):
        return overlap
    if overlap is not None:
        a, b = overlap
        return f"slices {_box_text(boxes[a])} and {_box_text(boxes[b])} overlap"
    covered, total = sum(volume(b) for b in boxes), math.prod(shape)
    if covered != total:
        return f"slices cover {covered} of its {total} elements (a gap)"
    return None


def _box_text(box: Box) -> str:
    return "[" + ", ".join(f"{start}:{stop}" for start, stop in box) + "]"


def _first_overlap(boxes: list[Box]) -> tuple[int, int] | str | None:
    """Indices of two boxes sharing an element, None when no two do, or why it cannot be told.

    Slices disjoint along one axis (how TensorFlow partitions) are checked in one sorted pass; a grid
    of slices by painting the grid of their boundaries; anything else pairwise, up to a bound."""
    if not boxes[0]:  # scalars: any two slices overlap
        return (0, 1) if len(boxes) > 1 else None
    live = [i for i, b in enumerate(boxes) if volume(b) > 0]
    for axis in range(len(boxes[0])):
        order = sorted(live, key=lambda i: boxes[i][axis])
        if all(boxes[a][axis][1] <= boxes[b][axis][0] for a, b in pairwise(order)):
            return None
    found = _grid_overlap(boxes, live)
    if found != "too big":
        return found
    if len(live) > MAX_PAIRWISE:
        return f"{len(live)} irregular slices, more than the {MAX_PAIRWISE} ckpt compares pairwise"
    return _pairwise_overlap(boxes, live)


def _grid_overlap(boxes: list[Box], live: list[int]) -> tuple[int, int] | str | None:
    """Paint each box onto the grid cut by every box boundary; a cell painted twice is an overlap."""
    import numpy as np

    cuts = [sorted({edge for i in live for edge in boxes[i][axis]}) for axis in range(len(boxes[0]))]
    if math.prod(len(c) - 1 for c in cuts) > MAX_GRID_CELLS:
        return "too big"
    owner = np.full([len(c) - 1 for c in cuts], -1, dtype=np.int32)
    where = [{edge: n for n, edge in enumerate(c)} for c in cuts]
    for i in live:
        cells = tuple(slice(where[a][start], where[a][stop]) for a, (start, stop) in enumerate(boxes[i]))
        painted = owner[cells]
        taken = painted[painted >= 0]
        if taken.size:
            return int(taken[0]), i
        owner[cells] = i
    return None


def _pairwise_overlap(boxes: list[Box], live: list[int]) -> tuple[int, int] | None:
    import numpy as np

    arr = np.array([boxes[i] for i in live], dtype=np.int64)  # every stop is <= a dimension < 2**63
    starts, stops = arr[:, :, 0], arr[:, :, 1]
    for i in range(1, len(live)):
        hits = ((starts[:i] < stops[i]) & (starts[i] < stops[:i])).all(axis=1)
        if hits.any():
            return live[int(np.flatnonzero(hits)[0])], live[i]
    return None
