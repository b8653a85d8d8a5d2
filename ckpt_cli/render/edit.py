"""Rendering of ``edit`` and ``average``: what happens to every key, the problems, the casts, a summary."""
from __future__ import annotations

from formats.core.gc_pause import gc_paused

from .convert import emit_problems
from .reports import written_lines
from .table import Segment, TextTable, emit

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any


@gc_paused
def render_edit(result: Any, verbose: bool = False) -> None:
    """Dry run: one row per input key; always: every problem (one line each, the keys behind it with
    ``verbose``; errors on stderr, as :func:`~ckpt_cli.render.convert.emit_problems` puts them), the lossy casts,
    then what was written (or, after errors, "nothing written" on stderr)."""
    plan = result.plan
    dry_run = result.conversion.dry_run
    if dry_run:
        emit(_actions_table(plan))
    if plan.problems:
        if dry_run:
            emit(lines=[[("", None)]])
        emit_problems(plan.problems, verbose, errors_to_stderr=True)
    if plan.conversion.errors:  # nothing written: the summary goes with the errors, to stderr
        emit(lines=_cast_lines(result))
        emit(lines=_summary(result), stderr=True)
    else:
        emit(lines=_cast_lines(result) + _summary(result))


def _actions_table(plan: Any) -> TextTable:
    """KEY, ACTION, (OUTPUT when some key changes), DTYPE, DETAIL."""
    renamed = any(a.output not in (None, a.key) for a in plan.actions)
    columns = [("KEY", "left"), ("ACTION", "left")] + ([("OUTPUT", "left")] if renamed else []) + \
              [("DTYPE", "left"), ("DETAIL", "left")]
    actions = plan.actions
    cells = [[a.key for a in actions], [a.action for a in actions]]
    if renamed:
        cells.append([a.output or "-" for a in actions])
    cells += [[a.dtype or "-" for a in actions], [a.detail or "-" for a in actions]]
    styles: list[str | None] = ["dim" if action == "drop" else None for action in cells[1]]
    return TextTable(columns, list(map(list, zip(*cells))), styles)


def _cast_lines(result: Any) -> list[list[Segment]]:
    """One line per lossy cast (FROM -> TO): how many tensors changed and the largest error of any."""
    lines: list[list[Segment]] = []
    pairs: dict[tuple[str, str], list[Any]] = {}
    for c in result.lossy_casts:
        pairs.setdefault((c.source_dtype, c.dtype), []).append(c)
    for (source, target), casts in pairs.items():
        worst = max(casts, key=lambda c: c.max_error)
        overflow = sum(c.overflow for c in casts)
        text = (f"{source} -> {target}: {len(casts)} tensor{'s' * (len(casts) != 1)} changed, largest error "
                f"{worst.max_error:.6g} (in {worst.key})")
        if overflow:
            text += f"; {overflow} value{'s' * (overflow != 1)} overflowed to infinity"
        lines.append([("lossy cast ", "yellow"), (text, None)])
    return lines


def _summary(result: Any) -> list[list[Segment]]:
    plan = result.plan
    counts = plan.counts()
    what = ", ".join(f"{counts[a]} {a}" for a in ("keep", "mean", "newest", "cast", "drop") if counts.get(a))
    errors, warnings = len(plan.conversion.errors), len(plan.conversion.warnings)
    issues = f"{errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}"
    files = max(plan.shards) + 1 if plan.shards else 1
    if errors:
        return [[(issues, "red"), ("; nothing written", None)]]
    if result.written is None:
        data = f", {files} data files" if files > 1 else ""
        return [[("dry run", "bold"), (f": {what} ({plan.target}{data}); {issues}", None)]]
    if plan.operation == "average":
        what = f"mean of {len(plan.inputs)} (newest {plan.inputs[-1]}): {what}"
    extra = f"; {what}" + (f"; {result.conversion.state_file} updated" if result.conversion.state_file else "")
    extra += f"; {warnings} warning{'s' * (warnings != 1)}" if warnings else ""
    return written_lines(result.written, extra)
