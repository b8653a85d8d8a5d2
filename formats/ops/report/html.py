"""A report as one self-contained HTML page: inline CSS, script and SVG, no request to anything.

This is the one place the report's HTML is made, in the library rather than in ``ckpt_cli/render/``, because
:meth:`Report._repr_html_ <formats.ops.report.result.Report._repr_html_>` (Jupyter) must give the same page
without the command line; ``ckpt report`` writes :func:`render_html`'s text.

Everything that comes from a checkpoint (keys, names, notes, paths) goes through :func:`esc` (HTML escaping
after :func:`~formats.core.names.safe_text`, so a name that is not UTF-8 shows its bytes as ``\\xNN``); the
report's data is embedded as JSON with ``<``, ``>``, ``&``, U+2028 and U+2029 escaped (:func:`script_json`), and
the page's Content-Security-Policy lets only its own script (by hash) run and nothing be fetched.
"""
from __future__ import annotations

import html
import math

from formats.core.names import map_data, safe_data, safe_text
from formats.core.shapes import shape_text
from formats.core.units import human_bytes
from formats.ops.report.assets import CSS, SCRIPT
from formats.ops.report.svg import bar_svg, heatmap_svg, histogram_svg, line_svg, number

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from formats.ops.inspect.tree import CheckpointTree, TreeNode
    from formats.ops.report.model import CheckpointReport, DiffReport, RunReport, VariableReport

    Report = Any  # formats.ops.report.result.Report, which imports this module (one of its fields is set per kind)

__all__ = ["render_html", "render_fragment", "esc", "anchor", "script_json", "content_policy"]

_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_ANCHOR_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-:")


def esc(text: object) -> str:
    """``text`` for HTML text or a quoted attribute: valid UTF-8 (:func:`safe_text`), ``&<>"'`` escaped."""
    return html.escape(safe_text(str(text)), quote=True)


def anchor(prefix: str, key: str) -> str:
    """A stable element id for ``key`` (also its link's fragment): ``prefix`` and the key, every character but
    letters, digits and ``/._-:`` percent-encoded (UTF-8 bytes; undecodable bytes as themselves)."""
    try:
        data = key.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that is no byte
        data = safe_text(key).encode("utf-8")
    return prefix + "".join(chr(b) if chr(b) in _ANCHOR_SAFE else f"%{b:02X}" for b in data)


def _finite(data: Any) -> Any:
    """``data`` with NaN and Inf as None (:func:`~formats.core.names.map_data`: any nesting depth)."""
    return map_data(data, lambda v: None if isinstance(v, float) and not math.isfinite(v) else v)


def script_json(data: Any) -> str:
    """``data`` as JSON safe inside ``<script type="application/json">``: strings made valid UTF-8, NaN and
    Inf as null, and ``<``, ``>``, ``&``, U+2028, U+2029 as ``\\uXXXX`` (no ``</script>`` or comment can end it)."""
    import json

    text = json.dumps(_finite(safe_data(data)), ensure_ascii=False, separators=(",", ":"))
    return "".join(_JSON_ESCAPES.get(c, c) for c in text) if any(c in text for c in _JSON_ESCAPES) else text


def content_policy(script: str = SCRIPT) -> str:
    """The page's Content-Security-Policy: nothing fetched (images only as ``data:``), only its own ``script``."""
    import base64
    import hashlib

    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'sha256-{digest}'; "
            "base-uri 'none'; form-action 'none'")


def render_html(report: Report) -> str:
    """The whole page (``<!doctype html>`` ... ``</html>``)."""
    title = "ckpt report: " + " vs ".join(report.paths)
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{esc(content_policy())}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title></head><body>\n{render_fragment(report)}\n</body></html>\n")


def render_fragment(report: Report) -> str:
    """The page's body: one ``<div class="ckpt-report">`` holding its style, content, data and script."""
    body = {"checkpoint": _checkpoint, "diff": _diff, "run": _run}[report.kind](report)
    has_hist = report.kind == "checkpoint"
    log = '<label class="scale"><input type="checkbox" class="log-all"> log scale</label>' if has_hist else ""
    bar = (f'<div class="bar-top"><input type="search" placeholder="filter keys" aria-label="filter keys">'
           f'{log}<span class="count"></span></div>')
    return (f'<div class="ckpt-report"><style>{CSS}</style>{bar}{body}'
            f'<script type="application/json" class="ckpt-data">{script_json(report.to_json())}</script>'
            f"<script>{SCRIPT}</script></div>")


