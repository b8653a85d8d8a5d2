"""The report's drawings as small inline SVG: a histogram (linear and log heights), a line chart over a run's
steps, a bar, and a heatmap (a palette PNG inside an SVG, one pixel per cell). Numbers are written with few
digits and every shape of a chart is one ``<path>``, so a drawing is a few hundred bytes."""
from __future__ import annotations

import math


TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from formats.ops.report.model import Heatmap

__all__ = ["histogram_svg", "line_svg", "bar_svg", "heatmap_svg", "number", "png_palette_image", "MAX_POINTS"]

W, H = 320, 72
MAX_POINTS = 240
"""Points of a line chart at most (a longer run is sampled evenly, its first and last step kept)."""
_PALETTE = ((68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37))  # viridis' stops


def number(x: float | int | None) -> str:
    """A statistic for the page: integers exactly, floats in 5 significant digits, ``-`` for None."""
    if x is None:
        return "-"
    if isinstance(x, int):
        return str(x)
    return f"{x:.5g}"


def _n(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def _step_path(heights: Sequence[float], width: float, height: float) -> str:
    """A filled outline of bars of ``heights`` (0..1) side by side over ``width``."""
    w = width / max(1, len(heights))
    parts = [f"M0 {_n(height)}"]
    for i, h in enumerate(heights):
        parts.append(f"V{_n(height - h * height)}H{_n((i + 1) * w)}")
    parts.append(f"V{_n(height)}Z")
    return "".join(parts)


def histogram_svg(counts: Sequence[int], lo: float, hi: float, prefix: str = "") -> str:
    """Bars of ``counts`` over ``[lo, hi]``, twice: with heights linear in the count (a path of class ``ylin``)
    and in its logarithm (``ylog``, hidden until the page's log switch shows it), the axis' ends (after
    ``prefix``) under them and the highest count over them."""
    peak = max(counts, default=0) or 1
    linear = [c / peak for c in counts]
    logged = [math.log1p(c) / math.log1p(peak) for c in counts]
    return (f'<svg class="hist" viewBox="0 0 {W} {H + 14}" width="{W}" height="{H + 14}" role="img" '
            f'aria-label="histogram"><path class="ylin" d="{_step_path(linear, W, H)}"/>'
            f'<path class="ylog" d="{_step_path(logged, W, H)}"/>'
            f'<text x="0" y="{H + 12}">{prefix}{number(lo)}</text><text x="{W}" y="{H + 12}" text-anchor="end">'
            f'{number(hi)}</text><text x="{W}" y="10" text-anchor="end" class="peak">{peak}</text></svg>')


def _sampled(n: int) -> list[int]:
    if n <= MAX_POINTS:
        return list(range(n))
    return sorted({round(i * (n - 1) / (MAX_POINTS - 1)) for i in range(MAX_POINTS)})


def line_svg(values: Sequence[float | None], ends: tuple[str, str], title: str, css: str = "l0") -> str:
    """``values`` (one per checkpoint, None where absent) as a line (class ``css``) with ``title`` over it, the
    value range written at the left and ``ends`` - the first and last checkpoint, ``step 30``, ``step 50`` -
    under it."""
    n = len(values)
    known = [v for v in values if v is not None]
    lo, hi = (min(known), max(known)) if known else (0.0, 1.0)
    span = (hi - lo) or 1.0
    d, pen = [], "M"
    for i in _sampled(n):
        v = values[i]
        if v is None:
            pen = "M"
            continue
        x = 4 + (W - 8) * (i / (n - 1) if n > 1 else 0.5)
        d.append(f"{pen}{_n(x)} {_n(16 + (H - 20) * (1 - (v - lo) / span))}")
        pen = "L"
    if len(d) == 1:  # one point: a dot
        d.append("h0.1")
    first, last = ends
    return (f'<svg class="line" viewBox="0 0 {W} {H + 14}" width="{W}" height="{H + 14}" role="img" '
            f'aria-label="{title}"><path class="{css}" d="{"".join(d)}"/><text x="{W}" y="10" '
            f'text-anchor="end" class="t{css[-1]}">{title}</text><text x="0" y="10">{number(hi) if known else ""}'
            f'</text><text x="0" y="{H}">{number(lo) if known else "no values"}</text><text x="0" y="{H + 12}">'
            f'{first}</text><text x="{W}" y="{H + 12}" text-anchor="end">{last}</text></svg>')


def bar_svg(fraction: float, label: str) -> str:
    """A horizontal bar filled to ``fraction`` (0..1) with ``label`` beside it."""
    width = 160
    fill = max(0.0, min(1.0, fraction)) * width
    return (f'<svg class="bar" viewBox="0 0 {width + 300} 14" width="{width + 300}" height="14" role="img" '
            f'aria-label="relative change"><rect class="bg" width="{width}" height="12"/>'
            f'<rect class="fg" width="{_n(fill)}" height="12"/><text x="{width + 4}" y="11">{label}</text></svg>')


def _palette() -> bytes:
    """255 colours along viridis' stops, then grey (cells with no finite value)."""
    out = bytearray()
    for i in range(255):
        t = i / 254 * (len(_PALETTE) - 1)
        j = min(int(t), len(_PALETTE) - 2)
        f = t - j
        out += bytes(round(a + (b - a) * f) for a, b in zip(_PALETTE[j], _PALETTE[j + 1]))
    return bytes(out + bytes((160, 160, 160)))


def png_palette_image(indexes: Sequence[int], width: int, height: int, palette: bytes) -> bytes:
    """An 8-bit palette PNG of ``width x height`` pixels (``indexes`` row-major)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\0" + bytes(indexes[r * width:(r + 1) * width]) for r in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 3, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"PLTE", palette)
            + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


def heatmap_svg(hm: Heatmap) -> str:
    """The heatmap's cells as pixels scaled to at most 240 px a side (0 dark, the peak yellow, grey: no finite
    value), with its scale written under it."""
    import base64

    peak = hm.peak or 1.0
    indexes = [255 if c is None else min(254, round(c / peak * 254)) for c in hm.cells]
    png = base64.b64encode(png_palette_image(indexes, hm.cols, hm.rows, _palette())).decode("ascii")
    scale = 240 / max(hm.rows, hm.cols)
    w, h = max(8, round(hm.cols * scale)), max(8, round(hm.rows * scale))
    return (f'<svg class="heat" viewBox="0 0 {max(w, 200)} {h + 14}" width="{max(w, 200)}" height="{h + 14}" '
            f'role="img" aria-label="|a-b| heatmap"><image width="{w}" height="{h}" preserveAspectRatio="none" '
            f'href="data:image/png;base64,{png}"/><text x="0" y="{h + 12}">|a-b| 0 .. {number(hm.peak)} '
            f'({hm.rows}x{hm.cols} cells of {hm.shape[0]}x{hm.shape[1]})</text></svg>')
