"""``trend``: how a run's variables evolve over its checkpoints.

For a directory holding the checkpoints of one run (a ``CheckpointManager`` directory, an Estimator
``model_dir``), ordered by step: per numeric variable, its L2 norm at each checkpoint (over finite
elements) and the L2 norm of its change since the previous checkpoint (``||x_t - x_{t-1}||``; ``None``
for the first checkpoint, where the variable is absent, or where its shape changed), and its mean, std,
min and max (over finite elements, as :mod:`.stats` computes them). Values stream in
chunks; at most two checkpoints are open at a time. Unreadable checkpoints are skipped with a note.

Each checkpoint's tensors are read in units (:func:`~formats.ops.units.run_units`: ``stats_unit`` for the
statistics, :func:`change_unit` for the changes against the previous checkpoint) on ``jobs`` threads or the
workers of an ``executor``; sums are numpy's pairwise ones (never BLAS), so the trend is the same bits wherever
its units ran.
"""
from __future__ import annotations

import math
import os
import re

from formats.core.errors import CheckpointError, CheckpointNotFoundError, NotACheckpointError
from formats.core.executors import Executor, executor_for
from formats.core.model import Checkpoint, TensorEntry
from formats.core.records import field, record
from formats.core.selection import nothing_selected, select_keys
from formats.core.values import as_float, iter_chunks, paired_chunks, value_kind
from formats.discover.units import SourceRef, each_in_unit, opened
from formats.ops.inspect.stats import stats_unit
from formats.ops.units import run_units

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["VariableTrend", "TrendResult", "run_trend", "change_norm", "change_unit"]

_SERIES = ("norm", "change", "nonfinite", "mean", "std", "min", "max")
"""A :class:`VariableTrend`'s lists, one value per checkpoint, in field order."""


@record
class VariableTrend:
    """One variable across the run: ``norm[i]`` and ``change[i]`` belong to checkpoint ``i``."""

    key: str
    shape: tuple[int, ...]
    dtype: str
    norm: list[float | None] = field(default_factory=list)
    change: list[float | None] = field(default_factory=list)
    nonfinite: list[int | None] = field(default_factory=list)
    """NaN and Inf elements at each checkpoint (None where the variable is absent)."""
    mean: list[float | None] = field(default_factory=list)
    std: list[float | None] = field(default_factory=list)
    min: list[float | int | None] = field(default_factory=list)
    max: list[float | int | None] = field(default_factory=list)

    @property
    def nonfinite_from(self) -> int | None:
        """Index of the first checkpoint where the variable holds a NaN or an Inf, else None."""
        return next((i for i, n in enumerate(self.nonfinite) if n), None)

    def to_json(self) -> dict[str, Any]:
        """``{"key", "shape", "dtype", "norm", "change", "nonfinite", "nonfinite_from", "mean", "std", "min",
        "max"}`` (shape and dtype of the last checkpoint; ``nonfinite_from`` the index of the first checkpoint
        holding NaN or Inf, or null)."""
        return {"key": self.key, "shape": list(self.shape), "dtype": self.dtype, "norm": self.norm,
                "change": self.change, "nonfinite": self.nonfinite, "nonfinite_from": self.nonfinite_from,
                "mean": self.mean, "std": self.std, "min": self.min, "max": self.max}


