"""Rows of a 2-D array's transpose, copied at several times the speed of numpy's own strided copy.

``np.copyto(out, a.T)`` walks ``a`` a column at a time, one element per step: every element read is a cache
miss on another row, and when a row is a multiple of 4 KiB long (a kernel of 1024 float32 columns) every
row falls on the same cache sets. Here the transpose is done in two passes, a block of columns at a time:

1. the block's columns are taken as groups of 16 bytes (4 float32, 8 bfloat16) and those groups are
   transposed as single elements (numpy's copy of a 16-byte element type) into a scratch buffer the size of
   the second-level cache: a quarter as many strided steps, each moving a quarter of a cache line;
2. the scratch, now ``(groups, rows, g)``, is viewed as ``(groups, g, rows)`` and copied into the output rows:
   ``g`` interleaved streams read from the cache.

Both passes are plain numpy copies (without the GIL), whatever the dtype's kind: only the item size matters,
so the bytes are exactly those of ``numpy.ascontiguousarray(a.T)``. The columns left over after the last whole
group are copied the plain way, and so is a block too small to gain (:data:`SMALL`).
"""
from __future__ import annotations

import math

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    import numpy as np

__all__ = ["transpose_rows", "moved_positions", "GROUP_BYTES", "SCRATCH_BYTES", "SMALL"]

GROUP_BYTES = 16
"""Bytes of a row moved as one element in the first pass (numpy copies 16-byte elements with one move)."""
SCRATCH_BYTES = 1 << 20
"""Bytes of the first pass's result held at a time (a core's second-level cache; measured best at 0.25-4 MiB)."""
SMALL = 1 << 14
"""Elements below which a block is copied the plain way (the two passes cost more than they save)."""


def transpose_rows(a: np.ndarray, start: int, stop: int, out: np.ndarray, scratch: np.ndarray | None = None) -> None:
    """Fill ``out`` (``(stop - start, rows)``, C-contiguous, ``a``'s item size) with rows ``start:stop`` of
    ``a.T``: ``out[k, r] = a[r, start + k]``, byte for byte. ``a`` is 2-D; ``scratch`` (uint8, at least
    :data:`SCRATCH_BYTES`) is reused for the first pass when given."""
    import numpy as np

    rows, size = a.shape[0], a.dtype.itemsize
    g = GROUP_BYTES // size if size and GROUP_BYTES % size == 0 else 0
    if g < 2 or rows * (stop - start) < SMALL or a.strides[1] != size:
        np.copyto(out, a[:, start:stop].T, casting="no")
        return
    bits = np.dtype(f"u{size}")  # the bytes as they are, whatever the kind (bfloat16, a NaN's payload)
    a, out = a.view(bits), out.view(bits)
    whole = start + (stop - start) // g * g  # the column after the last whole group
    _grouped(a, start, whole, out[:whole - start], g, scratch)
    if stop > whole:
        np.copyto(out[whole - start:], a[:, whole:stop].T)


def _grouped(a: np.ndarray, start: int, stop: int, out: np.ndarray, g: int, scratch: np.ndarray | None) -> None:
    """Columns ``start:stop`` (whole groups of ``g``) of ``a`` transposed into ``out``, in blocks of groups whose
    first pass fits the scratch."""
    import numpy as np

    rows = a.shape[0]
    groups = (stop - start) // g
    per = max(1, SCRATCH_BYTES // (rows * GROUP_BYTES))  # groups per block
    need = min(per, groups) * rows * GROUP_BYTES
    if scratch is None or scratch.nbytes < need:
        scratch = np.empty(need, dtype=np.uint8)
    wide = np.dtype(f"V{GROUP_BYTES}")
    packed = a[:, start:stop].view(wide)  # (rows, groups): each element one group of g columns
    for g0 in range(0, groups, per):
        n = min(per, groups - g0)
        block = scratch[:n * rows * GROUP_BYTES]
        np.copyto(block.view(wide).reshape(n, rows), packed[:, g0:g0 + n].T)  # pass 1: groups transposed
        values = block.view(a.dtype).reshape(n, rows, g)
        np.copyto(out[g0 * g:(g0 + n) * g].reshape(n, g, rows), values.transpose(0, 2, 1))  # pass 2


def moved_positions(shape: tuple[int, ...], steps: list[tuple[str, tuple[int, ...]]], index: tuple[np.ndarray, ...],
                    final: tuple[int, ...]) -> np.ndarray:
    """Where elements of an array of ``shape`` (at least 1-D; their multi-``index``, one array per axis) land, as flat C-order
    positions in the result of ``steps`` (``("axes", permutation)``: ``transpose(permutation)``; ``("reshape",
    shape)``) reshaped to ``final`` - worked out on the indices alone, never by moving values."""
    import numpy as np

    current = tuple(shape)
    for kind, arg in steps:
        if kind == "reshape":
            index = np.unravel_index(np.ravel_multi_index(index, current), arg)
            current = tuple(arg)
        else:
            index = tuple(index[a] for a in arg)
            current = tuple(current[a] for a in arg)
    if math.prod(current) != math.prod(final):
        raise ValueError(f"steps end at {list(current)}, not {list(final)}")
    return np.ravel_multi_index(index, current)