def _flags(flags: list[str]) -> str:
    return "".join(f'<span class="flag {f}">{f}</span>' for f in flags)


def _files(files: list[str], limit: int = 12) -> str:
    shown = ", ".join(esc(f) for f in files[:limit])
    more = f" and {len(files) - limit} more" if len(files) > limit else ""
    return shown + more


# -- one checkpoint ---------------------------------------------------------------------------------------
def _checkpoint(report: Report) -> str:
    c: CheckpointReport = report.checkpoint
    head = (f"<h1>{esc(c.path)}</h1><p class=\"facts\">{esc(c.format)}, {c.tensors} tensors, "
            f"{c.parameters:,} parameters, {human_bytes(c.nbytes)}"
            + (f"; files: {_files(c.files)}" if c.files else "") + "</p>")
    flagged = [v for v in c.variables if v.flags]
    flags = ""
    if flagged:
        rows = "".join(f'<tr data-key="{esc(v.key)}"><td class="k"><a href="#{esc(anchor("k-", v.key))}">'
                       f"{esc(v.key)}</a></td><td>{_flags(v.flags)}</td></tr>" for v in flagged)
        flags = f'<h2>Flagged ({len(flagged)})</h2><table class="flagged">{rows}</table>'
    trees = _tree_section("Model", c.tree, "model")
    if c.optimizer is not None:
        trees += _tree_section("Optimizer state", c.optimizer, "optimizer")
    sections = "".join(_variable(v) for v in c.variables)
    return f"{head}{flags}{trees}<h2>Tensors ({len(c.variables)})</h2>{sections}"


def _tree_section(title: str, tree: CheckpointTree, css: str) -> str:
    root = tree.root
    facts = f"{root.tensors} tensors, {root.parameters:,} parameters, {human_bytes(root.nbytes)}"
    return (f'<h2>{title}</h2><p class="facts">{facts}</p><div class="tree {css}">'
            f"{_tree_rows(root)}</div>")


def _row_text(node: TreeNode) -> str:
    own = node.key is not None
    nbytes = node.own_nbytes if own else node.nbytes
    params = node.own_parameters if own else node.parameters
    label = esc(node.label)
    if own:
        label = f'<a href="#{esc(anchor("k-", node.key))}">{label}</a>'  # type: ignore[arg-type]
    else:
        label = f"<b>{label}</b>"
    meta = f" {esc(node.dtype)} {shape_text(node.shape)}" if own and node.shape is not None else ""
    note = "; ".join(filter(None, [node.note, ("also: " + ", ".join(node.aliases)) if node.aliases else ""]))
    css = " opt" if node.role in ("slot", "optimizer") or node.note.startswith("optimizer") else ""
    return (f'<span class="row{css}">{label}<span class="m">{meta} {human_bytes(nbytes)} {params:,} params'
            f"</span>{(' <span class=m>' + esc(note) + '</span>') if note else ''}</span>")


def _tree_rows(root: TreeNode) -> str:
    """Nested ``<details>`` per object (closed), a ``<div>`` per tensor without rows below it; iterative."""
    out: list[str] = []
    stack: list[tuple[TreeNode | None, str]] = [(c, "") for c in reversed(root.children)]
    while stack:
        node, path = stack.pop()
        if node is None:
            out.append("</details>")
            continue
        full = f"{path}/{node.label}" if path else node.label
        key = esc(node.key if node.key is not None else full)
        if node.children:
            out.append(f'<details data-key="{key}"><summary>{_row_text(node)}</summary>')
            stack.append((None, ""))
            stack += [(c, full) for c in reversed(node.children)]
        else:
            out.append(f'<div class="leaf" data-key="{key}">{_row_text(node)}</div>')
    return "".join(out)


