"""Rendering of ``ckpt ls --tree``: one row per object or tensor, drawn as a tree, then a summary line.

A row with a dtype shows that tensor's own size and parameters; a row without one (an
object holding others) shows the totals of everything under it.
"""
from __future__ import annotations

from typing import Any

from .common import human_bytes, shape_text
from .table import TextTable, emit

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
        own = node.key is not None
        nbytes = node.own_nbytes if own else node.nbytes
        params = node.own_parameters if own else node.parameters
        note = node.note
        if node.aliases:
            note = "; ".join(filter(None, [note, "also: " + ", ".join(node.aliases)]))
        table.add_row(tree_prefix(flags) + node.label, node.dtype or "",
                      shape_text(node.shape) if own and node.shape is not None else "",
                      human_bytes(nbytes), f"{params:,}", note,
                      style=_style(node))
    return table


def _style(node: Any) -> str | None:
    if node.role in ("slot", "optimizer") or node.note.startswith("optimizer"):
        return "dim"
    return None if node.key is not None else "bold"


def render_tree(tree: Any) -> None:
    """Print the tree table and a summary line like ``ckpt ls``'s."""
    root = tree.root
    hidden = f" shown of {root.tensors + tree.hidden}" if tree.hidden else ""
    facts = (f": {tree.format}, {root.tensors} tensors{hidden}, {root.parameters:,} parameters, "
             f"{human_bytes(root.nbytes)}")
    table = tree_table(tree)
    emit(table if table.rows else None, [[(tree.path, "bold"), (facts, None)]])
