"""Plots drawn with text: histogram strips, line plots and bar charts, in Unicode blocks and Braille or in ASCII.

Pure functions from numbers to lines of text (no I/O, no colour), so tests compare them with golden files at
a fixed width. Unicode output uses the eighth blocks (``▁▂▃▄▅▆▇█``, ``▏▎▍▌▋▊▉█``) and Braille dots (2 x 4 to
a cell); ``ascii=True`` draws the same shapes with ``.:-=+*#@``, ``#`` and ``*``.
"""
from __future__ import annotations

import math
import os
import sys

from .common import shown

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["plot_width", "wants_ascii", "shown", "resample", "strip", "line_plot", "bar_chart", "number"]

LEVELS = " ▁▂▃▄▅▆▇█"
"""Column heights 0..8 (0: an empty bin)."""
ASCII_LEVELS = " .:-=+*#@"
EIGHTHS = " ▏▎▍▌▋▊▉"
"""Partial bar ends, 0..7 eighths of a cell."""
_BRAILLE_BITS = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))
"""The Braille dot of pixel (row, column) inside a cell of 4 rows and 2 columns."""


def plot_width(default: int | None = 80) -> int | None:
    """Columns to draw in: ``COLUMNS`` when set, else the terminal's width on stdout, else ``default``."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return default


def wants_ascii(asked: bool) -> bool:
    """ASCII when asked, or when stdout cannot encode the block and Braille characters (an ASCII locale)."""
    if asked:
        return True
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    try:
        "█▁⣿".encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return True
    return False


def number(x: float | int | None) -> str:
    """An axis or bar label: 4 significant digits, ``-`` for none."""
    if x is None:
        return "-"
    return str(x) if isinstance(x, int) else f"{x:.4g}"


def resample(counts: Sequence[int], width: int) -> list[float]:
    """``counts`` in at most ``width`` columns: column ``j`` holds bins ``[j*n//w, (j+1)*n//w)`` and shows
    their mean (so a column of 3 bins is no taller than one of 2 at the same density)."""
    n = len(counts)
    if n <= width:
        return [float(c) for c in counts]
    out = []
    for j in range(width):
        group = counts[j * n // width:(j + 1) * n // width]
        out.append(sum(group) / len(group))
    return out


def strip(counts: Sequence[int], width: int, ascii: bool = False, log: bool = False) -> str:
    """A histogram as one row of ``min(len(counts), width)`` characters, heights scaled to the tallest
    column (``log``: to log(1 + count)); an empty bin is a blank, a non-empty one at least the lowest block."""
    levels = ASCII_LEVELS if ascii else LEVELS
    columns = resample(counts, max(1, width))
    if log:
        columns = [math.log1p(c) for c in columns]
    top = max(columns, default=0.0)
    if top <= 0:
        return levels[0] * len(columns)
    top_level = len(levels) - 1
    return "".join(levels[0] if c <= 0 else levels[max(1, min(top_level, math.ceil(c / top * top_level)))]
                   for c in columns)


def _scale(v: float, lo: float, hi: float, pixels: int) -> int:
    """``v`` in ``[lo, hi]`` as a pixel ``0..pixels-1`` (the middle when ``lo == hi``)."""
    if hi <= lo:
        return (pixels - 1) // 2
    return min(pixels - 1, max(0, round((v - lo) / (hi - lo) * (pixels - 1))))


def _segment(a: tuple[int, int], b: tuple[int, int]) -> list[tuple[int, int]]:
    """The pixels of a straight line from ``a`` to ``b`` (both ends included)."""
    (x0, y0), (x1, y1) = a, b
    steps = max(abs(x1 - x0), abs(y1 - y0), 1)
    return [(round(x0 + (x1 - x0) * i / steps), round(y0 + (y1 - y0) * i / steps)) for i in range(steps + 1)]


def line_plot(xs: Sequence[float], ys: Sequence[float | None], width: int, height: int = 6, ascii: bool = False,
              x_label: str = "step") -> list[str]:
    """A line through the points ``(xs[i], ys[i])`` (a None ``y`` breaks the line) in a box ``width`` columns
    wide overall: the y axis labelled with the top, middle and bottom values at the left, the x axis with the
    first and last ``xs`` and ``x_label`` below. Braille (2 x 4 dots a cell), or ``*`` for points and ``.``
    between them in ASCII."""
    known = [y for y in ys if y is not None]
    lo, hi = (min(known), max(known)) if known else (0.0, 0.0)
    labels = [number(hi), number((lo + hi) / 2), number(lo)]
    pad = max(map(len, labels))
    cols = max(4, width - pad - 2)
    sx, sy = (1, 1) if ascii else (2, 4)
    px, py = cols * sx, height * sy
    x_lo, x_hi = (min(xs), max(xs)) if xs else (0.0, 0.0)
    middle_row = (height - 1) // 2
    flat = middle_row * sy + sy // 2  # a constant's pixel row: in the labelled middle row

    def pixel(x: float, y: float) -> tuple[int, int]:
        return _scale(x, x_lo, x_hi, px), flat if hi <= lo else py - 1 - _scale(y, lo, hi, py)

    points = [None if y is None else pixel(x, y) for x, y in zip(xs, ys)]
    lines = [_segment(a, b) for a, b in zip(points, points[1:]) if a is not None and b is not None]
    pixels = [p for seg in lines for p in seg]
    dots = {p for p in points if p is not None}
    rows = _ascii_rows(pixels, dots, cols, height) if ascii else _braille_rows([*pixels, *dots], cols, height)
    bar, corner, tick = ("|", "+", "-") if ascii else ("┤", "└", "─")
    if hi <= lo:
        marks = {middle_row: labels[1]}
    elif height > 2:
        marks = {0: labels[0], middle_row: labels[1], height - 1: labels[2]}
    else:
        marks = {0: labels[0], height - 1: labels[2]}
    out = [f"{marks.get(i, '').rjust(pad)} {bar if i in marks else ('|' if ascii else '│')}{row}".rstrip()
           for i, row in enumerate(rows)]
    out.append(" " * pad + " " + corner + tick * cols)
    first, last = number(x_lo), number(x_hi)
    middle = f"({x_label})"
    gap = cols - len(first) - len(last)
    axis = first + (middle.center(gap) if gap >= len(middle) + 2 else " " * max(1, gap)) + last
    out.append(" " * (pad + 2) + axis)
    return out


def _braille_rows(pixels: list[tuple[int, int]], cols: int, height: int) -> list[str]:
    """Pixels on a grid of ``cols`` x ``height`` Braille cells (2 x 4 dots each), a blank for an empty cell."""
    grid = [[0] * cols for _ in range(height)]
    for x, y in pixels:
        grid[y // 4][x // 2] |= _BRAILLE_BITS[y % 4][x % 2]
    return ["".join(chr(0x2800 + c) if c else " " for c in row) for row in grid]


def _ascii_rows(pixels: list[tuple[int, int]], dots: set[tuple[int, int]], cols: int, height: int) -> list[str]:
    """A line's ``pixels`` as ``.`` and its data points ``dots`` as ``*``, one character a pixel."""
    grid = [[" "] * cols for _ in range(height)]
    for x, y in pixels:
        grid[y][x] = "."
    for x, y in dots:
        grid[y][x] = "*"
    return ["".join(row) for row in grid]


def bar_chart(rows: Sequence[tuple[str, float | None, str]], width: int, ascii: bool = False) -> list[str]:
    """One horizontal bar per row ``(label, value, text)``: labels left-aligned (escaped by :func:`shown`),
    bars scaled to the largest value, ``text`` after each bar (a row whose value is None has only its text).
    When the longest label leaves fewer than 10 columns for the bars, each label is on a line of its own,
    its bar indented below it. Labels are never cut."""
    labels = [shown(label) for label, _, _ in rows]
    texts = [text for _, _, text in rows]
    top = max((v for _, v, _ in rows if v is not None and math.isfinite(v)), default=0.0)
    text_width = max(map(len, texts), default=0)
    label_width = max(map(len, labels), default=0)
    stacked = width - label_width - 2 - text_width - 1 < 10
    bar_width = max(1, (width - 2 - text_width - 1) if stacked else (width - label_width - 2 - text_width - 1))
    out = []
    for label, (_, value, _), text in zip(labels, rows, texts):
        bar = _bar(value, top, bar_width, ascii)
        if stacked:
            out.append(label)
            out.append(f"  {bar.ljust(bar_width)} {text}".rstrip())
        else:
            out.append(f"{label.ljust(label_width)}  {bar.ljust(bar_width)} {text}".rstrip())
    return out


def _bar(value: float | None, top: float, width: int, ascii: bool) -> str:
    """A bar of ``value / top * width`` cells in eighths (``#`` whole cells in ASCII); an infinite value fills
    the width; a positive value shows at least its first eighth."""
    if value is None or value <= 0 or top <= 0 and math.isfinite(value):
        return ""
    if not math.isfinite(value):
        return ("#" if ascii else "█") * width
    eighths = max(1, round(value / top * width * 8))
    if ascii:
        return "#" * max(1, round(eighths / 8))
    whole, part = divmod(eighths, 8)
    return "█" * whole + (EIGHTHS[part] if part else "")
