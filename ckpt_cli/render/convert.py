"""Rendering of conversion plans (``convert``, ``rename``): the mapping table, the problems, a summary."""
from __future__ import annotations

from formats.core.gc_pause import gc_paused

from .common import shape_text
from .reports import written_lines
from .table import Segment, TextTable, emit

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@gc_paused
def render_conversion(result: Any, changed_only: bool = False, verbose: bool = False) -> None:
    """Dry run: every row (with ``changed_only``, those whose key changes, and how many were left out);
    always: every problem, one line each (:func:`problem_lines`), then what was written (or a summary). A
    plan's errors, and then its summary ("nothing written"), go to stderr, as every other error of ckpt
    (:func:`emit_problems`); its warnings are part of the report, on stdout."""
    plan = result.plan
    table = None
    if result.dry_run:
        rows = [r for r in plan.rows if r.source != r.key or r.transform] if changed_only else plan.rows
        table = _plan_table(plan, rows)
        hidden = len(plan.rows) - len(rows)
        emit(table if rows else None, [[(f"{hidden} unchanged tensor{'s' * (hidden != 1)} not shown (--all lists "
                                         "them)", None)]] if hidden else None)
    if plan.problems and table is not None:
        emit(lines=[[("", None)]])
    emit_problems(plan.problems, verbose, errors_to_stderr=True)
    emit(lines=_summary(result), stderr=bool(plan.errors))


def emit_problems(problems: list[Any], verbose: bool = False, errors_to_stderr: bool = False) -> None:
    """A plan's problems as :func:`problem_lines` words them, on stdout; with ``errors_to_stderr``, the warnings
    on stdout (part of the report) and the errors on stderr, as every other error of ckpt."""
    if not errors_to_stderr:
        if problems:
            emit(lines=problem_lines(problems, verbose))
        return
    warnings = [p for p in problems if p.severity != "error"]
    errors = [p for p in problems if p.severity == "error"]
    if warnings:
        emit(lines=problem_lines(warnings, verbose))
    if errors:
        emit(lines=problem_lines(errors, verbose), stderr=True)


INLINE = 3
"""Without --verbose, an error names up to this many candidates on its line."""
COLLAPSE = 6
"""Without --verbose, up to this many warnings of one kind get a line each (more are one line: how many, and the
first): a handful of different reasons (what of the source and of the template is left out, and why) each stay
visible, while fifty pairings by shape do not bury the errors."""


def problem_lines(problems: list[Any], verbose: bool = False) -> list[list[Segment]]:
    """A plan's problems, errors first, one line each: ``error: KIND: KEY: DETAIL``, keys whole (never cut to
    a column). With ``verbose``, every problem and, one per line under it, the keys behind it (an error's
    candidates, the tensors a warning is about). Without it, an error names up to :data:`INLINE` candidates
    inline, more than :data:`COLLAPSE` warnings of one kind are one line, and a last line says that
    ``--verbose`` lists what was left out."""
    errors = [p for p in problems if p.severity == "error"]
    warnings: dict[str, list[Any]] = {}
    for p in problems:
        if p.severity != "error":
            warnings.setdefault(p.kind, []).append(p)
    lines: list[list[Segment]] = []
    hidden = False
    for p in errors + [w for group in warnings.values() for w in group]:
        group = warnings.get(p.kind, []) if p.severity != "error" else [p]
        if not verbose and len(group) > COLLAPSE:
            if p is group[0]:
                lines.append(_problem_line(p, f"{len(group)} keys like {p.key}: {p.message}"))
            hidden = True
            continue
        inline = p.severity == "error" and len(p.candidates) <= INLINE
        text = f"{p.key}: {p.message}"
        if p.candidates and inline and not verbose:
            text += f" (candidates: {'; '.join(p.candidates)})"
        hidden = hidden or bool(p.candidates and not inline and not verbose)
        lines.append(_problem_line(p, text))
        if verbose:
            lines += [[(f"    {c}", None)] for c in p.candidates]
    if hidden:
        lines.append([("--verbose (or --json) lists every problem and the keys behind each", None)])
    return lines


def _problem_line(problem: Any, text: str) -> list[Segment]:
    return [(problem.severity, "red" if problem.severity == "error" else "yellow"), (f": {problem.kind}: {text}", None)]


def _plan_table(plan: Any, rows: list[Any]) -> TextTable:
    """The ``rows`` of a plan: source -> key, shape, dtype, the transform (when any row has one), the note."""
    transforms = any(row.transform for row in plan.rows)
    columns = [("SOURCE", "left"), ("KEY", "left"), ("SHAPE", "left"), ("DTYPE", "left")]
    cells = [["-" if row.source is None else row.source for row in rows], [row.key for row in rows],
             [shape_text(row.shape) for row in rows], [row.dtype for row in rows]]
    if transforms:
        cells.append([row.transform or "-" for row in rows])
    cells.append([row.note for row in rows])
    return TextTable(columns + ([("TRANSFORM", "left")] if transforms else []) + [("NOTE", "left")],
                     list(map(list, zip(*cells))))


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
