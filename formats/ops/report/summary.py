"""The summary report: what ``ckpt report`` draws for a checkpoint, a pair or a run of many tensors.

A full report holds every tensor's statistics and histograms and its page grows a few KB per tensor; past
:data:`FULL_PAGE_CELLS` (tensors times histogram bins times scales: 1,000 tensors at the default 48 bins) the
report is a :class:`SummaryReport` instead, whose page (:mod:`.summary_html`) is bounded whatever the count:

- every tensor scanned once (:func:`~formats.ops.report.scan.scan_keys`: NaN, Inf and zero counts, largest
  |x|, L2), for a pair the diff verb's pairing and statistics;
- the tensors grouped by pattern and by layer (:mod:`.digest`), counts exact;
- every tensor holding NaN or Inf (or unreadable; for a pair: whose NaN/Inf appeared), listed;
- full detail (statistics and histograms; for a pair the change and its heatmap) for at most
  :data:`DETAIL_LIMIT` tensors: the flagged ones first, then the largest (for a pair, the largest changes);
  without their role (slot, optimizer...) and TF1 name, which cost a pass over every key (1.2 s at 100,000);
- every key, packed for the page's search with its flags (:func:`~formats.ops.report.digest.pack_keys`).

A run's summary (:func:`run_summary`) is made from its trend as computed for the full page: the same groups,
the variables that held NaN or Inf (from which checkpoint), and in full the ones whose norm moved most.
"""
from __future__ import annotations

import math

from formats.core.records import field, record
from formats.ops.report.digest import Group, PackedKeys, group_rows, layer_depth, pack_keys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from typing import Any

    from formats.core.executors import Executor
    from formats.core.model import Checkpoint
    from formats.ops.report.model import PairReport, VariableReport

    Progress = Callable[[int, int], None]

__all__ = ["SummaryReport", "TensorRow", "checkpoint_summary", "diff_summary", "run_summary", "wants_summary", "FULL_PAGE_CELLS",
           "DETAIL_LIMIT", "KEY_BUDGET", "FLAGS"]

FULL_PAGE_CELLS = 48_000
"""A report is a summary when tensors x bins x histogram scales passes this (1,000 tensors at 48 bins)."""
DETAIL_LIMIT = 100
"""Tensors (pairs) drawn in full in a summary report."""
KEY_BUDGET = 5_000_000
"""Base64 characters of the packed keys in a summary page."""

FLAGS = {"checkpoint": (("NaN/Inf", 1), ("unreadable", 2), ("all-zero", 4), ("detailed", 8)),
         "diff": (("NaN/Inf", 1), ("only in A", 2), ("only in B", 4), ("detailed", 8), ("changed", 16)),
         "run": (("NaN/Inf", 1), ("detailed", 8))}
"""The bits of a key's flag in the search data, by report kind."""


def wants_summary(tensors: int, bins: int, scales: int = 1) -> bool:
    """Whether a report of ``tensors`` with ``bins`` bins on ``scales`` scales is a summary (see the module doc)."""
    return tensors * max(bins, 1) * max(scales, 1) > FULL_PAGE_CELLS


@record
class TensorRow:
    """A tensor listed by key: its dtype, shape, bytes, elements, NaN and Inf counts and why it is unreadable."""

    key: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int
    size: int
    nan: int = 0
    inf: int = 0
    unreadable: str | None = None
    since: int | None = None
    """In a run: the index of the first checkpoint holding NaN or Inf (``nan`` then counts NaN and Inf at the
    last checkpoint)."""

    def to_json(self) -> dict[str, Any]:
        """``{"key", "dtype", "shape", "nbytes", "size", "nan", "inf", "unreadable", "since"}``."""
        return {"key": self.key, "dtype": self.dtype, "shape": list(self.shape), "nbytes": self.nbytes,
                "size": self.size, "nan": self.nan, "inf": self.inf, "unreadable": self.unreadable,
                "since": self.since}


@record
class SummaryReport:
    """A checkpoint or a pair of many tensors (``kind``), summarised (see the module doc)."""

    kind: str
    paths: list[str]
    format: str
    tensors: int
    nbytes: int
    parameters: int
    patterns: list[Group]
    layers: list[Group]
    layer_depth: int
    flagged: list[TensorRow]
    """Every tensor holding NaN or Inf or unreadable (for a pair: whose B gained NaN or Inf), by key."""
    keys: PackedKeys
    details: list[VariableReport] = field(default_factory=list)
    pairs: list[PairReport] = field(default_factory=list)
    """For a pair: the largest changes, biggest first, at most :data:`DETAIL_LIMIT`."""
    changed: int = 0
    only_in_a: int = 0
    only_in_b: int = 0
    same: int = 0
    notes: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    run: Any = None
    """For a run: its :class:`~formats.ops.report.model.RunReport` (the checkpoints), whose ``trend.variables``
    are here only the :data:`DETAIL_LIMIT` whose norm changed most, biggest first."""

    def to_json(self) -> dict[str, Any]:
        """``{"summary": true, "paths", "format", "tensors", "nbytes", "parameters", "patterns", "layers",
        "layer_depth", "flagged", "details", "changed" (the largest changes), "counts", "keys_packed", "notes"}``."""
        return {"summary": True, "paths": self.paths, "format": self.format, "tensors": self.tensors,
                "nbytes": self.nbytes, "parameters": self.parameters,
                "patterns": [g.to_json() for g in self.patterns], "layers": [g.to_json() for g in self.layers],
                "layer_depth": self.layer_depth, "flagged": [r.to_json() for r in self.flagged],
                "details": [v.to_json() for v in self.details], "changed": [p.to_json() for p in self.pairs],
                "counts": {"changed": self.changed, "only_in_a": self.only_in_a, "only_in_b": self.only_in_b,
                           "same": self.same},
                "keys_packed": self.keys.packed, "notes": self.notes,
                "run": None if self.run is None else self.run.to_json()}


