"""Rendering of ``ckpt stats``: one row per tensor, then a summary (and the non-finite tensors)."""
from __future__ import annotations

from itertools import repeat

from formats.core.gc_pause import gc_paused

from .common import shape_text, shown
from .table import TextTable, emit

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any


def stat(x: float | int | None) -> str:
    """A statistic in 5 significant digits (integers exactly); ``-`` when undefined."""
    if x is None:
        return "-"
    return str(x) if isinstance(x, int) else f"{x:.5g}"


COLUMNS = ("dtype", "shape", "min", "max", "mean", "std", "L2", "zeros", "NaN", "Inf")
"""The columns of the stats table after the key, in their order (``--columns`` chooses among them)."""
_RIGHT = {"min", "max", "mean", "std", "L2", "zeros", "NaN", "Inf"}


def parse_columns(text: str) -> tuple[str, ...]:
    """``--columns``: ``"mean,std,NaN"`` -> the columns named, in that order (any case; ``all``: every one);
    ValueError naming an unknown column and the known ones."""
    known = {c.lower(): c for c in COLUMNS}
    out: list[str] = []
    for word in (w.strip() for w in text.split(",")):
        if word.lower() == "all":
            out += [c for c in COLUMNS if c not in out]
        elif word.lower() in known:
            if known[word.lower()] not in out:
                out.append(known[word.lower()])
        elif word:
            raise ValueError(f"no column {word!r} (columns: {', '.join(COLUMNS)}, or all)")
    if not out:
        raise ValueError(f"name at least one column ({', '.join(COLUMNS)}, or all)")
    return tuple(out)


def leave_out_order(any_nonfinite: bool) -> list[str]:
    """The columns a terminal too narrow for them all goes without, first to last (the key and dtype stay):
    L2 and zeros, NaN and Inf when every tensor is finite (the summary says so), max, min and shape, then
    std and mean."""
    counts = ["Inf", "NaN"]
    return ["L2", "zeros", *([] if any_nonfinite else counts), "max", "min", "shape",
            *(counts if any_nonfinite else []), "std", "mean"]


def stat_column(values: list[float | int | None]) -> list[str]:
    """:func:`stat` of each of ``values``, a column at a time: one ``format`` or ``str`` over a column of floats
    or of ints (as :func:`stat` formats each), :func:`stat` of each otherwise."""
    kinds = set(map(type, values))
    if kinds <= {float}:  # float's own __format__, as format() calls it, without parsing a template per value
        return list(map(float.__format__, values, repeat(".5g")))  # type: ignore[arg-type]
    if kinds <= {int}:
        return list(map(str, values))
    return list(map(stat, values))


_FIELDS = {"min": "min", "max": "max", "mean": "mean", "std": "std", "L2": "l2", "zeros": "zeros", "NaN": "nan",
           "Inf": "inf"}
"""Statistic columns -> the :class:`~formats.ops.inspect.stats.TensorStats` field each shows."""


def _stats_columns(names: dict[str, tuple[str, str]] | None, chosen: tuple[str, ...]) -> list[tuple[str, str]]:
    """The table's columns (name, justify): the key, with ``names`` name and role, then the ``chosen`` ones."""
    named = [("name", "left"), ("role", "left")] if names is not None else []
    return [("key", "left"), *named, *((c, "right" if c in _RIGHT else "left") for c in chosen)]


def _stats_cells(tensors: Sequence[Any], names: dict[str, tuple[str, str]] | None,
                 chosen: tuple[str, ...]) -> list[list[str]]:
    """The cells of ``tensors``' rows (:func:`_stats_columns`), a column at a time."""
    from operator import attrgetter

    keys = list(map(attrgetter("key"), tensors))
    cells: list[list[str]] = [keys]
    if names is not None:
        pairs = [names.get(key, ("", "")) for key in keys]
        cells += [[p[0] for p in pairs], [p[1] for p in pairs]]
    for column in chosen:
        if column == "dtype":
            cells.append(list(map(attrgetter("dtype"), tensors)))
        elif column == "shape":
            cells.append(list(map(shape_text, map(attrgetter("shape"), tensors))))
        else:
            cells.append(stat_column(list(map(attrgetter(_FIELDS[column]), tensors))))
    return cells


