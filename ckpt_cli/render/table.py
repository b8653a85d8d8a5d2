"""A table and styled lines as plain data, printed by rich on a terminal and as plain text elsewhere.

Output on a pipe is for scripts: no colour, no wrapping, and no need to import rich
(which keeps ``ckpt ls | grep`` fast to start). On a terminal, output that fits as it is (ASCII,
no row wider than the terminal) is written with the few escape codes rich would use, so a small
listing does not import rich either; rich lays out only what needs shortening or wrapping.
"""
from __future__ import annotations

import os
import sys

from formats.core.names import all_printable
from formats.core.object_keys import VALUE_SUFFIX

from .common import shown, use_color

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
    from typing import Any

Segment = tuple[str, str | None]  # (text, rich style or None)


class TextTable:
    """Columns (name, justify) and rows of plain strings; ``row_styles`` optionally colour whole rows.

    A table of many rows may be made of its cells a column at a time (:meth:`of_columns`): printed as text, it
    is laid out from them without a list per row; its :attr:`rows` are made when first asked for."""

    __slots__ = ("columns", "_rows", "_cells", "row_styles")

    def __init__(self, columns: list[tuple[str, str]], rows: list[list[str]] | None = None,
                 row_styles: list[str | None] | None = None) -> None:
        self.columns = columns
        self._rows: list[list[str]] | None = [] if rows is None else rows
        self._cells: list[list[str]] | None = None
        self.row_styles: list[str | None] = [None] * len(self._rows) if row_styles is None else row_styles

    @classmethod
    def of_columns(cls, columns: list[tuple[str, str]], cells: list[list[str]],
                   row_styles: list[str | None]) -> TextTable:
        """The table whose column ``i`` holds the cells ``cells[i]`` (all of one length: a style per row)."""
        table = cls(columns, None, row_styles)
        table._rows, table._cells = None, cells
        return table

    @property
    def rows(self) -> list[list[str]]:
        """The rows, a list of cells each (made from the columns when the table was made of them)."""
        if self._rows is None:
            self._rows = list(map(list, zip(*self._cells))) if self._cells else []
            self._cells = None  # the rows may change now: they hold the cells
        return self._rows

    @rows.setter
    def rows(self, rows: list[list[str]]) -> None:
        self._rows, self._cells = rows, None

    def cells(self) -> list[Sequence[str]]:
        """The cells a column at a time (one sequence per column; none when there are no rows)."""
        if self._cells is not None:
            return list(self._cells) if self._cells and self._cells[0] else []
        return list(zip(*self._rows)) if self._rows else []

    def row_count(self) -> int:
        """The number of rows (without making them)."""
        return len(self.row_styles) if self._cells is not None else len(self.rows)

    def add_row(self, *cells: str, style: str | None = None) -> None:
        """Append one row of cells (as many as there are columns)."""
        self.rows.append(list(cells))
        self.row_styles.append(style)


def _rich_mode(stream: Any) -> bool:
    return bool(stream.isatty()) or os.environ.get("CKPT_FORCE_RICH") == "1"


def shown_columns(table: TextTable) -> list[Sequence[str]]:
    """The cells of ``table`` a column at a time, as :func:`~.common.shown` shows them: a column is escaped
    cell by cell only when some cell of it needs it (:func:`~formats.core.names.all_printable`), else kept as
    it is; one (empty) column per named column when there are no rows."""
    cells = table.cells()
    if not cells:
        return [() for _ in table.columns]
    return list(map(_shown_column, cells))


def _shown_column(column: Sequence[str]) -> Sequence[str]:
    """``column`` itself when no cell needs escaping (:func:`~formats.core.names.all_printable`), else its cells
    as :func:`~.common.shown` shows them."""
    return column if all_printable(column) else tuple(map(shown, column))


def plain_table(table: TextTable) -> list[str]:
    """The table as aligned text lines (two spaces between columns, no trailing blanks). Cells are escaped
    before measuring (columns stay aligned), a column at a time; the lines are laid out one at a time
    (:func:`_line_layout`: no padded copy of every cell is held)."""
    header, rows = _plain_layout(table)
    return [header, *rows]


def plain_chunks(table: TextTable, rows_per_chunk: int = 4096) -> Iterator[str]:
    """:func:`plain_table`'s lines, the header first, then the rows joined by newlines ``rows_per_chunk`` at a
    time (a table of a million rows is written without all its lines held at once)."""
    from itertools import islice

    header, rows = _plain_layout(table)
    yield header
    while True:
        chunk = list(islice(rows, rows_per_chunk))  # (a row may be an empty line: counted, not its text)
        if not chunk:
            return
        yield "\n".join(chunk)


