"""``stats``: per-tensor summary statistics, computed a chunk at a time.

For every numeric tensor: element count, min, max, mean, std (population), L2 norm, and the number
of zeros, NaNs and Infs. min/max/mean/std/L2 are over the finite elements only. Values are converted
to float64 chunk by chunk (bfloat16, float16 and float8 go through float32 first); complex tensors are
summarised by their magnitudes. Strings and variants get a count only. Bundle tensors are streamed
from the memory-mapped data file with their checksum checked (see :mod:`formats.core.values`).

With ``histograms`` (scales of :mod:`.histogram`) each numeric tensor also gets its histograms: bins from
the dtype are counted in the statistics pass, bins from the values' range in one more pass after it.
"""
from __future__ import annotations

import math

from formats.core.gc_pause import gc_paused
from formats.core.model import Checkpoint, TensorEntry
from formats.core.records import field, record
from formats.core.selection import selected_keys
from formats.ops.inspect.row_stats import small_stats_into
from formats.ops.inspect.stats_columns import StatsPart, StatsRows, TensorStats
from formats.ops.inspect.histogram import (DEFAULT_BINS, LOG, Histogram, HistogramCounter, ValueRange, counter_for,
                                           float_chunks)
from formats.core.values import CHUNK_ELEMENTS, as_float, iter_chunks, value_kind
from formats.discover.units import SourceRef, each_in_unit, opened
from formats.ops.units import run_units

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    import numpy as np

    from formats.core.executors import Executor

__all__ = ["TensorStats", "CheckpointStats", "tensor_stats", "checkpoint_stats", "stats_unit"]


@record
class CheckpointStats:
    """The statistics of the selected tensors of one checkpoint."""

    path: str
    format: str
    tensors: Sequence[TensorStats] = field(default_factory=list)
    """In key order: a list, or from :func:`checkpoint_stats` a
    :class:`~formats.ops.inspect.stats_columns.StatsRows` (columns, a ``TensorStats`` made as a row is read)."""

    @property
    def nonfinite(self) -> list[TensorStats]:
        """Tensors holding a NaN or an Inf."""
        quick = getattr(self.tensors, "nonfinite", None)
        if quick is not None:
            return quick()
        return [t for t in self.tensors if not t.finite]

    def to_json(self) -> dict[str, Any]:
        """``{"path", "format", "tensors": [...], "nonfinite": [keys]}``."""
        return {"path": self.path, "format": self.format, "tensors": [t.to_json() for t in self.tensors],
                "nonfinite": [t.key for t in self.nonfinite]}


class _Running:
    """Count, min, max, mean and M2 (Chan et al.'s parallel update), plus sum of squares, of finite values."""

    def __init__(self) -> None:
        self.n = 0
        self.mean = self.m2 = self.sq = 0.0
        self.lo, self.hi = math.inf, -math.inf

    def add(self, x: np.ndarray) -> None:
        """Fold in one chunk of finite float64 values."""
        if not x.size:
            return
        import numpy as np

        with np.errstate(over="ignore"):  # squares past float64's range are inf, as numpy's std and norm say
            n, mean = x.size, float(x.sum()) / x.size
            d = x - mean
            d *= d  # in place: one chunk-sized temporary, not three
            m2 = float(d.sum())  # numpy's pairwise sum, not BLAS: the same bits with any BLAS thread count
            sq = float(np.multiply(x, x, out=d).sum())
        delta, total = mean - self.mean, self.n + n
        # Chan et al.'s correction, none for the first chunk (not inf * 0: values whose square overflows
        # would make the std NaN; numpy's is inf, or 0 for equal values)
        self.m2 += m2 + (delta * delta * self.n * n / total if self.n else 0.0)
        self.mean += delta * n / total
        self.n = total
        self.sq += sq
        self.lo, self.hi = min(self.lo, float(x.min())), max(self.hi, float(x.max()))