def _ordered_lines(keys: Sequence[str], flags: Sequence[int]) -> Iterator[tuple[int, str]]:
    """Flagged keys first (so that a page whose keys pass the budget still finds them), then the rest."""
    yield from ((f, k) for f, k in zip(flags, keys) if f)
    yield from ((0, k) for f, k in zip(flags, keys) if not f)


def checkpoint_summary(ckpt: Checkpoint, patterns: Sequence[str] = (), *, bins: int = 48,
                       scales: Sequence[str] = ("linear",), jobs: int | None = 1, progress: Progress | None = None,
                       executor: str | Executor | None = None, detail_limit: int = DETAIL_LIMIT,
                       key_budget: int = KEY_BUDGET) -> SummaryReport:
    """The :class:`SummaryReport` of the tensors of ``ckpt`` whose keys match ``patterns`` (all when empty)."""
    import numpy as np

    from formats.core.selection import selected_keys
    from formats.ops.inspect.stats import stats_unit
    from formats.ops.report.model import VariableReport
    from formats.ops.report.scan import scan_keys
    from formats.ops.units import run_units

    keys = selected_keys(ckpt, patterns)  # no tensor object per key: the columns say what the page needs
    cols, sizes = scan_keys(ckpt, keys, progress)
    nbytes = np.asarray(ckpt.nbytes_of(keys), np.int64)
    bad = cols.nonfinite | cols.unreadable
    flagged_at = np.flatnonzero(bad)
    chosen = list(flagged_at[:detail_limit])
    for i in np.argsort(-nbytes, kind="stable"):
        if len(chosen) >= detail_limit:
            break
        if not bad[i]:
            chosen.append(i)
    chosen.sort()
    flags = (cols.nonfinite * 1 + cols.unreadable * 2 + (cols.numeric & (cols.zeros == sizes)) * 4).astype(np.int64)
    flags[chosen] |= 8
    picked = ckpt.entries_of([keys[i] for i in chosen])
    stats = run_units((ckpt,), stats_unit, [(e.key, e.nbytes) for e in picked], None, jobs, executor, 1 << 20,
                      tuple(scales), bins)
    flagged = [TensorRow(keys[i], e.dtype, e.shape, int(nbytes[i]), int(sizes[i]), int(cols.nan[i]),
                         int(cols.inf[i]), e.unreadable)
               for i, e in zip(flagged_at.tolist(), ckpt.entries_of([keys[i] for i in flagged_at.tolist()]))]
    depth = layer_depth(keys)
    counted = np.where(cols.numeric, sizes, 0)
    return SummaryReport(
        "checkpoint", [ckpt.path], ckpt.format, len(keys), int(nbytes.sum()), int(counted.sum()),
        group_rows(keys, nbytes.tolist(), counted.tolist(), bad.tolist(), "pattern"),
        group_rows(keys, nbytes.tolist(), counted.tolist(), bad.tolist(), "layer", depth), depth, flagged,
        pack_keys(_ordered_lines(keys, flags.tolist()), len(keys), key_budget),
        details=[VariableReport(e.key, e.dtype, e.shape, e.nbytes, "", e.key, e.partitions, sorted(set(e.files)), s,
                                e.unreadable) for e, s in zip(picked, stats)],
        files=list(ckpt.files))


