"""Rendering of ``ckpt report``: the line saying what was written (the page itself is
:meth:`formats.ops.report.result.Report.to_html`, which Jupyter shows too)."""
from __future__ import annotations


from .common import human_bytes
from .table import emit

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any


def _what(report: Any) -> str:
    if report.summary is not None:
        s = report.summary
        if report.kind == "diff":
            return (f"summary: {s.changed} changed, {s.only_in_a} only in A, {s.only_in_b} only in B, {s.same} same; "
                    f"{s.keys.packed} of {s.keys.total} keys searchable")
        if report.kind == "run":
            return f"summary of {s.tensors} variables, {len(s.flagged)} held NaN/Inf"
        return f"summary of {s.tensors} tensors, {len(s.flagged)} with NaN/Inf/unreadable"
    if report.kind == "checkpoint":
        return f"{len(report.checkpoint.variables)} tensors"
    if report.kind == "diff":
        d = report.diff
        return f"{len(d.pairs)} changed, {len(d.only_in_a)} only in A, {len(d.only_in_b)} only in B, {d.same} same"
    t = report.run.trend
    return f"{len(t.checkpoints)} checkpoints, {len(t.variables)} variables"


def render_report_written(report: Any, out: str, nbytes: int) -> None:
    """``wrote OUT: checkpoint report (34 tensors), 107 KiB``."""
    emit(None, [[("wrote ", None), (out, "bold"), (f": {report.kind} report ({_what(report)}), {human_bytes(nbytes)}",
                                                    None)]])
