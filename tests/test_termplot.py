"""`ckpt stats --hist`, `ckpt trend --plot`, `ckpt diff --plot` (ckpt_cli/render/plot.py): golden outputs at a fixed
width without colour, the numbers behind the blocks, dots and bars computed independently with numpy, --ascii output
all ASCII, --json carrying the data, and hostile keys printed inert."""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ckpt_cli.render.plot import bar_chart, line_plot, resample, strip
from ckpt_cli.render.trend import TREND_STATS
from formats import write_checkpoint
from formats.core.object_keys import VALUE_SUFFIX

from .conftest import CORPUS
from .test_diff import GOLDEN, read_all

ESTIMATOR = "tf1_estimator/model.ckpt-200"
RUN = "seed_slots/tf_ckpts"
HOSTILE_KEY = "evil\x1b[31m\x07<script>alert(1)</script>\nnext"
REGEN = os.environ.get("CKPT_REGEN_GOLDEN") == "1"


def golden(name: str, text: str) -> None:
    """``text`` equals the golden file ``name`` (``CKPT_REGEN_GOLDEN=1`` writes it instead)."""
    path = GOLDEN / name
    if REGEN:
        path.write_text(text)
    assert text == path.read_text()


@pytest.fixture
def fixed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from the corpus at 100 columns."""
    monkeypatch.chdir(CORPUS)
    monkeypatch.setenv("COLUMNS", "100")


def blocks(counts: list[int]) -> str:
    """A histogram strip drawn from counts straight: height ceil(8 * c / max), blank for an empty bin."""
    top = max(counts)
    return "".join(" " if c == 0 else " ▁▂▃▄▅▆▇█"[math.ceil(8 * c / top)] for c in counts)


# -- the drawing functions ---------------------------------------------------------------------------------------
def test_strip_and_resample() -> None:
    assert strip([0, 1, 2, 4, 8], 10) == " ▁▂▄█"
    assert strip([0, 1, 2, 4, 8], 10, ascii=True) == " .:=@"
    assert strip([0, 0], 5) == "  " and strip([3], 5) == "█"
    assert resample([1, 1, 4, 4, 2, 0], 3) == [1.0, 4.0, 1.0]
    assert resample([1, 2, 3, 4, 5], 2) == [1.5, 4.0]  # unequal groups show their mean
    assert strip([1, 2, 3, 4, 5], 2) == "▃█"
    assert strip([1, 10, 100, 1000], 4, log=True) == "▁▃▆█"


def test_line_plot_golden() -> None:
    text = "\n".join(line_plot([0, 5, 10, 20], [1.0, 4.0, None, 2.0], 40, 5) +
                     line_plot([1, 2, 3], [0.5, 0.5, 0.5], 30, 4, ascii=True) +
                     line_plot([10, 20], [3.0, -1.0], 24, 3, ascii=True, x_label="checkpoint")) + "\n"
    golden("termplot_line_plot.txt", text)


def test_bar_chart_golden() -> None:
    rows = [("a/kernel", 0.5, "rel 0.5"), ("b", 0.125, "rel 0.125"), ("c/shape", None, "shape [2] -> [3]"),
            ("d", math.inf, "rel inf"), ("e", 1e-9, "rel 1e-09")]
    text = "\n".join(bar_chart(rows, 40) + bar_chart(rows, 40, ascii=True) + bar_chart(rows, 24)) + "\n"
    golden("termplot_bar_chart.txt", text)


def braille_pixels(rows: list[str], pad: int) -> set[tuple[int, int]]:
    """The dots set in a Braille plot's rows (after the axis label and bar), as (x, y) pixels."""
    bits = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))
    found = set()
    for r, row in enumerate(rows):
        for c, ch in enumerate(row[pad + 2:]):
            code = ord(ch) - 0x2800 if ch != " " else 0
            for dy in range(4):
                for dx in range(2):
                    if code & bits[dy][dx]:
                        found.add((2 * c + dx, 4 * r + dy))
    return found


def test_line_plot_dots_are_the_points() -> None:
    """Every point's dot is where numpy puts it on the pixel grid, and the top and bottom labels are the range."""
    xs, ys = [3, 4, 7, 10], [2.5, 9.0, 4.0, 1.0]
    width, height = 50, 5
    rows = line_plot(xs, ys, width, height)
    pad = len("9")
    cols = width - pad - 2
    px = np.round((np.array(xs) - 3) / 7 * (2 * cols - 1)).astype(int)
    py = 4 * height - 1 - np.round((np.array(ys) - 1) / 8 * (4 * height - 1)).astype(int)
    assert set(zip(px.tolist(), py.tolist())) <= braille_pixels(rows[:height], pad)
    assert rows[0].startswith("9 ┤") and rows[height - 1].startswith("1 ┤")
    assert rows[height + 1].split() == ["3", "(step)", "10"]