@record
class TrendResult:
    """The checkpoints of the run (oldest first) and every variable's trend. ``steps`` are the numbers in the
    checkpoints' names (``ckpt-5`` -> 5: the save number; the run is ordered by them), ``own_steps`` the values
    of their own step variables (:func:`formats.concepts.step.own_step`; None for one without)."""

    path: str
    checkpoints: list[str] = field(default_factory=list)
    steps: list[int | None] = field(default_factory=list)
    variables: list[VariableTrend] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    mtimes: list[float] = field(default_factory=list)
    """Each checkpoint's modification time (seconds since the epoch; 0.0 when unknown)."""
    own_steps: list[int | None] = field(default_factory=list)

    def when(self, index: int) -> str:
        """Checkpoint ``index`` as the run's text names it: ``step 50`` (its own step), else ``save 5`` (the
        number in its name), else ``checkpoint 3`` (its place in the run, from 1)."""
        own, save = self.own_steps[index], self.steps[index]
        return f"step {own}" if own is not None else f"save {save}" if save is not None else f"checkpoint {index + 1}"

    def axis(self) -> tuple[list[int], str]:
        """The x values of the run's plots and their name: the checkpoints' own steps when every one has its
        own and they are distinct, else the numbers in their names (``save``) when so, else 0, 1, 2...
        (``checkpoint``)."""
        for values, label in ((self.own_steps, "step"), (self.steps, "save")):
            if all(v is not None for v in values) and len(set(values)) == len(values) == len(self.checkpoints):
                return [int(v) for v in values if v is not None], label
        return list(range(len(self.checkpoints))), "checkpoint"

    @property
    def diverged(self) -> list[VariableTrend]:
        """The variables that hold a NaN or an Inf at some checkpoint."""
        return [v for v in self.variables if v.nonfinite_from is not None]

    def to_json(self) -> dict[str, Any]:
        """``{"path", "checkpoints": [{"path", "step", "own_step"}], "variables": [...], "diverged": [keys],
        "notes"}``: ``step`` the number in the name (the save number), ``own_step`` the checkpoint's own step."""
        return {"path": self.path,
                "checkpoints": [{"path": p, "step": s, "own_step": o}
                                for p, s, o in zip(self.checkpoints, self.steps, self.own_steps)],
                "variables": [v.to_json() for v in self.variables], "diverged": [v.key for v in self.diverged],
                "notes": self.notes}


def change_norm(a: TensorEntry, b: TensorEntry) -> float:
    """``||b - a||`` (L2, float64) of two tensors of the same shape, streamed in chunks. The squares are summed
    by numpy's pairwise summation, not BLAS (whose ``d @ d`` depends on its thread count): the same bits in a
    Dask worker as here."""
    import numpy as np

    total = 0.0
    with np.errstate(invalid="ignore", over="ignore"):  # NaN/Inf give a non-finite norm, reported as None
        for x, y in paired_chunks(iter_chunks(a), iter_chunks(b)):
            d = as_float(y) - as_float(x)
            total += float((d.conj() * d).real.sum()) if d.dtype.kind == "c" else float((d * d).sum())
    return math.sqrt(total)


def change_unit(ref_a: SourceRef, ref_b: SourceRef, keys: tuple[str, ...]) -> list[float]:
    """A unit of a trend: :func:`change_norm` of each of ``keys`` from the checkpoint ``ref_a`` names to the one
    ``ref_b`` names."""
    ca, cb = opened(ref_a), opened(ref_b)
    return each_in_unit(ca if cb.concurrent_reads else cb, lambda key: change_norm(ca[key], cb[key]), keys)


def _numeric(entry: TensorEntry) -> bool:
    return value_kind(entry.dtype) not in ("bytes", "other")


def _finite(x: float | None) -> float | None:
    return x if x is None or math.isfinite(x) else None


def run_trend(directory: str | os.PathLike[str], patterns: Sequence[str] = (), *, jobs: int | None = 1,
              executor: str | Executor | None = None) -> TrendResult:
    """The :class:`TrendResult` of the checkpoints in ``directory`` (variables selected by key ``patterns``,
    exact or globs; :class:`~formats.core.errors.NothingSelectedError` when one matches no key in any
    checkpoint). Tensors are read in units on ``jobs`` threads (None: every core) or on the workers of
    ``executor`` (None: ``$CKPT_EXECUTOR``, else local threads); the result is the same wherever they ran."""
    chosen = executor_for(executor, jobs)
    try:
        return _trend(directory, patterns, jobs, chosen)
    finally:
        if chosen is not executor:
            chosen.close()


def _trend(directory: str | os.PathLike[str], patterns: Sequence[str], jobs: int | None,
           executor: Executor) -> TrendResult:
    from formats.core.nearest import key_spellings
    from formats.discover.resolve import open_checkpoint
    from formats.discover.scan import scan_directory
    from formats.io import storage

    directory = os.fspath(directory)
    if not (storage.isdir(directory) if storage.is_url(directory) else os.path.isdir(directory)):
        raise CheckpointNotFoundError(directory, "not a directory (trend needs a run's checkpoint directory)")
    result = TrendResult(directory)
    infos = _one_run(scan_directory(directory), result)
    trends: dict[str, VariableTrend] = {}
    previous: Checkpoint | None = None
    unmatched = set(patterns)
    among: dict[str, tuple[str, ...]] = {}
    try:
        for info in infos:
            if info.error:
                result.notes.append(f"skipped {info.path}: {info.error}")
                continue
            try:
                ckpt = open_checkpoint(info.path)
            except CheckpointError as exc:
                result.notes.append(f"skipped {info.path}: {exc.message}")
                continue
            unmatched &= set(_add(result, trends, previous, ckpt, info.step, patterns, jobs, executor))
            if unmatched:  # the keys a pattern matching nothing may have meant
                among.update(key_spellings(ckpt))
            result.mtimes.append(info.mtime)
            result.own_steps.append(info.own_step)
            if previous is not None:
                previous.close()
            previous = ckpt
    finally:
        if previous is not None:
            previous.close()
    if unmatched and result.checkpoints:
        raise nothing_selected(directory, [p for p in dict.fromkeys(patterns) if p in unmatched], among=among)
    result.variables = [trends[k] for k in sorted(trends)]
    return result


