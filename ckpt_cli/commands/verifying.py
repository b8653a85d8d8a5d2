"""What ``ckpt verify PATH...`` does, without click: the click command (:mod:`ckpt_cli.commands.verify`) and
the start-up fast path (:mod:`ckpt_cli.fast`) both call :func:`run_verify`."""
from __future__ import annotations

import sys

from formats.core.errors import ExitCode

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any


def run_verify(paths: tuple[str, ...], as_json: bool, jobs: int | None, allow_loader_refusals: bool = False) -> int:
    """Verify each checkpoint once (on ``jobs`` threads; None: every core), print the reports, and return the
    exit status: the worst of every checkpoint's (what a format's own loader refuses counts as a problem unless
    ``allow_loader_refusals``)."""
    reports, status, seen = [], ExitCode.OK, set()
    for path in paths:
        report, code = _verify_one(path, seen, len(paths) > 1, jobs, allow_loader_refusals)
        status = max(status, code)
        if report is not None:
            reports.append(report)
    _render(reports, as_json)
    return int(status)


def _verify_one(path: str, seen: set[tuple[str, str]], several: bool, jobs: int | None,
                allow_loader_refusals: bool) -> tuple[Any, ExitCode]:
    """The report of one checkpoint (None when ``seen`` already holds it: ``ckpt-1.index`` and
    ``ckpt-1.data-*`` are one); with ``several``, one that cannot be opened is an error line, not the end."""
    from formats.api import open_target
    from formats.core.errors import CheckpointError
    from formats.discover.resolve import identity, resolve
    from formats.ops.compare.verify import verify_checkpoint

    from ..render.progress import progress_for

    try:
        target = resolve(path)
        if (target.kind, identity(target.path)) in seen:
            return None, ExitCode.OK
        seen.add((target.kind, identity(target.path)))
        with open_target(target) as ckpt, progress_for(ckpt, "verifying") as progress:
            report = verify_checkpoint(ckpt, progress, jobs, allow_loader_refusals=allow_loader_refusals)
    except CheckpointError as exc:
        if not several:
            raise
        from ..render.common import safe_text

        print(safe_text(f"ckpt: error: {exc}"), file=sys.stderr, flush=True)
        return None, exc.exit_code
    return report, ExitCode.OK if report.ok else ExitCode.PROBLEMS


def _render(reports: list[Any], as_json: bool) -> None:
    if as_json:
        from ..render.common import print_json

        docs = [r.to_json() for r in reports]
        print_json(docs[0] if len(docs) == 1 else docs)
        return
    from ..render.reports import render_verify

    for report in reports:
        render_verify(report)
