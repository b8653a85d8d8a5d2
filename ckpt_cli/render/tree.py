"""Rendering of ``ckpt ls --tree``: one row per object or tensor, drawn as a tree, then a summary line.

A row with a dtype shows that tensor's own size and parameters; a row without one (an
object holding others) shows the totals of everything under it.
"""
from __future__ import annotations

from formats.core.gc_pause import gc_paused

from .common import human_bytes, shape_text
from .table import (Segment, TextTable, columns_to_leave_out, emit, laid_out_width, plain_table, terminal_columns,
                    without_columns)

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

BRANCH, LAST, PIPE, SPACE = "├── ", "└── ", "│   ", "    "


def write_tree_json(tree: Any, level: int = 0) -> None:
    """Write ``tree.to_json()`` as :func:`~.common.json_text` writes it, nested ``level`` containers deep (each
    line after the first indented two spaces a level), without making it: each row's document is made, written
    and let go as the rows are walked (the documents of a 100,000-tensor tree and their text held some 400 MB).
    No newline after it."""
    import sys

    from .common import part_encoder

    write, text = sys.stdout.write, part_encoder()

    head, indent = text(tree.head_json(), level), "  " * level
    write(f'{indent}{head[:-len(indent) - 2]},\n{indent}  "tree": ')  # (its closing line left off)
    rows = tree.root.children
    if not rows:
        write(f"[]\n{indent}}}")
        return
    parts: list[str] = ["[\n"]
    stack: list[tuple[Any, int, int]] = [(rows, 0, level + 2)]  # (rows, the next one, their level)
    while stack:
        rows, i, at = stack.pop()
        if i == len(rows):  # the list, and the document it is the last field of
            parts.append(f"\n{'  ' * (at - 1)}]\n{'  ' * (at - 2)}}}")
            continue
        if i:
            parts.append(",\n")
        stack.append((rows, i + 1, at))
        node = rows[i]
        row = text(node.own_json(), at)
        if node.children:  # its fields, then its rows
            parts.append(f'{"  " * at}{row[:-2 * at - 2]},\n{"  " * (at + 1)}"children": [\n')
            stack.append((node.children, 0, at + 2))
        else:
            parts.append("  " * at + row)
        if len(parts) >= 4096:
            write("".join(parts))
            parts.clear()
    write("".join(parts))


def tree_prefix(flags: tuple[bool, ...]) -> str:
    """The drawing before a row at depth ``len(flags) - 1`` (top-level rows have none)."""
    if len(flags) <= 1:
        return ""
    return "".join(SPACE if last else PIPE for last in flags[1:-1]) + (LAST if flags[-1] else BRANCH)


def drawn_rows(root: Any) -> tuple[list[str], list[Any], list[str]]:
    """Every row under ``root``, depth first: its label after the tree's drawing (:func:`tree_prefix` of the
    row), its node, and the drawing that continues under it (the lines of its ancestors)."""
    for part in drawn_parts(root, 0):
        return part
    return [], [], []


def drawn_parts(root: Any, size: int) -> Iterator[tuple[list[str], list[Any], list[str]]]:
    """:func:`drawn_rows`' rows ``size`` at a time (0: all at once), each part as its three lists. One string of
    drawing per row, built from its parent's (the drawing is not rebuilt from the row's depth); only the drawings
    of the rows still to come, and of the part's, are held."""
    stack = [("", "", node) for node in reversed(root.children)]
    labels: list[str] = []
    nodes: list[Any] = []
    under: list[str] = []
    while stack:
        prefix, indent, node = stack.pop()
        labels.append(prefix + node.label)
        nodes.append(node)
        under.append(indent)
        kids = node.children
        if kids:
            stack.append((indent + LAST, indent + SPACE, kids[-1]))
            branch, pipe = indent + BRANCH, indent + PIPE
            stack.extend([(branch, pipe, kid) for kid in reversed(kids[:-1])])
        if len(labels) == size:
            yield labels, nodes, under
            labels, nodes, under = [], [], []
    if labels:
        yield labels, nodes, under


def tree_table(tree: Any) -> TextTable:
    """The tree as a TextTable: object, dtype, shape, size, params, note; built a column at a time."""
    labels, nodes, _ = drawn_rows(tree.root)
    return _table(labels, nodes)


def _table(labels: list[str], nodes: list[Any]) -> TextTable:
    """The rows of ``nodes`` (a row's own tensor, or the totals of an object holding others)."""
    styles: list[str | None] = [
        "dim" if node.own[2] in _DIM_ROLES or node.note.startswith("optimizer") else None if node.key is not None
        else "bold" for node in nodes]
    return TextTable.of_columns(TREE_COLUMNS, _cells(labels, nodes), styles)


TREE_COLUMNS = [("object", "left"), ("dtype", "left"), ("shape", "left"), ("size", "right"), ("params", "right"),
                ("note", "left")]
"""The columns of the tree (name, justify)."""