# -- ckpt stats --hist -------------------------------------------------------------------------------------------
def test_stats_hist_golden(run_cli, fixed) -> None:
    result = run_cli("stats", "--hist", ESTIMATOR)
    assert result.exit_code == 0, result.stderr
    golden("termplot_stats_hist.txt", result.stdout)


def test_stats_hist_blocks_are_numpy_histograms(run_cli, fixed, monkeypatch) -> None:
    """The histogram cell of each row is numpy.histogram's counts (16 bins over min..max) drawn as blocks."""
    monkeypatch.setenv("COLUMNS", "400")
    values = read_all(ESTIMATOR)
    out = run_cli("stats", "--hist", "--bins", "16", ESTIMATOR).stdout.splitlines()
    start = out[0].index("histogram")
    for line in out[1:len(values) + 1]:
        key = line.split()[0]
        x = values[key].astype(np.float64).ravel()
        if values[key].dtype.kind in "iu":
            counts = [x.size]  # a constant integer: one bin
        else:
            counts = np.histogram(x, bins=16, range=(x.min(), x.max()))[0].tolist()
        assert line[start:start + 16].rstrip() == blocks(counts).rstrip(), key


def test_stats_hist_fits_the_width(run_cli, fixed, monkeypatch) -> None:
    """A narrower terminal merges bins: the table is no wider than it, down to 8 columns of histogram."""
    monkeypatch.setenv("COLUMNS", "400")
    wide = run_cli("stats", "--hist", ESTIMATOR).stdout.splitlines()
    monkeypatch.setenv("COLUMNS", str(len(wide[1]) - 10))
    narrow = run_cli("stats", "--hist", ESTIMATOR).stdout.splitlines()
    assert max(map(len, narrow[:14])) <= len(wide[1]) - 10 < max(map(len, wide[:14]))


def test_stats_hist_json_is_numpy(run_cli) -> None:
    values = read_all(ESTIMATOR)
    doc = json.loads(run_cli("stats", "--hist", "--json", "--bins", "10", CORPUS / ESTIMATOR).stdout)
    for t in doc["tensors"]:
        h = t["histograms"]["linear"]
        x = values[t["key"]].astype(np.float64).ravel()
        if values[t["key"]].dtype.kind in "iu":
            assert (h["edges"], h["counts"], h["integral"]) == ([x[0] - 0.5, x[0] + 0.5], [1], True)
            continue
        counts, edges = np.histogram(x, bins=10, range=(x.min(), x.max()))
        assert (h["counts"], h["edges"]) == (counts.tolist(), edges.tolist())
        assert (h["nan"], h["posinf"], h["neginf"], h["size"]) == (0, 0, 0, x.size)
    assert "histograms" not in json.loads(run_cli("stats", "--json", CORPUS / ESTIMATOR).stdout)["tensors"][0]


# -- ckpt trend --plot -------------------------------------------------------------------------------------------
def test_trend_plot_golden(run_cli, fixed) -> None:
    result = run_cli("trend", "--plot", RUN, "net/l1/kernel*")
    assert result.exit_code == 0, result.stderr
    golden("termplot_trend_plot.txt", result.stdout)


def test_trend_plot_axes_are_numpy_stats(run_cli, fixed) -> None:
    """Each plot's top and bottom labels are the max and min of numpy's norms (changes, means, maxima) over the
    steps, and its x axis the first and last steps (the checkpoints' own, not the 3 and 5 of their names)."""
    values = [read_all(f"{RUN}/ckpt-{s}") for s in (3, 4, 5)]
    numeric = [k for k, v in values[-1].items() if v.dtype.kind in "fiu"]
    for stat in ("norm", "change", "mean", "max"):
        out = run_cli("trend", "--stat", stat, RUN).stdout.splitlines()
        titles = [i for i, line in enumerate(out) if line.endswith(TREND_STATS[stat])]
        assert len(titles) == len(numeric)
        for i in titles:
            key = out[i].split("  ")[0]
            xs = [v[key].astype(np.float64) for v in values]
            ys = {"norm": [float(np.linalg.norm(x)) for x in xs], "mean": [float(x.mean()) for x in xs],
                  "max": [float(x.max()) for x in xs],
                  "change": [float(np.linalg.norm(b - a)) for a, b in zip(xs, xs[1:])]}[stat]
            plot = out[i + 1:i + 9]
            top, bottom = plot[0].split()[0], plot[5].split()[0]
            if max(ys) > min(ys):
                assert (float(top), float(bottom)) == pytest.approx((max(ys), min(ys)), rel=1e-3), (key, stat)
            else:
                assert float(plot[2].split()[0]) == pytest.approx(ys[0], rel=1e-3), (key, stat)  # the middle row
            steps = [int(v["step" + VALUE_SUFFIX]) for v in values]  # the checkpoints' own step variable
            assert plot[7].split() == [str(steps[0]), "(step)", str(steps[-1])] == ["30", "(step)", "50"]


