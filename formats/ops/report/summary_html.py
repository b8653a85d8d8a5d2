"""The page of a :class:`~formats.ops.report.summary.SummaryReport`: bounded at :data:`PAGE_LIMIT` bytes by
construction, whatever the number of tensors.

Every section has a byte budget (:data:`BUDGETS`) and shows rows until the next would pass it, then says how
many it left out and where they are (the search finds every key); the head, style and script are bounded on
their own (paths and notes cut to :data:`TEXT_LIMIT` characters), and the keys are packed within their budget
(:func:`~formats.ops.report.digest.pack_keys`). :data:`PAGE_LIMIT` is at least their sum, checked at import.
The search runs in the page (:data:`~formats.ops.report.summary_assets.SUMMARY_SCRIPT`): the packed keys
are inflated with the browser's ``DecompressionStream`` and filtered by substring and flag, no network.
"""
from __future__ import annotations

from formats.core.shapes import shape_text
from formats.core.units import human_bytes
from formats.ops.report.assets import CSS
from formats.ops.report.digest import PLACEHOLDERS
from formats.ops.report.html import (_CHANGE, _change_row, _pair, _trend, _variable, _when, anchor, content_policy,
                                     esc, script_json)
from formats.ops.report.summary import FLAGS, KEY_BUDGET
from formats.ops.report.summary_assets import SUMMARY_CSS, SUMMARY_SCRIPT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from formats.ops.report.digest import Group
    from formats.ops.report.summary import SummaryReport

__all__ = ["render_summary_html", "render_summary_fragment", "PAGE_LIMIT", "BUDGETS", "TEXT_LIMIT"]

PAGE_LIMIT = 10_000_000
"""The most bytes a summary page takes."""
BUDGETS = {"flagged": 1_500_000, "changes": 600_000, "patterns": 400_000, "layers": 400_000, "details": 1_200_000,
           "checkpoints": 300_000}
"""Bytes of each section's rows."""
TEXT_LIMIT = 2_000
"""Characters shown of a path, a note or a group's name (each at most 8 bytes once escaped)."""
NOTES_SHOWN = 20
"""Notes shown in the head of a pair's page."""
_FIXED = 200_000
"""Bytes of everything else: the style, the script, headings, the head (paths and notes within
:data:`TEXT_LIMIT`), the "more" lines."""
assert sum(BUDGETS.values()) + KEY_BUDGET + _FIXED + (5 + NOTES_SHOWN) * TEXT_LIMIT * 8 <= PAGE_LIMIT


def _cut(text: str) -> str:
    return text if len(text) <= TEXT_LIMIT else text[:TEXT_LIMIT] + "..."


def _bounded(rows: Iterable[str], total: int, budget: int, what: str) -> str:
    """``rows`` joined while their UTF-8 bytes stay within ``budget``, then a line saying how many of
    ``total`` were left out (``what``: where to find them)."""
    out: list[str] = []
    used = shown = 0
    for row in rows:
        size = len(row.encode("utf-8"))
        if used + size > budget:
            break
        out.append(row)
        used += size
        shown += 1
    if shown < total:
        out.append(f'<tr class="more"><td class="k" colspan="9">and {total - shown:,} more ({what})</td></tr>')
    return "".join(out)


def render_summary_html(report: SummaryReport) -> str:
    """The whole page (``<!doctype html>`` ... ``</html>``)."""
    title = "ckpt report: " + " vs ".join(_cut(p) for p in report.paths)
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{esc(content_policy(SUMMARY_SCRIPT))}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title></head><body>\n{render_summary_fragment(report)}\n</body></html>\n")


def render_summary_fragment(report: SummaryReport) -> str:
    """The page's body: its style, head, search, sections, packed keys and script in one ``<div>``."""
    legend = FLAGS[report.kind]
    options = "".join(f'<option value="{bit}">{esc(name)}</option>' for name, bit in legend)
    bar = (f'<div class="bar-top"><input type="search" placeholder="search all {report.tensors:,} keys" '
           f'aria-label="search keys"><select class="which" aria-label="only keys flagged">'
           f'<option value="0">all keys</option>{options}</select><span class="count"></span></div>'
           f'<table class="found"></table>')
    meta = {"kind": report.kind, "total": report.keys.total, "packed": report.keys.packed,
            "flags": [[name, bit] for name, bit in legend]}
    lead = {"diff": _changes, "run": _run_changes}.get(report.kind)
    sections = (lead(report) if lead else "") + _flagged(report) + \
        _groups("By pattern", report.patterns, "patterns", report.kind) + \
        _groups("By layer", report.layers, "layers", report.kind) + _details(report)
    return (f'<div class="ckpt-report summary"><style>{CSS}{SUMMARY_CSS}</style>{_head(report)}{bar}{sections}'
            f'<script type="application/json" class="ckpt-summary">{script_json(meta)}</script>'
            f'<script type="application/octet-stream" class="ckpt-keys">{report.keys.text}</script>'
            f"<script>{SUMMARY_SCRIPT}</script></div>")


