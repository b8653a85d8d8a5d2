"""``|a - b|`` of two 2-D tensors down-sampled to a small grid, streamed a chunk at a time.

Cell ``(i, j)`` of an ``R x C`` grid over an ``m x n`` tensor covers rows ``[ceil(i*m/R), ceil((i+1)*m/R))``
and the same for columns; its value is the mean of the finite ``|a - b|`` over the elements it covers. The
chunks arrive in C order and need not align with rows: each is cut into a partial first row, whole rows and
a partial last row, and each piece is summed per cell with ``numpy.add.reduceat`` (memory: one chunk).

:func:`heatmap_unit` is the unit of work of ``ckpt report A B`` (:func:`formats.ops.units.run_units`): the
heatmaps of some pairs, read wherever the unit runs (a thread here or a Dask worker); only the grids travel back.
"""
from __future__ import annotations

from formats.core.values import CHUNK_ELEMENTS, as_float, iter_chunks, paired_chunks, value_kind
from formats.discover.units import SourceRef, each_in_unit, opened
from formats.ops.report.model import Heatmap

TYPE_CHECKING = False
if TYPE_CHECKING:
    import numpy as np

    from formats.core.model import TensorEntry

__all__ = ["MAX_CELLS", "heatmap", "heatmap_unit", "cell_starts", "drawable"]


def drawable(a: TensorEntry, b: TensorEntry) -> bool:
    """Whether a value change of ``a`` to ``b`` gets a heatmap: both numeric, readable, 2-D and not empty."""
    return len(a.shape) == 2 and bool(a.size) and _numeric(a) and _numeric(b)


def _numeric(entry: TensorEntry) -> bool:
    return not entry.unreadable and value_kind(entry.dtype) not in ("bytes", "other")

MAX_CELLS = 48
"""Cells along each side at most (a 48 x 48 grid: about 2 KB in the page)."""


def cell_starts(length: int, cells: int) -> np.ndarray:
    """The first index of each of ``cells`` cells over ``length`` elements (``ceil(i * length / cells)``)."""
    import numpy as np

    return (np.arange(cells, dtype=np.int64) * length + cells - 1) // cells


class _Grid:
    """Sums and counts of finite ``|a - b|`` per cell (``ok``: which elements are finite, or None when all are)."""

    def __init__(self, shape: tuple[int, int], rows: int, cols: int) -> None:
        import numpy as np

        self.m, self.n = shape
        self.rows, self.cols = rows, cols
        self.col_starts = cell_starts(self.n, cols)
        self.row_of = np.repeat(np.arange(rows), np.diff(np.append(cell_starts(self.m, rows), self.m)))
        self.sums = np.zeros((rows, cols))
        self.counts = np.zeros((rows, cols), dtype=np.int64)

    def add_row_piece(self, row: int, col: int, d: np.ndarray, ok: np.ndarray | None) -> None:
        """Elements ``[col, col + len(d))`` of row ``row``."""
        import numpy as np

        first = int(np.searchsorted(self.col_starts, col, side="right")) - 1
        last = int(np.searchsorted(self.col_starts, col + d.size, side="left"))
        starts = np.maximum(self.col_starts[first:last], col) - col
        i = self.row_of[row]
        self.sums[i, first:last] += np.add.reduceat(d, starts)
        self.counts[i, first:last] += np.diff(np.append(starts, d.size)) if ok is None else \
            np.add.reduceat(ok, starts, dtype=np.int64)

    def add_rows(self, row: int, d: np.ndarray, ok: np.ndarray | None) -> None:
        """Whole rows ``row, row + 1, ...`` (``d`` shaped ``(k, n)``)."""
        import numpy as np

        by_col = np.add.reduceat(d, self.col_starts, axis=1)
        if ok is None:  # every element finite: a cell's count is its width (no chunk-sized int64 copy of ok)
            widths = np.diff(np.append(self.col_starts, self.n))
            ok_col = np.broadcast_to(widths, (d.shape[0], widths.size))
        else:
            ok_col = np.add.reduceat(ok, self.col_starts, axis=1, dtype=np.int64)
        cells = self.row_of[row:row + d.shape[0]]
        breaks = np.flatnonzero(np.diff(cells)) + 1
        starts = np.concatenate(([0], breaks))
        self.sums[cells[starts]] += np.add.reduceat(by_col, starts, axis=0)
        self.counts[cells[starts]] += np.add.reduceat(ok_col, starts, axis=0)

    def result(self) -> Heatmap:
        """The grid as a :class:`Heatmap`."""
        cells = [None if c == 0 else float(s / c) for s, c in zip(self.sums.ravel(), self.counts.ravel())]
        return Heatmap((self.m, self.n), self.rows, self.cols, cells)


def heatmap(a: TensorEntry, b: TensorEntry, cells: int = MAX_CELLS, chunk_elements: int = CHUNK_ELEMENTS) -> Heatmap:
    """The down-sampled ``|a - b|`` of two numeric tensors of the same 2-D shape (see the module doc)."""
    import numpy as np

    m, n = a.shape
    grid = _Grid((m, n), max(1, min(m, cells)), max(1, min(n, cells)))
    pos = 0
    with np.errstate(invalid="ignore", over="ignore"):
        for x, y in paired_chunks(iter_chunks(a, chunk_elements), iter_chunks(b, chunk_elements)):
            if x.dtype.kind == "f" and y.dtype.kind == "f":  # widened to float64 as it goes: no float64 copies
                d = np.subtract(y, x, dtype=np.float64)
                np.abs(d, out=d)
            else:
                d = np.abs(as_float(y) - as_float(x))  # complex: the magnitude
            del x, y
            finite = np.isfinite(d)
            ok = None if finite.all() else finite
            if ok is not None:
                np.copyto(d, 0.0, where=~ok)
            _add_chunk(grid, pos, d, ok, n)
            pos += d.size
            del d, finite, ok  # before the next chunk's: one chunk of float64 at a time
    return grid.result()


def heatmap_unit(ref_a: SourceRef, ref_b: SourceRef, pairs: tuple[tuple[str, str], ...],
                 chunk_elements: int = CHUNK_ELEMENTS, cells: int = MAX_CELLS) -> list[Heatmap]:
    """A unit of ``ckpt report A B``: the :func:`heatmap` of each ``(key in A, key in B)`` of ``pairs`` (numeric
    tensors of one 2-D shape) of the checkpoints ``ref_a`` and ``ref_b`` name."""
    ca, cb = opened(ref_a), opened(ref_b)
    both = ca if cb.concurrent_reads else cb  # several pairs in flight only when both sides allow it
    return each_in_unit(both, lambda p: heatmap(ca[p[0]], cb[p[1]], cells, chunk_elements), pairs)


def _add_chunk(grid: _Grid, pos: int, d: np.ndarray, ok: np.ndarray | None, n: int) -> None:
    """Elements ``[pos, pos + len(d))`` in C order: a partial first row, whole rows, a partial last row."""
    def cut(part: slice) -> np.ndarray | None:
        return None if ok is None else ok[part]

    row, col = divmod(pos, n)
    start = 0
    if col:
        take = min(n - col, d.size)
        grid.add_row_piece(row, col, d[:take], cut(slice(0, take)))
        start, row = take, row + 1
    whole = (d.size - start) // n
    if whole:
        end = start + whole * n
        piece = cut(slice(start, end))
        grid.add_rows(row, d[start:end].reshape(whole, n), None if piece is None else piece.reshape(whole, n))
        start, row = end, row + whole
    if start < d.size:
        grid.add_row_piece(row, 0, d[start:], cut(slice(start, d.size)))