def _plain_layout(table: TextTable) -> tuple[str, Iterator[str]]:
    """The header line of ``table`` and its rows' lines (of escaped cells), made as they are taken."""
    columns = shown_columns(table)
    header = [name for name, _ in table.columns]
    widths = [max(len(name), max(map(len, column), default=0)) for name, column in zip(header, columns)]
    lines = _line_layout(table.columns, widths)
    return next(lines([[name] for name in header]), ""), lines(columns)


def _line_layout(columns: Sequence[tuple[str, str]], widths: Sequence[int]
                 ) -> Callable[[Sequence[Sequence[str]]], Iterator[str]]:
    """The lines of rows given a column at a time (``cells``: a sequence of cells per column): each cell justified
    in its column's width (``str.rjust`` for a right-justified column, else ``str.ljust``), two spaces between
    columns, no trailing blanks. Made a line at a time as they are taken, and mapped in C: no Python step a line
    (a format string's ``format`` of each row parsed its string again every row)."""
    from itertools import repeat

    justify = [(str.rjust if just == "right" else str.ljust, width) for (_, just), width in zip(columns, widths)]

    def lines(cells: Sequence[Sequence[str]]) -> Iterator[str]:
        padded = [map(how, column, repeat(width)) for column, (how, width) in zip(cells, justify)]
        return map(str.rstrip, map("  ".join, zip(*padded)))

    return lines


def packed_table(columns: Sequence[tuple[str, str]], parts: Iterable[Sequence[Sequence[str]]],
                 held: Collection[int] = ()) -> tuple[str, Iterator[str], bool]:
    """A table too long to hold a string per cell, laid out as :func:`plain_chunks` lays it out: ``parts`` give
    its rows a few thousand at a time, as their cells a column at a time. Each part is escaped as
    :func:`shown_columns` escapes a column, measured, and kept as one string per column (its cells joined by
    newlines, which no escaped cell holds: about a byte per character, not a string object per cell); the lines
    are made from them when written. A column in ``held`` (its cells are strings the caller holds anyway, such as
    the keys) is kept as its list of them when it needs no escaping (a reference a cell, not a copy of the text).
    Returns the header line, the rows joined by newlines a part at a time, and whether every row is ASCII."""
    widths = [len(name) for name, _ in columns]
    packed: list[list[str | Sequence[str]]] = []
    ascii = True
    for part in parts:
        kept: list[str | Sequence[str]] = []
        for i, cells in enumerate(part):
            column = _shown_column(cells)
            widths[i] = max(widths[i], max(map(len, column), default=0))
            if column is cells and i in held:  # (needs no escaping)
                ascii = ascii and all(map(str.isascii, column))
                kept.append(column)
            else:
                text = "\n".join(column)
                ascii = ascii and text.isascii()
                kept.append(text)
        packed.append(kept)
    lines = _line_layout(columns, widths)

    def chunks() -> Iterator[str]:
        while packed:
            part = packed.pop(0)  # let go of each part once written
            yield "\n".join(lines([column.split("\n") if isinstance(column, str) else column for column in part]))

    return next(lines([[name] for name, _ in columns]), ""), chunks(), ascii


def emit(table: TextTable | None = None, lines: list[list[Segment]] | None = None, stderr: bool = False) -> None:
    """Print ``table`` then ``lines`` to stdout (or stderr): rich on a terminal, plain text otherwise. Every
    cell and every segment is escaped by :func:`~.common.shown` on either (no control character of a name
    reaches the terminal, and no name breaks a row)."""
    stream = sys.stderr if stderr else sys.stdout
    lines = _shown_lines(lines)
    if not _rich_mode(stream):
        for chunk in () if table is None else plain_chunks(table):
            stream.write(chunk + "\n")
        out = ["".join(text for text, _ in line) for line in lines or []]
        if out:
            stream.write("\n".join(out) + "\n")
        if stderr and (out or table is not None):  # an error line is out before anything else happens (and
            stream.flush()  # click 8.2's test runner reads its stderr buffer without flushing the text layer first)
        return
    if os.environ.get("CKPT_FORCE_RICH") != "1" and _emit_fitting(table, lines or [], stream):
        return
    _emit_rich(table, lines or [], stderr)


