"""Rendering of conversion plans (``convert``, ``rename``): the mapping table, the problems, a summary."""
from __future__ import annotations


from .common import shape_text
from .reports import written_lines
from .table import Segment, TextTable, emit

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def render_conversion(result: Any) -> None:
    """Dry run: every row; always: every problem (errors first), then what was written (or a summary)."""
    plan = result.plan
    table = None
    if result.dry_run:
        table = _plan_table(plan)
        emit(table)
    if plan.problems:
        if table is not None:
            emit(lines=[[("", None)]])
        emit(problems_table(plan.problems))
    emit(lines=_summary(result))


def problems_table(problems: list[Any]) -> TextTable:
    """A plan's problems, errors first: severity, kind, key, detail, candidates."""
    table = TextTable([("", "left"), ("PROBLEM", "left"), ("KEY", "left"), ("DETAIL", "left"), ("CANDIDATES", "left")])
    for p in sorted(problems, key=lambda p: p.severity != "error"):
        table.add_row(p.severity, p.kind, p.key, p.message, "; ".join(p.candidates) or "-",
                      style="red" if p.severity == "error" else "yellow")
    return table


def _plan_table(plan: Any) -> TextTable:
    """Every row: source -> key, shape, dtype, the transform (when any row has one), the note."""
    transforms = any(row.transform for row in plan.rows)
    columns = [("SOURCE", "left"), ("KEY", "left"), ("SHAPE", "left"), ("DTYPE", "left")]
    table = TextTable(columns + ([("TRANSFORM", "left")] if transforms else []) + [("NOTE", "left")])
    for row in plan.rows:
        cells = [row.source if row.source is not None else "-", row.key, shape_text(row.shape), row.dtype]
        table.add_row(*cells, *([row.transform or "-"] if transforms else []), row.note)
    return table


def _summary(result: Any) -> list[list[Segment]]:
    plan = result.plan
    errors, warnings = len(plan.errors), len(plan.warnings)
    counts = f"{errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}"
    if plan.transformed:
        counts = f"{plan.transformed} transformed; {counts}"
    if errors:
        return [[(counts, "red"), ("; nothing written", None)]]
    tensors = len(plan.rows) + (plan.object_graph is not None)
    if result.dry_run or result.written is None:
        return [[("dry run", "bold"), (f": {tensors} tensors would be written ({plan.target}); {counts}", None)]]
    extra = f"; {result.state_file} updated" if result.state_file else ""
    extra += f"; {counts}" if warnings or plan.transformed else ""
    return written_lines(result.written, extra)
