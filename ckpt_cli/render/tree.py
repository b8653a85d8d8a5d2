"""Rendering of ``ckpt ls --tree``: one row per object or tensor, drawn as a tree, then a summary line.

A row with a dtype shows that tensor's own size and parameters; a row without one (an
object holding others) shows the totals of everything under it.
"""
from __future__ import annotations


from .common import human_bytes, shape_text
from .table import (Segment, TextTable, columns_to_leave_out, emit, laid_out_width, plain_table, terminal_columns,
                    without_columns)

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

BRANCH, LAST, PIPE, SPACE = "├── ", "└── ", "│   ", "    "


def tree_prefix(flags: tuple[bool, ...]) -> str:
    """The drawing before a row at depth ``len(flags) - 1`` (top-level rows have none)."""
    if len(flags) <= 1:
        return ""
    return "".join(SPACE if last else PIPE for last in flags[1:-1]) + (LAST if flags[-1] else BRANCH)


def tree_table(tree: Any) -> TextTable:
    """The tree as a TextTable: object, dtype, shape, size, params, note."""
    table = TextTable([("object", "left"), ("dtype", "left"), ("shape", "left"), ("size", "right"),
                       ("params", "right"), ("note", "left")])
    for _, flags, node in tree.root.walk():
        table.add_row(tree_prefix(flags) + node.label, *_cells(node), style=_style(node))
    return table


def _cells(node: Any) -> list[str]:
    """A node's dtype, shape, size, params and note cells."""
    own = node.key is not None
    nbytes = node.own_nbytes if own else node.nbytes
    params = node.own_parameters if own else node.parameters
    note = node.note
    if node.aliases:
        note = "; ".join(filter(None, [note, "also: " + ", ".join(node.aliases)]))
    return [node.dtype or "", shape_text(node.shape) if own and node.shape is not None else "",
            human_bytes(nbytes), f"{params:,}", note]


def _style(node: Any) -> str | None:
    if node.role in ("slot", "optimizer") or node.note.startswith("optimizer"):
        return "dim"
    return None if node.key is not None else "bold"


def render_tree(tree: Any) -> None:
    """Print the tree table and a summary line like ``ckpt ls``'s; on a terminal too narrow for it,
    :func:`narrow_tree_lines`."""
    root = tree.root
    hidden = f" shown of {root.tensors + tree.hidden}" if tree.hidden else ""
    facts = (f": {tree.format}, {root.tensors} tensors{hidden}, {root.parameters:,} parameters, "
             f"{human_bytes(root.nbytes)}")
    table = tree_table(tree)
    summary = [(tree.path, "bold"), (facts, None)]
    width = terminal_columns()
    if width is not None and table.rows and laid_out_width(table, width) > width:
        emit(None, [*narrow_tree_lines(tree, table, width), summary])
        return
    emit(table if table.rows else None, [summary])


TREE_LEAVE_OUT = ("params", "size")
"""The columns of the tree a terminal too narrow for them goes without, first to last."""


def narrow_tree_lines(tree: Any, table: TextTable, width: int) -> list[list[Segment]]:
    """The tree laid out for a terminal ``width`` columns wide, as styled lines: a note that does not fit
    beside its row goes under it (wrapped between words, the tree's lines drawn on beside it), then the
    columns of :data:`TREE_LEAVE_OUT` are left out while the rows do not fit, with a line naming them. An
    object's name is never cut (a row still too wide is written whole, for the terminal to wrap)."""
    import textwrap

    notes = [row[-1] for row in table.rows]
    bare = without_columns(table, ["note"])
    left_out = columns_to_leave_out(bare, width, TREE_LEAVE_OUT)
    rows = plain_table(without_columns(bare, left_out))
    at = max(map(len, rows)) + len("  ")
    out: list[list[Segment]] = [[(rows[0] + "  note" if at + len("note") <= width else rows[0], "bold")]]
    nodes = (entry for entry in tree.root.walk())
    for row, note, style, (_, flags, node) in zip(rows[1:], notes, table.row_styles, nodes):
        if not note or at + len(note) <= width:
            out.append([((row.ljust(at) + note) if note else row, style)])
            continue
        out.append([(row, style)])
        under = "".join(SPACE if last else PIPE for last in flags[1:]) + (PIPE if node.children else SPACE)
        for part in textwrap.wrap(note, max(20, width - len(under)), break_long_words=False,
                                  break_on_hyphens=False):
            out.append([(under + part, style)])
    if left_out:
        out.append([(f"(not shown: {' and '.join(left_out)})", None)])
    return out
