"""A table and styled lines as plain data, printed by rich on a terminal and as plain text elsewhere.

Output on a pipe is for scripts: no colour, no wrapping, and no need to import rich
(which keeps ``ckpt ls | grep`` fast to start).
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any

from .common import safe_text, use_color

Segment = tuple[str, str | None]  # (text, rich style or None)


@dataclass
class TextTable:
    """Columns (name, justify) and rows of plain strings; ``row_styles`` optionally colour whole rows."""

    columns: list[tuple[str, str]]
    rows: list[list[str]] = field(default_factory=list)
    row_styles: list[str | None] = field(default_factory=list)

    def add_row(self, *cells: str, style: str | None = None) -> None:
        """Append one row of cells (as many as there are columns)."""
        self.rows.append(list(cells))
        self.row_styles.append(style)


def _rich_mode(stream: Any) -> bool:
    return bool(stream.isatty()) or os.environ.get("CKPT_FORCE_RICH") == "1"


def plain_table(table: TextTable) -> list[str]:
    """The table as aligned text lines (two spaces between columns, no trailing blanks)."""
    header = [name for name, _ in table.columns]
    columns = list(zip(header, *table.rows)) if table.rows else [(h,) for h in header]
    widths = [max(map(len, column)) for column in columns]
    spec = "  ".join(f"{{:{'>' if just == 'right' else '<'}{w}}}" for (_, just), w in zip(table.columns, widths))
    return [spec.format(*row).rstrip() for row in [header, *table.rows]]


def emit(table: TextTable | None = None, lines: list[list[Segment]] | None = None, stderr: bool = False) -> None:
    """Print ``table`` then ``lines`` to stdout (or stderr): rich on a terminal, plain text otherwise."""
    stream = sys.stderr if stderr else sys.stdout
    if not _rich_mode(stream):
        out = [] if table is None else plain_table(table)
        out += ["".join(text for text, _ in line) for line in lines or []]
        if out:
            stream.write(safe_text("\n".join(out) + "\n"))
        return
    _emit_rich(table, lines or [], stderr)


def _emit_rich(table: TextTable | None, lines: list[list[Segment]], stderr: bool) -> None:
    from rich.table import Table
    from rich.text import Text

    from .common import console

    out = console(stderr=stderr)
    if table is not None and table.rows:
        rich_table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
        for name, justify in table.columns:
            rich_table.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
        for row, style in zip(table.rows, table.row_styles):
            rich_table.add_row(*map(safe_text, row), style=style if use_color() else None)
        out.print(rich_table)
    for line in lines:
        text = Text()
        for chunk, style in line:
            text.append(safe_text(chunk), style=style if use_color() else None)
        out.print(text, soft_wrap=True)