def _head(r: SummaryReport) -> str:
    title = " vs ".join(esc(_cut(p)) for p in r.paths)
    facts = f"{esc(r.format)}, {r.tensors:,} tensors, {r.parameters:,} parameters, {human_bytes(r.nbytes)}"
    if r.kind == "diff":
        facts += (f": {r.changed:,} changed, {r.only_in_a:,} only in A, {r.only_in_b:,} only in B, "
                  f"{r.same:,} the same")
    why = ("A summary: too many tensors for one section each. Below: the tensors by pattern and by layer, "
           + ("the largest changes, " if r.kind == "diff" else "")
           + "every tensor with NaN or Inf, full detail for the few listed last, and a search over every key.")
    if not r.keys.complete:
        why += (f" The search holds {r.keys.packed:,} of the {r.keys.total:,} keys (the rest did not fit the "
                "page's budget): list them with ckpt ls.")
    notes = "".join(f"<li>{esc(_cut(n))}</li>" for n in r.notes[:NOTES_SHOWN])
    if len(r.notes) > NOTES_SHOWN:
        notes += f"<li>and {len(r.notes) - NOTES_SHOWN} more notes (ckpt diff shows them all)</li>"
    return (f'<h1>{title}</h1><p class="facts">{facts}</p><p class="facts">{why}</p>'
            + (f'<ul class="notes">{notes}</ul>' if notes else ""))


def _link(key: str, detailed: bool) -> str:
    return f'<a href="#{esc(anchor("k-", key))}">{esc(key)}</a>' if detailed else esc(key)


def _flagged(r: SummaryReport) -> str:
    if not r.flagged:
        return '<h2>NaN / Inf (0)</h2><p class="facts">No tensor holds NaN or Inf.</p>'
    if r.kind == "run":
        return _run_flagged(r)
    detailed = {v.key for v in r.details} | {p.change.key for p in r.pairs}
    title = "NaN / Inf appeared" if r.kind == "diff" else "NaN / Inf / unreadable"
    rows = (f'<tr data-key="{esc(t.key)}"><td class="k">{_link(t.key, t.key in detailed)}</td>'
            f"<td>{esc(t.dtype)}</td><td>{shape_text(t.shape)}</td><td>{t.size:,}</td><td>{t.nan:,}</td>"
            f"<td>{t.inf:,}</td><td class=\"k\">{esc(t.unreadable or '')}</td></tr>" for t in r.flagged)
    head = ('<tr><th class="k">key</th><th>dtype</th><th>shape</th><th>elements</th><th>NaN</th><th>Inf</th>'
            '<th class="k">unreadable</th></tr>')
    body = _bounded(rows, len(r.flagged), BUDGETS["flagged"], "search with the NaN/Inf filter: it finds them all")
    return f'<h2>{title} ({len(r.flagged):,})</h2><table class="flagged">{head}{body}</table>'


def _changes(r: SummaryReport) -> str:
    rows = (_change_row(p.change) for p in r.pairs)
    head = ('<tr><th class="k">key</th><th>change</th>' + "".join(f"<th>{label}</th>" for label, _ in _CHANGE)
            + "<th>differ</th></tr>")
    body = _bounded(rows, r.changed, BUDGETS["changes"], "search with the changed filter: it finds them all")
    return f"<h2>Largest changes ({min(len(r.pairs), r.changed):,} of {r.changed:,}), biggest first</h2>" \
           f"<table>{head}{body}</table>"


def _ranges(g: Group) -> str:
    names = [PLACEHOLDERS[min(n, len(PLACEHOLDERS) - 1)] for n in range(len(g.ranges))]
    return ", ".join(f"{name} {lo}..{hi}" if lo != hi else f"{name} {lo}" for name, (lo, hi) in zip(names, g.ranges))


