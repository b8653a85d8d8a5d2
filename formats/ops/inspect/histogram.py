"""The one streaming histogram of ckpt: fixed bins, counted a chunk at a time, merged exactly.

A tensor's values are read with :func:`~formats.core.values.iter_chunks` and converted to float64 with
:func:`~formats.core.values.as_float` (complex tensors by their magnitudes, as :mod:`.stats` does). Bins
are fixed before counting, so the counts of the chunks add up to exactly what ``numpy.histogram`` gives
for the whole tensor with the same edges (half-open bins, the last one closed):

- ``linear``: ``bins`` equal bins from the finite minimum to the finite maximum (a first pass, or the
  ``min``/``max`` that :func:`~formats.ops.inspect.stats.tensor_stats` already computed); a constant
  tensor gets numpy's ``[v - 0.5, v + 0.5]``. Integer and bool tensors get bins aligned on whole numbers
  (each bin holds the same count of integers, at most ``bins`` bins), and the small ones (bool, 2-, 4- and
  8-bit integers) take their range from the dtype, so they need no first pass.
- ``log``: ``bins`` equal bins of ``log10(|x|)`` over the finite non-zero values; zeros are counted in
  ``zeros`` only, and ``negative`` counts the values below zero (their magnitudes are in the bins).

NaN, +Inf and -Inf are counted apart and never binned. Memory is one chunk plus the bin counts.
"""
from __future__ import annotations

import math

from formats.core.model import TensorEntry
from formats.core.records import field, record
from formats.core.values import CHUNK_ELEMENTS, as_float, iter_chunks, value_kind

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

    import numpy as np

__all__ = ["LINEAR", "LOG", "SCALES", "DEFAULT_BINS", "Histogram", "ValueRange", "HistogramCounter",
           "dtype_range", "histogram_bins", "counter_for", "float_chunks", "value_range", "tensor_histograms", "tensor_histogram"]

LINEAR, LOG = "linear", "log"
SCALES = (LINEAR, LOG)
DEFAULT_BINS = 32

_EXACT = 2 ** 53  # float64 holds every integer below this

# Integer dtypes whose whole range is small enough to bin without a first pass.
_SMALL_INTS = {"bool": (0, 1), "int2": (-2, 1), "uint2": (0, 3), "int4": (-8, 7), "uint4": (0, 15),
               "int8": (-128, 127), "qint8": (-128, 127), "uint8": (0, 255), "quint8": (0, 255)}


@record
class Histogram:
    """Bin counts of one tensor: ``counts[i]`` values fell in ``[edges[i], edges[i+1])`` (the last bin closed).

    With ``scale == "log"`` the edges are in ``log10(|x|)``. ``size`` is every element seen, so
    ``size == sum(counts) + nan + posinf + neginf`` (plus ``zeros`` on the log scale)."""

    scale: str
    edges: list[float] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    size: int = 0
    nan: int = 0
    posinf: int = 0
    neginf: int = 0
    zeros: int = 0
    """Elements exactly zero (inside ``counts`` on the linear scale, outside them on the log scale)."""
    negative: int = 0
    """Finite elements below zero."""
    integral: bool = False
    """Bins aligned on whole numbers (integer and bool tensors on the linear scale)."""

    @property
    def binned(self) -> int:
        """Elements counted in the bins."""
        return sum(self.counts)

    def merge(self, other: Histogram) -> Histogram:
        """The histogram of both inputs (the same scale and edges, as :class:`HistogramCounter` makes)."""
        if (other.scale, other.edges) != (self.scale, self.edges):
            raise ValueError("histograms with different bins cannot be merged")
        return Histogram(self.scale, list(self.edges), [a + b for a, b in zip(self.counts, other.counts)],
                         self.size + other.size, self.nan + other.nan, self.posinf + other.posinf,
                         self.neginf + other.neginf, self.zeros + other.zeros, self.negative + other.negative,
                         self.integral)

    def to_json(self) -> dict[str, Any]:
        """``{"scale", "edges", "counts", "size", "nan", "posinf", "neginf", "zeros", "negative", "integral"}``."""
        return {"scale": self.scale, "edges": self.edges, "counts": self.counts, "size": self.size,
                "nan": self.nan, "posinf": self.posinf, "neginf": self.neginf, "zeros": self.zeros,
                "negative": self.negative, "integral": self.integral}


