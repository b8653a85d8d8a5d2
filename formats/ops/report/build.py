"""Computing a report: one checkpoint, two, or a run directory, streamed a chunk at a time.

- one checkpoint: its object tree (:func:`~formats.ops.inspect.tree.build_tree`; optimizer state in a tree of
  its own) and, per tensor, :func:`~formats.ops.inspect.stats.tensor_stats` with its histogram
  (:mod:`formats.ops.inspect.histogram`: bins fixed from the statistics pass, counted in a second pass; on
  request also the histogram of log10 |x|);
- two checkpoints: :func:`~formats.ops.compare.diff.diff_checkpoints` (the diff verb's pairing and
  statistics), and for each changed 2-D pair a down-sampled heatmap of ``|a - b|`` (:mod:`.heatmap`);
- a run directory: :func:`~formats.ops.inspect.trend.run_trend` (every variable's norm at each step and the
  norm of its change since the previous one).

The tensors are read in units (:func:`~formats.ops.units.run_units`: ``stats_unit``, ``diff_unit``,
:func:`~formats.ops.report.heatmap.heatmap_unit`, a run's ``change_unit``) on ``jobs`` threads when the format allows concurrent reads,
or on the workers of an ``executor`` (a Dask cluster), which read the checkpoints from their URLs; only the
statistics, changes and heatmaps travel back, and what a tensor is (dtype, shape, role, files) comes from the
checkpoint opened here, so the report is the same wherever its units ran. Each tensor streams in chunks of
``chunk_elements``, so memory stays bounded by ``jobs`` chunks.
"""
from __future__ import annotations

import os

from formats.core.errors import UsageError
from formats.core.executors import Executor, executor_for
from formats.core.gc_pause import gc_paused
from formats.core.model import OPTIMIZER_ROLES, Checkpoint, TensorEntry
from formats.core.selection import select
from formats.core.values import CHUNK_ELEMENTS
from formats.ops.inspect.histogram import LINEAR
from formats.ops.inspect.stats import TensorStats, stats_unit, tensor_stats
from formats.ops.inspect.tree import TreeNode, build_tree
from formats.ops.report.model import KINDS, CheckpointReport, DiffReport, PairReport, RunReport, VariableReport
from formats.ops.report.result import Report
from formats.ops.report.summary import FULL_PAGE_CELLS
from formats.ops.units import run_units

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from formats.ops.inspect.tree import CheckpointTree

    Progress = Callable[[int, int], None]

__all__ = ["PAGES", "DEFAULT_BINS", "build_report", "checkpoint_report", "diff_report", "run_report", "report_kind",
           "variable_report"]

PAGES = ("auto", "full", "summary")
"""What page a report draws: ``full``, ``summary`` or ``auto`` (:func:`_summary`)."""

DEFAULT_BINS = 48
"""Histogram bins per tensor and scale (the page holds about 1 KB per tensor for them)."""


def report_kind(paths: Sequence[str]) -> str:
    """What ``paths`` ask for: ``diff`` for two, ``run`` for one directory holding several checkpoints (not
    itself one, as a SavedModel is), else ``checkpoint``."""
    if len(paths) == 2:
        return "diff"
    if len(paths) != 1:
        raise UsageError("", f"a report is of one checkpoint, a pair or a run directory, not {len(paths)} paths")
    from formats.discover.resolve import claim_directory, find_checkpoints
    from formats.io import storage

    path = os.fspath(paths[0])
    is_dir = storage.isdir(path) if storage.is_url(path) else os.path.isdir(path)
    if not is_dir or claim_directory(path) is not None:
        return "checkpoint"
    return "run" if len(find_checkpoints(path)) > 1 else "checkpoint"


