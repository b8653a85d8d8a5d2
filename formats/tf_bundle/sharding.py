"""Spreading a bundle's data over several files, as TensorFlow's sharded saving leaves them.

:func:`assign_shards` gives each tensor, in the order written, the number of its data file
(``prefix.data-0000k-of-0000N``): consecutive runs of about equal bytes for a number of files, or
files of at most a size (a tensor larger than that is alone in its file). The bundle writer takes
the numbers (:func:`formats.tf_bundle.writer.write_checkpoint`'s ``shards``; the format's ``write``
takes them as ``options["shards"]``).
"""
from __future__ import annotations

from formats.core.dtypes import by_name
from formats.core.shapes import elements as shape_elements  # (math.prod, without math for the usual ranks)
from formats.core.sources import elements

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["assign_shards", "planned_size"]


def planned_size(value: Any, shape: Sequence[int], dtype: str) -> int:
    """Bytes a tensor takes in a data file (a string tensor's elements plus their lengths and checksum)."""
    dt = by_name(dtype)
    if dt.fixed_width:
        return shape_elements(shape) * dt.itemsize
    data = elements(value)
    return sum(len(x) + _varint_size(len(x)) for x in data) + 4


def _varint_size(n: int) -> int:
    return max(1, (n.bit_length() + 6) // 7)


def assign_shards(sizes: Sequence[int], count: int | None = None, max_size: int | None = None) -> list[int]:
    """The data file of each tensor of ``sizes`` (bytes, in the order written), never decreasing.

    ``count``: exactly that many files (at most one per tensor), cut where the running total passes
    each ``k/count`` of the bytes; ``max_size``: a new file whenever the next tensor would take the
    current one past ``max_size`` bytes.
    """
    if max_size is not None:
        return _by_size(sizes, max_size)
    count = min(count or 1, len(sizes)) or 1
    total = sum(sizes)
    out: list[int] = []
    shard, done = 0, 0
    for i, size in enumerate(sizes):
        left = len(sizes) - i  # tensors still to place, this one included
        if out and shard < count - 1 and (left <= count - 1 - shard or
                                          (done and done * count >= (shard + 1) * total)):
            shard += 1
        out.append(shard)
        done += size
    return out


def _by_size(sizes: Sequence[int], max_size: int) -> list[int]:
    out: list[int] = []
    shard, used = 0, 0
    for size in sizes:
        if out and used and used + size > max_size:
            shard, used = shard + 1, 0
        out.append(shard)
        used += size
    return out
