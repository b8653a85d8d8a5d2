"""Rendering of ``ckpt diff``: one row per difference, biggest change first, then a summary line."""
from __future__ import annotations

from formats.core.gc_pause import gc_paused

from .common import shape_text
from .table import SUFFIX_NOTE, TextTable, emit, without_value_suffix

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any


def num(x: float | None) -> str:
    """A statistic in 4 significant digits; ``-`` when undefined."""
    return "-" if x is None else f"{x:.4g}"


def _percent(stats: dict[str, Any]) -> str:
    if "frac_differ" not in stats:
        return "-"
    frac = stats["frac_differ"]
    return "100%" if frac == 1 else f"{100 * frac:.3g}%"


def _what(change: Any) -> str:
    if change.kind == "shape":
        return f"shape {shape_text(change.a.shape)} -> {shape_text(change.b.shape)}"
    if change.kind == "dtype":
        return f"dtype {change.a.dtype} -> {change.b.dtype}"
    return "value" + (" (NaN/Inf appeared)" if change.stats.get("nonfinite_appeared") else "")


def _label(change: Any) -> str:
    return change.a.key if change.a.key == change.b.key else f"{change.a.key} -> {change.b.key}"


@gc_paused
def render_diff(result: Any, tolerance: Any, keys_only: bool, names: tuple[dict[str, tuple[str, str]], ...] | None = None
                ) -> None:
    """The table (changes by size, then keys on one side only) and a summary line; with ``names`` (A's and B's
    ``key -> (name, role)``), each key's name and role beside it, as ``ls --names`` shows them."""
    named = [("name", "left"), ("role", "left")] if names is not None else []
    rows: list[list[str]] = []
    styles: list[str | None] = []
    for c in result.by_size():
        s = c.stats
        styles.append("red" if c.kind != "value" or s.get("nonfinite_appeared") else "yellow")
        cells = [num(s.get("max_abs_diff")), num(s.get("mean_abs_diff")), num(s.get("rel_l2")),
                 num(s.get("cosine")), _percent(s)] if s else [""] * 5
        rows.append([_label(c), *_named(names, c.a.key, c.b.key), _what(c), *cells])
    for side, keys in (("A", result.only_in_a), ("B", result.only_in_b)):
        what = f"only in {side}"
        if names is None:  # the rows of keys on one side only: most rows of a diff of renamed checkpoints
            rows += [[key, what, "", "", "", "", ""] for key in keys]
        else:
            rows += [[key, *_named(names, *((key, None) if side == "A" else (None, key))), what, "", "", "", "", ""]
                     for key in keys]
        styles += ["cyan"] * len(keys)
    table = TextTable([("key", "left"), *named, ("change", "left"), ("max|a-b|", "right"), ("mean|a-b|", "right"),
                       ("rel L2", "right"), ("cosine", "right"), ("differ", "right")], rows, styles)
    emit(table if table.rows else None, [[(f"{result.a} vs {result.b}", "bold"), (_summary(result, tolerance, keys_only), None)]])


def _named(names: tuple[dict[str, tuple[str, str]], ...] | None, a: str | None, b: str | None) -> list[str]:
    """The name and role cells of a row (none without ``names``): A's, or ``A's -> B's`` where they differ."""
    if names is None:
        return []
    sides = [names[i].get(k) if k is not None else None for i, k in enumerate((a, b))]
    found = [s for s in sides if s is not None]
    if not found:
        return ["", ""]
    return [" -> ".join(dict.fromkeys(s[0] for s in found)), " -> ".join(dict.fromkeys(s[1] for s in found))]


def _summary(result: Any, tolerance: Any, keys_only: bool) -> str:
    how = ("keys, shapes and dtypes" if keys_only else "bytewise" if tolerance.bytewise else
           f"atol={tolerance.atol:g}, rtol={tolerance.rtol:g}" + (", NaN==NaN" if tolerance.equal_nan else ""))
    if result.equal:
        return f": identical ({result.same} tensors; compared {how})"
    kinds = {k: sum(1 for c in result.changed if c.kind == k) for k in ("shape", "dtype", "value")}
    parts = [f"{len(result.changed)} changed (" + ", ".join(f"{n} {k}" for k, n in kinds.items() if n) + ")"
             if result.changed else "0 changed",
             f"{len(result.only_in_a)} only in A", f"{len(result.only_in_b)} only in B", f"{result.same} same"]
    return ": " + ", ".join(parts) + f" (compared {how})"


def render_diff_plot(result: Any, tolerance: Any, keys_only: bool, ascii: bool, width: int) -> None:
    """One bar per changed tensor of its relative change ``||a-b|| / ||a||``, biggest first (a change of
    shape or dtype, or of a tensor whose A is all zeros, is named without a bar), then the summary line."""
    from .plot import bar_chart

    rows = []
    for c in result.by_size():
        rel = c.stats.get("rel_l2") if c.kind == "value" else None
        if c.kind != "value":
            text = _what(c)
        elif rel is None:
            text = "rel - (A is zero)" if "rel_l2" in c.stats else "values differ"
        else:
            text = f"rel {num(rel)}"
        if c.stats.get("nonfinite_appeared"):
            text += " NaN/Inf appeared"
        rows.append((_label(c), rel, text))
    notes: list[list[tuple[str, str | None]]] = []
    if rows and max(len(label) for label, _, _ in rows) + max(len(text) for _, _, text in rows) + 27 > width:
        short = without_value_suffix([label for label, _, _ in rows])  # bars under 24 columns: as tables do
        if short is not None:
            rows = [(label, rel, text) for label, (_, rel, text) in zip(short, rows)]
            notes.append([(SUFFIX_NOTE, None)])
    lines: list[list[tuple[str, str | None]]] = [[(row, None)] for row in bar_chart(rows, width, ascii)]
    lines += notes
    if rows:
        lines.append([("bars: ", "bold"), ("||a-b|| / ||a|| of each changed tensor, scaled to the largest", None)])
    lines.append([(f"{result.a} vs {result.b}", "bold"), (_summary(result, tolerance, keys_only), None)])
    emit(None, lines)