@record
class ValueRange:
    """What a first pass learns for choosing bins: finite min and max, and the smallest and largest
    non-zero magnitude (None when there is no such element)."""

    lo: float | None = None
    hi: float | None = None
    abs_lo: float | None = None
    abs_hi: float | None = None

    def add(self, x: np.ndarray) -> None:
        """Fold in a chunk of finite float64 values."""
        import numpy as np

        if not x.size:
            return
        lo, hi = float(x.min()), float(x.max())
        self.lo = lo if self.lo is None else min(self.lo, lo)
        self.hi = hi if self.hi is None else max(self.hi, hi)
        mags = np.abs(x)
        nonzero = mags != 0
        if nonzero.any():  # the smallest non-zero magnitude without a copy of the non-zero ones
            a, b = float(np.min(mags, where=nonzero, initial=np.inf)), float(mags.max())
            self.abs_lo = a if self.abs_lo is None else min(self.abs_lo, a)
            self.abs_hi = b if self.abs_hi is None else max(self.abs_hi, b)


def dtype_range(dtype: str) -> tuple[int, int] | None:
    """The whole range of a bool or small (at most 8-bit) integer dtype, else None."""
    return _SMALL_INTS.get(dtype.removesuffix("_ref"))


def histogram_bins(lo: float, hi: float, bins: int = DEFAULT_BINS, integral: bool = False,
                   ) -> tuple[int, float, float]:
    """``(count, first_edge, last_edge)`` of equal bins over ``[lo, hi]``, as ``numpy.histogram(x, count,
    range=(first_edge, last_edge))`` takes them. With ``integral`` the bins are aligned on whole numbers:
    each holds ``ceil((hi - lo + 1) / bins)`` integers, edges half-way between them (when float64 holds every
    integer of the range: beyond 2**53 integers get plain bins)."""
    if bins < 1:
        raise ValueError(f"bins must be at least 1, not {bins}")
    if integral and max(abs(lo), abs(hi)) < _EXACT:
        values = int(hi) - int(lo) + 1
        width = -(-values // bins)
        count = -(-values // width)
        first = int(lo) - 0.5
        return count, first, first + count * width
    if lo == hi:  # numpy's rule for a constant input
        return bins, lo - 0.5, hi + 0.5
    return bins, lo, hi


class HistogramCounter:
    """Counts chunks into fixed bins; :meth:`result` is the :class:`Histogram` so far."""

    def __init__(self, scale: str, bins: int, first: float, last: float, integral: bool = False) -> None:
        import numpy as np

        if scale not in SCALES:
            raise ValueError(f"unknown histogram scale {scale!r} (one of {', '.join(SCALES)})")
        self.scale, self.bins, self.range, self.integral = scale, bins, (first, last), integral
        self.counts = np.zeros(bins, dtype=np.int64)
        self.size = self.nan = self.posinf = self.neginf = self.zeros = self.negative = 0

    def add(self, x: np.ndarray) -> None:
        """Count one chunk of float64 values (:func:`~formats.core.values.as_float`; complex as magnitudes)."""
        import numpy as np

        self.size += x.size
        finite_mask = np.isfinite(x)
        if not finite_mask.all():
            self.nan += int(np.count_nonzero(np.isnan(x)))
            self.posinf += int(np.count_nonzero(x == np.inf))
            self.neginf += int(np.count_nonzero(x == -np.inf))
            x = x[finite_mask]
        zero = x == 0
        self.zeros += int(np.count_nonzero(zero))
        self.negative += int(np.count_nonzero(x < 0))
        if self.scale == LOG:
            x = np.abs(x[~zero])
            np.log10(x, out=x)  # in place: one chunk-sized temporary
            np.clip(x, *self.range, out=x)  # log10 of the range's ends bound every value; clip guards rounding
        self.counts += np.histogram(x, bins=self.bins, range=self.range)[0]

    def result(self) -> Histogram:
        """The counts so far as a :class:`Histogram` (edges exactly ``numpy.histogram_bin_edges``'s)."""
        import numpy as np

        edges = np.histogram_bin_edges(np.empty(0), bins=self.bins, range=self.range)
        return Histogram(self.scale, [float(e) for e in edges], [int(c) for c in self.counts], self.size,
                         self.nan, self.posinf, self.neginf, self.zeros, self.negative,
                         self.integral and self.scale == LINEAR)


def counter_for(scale: str, dtype: str, value_range: ValueRange | None, bins: int = DEFAULT_BINS,
                ) -> HistogramCounter | None:
    """A counter for a tensor of ``dtype`` with the bins of ``scale``: from the dtype's range for a small
    integer or bool tensor on the linear scale, else from ``value_range`` (None: not known yet). A tensor
    with nothing to bin (no finite, or for ``log`` no non-zero, element) gets a single bin over ``[-0.5,
    0.5]`` so its NaN/Inf/zero counts are still kept."""
    kind = value_kind(dtype)
    integral = kind in ("int", "bool")
    small = dtype_range(dtype)
    if scale == LINEAR and small is not None:
        return HistogramCounter(scale, *histogram_bins(*small, bins=bins, integral=True), integral=True)
    if value_range is None:
        return None
    if scale == LINEAR:
        lo, hi = value_range.lo, value_range.hi
    else:
        lo = None if value_range.abs_lo is None else math.log10(value_range.abs_lo)
        hi = None if value_range.abs_hi is None else math.log10(value_range.abs_hi)
        integral = False
    if lo is None or hi is None:
        return HistogramCounter(scale, 1, -0.5, 0.5)
    integral = integral and max(abs(lo), abs(hi)) < _EXACT
    return HistogramCounter(scale, *histogram_bins(float(lo), float(hi), bins, integral), integral=integral)


def float_chunks(entry: TensorEntry, chunk_elements: int = CHUNK_ELEMENTS) -> Iterable[np.ndarray]:
    """A numeric tensor's chunks as float64, complex ones as magnitudes (NaN where the value has a NaN)."""
    import numpy as np

    for chunk in iter_chunks(entry, chunk_elements):
        x = as_float(chunk)  # a copy: the chunk read is let go before the next is read
        del chunk
        if x.dtype.kind == "c":
            nan_mask = np.isnan(x)
            x = np.abs(x)
            x[nan_mask] = np.nan
        yield x
        del x  # (callers let go of theirs too: one chunk of float64 at a time, not two)


def value_range(entry: TensorEntry, chunk_elements: int = CHUNK_ELEMENTS) -> ValueRange:
    """The first pass: the :class:`ValueRange` of a numeric tensor's finite values."""
    import numpy as np

    found = ValueRange()
    for x in float_chunks(entry, chunk_elements):
        found.add(x if np.isfinite(x).all() else x[np.isfinite(x)])
        del x
    return found


def tensor_histograms(entry: TensorEntry, scales: Sequence[str] = (LINEAR,), bins: int = DEFAULT_BINS,
                      known: ValueRange | None = None, chunk_elements: int = CHUNK_ELEMENTS,
                      ) -> dict[str, Histogram] | None:
    """The histograms of one tensor on each of ``scales`` (None for a string, variant or unreadable tensor).

    ``known`` is the tensor's :class:`ValueRange` when a caller has it (:mod:`.stats` does); else a first
    pass finds it, unless every scale's bins come from the dtype. The counting pass reads the tensor once
    for all scales."""
    if entry.unreadable or value_kind(entry.dtype) in ("bytes", "other"):
        return None
    counters = {s: counter_for(s, entry.dtype, known, bins) for s in scales}
    if any(c is None for c in counters.values()):
        found = value_range(entry, chunk_elements)
        counters = {s: counter_for(s, entry.dtype, found, bins) for s in scales}
    ready = [c for c in counters.values() if c is not None]
    for x in float_chunks(entry, chunk_elements):
        for counter in ready:
            counter.add(x)
    return {s: c.result() for s, c in counters.items() if c is not None}


def tensor_histogram(entry: TensorEntry, scale: str = LINEAR, bins: int = DEFAULT_BINS,
                     known: ValueRange | None = None, chunk_elements: int = CHUNK_ELEMENTS) -> Histogram | None:
    """The :class:`Histogram` of one tensor on one scale (:func:`tensor_histograms`)."""
    found = tensor_histograms(entry, (scale,), bins, known, chunk_elements)
    return None if found is None else found[scale]
