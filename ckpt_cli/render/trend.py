"""Rendering of ``ckpt trend``: one row per variable with unicode sparklines of its norm and its change."""
from __future__ import annotations


from .common import shape_text
from .table import TextTable, emit

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float | None]) -> str:
    """``[1, 2, 3]`` -> ``▁▄█``: each value scaled between the row's min and max; None is a blank."""
    known = [v for v in values if v is not None]
    if not known:
        return " " * len(values)
    lo, hi = min(known), max(known)
    span = hi - lo
    return "".join(" " if v is None else BARS[0 if not span else round((v - lo) / span * (len(BARS) - 1))]
                   for v in values)


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"


def _number(n: int | None) -> str:
    return "-" if n is None else str(n)


def summary(result: Any) -> list[tuple[str, str | None]]:
    """The closing line: the run, its checkpoints' own steps (``-`` for one without a step variable) and the
    numbers in their names (``saves``), and the variables."""
    count = len(result.checkpoints)
    steps = ", ".join(map(_number, result.own_steps))
    saves = ", ".join(map(_number, result.steps))
    return [(result.path, "bold"), (f": {count} checkpoint{'s' if count != 1 else ''} (steps {steps}; saves "
                                    f"{saves}), {len(result.variables)} variables", None)]


def render_trend(result: Any) -> None:
    """The table, notes, and a summary line naming the steps (:func:`summary`)."""
    table = TextTable([("variable", "left"), ("shape", "left"), ("norm", "left"), ("first", "right"),
                       ("last", "right"), ("change", "left"), ("last change", "right"), ("finite", "left")])
    for v in result.variables:
        start = v.nonfinite_from
        flag = "yes" if start is None else f"NaN/Inf from {result.when(start)}"
        table.add_row(v.key, shape_text(v.shape), sparkline(v.norm), _num(v.norm[0]), _num(v.norm[-1]),
                      sparkline(v.change[1:]), _num(v.change[-1]), flag, style=None if start is None else "red")
    lines = [[("note ", "yellow"), (n, None)] for n in result.notes]
    lines += [[("diverged ", "red"), (f"{v.key}: {v.nonfinite[-1] or 0} NaN/Inf at the last checkpoint, first at "
                                      f"{result.when(v.nonfinite_from)}", None)] for v in result.diverged]
    lines.append(summary(result))
    emit(table if result.variables else None, lines)


TREND_STATS = {"norm": "norm (L2)", "change": "change (L2 since the previous checkpoint)", "mean": "mean",
               "std": "std", "min": "min", "max": "max", "nonfinite": "NaN and Inf elements"}
"""What ``trend --plot --stat NAME`` can draw, each with its title (a ``VariableTrend`` list of that name)."""


def render_trend_plot(result: Any, stat: str, ascii: bool, width: int, height: int = 6) -> None:
    """One line plot per variable of ``stat`` over the run's steps (``TrendResult.axis``: the numbers in the
    names, or the checkpoints' order, where steps are unknown), then the notes and summary lines
    :func:`render_trend` prints."""
    from .plot import line_plot, shown

    xs, label = result.axis()
    lines: list[list[tuple[str, str | None]]] = []
    for v in result.variables:
        ys = getattr(v, stat)
        start = v.nonfinite_from
        flag = "" if start is None else f"  NaN/Inf from {result.when(start)}"
        lines.append([(shown(v.key), "bold"), (f"  {shape_text(v.shape)}  {TREND_STATS[stat]}" + flag,
                                               None if start is None else "red")])
        lines += [[(row, None)] for row in line_plot(xs, ys, width, height, ascii, label)]
        lines.append([("", None)])
    lines += [[("diverged ", "red"), (f"{shown(v.key)}: {v.nonfinite[-1] or 0} NaN/Inf at the last checkpoint, "
                                      f"first at {result.when(v.nonfinite_from)}", None)]
              for v in result.diverged]
    lines.append(summary(result))
    emit(None, lines)