@gc_paused  # a summary per tensor, none in a cycle
def build_report(paths: Sequence[str | os.PathLike[str] | Checkpoint], *, kind: str | None = None,
                 bins: int = DEFAULT_BINS, scales: Sequence[str] = (LINEAR,), patterns: Sequence[str] = (),
                 jobs: int | None = 1, progress: Progress | None = None,
                 executor: str | Executor | None = None, page: str = "auto") -> Report:
    """The :class:`~formats.ops.report.result.Report` of ``paths`` (``kind`` as :func:`report_kind` finds it when
    None; checkpoints given opened are left open, paths are opened and closed here). ``bins`` and ``scales``:
    each tensor's histograms (:func:`variable_report`). ``executor``: where the units run (``"local"``,
    ``"dask://HOST:PORT"``, an :class:`~formats.core.executors.Executor`; None: ``$CKPT_EXECUTOR``, else local
    threads); one connection serves the whole report. ``page``: ``full``, ``summary`` or ``auto``
    (:func:`~formats.ops.report.summary.wants_summary`; a run's variables count as tensors of 48 bins)."""
    names = [p.path if isinstance(p, Checkpoint) else os.fspath(p) for p in paths]
    kind = kind or report_kind(names)
    if kind not in KINDS:
        raise UsageError("", f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    if page not in PAGES:
        raise UsageError("", f"page must be one of {', '.join(PAGES)}, not {page!r}")
    if bins < 1:
        raise UsageError("", f"bins must be 1 or more, not {bins}")
    wanted = {"checkpoint": 1, "diff": 2, "run": 1}[kind]
    if len(paths) != wanted:
        raise UsageError("", f"a {kind} report takes {wanted} path{'s' if wanted > 1 else ''}, not {len(paths)}")
    report = Report(kind, names, bins=bins)
    chosen = executor_for(executor, jobs)
    opened: list[Checkpoint] = []
    try:
        if kind == "run":
            report.run = run_report(names[0], patterns, jobs=jobs, executor=chosen)
            if page == "summary" or page == "auto" and len(report.run.trend.variables) * DEFAULT_BINS > \
                    FULL_PAGE_CELLS:
                from formats.ops.report.summary import run_summary

                report.summary = run_summary(report.run)
            return report
        opened += [_open(p) for p in paths]
        if _summary(page, opened, patterns, bins, scales):
            from formats.ops.report.summary import checkpoint_summary, diff_summary

            if kind == "diff":
                report.summary = diff_summary(opened[0], opened[1], patterns, jobs=jobs, progress=progress,
                                              executor=chosen)
            else:
                report.summary = checkpoint_summary(opened[0], patterns, bins=bins, scales=scales, jobs=jobs,
                                                    progress=progress, executor=chosen)
        elif kind == "diff":
            report.diff = diff_report(opened[0], opened[1], patterns, jobs=jobs, progress=progress, executor=chosen)
        else:
            report.checkpoint = checkpoint_report(opened[0], patterns, bins=bins, scales=scales, jobs=jobs,
                                                  progress=progress, executor=chosen)
    finally:
        for given, ckpt in zip(paths, opened):
            if ckpt is not given:
                ckpt.close()
        if chosen is not executor:
            chosen.close()
    return report


def _summary(page: str, opened: list[Checkpoint], patterns: Sequence[str], bins: int, scales: Sequence[str]) -> bool:
    """Whether the report of ``opened`` is a summary: asked for, or ``auto`` and the larger side's tensors
    (selected by ``patterns``) pass :func:`~formats.ops.report.summary.wants_summary`."""
    if page != "auto":
        return page == "summary"
    from formats.core.selection import select_keys
    from formats.ops.report.summary import wants_summary

    count = max(len(select_keys(c, patterns)[0]) if patterns else len(c) for c in opened)
    return wants_summary(count, bins, len(scales))


def _open(source: str | os.PathLike[str] | Checkpoint) -> Checkpoint:
    if isinstance(source, Checkpoint):
        return source
    from formats.discover.resolve import open_checkpoint

    return open_checkpoint(source)


# -- one checkpoint --------------------------------------------------------------------------------------
def variable_report(entry: TensorEntry, bins: int = DEFAULT_BINS, chunk_elements: int = CHUNK_ELEMENTS,
                    scales: Sequence[str] = (LINEAR,)) -> VariableReport:
    """One tensor's :class:`VariableReport`: :func:`~formats.ops.inspect.stats.tensor_stats` with its histograms
    on ``scales`` (:mod:`formats.ops.inspect.histogram`: ``linear``, and ``log``, of log10 |x|, which costs
    about as much again; none for strings, variants, unreadable tensors)."""
    return _variable(entry, tensor_stats(entry, chunk_elements, histograms=tuple(scales), bins=bins))


def _variable(entry: TensorEntry, stats: TensorStats) -> VariableReport:
    """The :class:`VariableReport` of ``entry`` (as opened here) with its ``stats`` (wherever computed)."""
    return VariableReport(entry.key, entry.dtype, entry.shape, entry.nbytes, str(entry.role), entry.name,
                          entry.partitions, sorted(set(entry.files)), stats, entry.unreadable)


def checkpoint_report(ckpt: Checkpoint, patterns: Sequence[str] = (), *, bins: int = DEFAULT_BINS,
                      scales: Sequence[str] = (LINEAR,), jobs: int | None = 1, progress: Progress | None = None,
                      chunk_elements: int = CHUNK_ELEMENTS, executor: str | Executor | None = None) -> CheckpointReport:
    """The :class:`CheckpointReport` of the tensors of ``ckpt`` whose keys match ``patterns`` (all when
    empty), sorted by key: each tensor's statistics and histograms computed in units
    (:func:`~formats.ops.inspect.stats.stats_unit`) on ``jobs`` threads or the workers of ``executor``;
    ``progress(bytes, tensors)`` as the units finish."""
    entries = select(ckpt, patterns)
    sizes = ((entry.key, entry.nbytes) for entry in entries)  # read once by run_units: no pair per tensor held
    stats = run_units((ckpt,), stats_unit, sizes, progress, jobs, executor, chunk_elements, tuple(scales), bins)
    found = [_variable(entry, s) for entry, s in zip(entries, stats)]
    full = build_tree(ckpt, patterns=list(patterns) or None)
    model, optimizer = split_optimizer(full)
    root = full.root
    return CheckpointReport(ckpt.path, ckpt.format, root.tensors, root.nbytes, root.parameters, model, optimizer,
                            found, list(ckpt.files))


def split_optimizer(tree: CheckpointTree) -> tuple[CheckpointTree, CheckpointTree | None]:
    """The tree without optimizer state (slots and optimizer variables), and a tree of only that (None when
    there is none); each keeps the objects on the way to its rows, totals recomputed."""
    from formats.core.records import replace

    def optimizer_state(node: TreeNode) -> bool:
        return node.key is not None and node.role in OPTIMIZER_ROLES

    def model_row(node: TreeNode) -> bool:  # a model tensor, or a described object without tensors
        return node.key is not None and node.role not in OPTIMIZER_ROLES or node.key is None and not node.children

    optimizer_root = _pruned(tree.root, optimizer_state)
    model = replace(tree, root=_pruned(tree.root, model_row))
    return model, replace(tree, root=optimizer_root) if optimizer_root.children else None


def _pruned(root: TreeNode, mine: Callable[[TreeNode], bool]) -> TreeNode:
    """A copy of the tree with the rows ``mine`` accepts and the objects on the way to them (a row holding a
    tensor that is not ``mine`` but has such rows below it stays, as an object without its tensor)."""
    from formats.core.records import replace

    order = [root, *(n for _, _, n in root.walk())]  # parents before children
    kept: dict[int, bool] = {}
    for node in reversed(order):
        kept[id(node)] = node is root or mine(node) or any(kept[id(c)] for c in node.children)
    copies: dict[int, TreeNode] = {}
    for node in order:
        copy = copies[id(node)] = replace(node, children=[], aliases=list(node.aliases))
        if node is not root and not mine(node):  # an object on the way: its own tensor belongs to the other tree
            copy.key, copy.dtype, copy.shape, copy.role = None, None, None, None
            copy.own_nbytes = copy.own_parameters = 0
        copy.children = [c for c in node.children if kept[id(c)]]
    for copy in copies.values():
        copy.children = [copies[id(c)] for c in copy.children]
    new_root = copies[id(root)]
    new_root.total()
    return new_root


# -- two checkpoints -------------------------------------------------------------------------------------
def diff_report(ca: Checkpoint, cb: Checkpoint, patterns: Sequence[str] = (), *, jobs: int | None = 1,
                progress: Progress | None = None, chunk_elements: int = CHUNK_ELEMENTS,
                executor: str | Executor | None = None) -> DiffReport:
    """The :class:`DiffReport` of ``ca`` against ``cb``: tensors paired by key as ``ckpt diff`` pairs them, the
    changed pairs biggest change first, each 2-D value change with its heatmap. The diff and then the heatmaps
    (:func:`~formats.ops.report.heatmap.heatmap_unit`) run in units on ``jobs`` threads or the workers of
    ``executor``; ``progress(bytes, pairs)`` follows the diff's units."""
    from formats.ops.compare.diff import diff_checkpoints
    from formats.ops.report.heatmap import drawable, heatmap_unit

    found = diff_checkpoints(ca, cb, patterns=patterns, jobs=jobs, progress=progress, chunk_elements=chunk_elements,
                             executor=executor)
    changes = found.by_size()
    drawn = [(c.a.key, c.b.key) for c in changes if c.kind == "value" and drawable(ca[c.a.key], cb[c.b.key])]
    sizes = [(pair, ca[pair[0]].nbytes + cb[pair[1]].nbytes) for pair in drawn]
    maps = dict(zip(drawn, run_units((ca, cb), heatmap_unit, sizes, None, jobs, executor, chunk_elements,
                                     keys_of=lambda pair: pair)))
    pairs = [PairReport(c, maps.get((c.a.key, c.b.key)) if c.kind == "value" else None) for c in changes]
    return DiffReport(ca.path, cb.path, ca.format, cb.format, pairs, found.only_in_a, found.only_in_b, found.same,
                      found.notes)


# -- a run -----------------------------------------------------------------------------------------------
def run_report(directory: str, patterns: Sequence[str] = (), *, jobs: int | None = 1,
               executor: str | Executor | None = None) -> RunReport:
    """The :class:`RunReport` of the checkpoints in ``directory`` (:func:`~formats.ops.inspect.trend.run_trend`:
    each checkpoint's tensors read in units on ``jobs`` threads or the workers of ``executor``)."""
    from formats.ops.inspect.trend import run_trend

    trend = run_trend(directory, patterns, jobs=jobs, executor=executor)
    return RunReport(trend, list(trend.mtimes))
