"""What a report holds: records for one checkpoint, a pair of checkpoints and a run, each with ``to_json``
(the :class:`~formats.ops.report.result.Report` that :func:`formats.report` returns holds one of them)."""
from __future__ import annotations

from formats.core.records import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from formats.ops.inspect.stats import TensorStats
    from formats.ops.inspect.trend import TrendResult
    from formats.ops.inspect.tree import CheckpointTree

__all__ = ["VariableReport", "CheckpointReport", "Heatmap", "PairReport", "DiffReport", "RunReport", "KINDS"]

KINDS = ("checkpoint", "diff", "run")
"""What a report can be about: one checkpoint, two checkpoints, a run directory."""


@record
class VariableReport:
    """One tensor: its metadata and storage facts, and its statistics with their histograms by scale
    (``stats.histograms``: ``linear`` and ``log``; empty for strings, variants and unreadable tensors)."""

    key: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int
    role: str
    name: str
    partitions: int
    files: list[str]
    stats: TensorStats
    unreadable: str | None = None
    """Why ckpt cannot read the tensor (its statistics are then its count only), else None."""

    @property
    def flags(self) -> list[str]:
        """``unreadable``, ``nan``, ``inf``, ``all-zero``: what deserves a second look."""
        s = self.stats
        out = ["unreadable"] if self.unreadable else []
        out += [name for name, count in (("nan", s.nan), ("inf", s.inf)) if count]
        if s.zeros is not None and s.size and s.zeros == s.size:
            out.append("all-zero")
        return out

    def to_json(self) -> dict[str, Any]:
        """``{"key", "dtype", "shape", "nbytes", "role", "name", "partitions", "files", "stats", "histograms",
        "flags", "unreadable"}`` (``stats`` as ``ckpt stats --json`` has them, ``histograms`` by scale)."""
        stats = {k: v for k, v in self.stats.to_json().items() if k not in ("key", "dtype", "shape", "histograms")}
        hists = self.stats.histograms or {}
        return {"key": self.key, "dtype": self.dtype, "shape": list(self.shape), "nbytes": self.nbytes,
                "role": self.role, "name": self.name, "partitions": self.partitions, "files": self.files,
                "stats": stats, "histograms": {scale: h.to_json() for scale, h in hists.items()},
                "flags": self.flags, "unreadable": self.unreadable}


@record
class CheckpointReport:
    """One checkpoint: totals, its object tree (model variables) and optimizer state apart, every variable."""

    path: str
    format: str
    tensors: int
    nbytes: int
    parameters: int
    tree: CheckpointTree
    optimizer: CheckpointTree | None
    variables: list[VariableReport] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """``{"path", "format", "tensors", "nbytes", "parameters", "files", "tree", "optimizer", "variables"}``."""
        return {"path": self.path, "format": self.format, "tensors": self.tensors, "nbytes": self.nbytes,
                "parameters": self.parameters, "files": self.files, "tree": self.tree.to_json()["tree"],
                "optimizer": None if self.optimizer is None else self.optimizer.to_json()["tree"],
                "variables": [v.to_json() for v in self.variables]}


@record
class Heatmap:
    """``|a - b|`` of a 2-D tensor down-sampled to ``rows x cols`` cells: each cell the mean over the finite
    differences of the elements it covers (None when it covers none)."""

    shape: tuple[int, int]
    rows: int
    cols: int
    cells: list[float | None]
    """Row-major, ``rows * cols`` values."""

    @property
    def peak(self) -> float:
        """The largest cell (0.0 when every cell is None or 0)."""
        return max((c for c in self.cells if c is not None), default=0.0)

    def to_json(self) -> dict[str, Any]:
        """``{"shape", "rows", "cols", "cells", "peak"}``."""
        return {"shape": list(self.shape), "rows": self.rows, "cols": self.cols, "cells": self.cells,
                "peak": self.peak}


@record
class PairReport:
    """One changed pair of the diff (``change`` the diff's :class:`~formats.ops.compare.diff.Change`) with the
    heatmap of a 2-D value change."""

    change: Any
    heatmap: Heatmap | None = None

    def to_json(self) -> dict[str, Any]:
        """The change's JSON (``key``, ``kind``, ``a``, ``b``, ``rel_l2``, ``cosine``, ...) and ``heatmap``."""
        return {**self.change.to_json(), "heatmap": None if self.heatmap is None else self.heatmap.to_json()}


@record
class DiffReport:
    """Two checkpoints: the changed pairs, biggest change first, keys only in one, how many are the same."""

    a: str
    b: str
    format_a: str
    format_b: str
    pairs: list[PairReport] = field(default_factory=list)
    only_in_a: list[str] = field(default_factory=list)
    only_in_b: list[str] = field(default_factory=list)
    same: int = 0
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """``{"a", "b", "format_a", "format_b", "changed": [...] (biggest first), "only_in_a", "only_in_b",
        "same", "notes"}``."""
        return {"a": self.a, "b": self.b, "format_a": self.format_a, "format_b": self.format_b,
                "changed": [p.to_json() for p in self.pairs], "only_in_a": self.only_in_a,
                "only_in_b": self.only_in_b, "same": self.same, "notes": self.notes}


@record
class RunReport:
    """A run directory: each checkpoint's step and time (``mtimes``, seconds since the epoch) and every
    variable's norm trend (:class:`~formats.ops.inspect.trend.TrendResult`)."""

    trend: TrendResult
    mtimes: list[float | None] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The trend's JSON with ``mtime`` added to each checkpoint."""
        doc = self.trend.to_json()
        for row, mtime in zip(doc["checkpoints"], self.mtimes):
            row["mtime"] = mtime
        return doc
