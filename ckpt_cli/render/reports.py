"""Rendering of check reports (``verify``) and of write reports (every command that writes)."""
from __future__ import annotations


from .common import human_bytes
from .table import Segment, emit

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any


def render_verify(report: Any) -> None:
    """What was checked, then each problem on its own line."""
    files = len(report.files)
    checked = (f": {report.format}, checked {report.tensors} tensors, {human_bytes(report.bytes)} in {files} "
               f"file{'s' if files != 1 else ''}")
    refused = "loader refusal (allowed) " if report.refusals_allowed else "loader refusal "
    lines = [[(refused, "yellow" if report.refusals_allowed else "red"), (f"{p.where}: {p.message}", None)]
             for p in report.loader_refusals]
    if report.ok:
        emit(lines=[*lines, [("ok ", "green"), (report.path, "bold"), (checked, None)]])
        return
    lines += [[("problem ", "red"), (f"{p.where}: {p.message}", None)] for p in report.problems]
    count = len(report.problems) + (0 if report.refusals_allowed else len(report.loader_refusals))
    lines.append([(f"{count} problem{'s' if count != 1 else ''} ", "red"), (report.path, "bold"), (checked, None)])
    emit(lines=lines)


def written_lines(report: Any, extra: str = "") -> list[list[Segment]]:
    """A :class:`formats.io.writing.WriteReport` as lines: one note per warning, then
    ``wrote PATH: N tensors, SIZE (FORMAT), verified`` (``extra`` appended)."""
    lines: list[list[Segment]] = [[("note ", "yellow"), (w, None)] for w in report.warnings]
    n = report.tensors
    text = (f": {n} tensor{'s' if n != 1 else ''}, {human_bytes(report.bytes)} ({report.format}), "
            + ("verified" if report.verified else "not verified") + extra)
    lines.append([("wrote ", "green"), (report.path, "bold"), (text, None)])
    return lines


def render_written(report: Any) -> None:
    """Print a write report (see :func:`written_lines`)."""
    emit(lines=written_lines(report))
