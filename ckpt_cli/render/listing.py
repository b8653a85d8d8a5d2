"""Rendering of ``ckpt ls`` results: a tensor table for a checkpoint, a row per checkpoint for a directory."""
from __future__ import annotations

import operator
import os
import sys
from itertools import repeat

from .common import human_bytes, json_text, shape_text, shown, write_json
from .table import Segment, TextTable, emit, emit_rows

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from formats.core.compact_listing import CompactListing


def render_tensor_table(summary: Any) -> None:
    """A table of key, dtype, shape, size (plus name and role when the rows have them), then one summary line."""
    names = any(row.name is not None for row in summary.rows)
    table = TextTable([("key", "left")] + ([("name", "left"), ("role", "left")] if names else [])
                      + [("dtype", "left"), ("shape", "left"), ("size", "right")])
    if names:
        table.rows = [[row.key, row.name or "", row.role or "", row.dtype, shape_text(row.shape), human_bytes(row.nbytes)]
                      for row in summary.rows]
    else:
        table.rows = [[row.key, row.dtype, shape_text(row.shape), human_bytes(row.nbytes)] for row in summary.rows]
    table.row_styles = [None] * len(table.rows)
    emit(table if summary.rows else None, _summary_line(summary))


def _summary_line(summary: Any) -> list[list[Segment]]:
    """The line under a tensor table: path, format, tensors, parameters, bytes, data files."""
    shown = f" shown of {summary.total_tensors}" if summary.tensors != summary.total_tensors else ""
    files = summary.data_files
    facts = (f": {summary.format}, {summary.tensors} tensors{shown}, {summary.parameters:,} parameters, "
             f"{human_bytes(summary.nbytes)}" + (f", {files} data file{'s' if files != 1 else ''}" if files else ""))
    return [[(summary.path, "bold"), (facts, None)]]


def render_compact_table(listing: CompactListing) -> None:
    """What :func:`render_tensor_table` prints for the same tensors, written a block of rows at a time
    (the rows are never all held as text, keys escaped as :func:`~.common.shown` escapes them); on a
    terminal where rich would lay the table out, through :func:`render_tensor_table`."""
    lines = _summary_line(listing)
    if not listing.tensors:
        emit(None, lines)
        return
    used = listing.used_kinds()
    texts = {k: (k.dtype, shape_text(k.shape), human_bytes(k.nbytes)) for k in used}
    widths = [max(len(name), *(len(t[i]) for t in texts.values())) for i, name in enumerate(("dtype", "shape", "size"))]
    wd, ws, wz = widths
    rests = [f"  {t[0]:<{wd}}  {t[1]:<{ws}}  {t[2]:>{wz}}" if t else "" for t in map(texts.get, listing.kinds)]
    blocks = listing.blocks
    wk = max(3, listing.key_width)
    if not listing.printable:  # keys holding a character to escape: their blocks escaped (the rest as they are)
        blocks = []
        for text, ids in listing.blocks:
            escaped = _shown_block(text)
            if escaped is not text:
                wk = max(wk, *map(len, escaped.split("\n")))
            blocks.append((escaped, ids))
    header = f"{'key':<{wk}}  {'dtype':<{wd}}  {'shape':<{ws}}  {'size':>{wz}}"

    def chunks() -> Iterator[str]:
        pad, rest = str.ljust, rests.__getitem__
        for text, ids in blocks:
            yield "\n".join(map(operator.add, map(pad, text.split("\n"), repeat(wk)), map(rest, ids)))

    ascii = listing.ascii and all(r.isascii() for r in rests)
    if not emit_rows(header, chunks(), len(header), ascii, lines):
        from formats.ops.inspect.summary import expand

        render_tensor_table(expand(listing))


def _shown_block(text: str) -> str:
    """A compact listing's block of keys (newline-separated) with each key as :func:`~.common.shown` shows it."""
    if text.replace("\n", " ").isprintable():
        return text
    return "\n".join(map(shown, text.split("\n")))


