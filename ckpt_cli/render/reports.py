"""Rendering of check reports (``verify``)."""
from __future__ import annotations

from typing import Any

from .common import human_bytes
from .table import emit


def render_verify(report: Any) -> None:
    """What was checked, then each problem on its own line."""
    files = len(report.files)
    checked = (f": {report.format}, checked {report.tensors} tensors, {human_bytes(report.bytes)} in {files} "
               f"file{'s' if files != 1 else ''}")
    if report.ok:
        emit(lines=[[("ok ", "green"), (report.path, "bold"), (checked, None)]])
        return
    lines = [[("problem ", "red"), (f"{p.where}: {p.message}", None)] for p in report.problems]
    count = len(report.problems)
    lines.append([(f"{count} problem{'s' if count != 1 else ''} ", "red"), (report.path, "bold"), (checked, None)])
    emit(lines=lines)