def test_trend_plot_json_is_trend_json(run_cli) -> None:
    plain = run_cli("trend", "--json", CORPUS / RUN).stdout
    assert run_cli("trend", "--plot", "--json", CORPUS / RUN).stdout == plain
    assert json.loads(plain)["variables"][0]["norm"]


# -- ckpt diff --plot --------------------------------------------------------------------------------------------
def test_diff_plot_golden(run_cli, fixed) -> None:
    result = run_cli("diff", "--plot", f"{RUN}/ckpt-3", f"{RUN}/ckpt-5")
    assert result.exit_code == 1, result.stderr
    golden("termplot_diff_plot.txt", result.stdout)


def test_diff_plot_bars_are_numpy_relative_changes(run_cli, fixed, monkeypatch) -> None:
    """Sorted by ||a-b||/||a|| from numpy, each bar as long (in eighths) as its share of the largest."""
    monkeypatch.setenv("COLUMNS", "140")
    a, b = read_all(f"{RUN}/ckpt-3"), read_all(f"{RUN}/ckpt-5")
    out = run_cli("diff", "--plot", f"{RUN}/ckpt-3", f"{RUN}/ckpt-5").stdout.splitlines()
    rel = {k: float(np.linalg.norm(b[k].astype(np.float64) - a[k].astype(np.float64)) / np.linalg.norm(a[k]))
           for k in a if a[k].dtype.kind in "fiu" and not np.array_equal(a[k], b[k])}
    rows = [line for line in out if " rel " in line and "A is zero" not in line]
    keys = [line.split()[0] for line in rows]
    biggest = {k: float(np.abs(b[k].astype(np.float64) - a[k].astype(np.float64)).max()) for k in rel}
    assert keys == sorted(rel, key=lambda k: (-rel[k], -biggest[k], k))
    top = max(rel.values())
    label_width = max(len(line.split()[0]) for line in out[:out.index(next(x for x in out if x.startswith("bars")))])

    def eighths(line: str) -> int:
        bar = line[label_width + 2:].split(" rel ")[0].rstrip()
        return 8 * bar.count("█") + sum(" ▏▎▍▌▋▊▉".index(c) for c in bar if c != "█")

    bar_width = eighths(rows[0]) // 8  # the largest change fills the bars' width
    assert 140 - label_width - 20 < bar_width and max(map(len, out[:-1])) <= 140
    for key, line in zip(keys, rows):
        assert eighths(line) == max(1, round(rel[key] / top * bar_width * 8)), key
        assert line.endswith(f"rel {rel[key]:.4g}")


def test_diff_plot_json_is_diff_json(run_cli) -> None:
    args = [CORPUS / f"{RUN}/ckpt-3", CORPUS / f"{RUN}/ckpt-5"]
    assert run_cli("diff", "--plot", "--json", *args).stdout == run_cli("diff", "--json", *args).stdout


# -- ASCII, hostile keys -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [["stats", "--hist", ESTIMATOR], ["trend", "--plot", RUN],
                                  ["diff", "--plot", f"{RUN}/ckpt-3", f"{RUN}/ckpt-5"]], ids=lambda a: a[0])
def test_ascii_output_is_ascii(run_cli, fixed, argv: list[str]) -> None:
    unicode = run_cli(*argv).stdout
    result = run_cli(*argv, "--ascii")
    assert result.stdout.isascii() and not unicode.isascii()
    assert len(result.stdout.splitlines()) == len(unicode.splitlines())


def _hostile_run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    for step in (1, 2):
        write_checkpoint(run / f"ckpt-{step}", {HOSTILE_KEY: np.arange(4, dtype=np.float32) * step,
                                                "ok": np.ones(2, np.float32)})
    return run


@pytest.mark.parametrize("command", ["stats", "trend", "diff"])
def test_hostile_key_is_inert(run_cli, tmp_path, monkeypatch, command: str) -> None:
    """Control characters of a key are shown escaped (no escape sequence, bell or extra line reaches the
    terminal); HTML is plain text here."""
    monkeypatch.setenv("COLUMNS", "100")
    run = _hostile_run(tmp_path)
    argv: dict[str, list[Any]] = {"stats": ["stats", "--hist", run / "ckpt-2"], "trend": ["trend", "--plot", run],
                                  "diff": ["diff", "--plot", run / "ckpt-1", run / "ckpt-2"]}
    out = run_cli(*argv[command]).stdout
    assert "\x1b" not in out and "\x07" not in out
    assert "evil\\x1b[31m\\x07<script>alert(1)</script>\\x0anext" in out
    assert not any(line.startswith("next") for line in out.splitlines())
