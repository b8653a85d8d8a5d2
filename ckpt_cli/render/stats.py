"""Rendering of ``ckpt stats``: one row per tensor, then a summary (and the non-finite tensors)."""
from __future__ import annotations

from typing import Any

from .common import shape_text
from .table import TextTable, emit


def stat(x: float | int | None) -> str:
    """A statistic in 5 significant digits (integers exactly); ``-`` when undefined."""
    if x is None:
        return "-"
    return str(x) if isinstance(x, int) else f"{x:.5g}"


def render_stats(result: Any, check_finite: bool) -> None:
    """The table, a summary line, and with ``check_finite`` one line per tensor holding NaN or Inf."""
    table = TextTable([("key", "left"), ("dtype", "left"), ("shape", "left"), ("min", "right"), ("max", "right"),
                       ("mean", "right"), ("std", "right"), ("L2", "right"), ("zeros", "right"), ("NaN", "right"),
                       ("Inf", "right")])
    for t in result.tensors:
        table.add_row(t.key, t.dtype, shape_text(t.shape), stat(t.min), stat(t.max), stat(t.mean), stat(t.std),
                      stat(t.l2), stat(t.zeros), stat(t.nan), stat(t.inf), style=None if t.finite else "red")
    bad = result.nonfinite
    count = len(result.tensors)
    summary = f": {count} tensor{'s' if count != 1 else ''}, " + (
        f"{len(bad)} with NaN or Inf" if bad else "all finite")
    lines = [[(result.path, "bold"), (summary, None)]]
    if check_finite:
        lines += [[("not finite ", "red"), (f"{t.key}: {t.nan} NaN, {t.inf} Inf", None)] for t in bad]
    emit(table if result.tensors else None, lines)