def diff_summary(ca: Checkpoint, cb: Checkpoint, patterns: Sequence[str] = (), *, jobs: int | None = 1,
                 progress: Progress | None = None, executor: str | Executor | None = None,
                 detail_limit: int = DETAIL_LIMIT, key_budget: int = KEY_BUDGET) -> SummaryReport:
    """The :class:`SummaryReport` of ``ca`` against ``cb``: the diff verb's pairing and statistics
    (:func:`~formats.ops.compare.diff.diff_checkpoints`), the :data:`DETAIL_LIMIT` largest changes with their
    heatmaps, the groups and search data over the keys of both."""
    from formats.core.selection import select_keys
    from formats.ops.compare.diff import diff_checkpoints
    from formats.ops.report.heatmap import drawable, heatmap_unit
    from formats.ops.report.model import PairReport
    from formats.ops.units import run_units

    found = diff_checkpoints(ca, cb, patterns=patterns, jobs=jobs, progress=progress, executor=executor)
    changes = found.by_size()
    top = changes[:detail_limit]
    drawn = [(c.a.key, c.b.key) for c in top if c.kind == "value" and drawable(ca[c.a.key], cb[c.b.key])]
    sizes = [(pair, ca[pair[0]].nbytes + cb[pair[1]].nbytes) for pair in drawn]
    maps = dict(zip(drawn, run_units((ca, cb), heatmap_unit, sizes, None, jobs, executor, 1 << 20,
                                     keys_of=lambda pair: pair)))
    pairs = [PairReport(c, maps.get((c.a.key, c.b.key)) if c.kind == "value" else None) for c in top]
    flag: dict[str, int] = {}
    for key in select_keys(ca, patterns)[0]:
        flag[key] = 0
    for key in select_keys(cb, patterns)[0]:
        flag[key] = 0
    for key in found.only_in_a:
        flag[key] = flag.get(key, 0) | 2
    for key in found.only_in_b:
        flag[key] = flag.get(key, 0) | 4
    appeared = []
    for n, c in enumerate(changes):
        bits = 16 | (8 if n < detail_limit else 0)
        if c.stats.get("nonfinite_appeared"):
            bits |= 1
            appeared.append(c)
        for key in {c.key, c.a.key, c.b.key}:
            flag[key] = flag.get(key, 0) | bits
    keys = sorted(flag)
    entries = [cb[k] if k in cb else ca[k] for k in keys]
    nbytes = [e.nbytes for e in entries]
    counts = [e.size for e in entries]
    bad = [bool(flag[k] & 1) for k in keys]
    depth = layer_depth(keys)
    flagged = [TensorRow(c.key, c.b.dtype, tuple(c.b.shape), cb[c.b.key].nbytes, cb[c.b.key].size, c.b.nan or 0,
                         c.b.inf or 0) for c in sorted(appeared, key=lambda c: c.key)]
    return SummaryReport(
        "diff", [ca.path, cb.path], ca.format if ca.format == cb.format else f"{ca.format} vs {cb.format}",
        len(keys), sum(nbytes), sum(counts), group_rows(keys, nbytes, counts, bad, "pattern"),
        group_rows(keys, nbytes, counts, bad, "layer", depth), depth, flagged,
        pack_keys(_ordered_lines(keys, [flag[k] for k in keys]), len(keys), key_budget), pairs=pairs,
        changed=len(changes), only_in_a=len(found.only_in_a), only_in_b=len(found.only_in_b), same=found.same,
        notes=list(found.notes))


def _norm_change(v: Any) -> float:
    """How much a variable's norm moved from its first to its last checkpoint, relative to the first (inf from
    zero to something, 0.0 when either is unknown)."""
    norms = [x for x in v.norm if x is not None]
    if len(norms) < 2:
        return 0.0
    first, last = norms[0], norms[-1]
    return abs(last - first) / abs(first) if first else (float("inf") if last else 0.0)


def run_summary(run: Any, detail_limit: int = DETAIL_LIMIT, key_budget: int = KEY_BUDGET) -> SummaryReport:
    """The :class:`SummaryReport` of a :class:`~formats.ops.report.model.RunReport` of many variables: groups
    over its variables (parameters and bytes at the last checkpoint), every variable that held NaN or Inf, the
    ``detail_limit`` whose norm changed most (first to last checkpoint) drawn in full."""
    from formats.core import dtypes
    from formats.core.records import replace

    trend = run.trend
    variables = trend.variables
    keys = [v.key for v in variables]
    sizes = [math.prod(v.shape) for v in variables]
    nbytes = [size * _itemsize(dtypes, v.dtype) for v, size in zip(variables, sizes)]
    bad = [v.nonfinite_from is not None for v in variables]
    top = sorted(range(len(variables)), key=lambda i: (-_norm_change(variables[i]), keys[i]))[:detail_limit]
    flags = [int(b) for b in bad]
    for i in top:
        flags[i] |= 8
    flagged = [TensorRow(v.key, v.dtype, tuple(v.shape), nb, size, next((n for n in reversed(v.nonfinite)
                                                                           if n is not None), 0) or 0,
                         since=v.nonfinite_from)
               for v, nb, size, b in zip(variables, nbytes, sizes, bad) if b]
    depth = layer_depth(keys)
    shown = replace(run, trend=replace(trend, variables=[variables[i] for i in top]))
    return SummaryReport(
        "run", [trend.path], f"{len(trend.checkpoints)} checkpoints", len(keys), sum(nbytes), sum(sizes),
        group_rows(keys, nbytes, sizes, bad, "pattern"), group_rows(keys, nbytes, sizes, bad, "layer", depth), depth,
        flagged, pack_keys(_ordered_lines(keys, flags), len(keys), key_budget), notes=list(trend.notes), run=shown)


def _itemsize(dtypes: Any, name: str) -> int:
    try:
        return int(dtypes.by_name(name.removesuffix("_ref")).itemsize)
    except ValueError:
        return 0
