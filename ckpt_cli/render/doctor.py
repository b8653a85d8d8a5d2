"""``ckpt doctor``'s report on a terminal."""
from __future__ import annotations

from .common import shape_text
from .table import TextTable, emit

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any


def render_doctor(report: Any, written: Any) -> None:
    """``ckpt doctor``'s table of mismatched, missing and unexpected variables, suggestions and verdict."""
    have, want = report.ckpt_entries, report.target_entries
    table = TextTable([("variable", "left"), ("problem", "left"), ("checkpoint", "left"), ("target", "left")])
    for n in report.mismatched:
        a, b = report.ckpt_entry(n), want[n]
        table.add_row(n, "shape" if a.shape != b.shape else "dtype", f"{a.dtype} {shape_text(a.shape)}",
                      f"{b.dtype} {shape_text(b.shape)}", style="red")
    for n in report.missing:
        table.add_row(n, "missing", "", f"{want[n].dtype} {shape_text(want[n].shape)}", style="red")
    for n in report.unexpected:
        table.add_row(n, "unexpected", f"{have[n].dtype} {shape_text(have[n].shape)}", "", style="yellow")
    lines = [[("suggest ", "cyan"), (f"{s.candidate} -> {s.missing} ({s.reason})", None)] for s in report.suggestions]
    lines += [[("note ", "yellow"), (note, None)] for note in report.notes]
    if written is not None:
        lines.append([("wrote ", "green"), (f"{written.path}: {len(report.rules)} rules, supplying "
                                            f"{report.fixed_by_rules} of {len(report.missing)} missing"
                                            + (", verified" if written.verified else ""), None)])
    verdict = ("would load", "green") if report.would_load else ("would NOT load", "red")
    by = f" (by {report.matched_by})" if report.matched_by != "name" else ""
    counts = (f"{by}: {len(report.missing)} missing, {len(report.mismatched)} mismatched, "
              f"{len(report.unexpected)} unexpected")
    lines.append([(f"{report.ckpt} ", "bold"), verdict, (f" into {report.target}{counts}", None)])
    emit(table if table.rows else None, lines)