def emit_rows(header: str, chunks: Iterable[str], widest: int, ascii: bool, lines: list[list[Segment]]) -> bool:
    """Print a table already laid out as :func:`plain_table` lays it out - its ``header`` line, then
    ``chunks`` of rows (each chunk rows joined by newlines, written as it comes) - then ``lines``, as
    :func:`emit` would print them; ``widest`` is the longest row, ``ascii`` whether every row is ASCII.
    Returns False, writing nothing, on a terminal where rich would lay the table out (a row too wide
    or not ASCII): the caller then emits it as a :class:`TextTable`. The rows must be escaped already (as
    :func:`~.common.shown` escapes them); ``lines`` are escaped here."""
    stream = sys.stdout
    lines = _shown_lines(lines) or []
    texts = ["".join(text for text, _ in line) for line in lines]
    rich = _rich_mode(stream)
    if rich:
        width = _terminal_width(stream) if os.environ.get("CKPT_FORCE_RICH") != "1" else None
        if width is None or not ascii or max(widest, len(header)) > width or \
                any(not text.isascii() or len(text) > width for text in texts) or \
                any(w not in _SGR for line in lines for _, s in line if s for w in s.split()):
            return False
    color = rich and use_color()
    stream.write(_paint(header, "bold", color) + "\n")
    for chunk in chunks:
        stream.write(chunk + "\n")
    if rich:
        out = ["".join(_paint(text, style, color) for text, style in line) for line in lines]
    else:
        out = texts
    if out:
        stream.write("\n".join(out) + "\n")
    return True


def _shown_lines(lines: list[list[Segment]] | None) -> list[list[Segment]] | None:
    """``lines`` with the text of every segment escaped by :func:`~.common.shown`."""
    if not lines:
        return lines
    return [[(shown(text), style) for text, style in line] for line in lines]


def _terminal_width(stream: Any) -> int | None:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return None


_SGR = {"bold": "1", "red": "31", "green": "32", "yellow": "33", "blue": "34", "magenta": "35", "cyan": "36"}
"""rich style words -> the escape codes rich writes for them."""


def _emit_fitting(table: TextTable | None, lines: list[list[Segment]], stream: Any) -> bool:
    """Write ``table`` and ``lines`` to a terminal as rich lays them out when nothing needs shortening or
    wrapping (the plain layout with its header bold and styles as escape codes); False, writing nothing,
    when something does (rich then lays it out)."""
    width = _terminal_width(stream)
    if width is None:
        return False
    rows = plain_table(table) if table is not None and table.row_count() else []
    texts = ["".join(text for text, _ in line) for line in lines]
    styles = [s for s in [*(table.row_styles if table is not None and rows else []),
                          *(s for line in lines for _, s in line)] if s]
    everything = rows + texts
    if not "".join(everything).isascii() or max(map(len, everything), default=0) > width or \
            any(w not in _SGR for s in set(styles) for w in s.split()):
        return False
    color = use_color()
    out = []
    if rows:
        out.append(_paint(rows[0], "bold", color))
        if color and styles:
            out += [_paint(row, style, color) for row, style in zip(rows[1:], table.row_styles)]  # type: ignore[union-attr]
        else:
            out += rows[1:]
    out += ["".join(_paint(text, style, color) for text, style in line) for line in lines]
    stream.write("\n".join(out) + "\n")
    return True


def _paint(text: str, style: str | None, color: bool) -> str:
    if not (style and color and text):
        return text
    return f"\x1b[{';'.join(_SGR[w] for w in style.split())}m{text}\x1b[0m"


_FREE_TEXT = {"detail", "problem", "message", "candidates"}
"""Columns of prose that may wrap; every other column never wraps, and no cell is ever cut."""
_KEY_COLUMNS = {"key", "object", "variable", "checkpoint", "source"}
"""The column whose ``/.ATTRIBUTES/VARIABLE_VALUE`` suffixes are left out when rows would not fit (the first)."""
SUFFIX_NOTE = f"(keys ending in {VALUE_SUFFIX} are shown without it)"


def without_value_suffix(keys: list[str]) -> list[str] | None:
    """``keys`` with :data:`VALUE_SUFFIX` left out of those ending in it, so that the slot or attribute name
    ends the key (``net/l1/kernel/.OPTIMIZER_SLOT/optimizer/m``); None when no key has it or two keys would
    then read the same."""
    short = [k[:-len(VALUE_SUFFIX)] if k.endswith(VALUE_SUFFIX) else k for k in keys]
    if short == keys or len(set(short)) != len(set(keys)):
        return None
    return short