def _stats_table(tensors: list[Any], names: dict[str, tuple[str, str]] | None, chosen: tuple[str, ...]) -> TextTable:
    """The table of ``tensors`` (key, with ``names`` name and role, then the ``chosen`` columns), built a
    column at a time; rows of a tensor holding NaN or Inf red."""
    from operator import attrgetter

    nans, infs = map(attrgetter("nan"), tensors), map(attrgetter("inf"), tensors)
    styles: list[str | None] = ["red" if nan or inf else None for nan, inf in zip(nans, infs)]  # not .finite
    return TextTable.of_columns(_stats_columns(names, chosen), _stats_cells(tensors, names, chosen), styles)


ROWS_PER_PART = 4096
"""Rows of a long table formatted at a time on a pipe (:func:`~.table.packed_table`)."""


def _emit_packed(tensors: list[Any], names: dict[str, tuple[str, str]] | None, chosen: tuple[str, ...],
                 lines: list[list[tuple[str, str | None]]]) -> None:
    """Print the table and ``lines`` on a pipe as :func:`~.table.emit` prints them, its cells formatted
    :data:`ROWS_PER_PART` rows at a time and held packed (a million rows: about 400 MB less than a string per
    cell)."""
    from .table import emit_rows, packed_table

    parts = (_stats_cells(tensors[i:i + ROWS_PER_PART], names, chosen) for i in range(0, len(tensors), ROWS_PER_PART))
    held = (0, 1, 2) if names is not None else (0,)  # the keys (and names, roles): strings the result holds
    header, chunks, ascii = packed_table(_stats_columns(names, chosen), parts, held)
    written = emit_rows(header, chunks, len(header), ascii, lines)
    assert written  # (on a pipe emit_rows writes whatever the rows are)


@gc_paused
def render_stats(result: Any, check_finite: bool, names: dict[str, tuple[str, str]] | None = None,
                 hist: tuple[bool, int | None] | None = None, columns: tuple[str, ...] | None = None) -> None:
    """The table (with ``names``, each key's name and role beside it, as ``ls --names`` shows them), a summary
    line, and with ``check_finite`` one line per tensor holding NaN or Inf. With ``hist`` (``(ascii, width)``:
    the width to fit, None for no limit) a histogram column between min and max (:func:`histogram_cells`).
    ``columns``: the statistics shown (:data:`COLUMNS`, in the order given); by default all of them, fewer on a
    terminal too narrow for them (:func:`leave_out_order`, with a line naming those left out)."""
    from .table import columns_to_leave_out, terminal_columns, without_columns

    width = terminal_columns()
    chosen = COLUMNS if columns is None else columns
    if width is None and hist is None and result.tensors:  # a pipe: the rows a few thousand at a time
        _emit_packed(result.tensors, names, chosen, _summary_lines(result, check_finite))
        return
    table = _stats_table(result.tensors, names, chosen)
    notes: list[list[tuple[str, str | None]]] = []
    left_out: list[str] = []
    if columns is None:
        reserve = len("  ") + 8 if hist is not None else 0  # the narrowest histogram
        left_out = columns_to_leave_out(table, width, leave_out_order(bool(result.nonfinite)), reserve)
        table = without_columns(table, left_out)
    if hist is not None and result.tensors:
        names_now = [name for name, _ in table.columns]
        at = names_now.index("max") if "max" in names_now else len(names_now)
        cells_h = histogram_cells(result.tensors, table, *hist)
        table.columns.insert(at, ("histogram", "left"))
        for row, cell in zip(table.rows, cells_h):
            row.insert(at, cell)
        notes.append([("histogram: ", "bold"), (HIST_NOTE, None)])
    if left_out:
        notes.append([(f"(not shown: {', '.join(left_out)}; see --columns)", None)])
    emit(table if result.tensors else None, notes + _summary_lines(result, check_finite))


def _summary_lines(result: Any, check_finite: bool) -> list[list[tuple[str, str | None]]]:
    """The lines after the table: the count and how many are not finite; with ``check_finite`` each of those."""
    bad = result.nonfinite
    count = len(result.tensors)
    summary = f": {count} tensor{'s' if count != 1 else ''}, " + (
        f"{len(bad)} with NaN or Inf" if bad else "all finite")
    lines = [[(result.path, "bold"), (summary, None)]]
    if check_finite:
        lines += [[("not finite ", "red"), (f"{shown(t.key)}: {t.nan} NaN, {t.inf} Inf", None)] for t in bad]
    return lines


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
