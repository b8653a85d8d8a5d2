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


def render_stats(result: Any, check_finite: bool, names: dict[str, tuple[str, str]] | None = None) -> None:
    """The table (with ``names``, each key's name and role beside it, as ``ls --names`` shows them), a summary
    line, and with ``check_finite`` one line per tensor holding NaN or Inf."""
    named = [("name", "left"), ("role", "left")] if names is not None else []
    table = TextTable([("key", "left"), *named, ("dtype", "left"), ("shape", "left"), ("min", "right"),
                       ("max", "right"), ("mean", "right"), ("std", "right"), ("L2", "right"), ("zeros", "right"),
                       ("NaN", "right"), ("Inf", "right")])
    for t in result.tensors:
        extra = list(names.get(t.key, ("", ""))) if names is not None else []
        table.add_row(t.key, *extra, t.dtype, shape_text(t.shape), stat(t.min), stat(t.max), stat(t.mean),
                      stat(t.std), stat(t.l2), stat(t.zeros), stat(t.nan), stat(t.inf),
                      style=None if t.finite else "red")
    bad = result.nonfinite
    count = len(result.tensors)
    summary = f": {count} tensor{'s' if count != 1 else ''}, " + (
        f"{len(bad)} with NaN or Inf" if bad else "all finite")
    lines = [[(result.path, "bold"), (summary, None)]]
    if check_finite:
        lines += [[("not finite ", "red"), (f"{t.key}: {t.nan} NaN, {t.inf} Inf", None)] for t in bad]
    emit(table if result.tensors else None, lines)