def _groups(title: str, groups: list[Group], budget: str, kind: str) -> str:
    bad = "NaN/Inf appeared" if kind == "diff" else "NaN/Inf"
    numbered = budget == "patterns"
    head = (f'<tr><th class="k">{"pattern" if numbered else "layer"}</th><th>tensors</th>'
            + ("<th class=\"k\">numbers</th>" if numbered else "")
            + f"<th>bytes</th><th>parameters</th><th>{bad}</th></tr>")
    rows = (f'<tr data-key="{esc(_cut(g.name))}"><td class="k">{esc(_cut(g.name))}</td><td>{g.tensors:,}</td>'
            + (f'<td class="k">{_ranges(g)}</td>' if numbered else "")
            + f"<td>{human_bytes(g.nbytes)}</td><td>{g.parameters:,}</td>"
            f"<td>{g.nonfinite or ''}</td></tr>" for g in groups)
    body = _bounded(rows, len(groups), BUDGETS[budget], "the search finds their keys")
    return f"<h2>{title} ({len(groups):,})</h2><table class=\"groups\">{head}{body}</table>"


def _details(r: SummaryReport) -> str:
    if r.kind == "run":
        t = r.run.trend
        ends = (t.when(0), t.when(len(t.checkpoints) - 1)) if t.checkpoints else ("", "")
        articles = [_trend(v, t, ends) for v in t.variables]
    elif r.kind == "diff":
        top = max((p.change.stats.get("rel_l2") or 0.0 for p in r.pairs), default=0.0) or 1.0
        articles = [_pair(p, top) for p in r.pairs]
    else:
        articles = [_variable(v) for v in r.details]
    out: list[str] = []
    used = 0
    for article in articles:
        used += len(article.encode("utf-8"))
        if used > BUDGETS["details"]:
            break
        out.append(article)
    more = f'<p class="facts">and {len(articles) - len(out)} more left out (the page\'s budget)</p>' \
        if len(out) < len(articles) else ""
    return f"<h2>Detail ({len(out):,} tensors)</h2>{''.join(out)}{more}"


# -- a run ------------------------------------------------------------------------------------------------
def _run_changes(r: SummaryReport) -> str:
    """The checkpoints (bounded) and the variables whose norm moved most, biggest first."""
    from formats.ops.report.svg import number

    t = r.run.trend
    rows = (f"<tr data-key=\"{esc(_cut(p))}\"><td>{'' if s is None else s}</td><td>{'-' if o is None else o}</td>"
            f"<td>{_when(m)}</td><td class=\"k\">{esc(_cut(p))}</td></tr>"
            for p, s, o, m in zip(t.checkpoints, t.steps, t.own_steps, r.run.mtimes))
    head = '<tr><th>save</th><th>step</th><th>time</th><th class="k">path</th></tr>'
    table = (f"<h2>Checkpoints ({len(t.checkpoints):,})</h2><table>{head}"
             f"{_bounded(rows, len(t.checkpoints), BUDGETS['checkpoints'], 'ckpt ls DIR lists them')}</table>")

    def ends(v: Any) -> tuple[float | None, float | None]:
        norms = [x for x in v.norm if x is not None]
        return (norms[0], norms[-1]) if norms else (None, None)

    moved = (f'<tr data-key="{esc(v.key)}"><td class="k">{_link(v.key, True)}</td><td>{number(ends(v)[0])}</td>'
             f"<td>{number(ends(v)[1])}</td></tr>" for v in t.variables)
    head = '<tr><th class="k">key</th><th>first norm</th><th>last norm</th></tr>'
    body = _bounded(moved, len(t.variables), BUDGETS["changes"], "the search finds every key")
    return (f"{table}<h2>Largest norm changes ({len(t.variables):,} of {r.tensors:,}), first to last checkpoint"
            f"</h2><table>{head}{body}</table>")


def _run_flagged(r: SummaryReport) -> str:
    if not r.flagged:
        return '<h2>NaN / Inf (0)</h2><p class="facts">No variable held NaN or Inf.</p>'
    t = r.run.trend
    detailed = {v.key for v in t.variables}
    rows = (f'<tr data-key="{esc(x.key)}"><td class="k">{_link(x.key, x.key in detailed)}</td>'
            f"<td>{esc(x.dtype)}</td><td>{shape_text(x.shape)}</td><td>{x.nan:,}</td>"
            f"<td>{esc(t.when(x.since)) if x.since is not None else ''}</td></tr>" for x in r.flagged)
    head = ('<tr><th class="k">key</th><th>dtype</th><th>shape</th><th>NaN+Inf (last)</th><th>from</th></tr>')
    body = _bounded(rows, len(r.flagged), BUDGETS["flagged"], "search with the NaN/Inf filter: it finds them all")
    return f'<h2>NaN / Inf ({len(r.flagged):,})</h2><table class="flagged">{head}{body}</table>'