def tensor_stats(entry: TensorEntry, chunk_elements: int = CHUNK_ELEMENTS, histograms: Sequence[str] = (),
                 bins: int = DEFAULT_BINS) -> TensorStats:
    """The :class:`TensorStats` of one tensor, reading it in chunks of ``chunk_elements``; with
    ``histograms`` (scales) also its :class:`~formats.ops.inspect.histogram.Histogram` on each, ``bins`` bins."""
    import numpy as np

    out = TensorStats(entry.key, entry.dtype, entry.shape, entry.size)
    if entry.unreadable or value_kind(entry.dtype) in ("bytes", "other"):
        out.histograms = {} if histograms else None
        return out
    early = {s: counter_for(s, entry.dtype, None, bins) for s in histograms}
    magnitudes = ValueRange() if any(c is None and s == LOG for s, c in early.items()) else None
    run, zeros, nan, inf = _Running(), 0, 0, 0
    exact: list[int] = []  # integer min/max kept exact (float64 cannot hold every int64)
    integral = value_kind(entry.dtype) in ("int", "bool")
    for chunk in iter_chunks(entry, chunk_elements):
        if integral and chunk.size:
            as_int = chunk.astype(np.int64) if chunk.dtype.kind in "bV" else chunk
            exact = [int(v) for v in (as_int.min(), as_int.max(), *exact)]
            exact = [min(exact), max(exact)]
            del as_int
        x = as_float(chunk)  # a copy: the chunk read is let go
        del chunk
        if x.dtype.kind == "c":
            nan_mask = np.isnan(x)
            x = np.abs(x)
            x[nan_mask] = np.nan
        _count(early, x)
        zeros += x.size - int(np.count_nonzero(x))  # NaN is non-zero
        finite = np.isfinite(x)
        if not finite.all():
            nans = int(np.isnan(x).sum())
            nan += nans
            inf += int(x.size - finite.sum()) - nans
            x = x[finite]
        run.add(x)
        if magnitudes is not None:
            magnitudes.add(x)
        del x, finite  # one chunk held at a time, and none through the histograms' pass
    out.zeros, out.nan, out.inf = zeros, nan, inf
    if run.n:
        out.min, out.max, out.mean = (exact[0], exact[1], run.mean) if exact else (run.lo, run.hi, run.mean)
        out.std, out.l2 = math.sqrt(max(run.m2, 0.0) / run.n), math.sqrt(run.sq)
    if histograms:
        out.histograms = _histograms(entry, early, out, magnitudes, bins, chunk_elements)
    return out


def _count(counters: dict[str, HistogramCounter | None], x: np.ndarray) -> None:
    for counter in counters.values():
        if counter is not None:
            counter.add(x)


def _histograms(entry: TensorEntry, early: dict[str, HistogramCounter | None], stats: TensorStats,
                magnitudes: ValueRange | None, bins: int, chunk_elements: int) -> dict[str, Histogram]:
    """Finish the histograms counted in the statistics pass; count the others, whose bins come from the
    range that pass found, in a second pass."""
    known = magnitudes or ValueRange()
    known.lo, known.hi = stats.min, stats.max
    late = {s: counter_for(s, entry.dtype, known, bins) for s, c in early.items() if c is None}
    if late:
        for x in float_chunks(entry, chunk_elements):
            _count(late, x)
            del x  # before the next chunk is made (see float_chunks)
    counters = {**early, **late}
    return {s: c.result() for s, c in counters.items() if c is not None}


@gc_paused  # a result per tensor, none in a cycle
def checkpoint_stats(ckpt: Checkpoint, patterns: Sequence[str] = (), chunk_elements: int = CHUNK_ELEMENTS,
                     progress: Callable[[int, int], None] | None = None, jobs: int | None = 1,
                     histograms: Sequence[str] = (), bins: int = DEFAULT_BINS,
                     executor: str | Executor | None = None) -> CheckpointStats:
    """Statistics of the tensors whose keys match ``patterns`` (keys or globs; all when empty), sorted by key.

    Tensors are read in units (:func:`stats_unit`) on ``jobs`` threads (None: every core) when the format
    allows concurrent reads, or on the workers of ``executor``; the result is the same whatever ``jobs`` and
    ``executor`` are. ``histograms`` and ``bins`` as :func:`tensor_stats`. Raises
    :class:`~formats.core.errors.NothingSelectedError` when a pattern matches no key."""
    keys = selected_keys(ckpt, patterns)
    sizes = zip(keys, ckpt.nbytes_of(keys))  # read once by run_units: no pair per tensor held
    return CheckpointStats(ckpt.path, ckpt.format,
                           run_units((ckpt,), stats_unit, sizes, progress, jobs, executor, chunk_elements,
                                     tuple(histograms), bins, joined=StatsRows))


def stats_unit(ref: SourceRef, keys: tuple[str, ...], chunk_elements: int = CHUNK_ELEMENTS,
               histograms: tuple[str, ...] = (), bins: int = DEFAULT_BINS) -> list[TensorStats] | StatsPart:
    """A unit of ``stats``: the :class:`TensorStats` of each of ``keys`` of the checkpoint ``ref`` names (with
    ``histograms`` of ``bins`` bins, as :func:`tensor_stats`). Without histograms, small tensors are read and
    summarised many at once (:func:`formats.ops.inspect.row_stats.small_stats_into`), to the same bits, and held
    as columns (a :class:`~formats.ops.inspect.stats_columns.StatsPart`)."""
    ckpt = opened(ref)
    if histograms:
        entries = ckpt.entries_of(keys)
        return list(each_in_unit(ckpt, lambda j: tensor_stats(entries[j], chunk_elements, histograms, bins),
                                 range(len(keys))))
    part = StatsPart(keys)  # small tensors a span at a time; the others (a NaN, an Inf, a bad checksum...) one by one
    small_stats_into(ckpt, keys, chunk_elements, part)
    rest = part.missing()
    entries = ckpt.entries_of([keys[i] for i in rest])
    for i, stats in zip(rest, each_in_unit(ckpt, lambda j: tensor_stats(entries[j], chunk_elements),
                                           range(len(rest)))):
        part.rest[i] = stats  # in the order of the keys (StatsRows.nonfinite)
    return part