def _cells(labels: list[str], nodes: list[Any]) -> list[list[str]]:
    """The cells of ``nodes``' rows (:data:`TREE_COLUMNS`), a column at a time. Rows say the same facts (shared
    tuples: :class:`~formats.ops.inspect.tree.TreeNode`), so the texts of each distinct ``(own, facts)`` are made
    once and looked up for the others."""
    own = [node.key is not None for node in nodes]
    facts = [node.own if mine else node.sums for mine, node in zip(own, nodes)]  # (a row's own, or its totals)
    dtypes = [node.own[0] or "" for node in nodes]
    pairs = list(zip(own, facts))
    try:
        texts = {pair: _texts(*pair) for pair in set(pairs)}
    except TypeError:  # (a shape given as a list by some reader: each row's own texts)
        shapes, sizes, params = map(list, zip(*[_texts(*pair) for pair in pairs])) if pairs else ([], [], [])
    else:
        shapes, sizes, params = map(list, zip(*map(texts.__getitem__, pairs))) if pairs else ([], [], [])
    notes = [_note(node) if node.aliases else node.note for node in nodes]
    return [labels, dtypes, shapes, sizes, params, notes]


def _texts(mine: bool, fact: tuple) -> tuple[str, str, str]:
    """The shape, size and params cells of a row that shows its own tensor's facts (``mine``) or its subtree's."""
    if mine:
        shape = fact[1]
        text = "" if shape is None else shape_text(shape if type(shape) is tuple else tuple(shape))  # (memo: hashed)
        return text, human_bytes(fact[3]), f"{fact[4]:,}"
    return "", human_bytes(fact[0]), f"{fact[1]:,}"


ROWS_PER_PART = 4096
"""Rows of a long tree drawn and formatted at a time on a pipe (:func:`~.table.packed_table`)."""


def _emit_packed(root: Any, lines: list[list[Segment]]) -> None:
    """Print the tree under ``root`` and ``lines`` on a pipe as :func:`~.table.emit` prints them, its rows drawn
    and formatted :data:`ROWS_PER_PART` at a time and held packed: no string per row and cell, nor the drawing
    under each row, is held for the whole tree (a 100,000-tensor tree: about 40 MB less)."""
    from .table import emit_rows, packed_table

    parts = (_cells(labels, nodes) for labels, nodes, _ in drawn_parts(root, ROWS_PER_PART))
    header, chunks, ascii = packed_table(TREE_COLUMNS, parts)
    written = emit_rows(header, chunks, len(header), ascii, lines)
    assert written  # (on a pipe emit_rows writes whatever the rows are)


_DIM_ROLES = ("slot", "optimizer")
"""Rows of these roles (and of an optimizer's objects) are drawn dim."""


def _note(node: Any) -> str:
    """A node's note, with its other paths."""
    return "; ".join(filter(None, [node.note, "also: " + ", ".join(node.aliases)]))


@gc_paused
def render_tree(tree: Any) -> None:
    """Print the tree table and a summary line like ``ckpt ls``'s; on a terminal too narrow for it,
    :func:`narrow_tree_lines`."""
    root = tree.root
    hidden = f" shown of {root.tensors + tree.hidden}" if tree.hidden else ""
    facts = (f": {tree.format}, {root.tensors} tensors{hidden}, {root.parameters:,} parameters, "
             f"{human_bytes(root.nbytes)}")
    summary = [(tree.path, "bold"), (facts, None)]
    width = terminal_columns()
    if width is None and root.children:  # a pipe: the rows a few thousand at a time
        _emit_packed(root, [summary])
        return
    labels, nodes, under = drawn_rows(root)
    table = _table(labels, nodes)
    if width is not None and table.row_count() and laid_out_width(table, width) > width:
        emit(None, [*narrow_tree_lines(tree, table, width, (nodes, under)), summary])
        return
    emit(table if table.row_count() else None, [summary])


TREE_LEAVE_OUT = ("params", "size")
"""The columns of the tree a terminal too narrow for them goes without, first to last."""


def narrow_tree_lines(tree: Any, table: TextTable, width: int,
                      drawn: tuple[list[Any], list[str]] | None = None) -> list[list[Segment]]:
    """The tree laid out for a terminal ``width`` columns wide, as styled lines: a note that does not fit
    beside its row goes under it (wrapped between words, the tree's lines drawn on beside it), then the
    columns of :data:`TREE_LEAVE_OUT` are left out while the rows do not fit, with a line naming them. An
    object's name is never cut (a row still too wide is written whole, for the terminal to wrap). ``drawn``:
    the rows' nodes and drawings under them, as :func:`drawn_rows` gives them (found again when not given)."""
    import textwrap

    notes = [row[-1] for row in table.rows]
    bare = without_columns(table, ["note"])
    left_out = columns_to_leave_out(bare, width, TREE_LEAVE_OUT)
    rows = plain_table(without_columns(bare, left_out))
    at = max(map(len, rows)) + len("  ")
    out: list[list[Segment]] = [[(rows[0] + "  note" if at + len("note") <= width else rows[0], "bold")]]
    nodes, drawings = drawn if drawn is not None else drawn_rows(tree.root)[1:]
    for row, note, style, node, drawing in zip(rows[1:], notes, table.row_styles, nodes, drawings):
        if not note or at + len(note) <= width:
            out.append([((row.ljust(at) + note) if note else row, style)])
            continue
        out.append([(row, style)])
        under = drawing + (PIPE if node.children else SPACE)
        for part in textwrap.wrap(note, max(20, width - len(under)), break_long_words=False,
                                  break_on_hyphens=False):
            out.append([(under + part, style)])
    if left_out:
        out.append([(f"(not shown: {' and '.join(left_out)})", None)])
    return out
