"""Rendering of ``ckpt ls`` results: a tensor table for a checkpoint, a row per checkpoint for a directory."""
from __future__ import annotations

import os

from .common import human_bytes, shape_text
from .table import TextTable, emit

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any


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
    shown = f" shown of {summary.total_tensors}" if summary.tensors != summary.total_tensors else ""
    files = summary.data_files
    facts = (f": {summary.format}, {summary.tensors} tensors{shown}, {summary.parameters:,} parameters, "
             f"{human_bytes(summary.nbytes)}" + (f", {files} data file{'s' if files != 1 else ''}" if files else ""))
    emit(table if summary.rows else None, [[(summary.path, "bold"), (facts, None)]])


def render_directory_table(path: str, infos: list[Any]) -> None:
    """One row per checkpoint: prefix, step, format, tensors, size, modified, latest."""
    import datetime as _dt

    table = TextTable([("checkpoint", "left"), ("step", "right"), ("format", "left"), ("tensors", "right"),
                       ("size", "right"), ("modified", "left"), ("", "left")])
    for info in infos:
        mark = f"error: {info.error}" if info.error else ("latest" if info.latest else "")
        modified = _dt.datetime.fromtimestamp(info.mtime).strftime("%Y-%m-%d %H:%M") if info.mtime else ""
        table.add_row(_relative(info.path, path), "" if info.step is None else str(info.step), info.format,
                      str(info.tensors), human_bytes(info.nbytes), modified, mark,
                      style="red" if info.error else ("green" if info.latest else None))
    count = f": {len(infos)} checkpoint{'s' if len(infos) != 1 else ''}"
    emit(table if infos else None, [[(path, "bold"), (count, None)]])


def _relative(target: str, root: str) -> str:
    rel = os.path.relpath(target, root)
    return target if rel.startswith("..") else rel
