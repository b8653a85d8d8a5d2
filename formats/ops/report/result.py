"""The :class:`Report` :func:`formats.report` returns: the data of one checkpoint, a pair or a run
(:mod:`.model`), as JSON (``to_json``), as the self-contained page ``ckpt report`` writes (``to_html``,
``write_html``) and as what Jupyter shows (``_repr_html_``: the same page's body), all from
:mod:`formats.ops.report.html`."""
from __future__ import annotations

from formats.core.records import record
from formats.ops.report.model import CheckpointReport, DiffReport, RunReport
from formats.ops.report.summary import SummaryReport

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Report"]


@record
class Report:
    """A report of ``kind`` (:data:`KINDS`): one of ``checkpoint``, ``diff``, ``run`` or, for a checkpoint or a
    pair of many tensors, ``summary`` (:mod:`formats.ops.report.summary`) is set."""

    kind: str
    paths: list[str]
    checkpoint: CheckpointReport | None = None
    diff: DiffReport | None = None
    run: RunReport | None = None
    bins: int = 0
    summary: SummaryReport | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"kind", "paths", "bins", kind: {...}}``: what ``ckpt report --json`` prints (for a summary,
        ``kind`` holds :meth:`SummaryReport.to_json`, whose ``"summary"`` is true)."""
        body = self.summary or {"checkpoint": self.checkpoint, "diff": self.diff, "run": self.run}[self.kind]
        return {"kind": self.kind, "paths": self.paths, "bins": self.bins,
                self.kind: None if body is None else body.to_json()}

    def to_html(self) -> str:
        """The report as one self-contained HTML page (inline CSS, script and SVG; no network)."""
        if self.summary is not None:
            from formats.ops.report.summary_html import render_summary_html

            return render_summary_html(self.summary)
        from formats.ops.report.html import render_html

        return render_html(self)

    def write_html(self, out: str, force: bool = False) -> int:
        """Write :meth:`to_html` to ``out`` atomically (refusing an existing file unless ``force``, and any file
        of the reported checkpoints); the bytes written."""
        from formats.io.atomic import atomic_output
        from formats.io.writing import guard_output

        data = self.to_html().encode("utf-8")
        guard_output(out, inputs=self.inputs, force=force, what="output file")
        with atomic_output(out, len(data), replace=force) as temp:
            with open(temp, "wb") as f:
                f.write(data)
        return len(data)

    @property
    def inputs(self) -> list[str]:
        """The files the report was made from: what writing it must never overwrite."""
        body = {"checkpoint": self.checkpoint, "diff": self.diff, "run": self.run}[self.kind]
        files = list(self.paths)
        if self.summary is not None:
            files += self.summary.files
        elif isinstance(body, CheckpointReport):
            files += body.files
        elif isinstance(body, RunReport):
            files += body.trend.checkpoints
        return files

    def _repr_html_(self) -> str:
        """What Jupyter shows: the page's body (styles scoped to it, no ``<html>`` or ``<head>``)."""
        if self.summary is not None:
            from formats.ops.report.summary_html import render_summary_fragment

            return render_summary_fragment(self.summary)
        from formats.ops.report.html import render_fragment

        return render_fragment(self)
