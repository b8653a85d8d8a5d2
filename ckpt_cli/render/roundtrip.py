"""Rendering of round-trip comparisons (``verify OUT --against SRC``)."""
from __future__ import annotations


from .common import human_bytes
from .table import TextTable, emit

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any


def render_roundtrip(report: Any) -> None:
    """One row per mismatch (key, kind, detail), then a summary line."""
    summary = f" {report.path} against {report.against}: {report.tensors} tensors, {human_bytes(report.bytes)} compared"
    if report.ok:
        emit(lines=[[("same", "green"), (summary, None)]])
        return
    table = TextTable([("KEY", "left"), ("DIFFERENCE", "left"), ("DETAIL", "left")])
    for m in report.mismatches:
        table.add_row(m.key, m.kind, m.message, style="red")
    count = len(report.mismatches)
    emit(table, lines=[[(f"{count} difference{'s' if count != 1 else ''}", "red"), (summary, None)]])
