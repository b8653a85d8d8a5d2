"""Rendering of ``ckpt stats``: one row per tensor, then a summary (and the non-finite tensors)."""
from __future__ import annotations

from typing import Any

from .common import shape_text, shown
from .table import TextTable, emit


def stat(x: float | int | None) -> str:
    """A statistic in 5 significant digits (integers exactly); ``-`` when undefined."""
    if x is None:
        return "-"
    return str(x) if isinstance(x, int) else f"{x:.5g}"


def render_stats(result: Any, check_finite: bool, names: dict[str, tuple[str, str]] | None = None,
                 hist: tuple[bool, int | None] | None = None) -> None:
    """The table (with ``names``, each key's name and role beside it, as ``ls --names`` shows them), a summary
    line, and with ``check_finite`` one line per tensor holding NaN or Inf. With ``hist`` (``(ascii, width)``:
    the width to fit, None for no limit) a histogram column between min and max (:func:`histogram_cells`)."""
    named = [("name", "left"), ("role", "left")] if names is not None else []
    table = TextTable([("key", "left"), *named, ("dtype", "left"), ("shape", "left"), ("min", "right"),
                       ("max", "right"), ("mean", "right"), ("std", "right"), ("L2", "right"), ("zeros", "right"),
                       ("NaN", "right"), ("Inf", "right")])
    for t in result.tensors:
        extra = list(names.get(t.key, ("", ""))) if names is not None else []
        table.add_row(shown(t.key), *extra, t.dtype, shape_text(t.shape), stat(t.min), stat(t.max), stat(t.mean),
                      stat(t.std), stat(t.l2), stat(t.zeros), stat(t.nan), stat(t.inf),
                      style=None if t.finite else "red")
    notes: list[list[tuple[str, str | None]]] = []
    if hist is not None and result.tensors:
        at = len(table.columns) - 7  # before max
        cells = histogram_cells(result.tensors, table, *hist)
        table.columns.insert(at, ("histogram", "left"))
        for row, cell in zip(table.rows, cells):
            row.insert(at, cell)
        notes.append([("histogram: ", "bold"), (HIST_NOTE, None)])
    bad = result.nonfinite
    count = len(result.tensors)
    summary = f": {count} tensor{'s' if count != 1 else ''}, " + (
        f"{len(bad)} with NaN or Inf" if bad else "all finite")
    lines = [[(result.path, "bold"), (summary, None)]]
    if check_finite:
        lines += [[("not finite ", "red"), (f"{shown(t.key)}: {t.nan} NaN, {t.inf} Inf", None)] for t in bad]
    emit(table if result.tensors else None, notes + lines)


HIST_NOTE = "finite values in equal bins from min to max (bool, 8-bit ints: the dtype's range); heights relative to the fullest bin"


def histogram_cells(tensors: list[Any], table: TextTable, ascii: bool, width: int | None) -> list[str]:
    """Each tensor's linear histogram as one row of blocks: one character a bin, or fewer (bins merged) when
    the table would be wider than ``width`` (at least 8 characters); empty for a tensor without one."""
    from .plot import strip
    from .table import plain_table

    widest = max(map(len, plain_table(table)))
    bins = max((len(t.histograms["linear"].counts) for t in tensors if t.histograms), default=8)
    room = bins if width is None else max(8, min(bins, width - widest - len("  ")))
    return [strip(t.histograms["linear"].counts, room, ascii) if t.histograms else "" for t in tensors]