_STATS = (("min", "min"), ("max", "max"), ("mean", "mean"), ("std", "std"), ("L2", "l2"), ("zeros", "zeros"),
          ("NaN", "nan"), ("Inf", "inf"))


def _variable(v: VariableReport) -> str:
    s = v.stats
    stats = ("<tr>" + "".join(f"<th>{label}</th>" for label, _ in _STATS) + "</tr><tr>"
             + "".join(f"<td>{number(getattr(s, attr))}</td>" for _, attr in _STATS) + "</tr>")
    facts = [esc(v.dtype), shape_text(v.shape), f"{s.size:,} elements", human_bytes(v.nbytes)]
    if v.role:  # a summary leaves it out
        facts.append(esc(v.role))
    if v.name != v.key:
        facts.append("name " + esc(v.name))
    if v.partitions:
        facts.append(f"{v.partitions} partitions")
    if v.files:
        facts.append("stored in " + _files(v.files, 3))
    if v.unreadable:
        facts.append("unreadable: " + esc(v.unreadable))
    plot = _histograms(v.stats.histograms or {}, s)
    return (f'<article class="var" id="{esc(anchor("k-", v.key))}" data-key="{esc(v.key)}">'
            f'<h3><a href="#{esc(anchor("k-", v.key))}">{esc(v.key)}</a>{_flags(v.flags)}</h3>'
            f'<div class="facts">{", ".join(facts)}</div><table class="stats">{stats}</table>{plot}</article>')


def _histograms(hists: dict[str, Any], s: Any) -> str:
    """The histogram of the values (a ``log`` switch for log heights), and of log10 |x| when it was computed."""
    linear, log = hists.get("linear"), hists.get("log")
    if linear is None or not linear.binned:
        why = "no numeric values read" if s.nan is None else "no finite values"
        return (f'<div><svg class="hist" viewBox="0 0 320 86" width="320" height="86" role="img" '
                f'aria-label="no histogram"><text x="0" y="40">{why}</text></svg></div>')
    plots = histogram_svg(linear.counts, linear.edges[0], linear.edges[-1])
    if log is not None and log.binned:
        plots += histogram_svg(log.counts, 10 ** log.edges[0], 10 ** log.edges[-1], "|x| ")
    return f'<div><label class="scale"><input type="checkbox" class="log-one"> log</label>{plots}</div>'


# -- two checkpoints --------------------------------------------------------------------------------------
_CHANGE = (("rel L2", "rel_l2"), ("cosine", "cosine"), ("max|a-b|", "max_abs_diff"), ("mean|a-b|", "mean_abs_diff"))


def _diff(report: Report) -> str:
    d: DiffReport = report.diff
    head = (f"<h1>{esc(d.a)} vs {esc(d.b)}</h1><p class=\"facts\">{esc(d.format_a)} vs {esc(d.format_b)}: "
            f"{len(d.pairs)} changed, {len(d.only_in_a)} only in A, {len(d.only_in_b)} only in B, "
            f"{d.same} the same</p>")
    notes = "".join(f"<li>{esc(n)}</li>" for n in d.notes)
    head += f'<ul class="notes">{notes}</ul>' if notes else ""
    top = max((p.change.stats.get("rel_l2") or 0.0 for p in d.pairs), default=0.0) or 1.0
    rows = "".join(_change_row(p.change) for p in d.pairs)
    table = (f'<h2>Changed ({len(d.pairs)}), biggest first</h2><table><tr><th class="k">key</th><th>change</th>'
             + "".join(f"<th>{label}</th>" for label, _ in _CHANGE) + f"<th>differ</th></tr>{rows}</table>")
    sections = "".join(_pair(p, top) for p in d.pairs)
    only = _only("Only in A", "a-", d.only_in_a) + _only("Only in B", "b-", d.only_in_b)
    return head + table + only + f"<h2>Changes</h2>{sections}"


def _change_row(change: Any) -> str:
    st = change.stats
    frac = st.get("frac_differ")
    cells = "".join(f"<td>{number(st.get(attr))}</td>" for _, attr in _CHANGE)
    return (f'<tr data-key="{esc(change.key)}"><td class="k"><a href="#{esc(anchor("k-", change.key))}">'
            f"{esc(change.key)}</a></td><td>{esc(change.kind)}</td>{cells}"
            f"<td>{'-' if frac is None else f'{frac:.0%}'}</td></tr>")