def _fit(table: TextTable, width: int) -> tuple[list[list[str]], list[int], bool]:
    """Rows, the width of each column, and whether keys were shown without :data:`VALUE_SUFFIX`: when the
    key column leaves the other columns too little room, the suffix is left out of its keys; a key is never
    cut otherwise (a row that still does not fit overflows whole, for the terminal to wrap). Prose columns
    are limited to what is left of ``width`` (at least 12)."""
    columns = shown_columns(table)
    rows = [list(row) for row in zip(*columns)] if table.row_count() else []
    natural = [max(len(name), max(map(len, column), default=0)) for (name, _), column in zip(table.columns, columns)]
    free = [i for i, (name, _) in enumerate(table.columns) if name.lower() in _FREE_TEXT]
    key = next((i for i, (name, _) in enumerate(table.columns) if name.lower() in _KEY_COLUMNS), None)
    fixed = sum(w for i, w in enumerate(natural) if i != key and i not in free) + 2 * (len(natural) - 1)
    room = width - fixed - sum(min(natural[i], 28) for i in free)
    shortened = False
    if key is not None and natural[key] > room:
        short = without_value_suffix([r[key] for r in rows])
        if short is not None:
            for r, k in zip(rows, short):
                r[key] = k
            natural[key] = max([len(table.columns[key][0])] + [len(k) for k in short])
            shortened = True
    spare = max(0, width - fixed - (natural[key] if key is not None else 0))
    for i in free:
        natural[i] = min(natural[i], max(12, spare // len(free)))
    return rows, natural, shortened


def terminal_columns() -> int | None:
    """The width a table is laid out to: None on a pipe (plain text, nothing left out or wrapped); on a
    terminal (or with ``CKPT_FORCE_RICH=1``) ``COLUMNS`` when set, else the terminal's width, else 80 - the
    width rich lays the table out to."""
    if not _rich_mode(sys.stdout):
        return None
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return _terminal_width(sys.stdout) or 80


def laid_out_width(table: TextTable, width: int) -> int:
    """How wide the table is when laid out for a terminal ``width`` columns wide (:func:`_fit`: keys maybe
    without :data:`VALUE_SUFFIX`, prose columns wrapped), its header included."""
    _, widths, _ = _fit(table, width)
    return sum(widths) + 2 * (len(widths) - 1)


def without_columns(table: TextTable, names: Iterable[str]) -> TextTable:
    """``table`` without the columns named ``names`` (the same row styles); ``table`` itself when it has none
    of them."""
    drop = set(names)
    if not drop.intersection(name for name, _ in table.columns):
        return table
    keep = [i for i, (name, _) in enumerate(table.columns) if name not in drop]
    cells = table.cells()
    return TextTable.of_columns([table.columns[i] for i in keep], [list(cells[i]) for i in keep] if cells else [],
                                list(table.row_styles))


def columns_to_leave_out(table: TextTable, width: int | None, optional: Iterable[str], reserve: int = 0) -> list[str]:
    """The fewest of the ``optional`` columns, taken in that order, to leave out so that the table laid out
    for a terminal ``width`` columns wide (with ``reserve`` more columns beside it) fits; the key column is
    never among them and never cut. Nothing on a pipe (``width`` None); every optional column when even that
    does not make it fit (a row then overflows whole, for the terminal to wrap)."""
    if width is None or not table.row_count():
        return []
    out: list[str] = []
    trial = table
    for name in [None, *optional]:
        if name is not None:
            out.append(name)
            trial = without_columns(trial, [name])
        if laid_out_width(trial, width) + reserve <= width:
            return out
    return out


def _layout(table: TextTable, width: int) -> list[tuple[str, str | None]]:
    """The table as lines of text (with a style each): columns two spaces apart, prose columns wrapped to
    their width, every other cell whole."""
    import textwrap

    rows, widths, shortened = _fit(table, width)
    free = {i for i, (name, _) in enumerate(table.columns) if name.lower() in _FREE_TEXT}
    header = [name for name, _ in table.columns]
    out: list[tuple[str, str | None]] = []
    for row, style in [(header, "bold"), *zip(rows, table.row_styles)]:
        cells = [textwrap.wrap(c, widths[i], break_on_hyphens=False) or [""] if i in free else [c]
                 for i, c in enumerate(row)]
        for n in range(max(len(c) for c in cells)):
            parts = [(c[n] if n < len(c) else "").rjust(w) if just == "right" else (c[n] if n < len(c) else "").ljust(w)
                     for c, w, (_, just) in zip(cells, widths, table.columns)]
            out.append(("  ".join(parts).rstrip(), style))
    if shortened:
        out.append((SUFFIX_NOTE, None))
    return out


def _emit_rich(table: TextTable | None, lines: list[list[Segment]], stderr: bool) -> None:
    from rich.text import Text

    from .common import console

    out = console(stderr=stderr)
    if table is not None and table.row_count():
        for row, style in _layout(table, out.width):
            out.print(Text(row, style=(style or "") if use_color() else ""), soft_wrap=True)
    for line in lines:
        text = Text()
        for chunk, part_style in line:
            text.append(chunk, style=part_style if use_color() else None)
        out.print(text, soft_wrap=True)