def _stem(path: str) -> str:
    """The run a checkpoint belongs to: its file name with every number masked (``ckpt-10`` -> ``ckpt-#``,
    ``weights.05-0.23.h5`` -> ``weights.#-#.#.h#``)."""
    return re.sub(r"\d+", "#", os.path.basename(path))


def _one_run(infos: list[Any], result: TrendResult) -> list[Any]:
    """The checkpoints of one run, oldest first: the run of the latest checkpoint (the state file's), else the
    largest; files of other runs or formats are left out with a note. No checkpoint at all is an error."""
    if not infos:
        raise NotACheckpointError(result.path, "no checkpoint in this directory (trend needs a run's checkpoints)")
    runs: dict[str, list[Any]] = {}
    for info in infos:
        runs.setdefault(_stem(info.path), []).append(info)
    latest = [run for run, members in runs.items() if any(i.latest for i in members)]
    chosen = latest[0] if latest else max(runs, key=lambda r: (len(runs[r]), r))
    for run, members in sorted(runs.items()):
        if run != chosen:
            result.notes += [f"left out {os.path.basename(i.path)}: not a checkpoint of this run" for i in members]
    return sorted(runs[chosen], key=lambda i: (i.step is None, i.step or 0, i.path))


def _add(result: TrendResult, trends: dict[str, VariableTrend], previous: Checkpoint | None, ckpt: Checkpoint,
         step: int | None, patterns: Sequence[str], jobs: int | None, executor: Executor) -> list[str]:
    """Append ``ckpt``'s norms and changes; return the patterns that matched none of its keys."""
    index = len(result.checkpoints)
    result.checkpoints.append(ckpt.path)
    result.steps.append(step)
    keys, unmatched = select_keys(sorted(ckpt), patterns)
    numeric = [key for key in keys if _numeric(ckpt[key])]
    found = run_units((ckpt,), stats_unit, [(key, ckpt[key].nbytes) for key in numeric], None, jobs, executor)
    changes = _changes(previous, ckpt, numeric, jobs, executor)
    for key, stats in zip(numeric, found):
        entry = ckpt[key]
        empty: list[list[Any]] = [[None] * index for _ in _SERIES]
        trend = trends.setdefault(key, VariableTrend(key, entry.shape, entry.dtype, *empty))
        trend.norm.append(_finite(stats.l2))
        trend.nonfinite.append((stats.nan or 0) + (stats.inf or 0))
        trend.mean.append(_finite(stats.mean))
        trend.std.append(_finite(stats.std))
        trend.min.append(stats.min)
        trend.max.append(stats.max)
        trend.change.append(_finite(changes[key]) if key in changes else None)
        trend.shape, trend.dtype = entry.shape, entry.dtype
    for trend in trends.values():
        if len(trend.norm) <= index:
            for series in _SERIES:
                getattr(trend, series).append(None)
    return unmatched


def _changes(previous: Checkpoint | None, ckpt: Checkpoint, keys: list[str], jobs: int | None,
             executor: Executor) -> dict[str, float]:
    """key -> :func:`change_norm` since ``previous`` of each of ``keys`` it holds, numeric and of the same shape."""
    if previous is None:
        return {}
    olds = [(key, previous.get(key)) for key in keys]
    same = [key for key, old in olds if old is not None and old.shape == ckpt[key].shape and _numeric(old)]
    sizes = [(key, previous[key].nbytes + ckpt[key].nbytes) for key in same]
    return dict(zip(same, run_units((previous, ckpt), change_unit, sizes, None, jobs, executor)))