def _pair(pair: Any, top: float) -> str:
    change = pair.change
    a, b, st = change.a, change.b, change.stats
    sides = f"A {esc(a.dtype)} {shape_text(a.shape)}, B {esc(b.dtype)} {shape_text(b.shape)}"
    if a.key != change.key or b.key != change.key:
        sides += f" (A key {esc(a.key)}, B key {esc(b.key)})"
    rel = st.get("rel_l2")
    flags = ["nan"] if st.get("nonfinite_appeared") else []
    plot = bar_svg((rel or 0.0) / top if rel is not None else (1.0 if st.get("differ") else 0.0),
                   f"rel L2 {number(rel)}, cosine {number(st.get('cosine'))}")
    if pair.heatmap is not None:
        plot += heatmap_svg(pair.heatmap)
    return (f'<article class="var" id="{esc(anchor("k-", change.key))}" data-key="{esc(change.key)}">'
            f'<h3><a href="#{esc(anchor("k-", change.key))}">{esc(change.key)}</a>{_flags(flags)}</h3>'
            f'<div class="facts">{esc(change.kind)} change: {sides}</div><div class="plots">{plot}</div></article>')


def _only(title: str, prefix: str, keys: list[str]) -> str:
    if not keys:
        return ""
    rows = "".join(f'<tr id="{esc(anchor(prefix, k))}" data-key="{esc(k)}"><td class="k">'
                   f'<a href="#{esc(anchor(prefix, k))}">{esc(k)}</a></td></tr>' for k in keys)
    return f"<h2>{title} ({len(keys)})</h2><table>{rows}</table>"


# -- a run ------------------------------------------------------------------------------------------------
def _when(mtime: float | None) -> str:
    if not mtime:
        return "-"
    import time

    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(mtime))


def _run(report: Report) -> str:
    r: RunReport = report.run
    t = r.trend
    head = (f"<h1>{esc(t.path)}</h1><p class=\"facts\">{len(t.checkpoints)} checkpoints, "
            f"{len(t.variables)} variables</p>")
    notes = "".join(f"<li>{esc(n)}</li>" for n in t.notes)
    head += f'<ul class="notes">{notes}</ul>' if notes else ""
    rows = "".join(f"<tr><td>{'' if s is None else s}</td><td>{'-' if o is None else o}</td><td>{_when(m)}</td>"
                   f"<td class=\"k\">{esc(p)}</td></tr>"
                   for p, s, o, m in zip(t.checkpoints, t.steps, t.own_steps, r.mtimes))
    table = ('<h2>Checkpoints</h2><table><tr><th title="the number in its name">save</th>'
             '<th title="its own step variable (step, global_step, the optimizer\'s iterations)">step</th>'
             f'<th>time</th><th class="k">path</th></tr>{rows}</table>')
    ends = (t.when(0), t.when(len(t.checkpoints) - 1)) if t.checkpoints else ("", "")
    sections = "".join(_trend(v, t, ends) for v in t.variables)
    return f"{head}{table}<h2>Variables ({len(t.variables)})</h2>{sections}"


def _trend(v: Any, t: Any, ends: tuple[str, str]) -> str:
    start = v.nonfinite_from
    flags = _flags(["nan"]) if start is not None else ""
    since = f", NaN/Inf from {t.when(start)}" if start is not None else ""
    first = next((x for x in v.norm if x is not None), None)
    last = next((x for x in reversed(v.norm) if x is not None), None)
    facts = f"{esc(v.dtype)} {shape_text(v.shape)}, norm {number(first)} -> {number(last)}{since}"
    return (f'<article class="var" id="{esc(anchor("k-", v.key))}" data-key="{esc(v.key)}">'
            f'<h3><a href="#{esc(anchor("k-", v.key))}">{esc(v.key)}</a>{flags}</h3>'
            f'<div class="facts">{facts}</div>'
            f'<div class="plots">{line_svg(v.norm, ends, "L2 norm")}'
            f'{line_svg(v.change, ends, "L2 norm of the change", "l1")}</div></article>')