def print_listing_json(docs: list[Any]) -> None:
    """:func:`~ckpt_cli.render.common.print_json` of ``docs`` (one alone, else the list of them), a
    :class:`~formats.core.compact_listing.CompactListing` among them written a block of rows at a time as
    ``{"path", "format", "tensors": [{"key", "dtype", "shape", "nbytes"}, ...]}``, and a tree
    (:class:`~formats.ops.inspect.tree.CheckpointTree`) a row at a time as its ``to_json()``."""
    from formats.core.compact_listing import CompactListing

    one = len(docs) == 1
    indent = "" if one else "  "
    out = sys.stdout
    if not one:
        out.write("[\n")
    for i, doc in enumerate(docs):
        if i:
            out.write(",\n")
        if isinstance(doc, CompactListing):
            _write_compact_json(doc, indent)
        elif not isinstance(doc, (dict, list)):  # a tree (formats.ops.inspect.tree.CheckpointTree)
            from .tree import write_tree_json

            write_tree_json(doc, len(indent) // 2)
        else:
            out.write(indent)
            write_json(doc, len(indent) // 2)
    out.write("\n" if one else "\n]\n")


def _write_compact_json(listing: CompactListing, indent: str) -> None:
    from formats.core.json_writer import dumps, encode_basestring  # json's own, without importing json

    out = sys.stdout
    out.write(f'{indent}{{\n{indent}  "path": {json_text(listing.path)},\n{indent}  "format": {dumps(listing.format)},'
              f'\n{indent}  "tensors": ')
    if not listing.tensors:
        out.write(f"[]\n{indent}}}")
        return
    inner = indent + "    "

    def shape(dims: tuple[int, ...]) -> str:
        return "[]" if not dims else "[\n" + ",\n".join(f"{inner}    {d}" for d in dims) + f"\n{inner}  ]"

    tails = [f',\n{inner}  "dtype": {dumps(k.dtype, ensure_ascii=False)},\n{inner}  "shape": {shape(k.shape)},'
             f'\n{inner}  "nbytes": {k.nbytes}\n{inner}}}' for k in listing.kinds]
    head = f'{inner}{{\n{inner}  "key": '
    out.write("[\n")
    for i, (text, ids) in enumerate(listing.blocks):
        if i:
            out.write(",\n")
        keys = map(head.__add__, map(encode_basestring, text.split("\n")))
        out.write(",\n".join(map(operator.add, keys, map(tails.__getitem__, ids))))
    out.write(f"\n{indent}  ]\n{indent}}}")


def render_directory_table(path: str, infos: list[Any], below: int = 0) -> None:
    """One row per checkpoint: prefix, save (the number in its name), step (its own step variable's value,
    ``-`` when it has none), format, tensors, size, modified, and ``latest`` (the state file's latest),
    ``error: ...`` or both (``latest; error: ...``); ``below``: the checkpoints in its subdirectories, named in
    the summary line when there are none in it."""
    import datetime as _dt

    table = TextTable([("checkpoint", "left"), ("save", "right"), ("step", "right"), ("format", "left"),
                       ("tensors", "right"), ("size", "right"), ("modified", "left"), ("", "left")])
    for info in infos:
        mark = "; ".join(m for m in ("latest" if info.latest else "", f"error: {info.error}" if info.error else "") if m)
        modified = _dt.datetime.fromtimestamp(info.mtime).strftime("%Y-%m-%d %H:%M") if info.mtime else ""
        table.add_row(_relative(info.path, path), "" if info.step is None else str(info.step),
                      "-" if info.own_step is None else str(info.own_step), info.format,
                      str(info.tensors), human_bytes(info.nbytes), modified, mark,
                      style="red" if info.error else ("green" if info.latest else None))
    count = f": {len(infos)} checkpoint{'s' if len(infos) != 1 else ''}"
    if below:
        count += f" ({below} in its subdirectories: `ckpt ls -r` lists them)"
    emit(table if infos else None, [[(path, "bold"), (count, None)]])


def _relative(target: str, root: str) -> str:
    rel = os.path.relpath(target, root)
    return target if rel.startswith("..") else rel
