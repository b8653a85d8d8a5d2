"""`ckpt report` of many tensors: the summary page (formats.ops.report.summary). Its size is bounded by
construction (an adversarial 200,000-tensor report), every key is in its packed search data with the right
flags, every tensor holding NaN or Inf is listed, pattern rows count exactly, the diff's largest changes come
first, and the work grows linearly (calls counted at 10,000 and 40,000 tensors). Oracles: numpy on the arrays
written, Python's zlib and base64 on the page's bytes."""
from __future__ import annotations

import base64
import html
import json
import re
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from formats import write_checkpoint
from formats.ops.report.digest import Group, PackedKeys, key_pattern, pack_keys
from formats.ops.report.result import Report
from formats.ops.report.summary import FLAGS, SummaryReport, TensorRow, checkpoint_summary, wants_summary
from formats.ops.report.summary_html import PAGE_LIMIT, render_summary_html

from .conftest import CORPUS
from .test_diff import memory_checkpoint

BIT = {name: bit for name, bit in FLAGS["checkpoint"]}


def tensors() -> dict[str, np.ndarray]:
    """1,507 tensors: numbered layers, ``h.{i}`` blocks, NaN and Inf in a few, an all-zero one, a string, a
    tensor large enough to be read in chunks with a NaN near its end."""
    rng = np.random.default_rng(3)
    out: dict[str, np.ndarray] = {}
    for i in range(600):
        out[f"layer_{i}/kernel"] = rng.normal(size=(2, 2)).astype(np.float32)
        out[f"layer_{i}/bias"] = rng.normal(size=(2,)).astype(np.float32)
    for i in range(300):
        out[f"h.{i}.attn.w"] = rng.normal(size=(3,)).astype(np.float64)
    out["layer_7/kernel"][0, 1] = np.nan
    out["h.3.attn.w"][2] = np.inf
    out["layer_100/bias"][:] = [np.nan, -np.inf]
    big = rng.normal(size=(300, 300)).astype(np.float32)
    big[299, 5] = np.nan
    out["emb/weights"] = big
    out["zeros/w"] = np.zeros((4, 4), np.float32)
    out["step"] = np.array(7, np.int64)
    out["vocab"] = np.array([b"a", b"bc"], dtype=object)
    out["odd key\nwith newline"] = np.ones(2, np.float32)
    out["layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE"] = np.ones(2, np.float32)
    out["layer_with_weights-1/kernel/.ATTRIBUTES/VARIABLE_VALUE"] = np.ones(2, np.float32)
    return out


def nonfinite(values: dict[str, np.ndarray]) -> dict[str, tuple[int, int]]:
    """key -> (NaN count, Inf count) of every numeric tensor holding either (numpy's count)."""
    out = {}
    for key, v in values.items():
        if v.dtype.kind == "f" and not np.isfinite(v).all():
            out[key] = (int(np.isnan(v).sum()), int(np.isinf(v).sum()))
    return out


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, np.ndarray]]:
    values = tensors()
    prefix = str(tmp_path_factory.mktemp("many") / "ckpt-1")
    write_checkpoint(prefix, values)
    return prefix, values


def packed_lines(page: str) -> list[str]:
    """The page's search data, inflated with zlib (raw deflate) from base64."""
    found = re.search(r'<script type="application/octet-stream" class="ckpt-keys">([^<]*)</script>', page)
    assert found is not None
    text = zlib.decompress(base64.b64decode(found.group(1)), -15).decode("utf-8")
    return text.split("\n") if text else []


def table_rows(page: str, css: str) -> list[list[str]]:
    """The cells (text, unescaped) of each data row of the first ``<table class="css">``."""
    body = page.split(f'<table class="{css}">', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr data-key=[^>]*>(.*?)</tr>", body, re.S)
    return [[html.unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)]
            for r in rows]


@pytest.fixture(scope="module")
def page(bundle, tmp_path_factory: pytest.TempPathFactory) -> str:
    from click.testing import CliRunner

    from .conftest import SHIPPED

    out = tmp_path_factory.mktemp("page") / "many.html"
    result = CliRunner().invoke(SHIPPED, ["report", bundle[0], "-o", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    assert "summary of 1507 tensors, 4 with NaN/Inf/unreadable" in result.stdout
    return out.read_text("utf-8")


def test_auto_draws_a_summary_past_the_threshold(page: str) -> None:
    assert '<div class="ckpt-report summary">' in page
    assert wants_summary(1001, 48) and not wants_summary(1000, 48) and wants_summary(501, 48, 2)


def test_every_key_is_in_the_search_data_with_its_flags(page: str, bundle) -> None:
    values = tensors()
    lines = packed_lines(page)
    keys = {line[1:].replace("\u2424", "\n"): ord(line[0]) - 64 for line in lines}
    assert len(lines) == len(values) and set(keys) == set(values)
    bad = nonfinite(values)
    assert {k for k, f in keys.items() if f & BIT["NaN/Inf"]} == set(bad)
    assert {k for k, f in keys.items() if f & BIT["all-zero"]} == {"zeros/w"}
    assert not any(f & BIT["unreadable"] for f in keys.values())
    largest = max(values, key=lambda k: values[k].nbytes if values[k].dtype != object else 0)
    assert keys[largest] & BIT["detailed"] and f'id="k-{largest}"' in page
    flagged_first = [ord(line[0]) - 64 for line in lines]
    assert flagged_first == sorted(flagged_first, key=lambda f: f == 0)


def test_every_nonfinite_tensor_is_listed_with_its_counts(page: str) -> None:
    bad = nonfinite(tensors())
    rows = table_rows(page, "flagged")
    assert {r[0]: (int(r[4]), int(r[5])) for r in rows} == bad


def test_pattern_rows_count_exactly(page: str) -> None:
    rows = {r[0]: r for r in table_rows(page, "groups")}
    assert rows["layer_{i}/kernel"][1:3] == ["600", "i 0..599"]
    assert rows["layer_{i}/bias"][1:3] == ["600", "i 0..599"]
    assert rows["h.{i}.attn.w"][1:3] == ["300", "i 0..299"]
    assert rows["layer_with_weights-{i}/kernel/.ATTRIBUTES/VARIABLE_VALUE"][1:3] == ["2", "i 0..1"]
    assert rows["layer_{i}/kernel"][5] == "1" and rows["layer_{i}/bias"][5] == "1"  # NaN/Inf tensors
    assert sum(int(r[1].replace(",", "")) for r in rows.values()) == len(tensors())


def test_key_pattern_collapses_numbered_parts_only() -> None:
    assert key_pattern("model/block_0001/unit_07/w") == "model/block_{i}/unit_{j}/w"
    assert key_pattern("h.11.attn.c_proj.weight") == "h.{i}.attn.c_proj.weight"
    assert key_pattern("layer_with_weights-12/bias") == "layer_with_weights-{i}/bias"
    assert key_pattern("conv2d/kernel:0") == "conv2d/kernel:0"
    assert key_pattern("fc1/w") == "fc1/w"


def test_json_is_the_summary(bundle, run_cli) -> None:
    result = run_cli("report", bundle[0], "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)["checkpoint"]
    assert doc["summary"] is True and doc["tensors"] == 1507 and doc["keys_packed"] == 1507
    assert {r["key"]: (r["nan"], r["inf"]) for r in doc["flagged"]} == nonfinite(tensors())
    assert len(doc["details"]) == 100 and all(d["histograms"]["linear"] for d in doc["details"]
                                              if d["dtype"] != "string")


def test_page_full_and_summary_can_be_asked_for(bundle, run_cli, tmp_path: Path) -> None:
    small = CORPUS / "seed_slots" / "tf_ckpts" / "ckpt-5"
    out = tmp_path / "small.html"
    assert run_cli("report", small, "--page", "summary", "-o", out).exit_code == 0
    assert '<div class="ckpt-report summary">' in out.read_text()
    full = tmp_path / "full.html"
    assert run_cli("report", bundle[0], "--page", "full", "-o", full, "--bins", "2").exit_code == 0
    assert full.read_text().count('<article class="var"') == 1507


def adversarial(count: int) -> SummaryReport:
    """A summary of ``count`` tensors built to be as large as it can: every key unique and random (nothing to
    compress, no pattern shared), long, full of characters HTML escapes, and every tensor non-finite."""
    rng = np.random.default_rng(0)
    keys = ["<&>" + rng.bytes(60).hex() + "\u00e9" * 40 for _ in range(count)]
    groups = [Group(k, 1, 4, 1, 1, [[1, 10 ** 12]] * 5) for k in keys]
    rows = [TensorRow(k, "float32", (1,) * 8, 4, 1, 1, 0, "x" * 200) for k in keys]
    packed = pack_keys(((1, k) for k in keys), count, 5_000_000)
    return SummaryReport("checkpoint", ["p" * 5000], "tf-name", count, 4 * count, count, groups, groups, 1, rows,
                         packed, notes=["n" * 5000] * 100)


def test_page_size_is_bounded_by_construction() -> None:
    report = adversarial(200_000)
    data = render_summary_html(report).encode("utf-8")
    assert len(data) <= PAGE_LIMIT
    assert 0 < report.keys.packed < report.keys.total  # the keys alone pass the budget: some left out, and said
    assert b"The search holds" in data and b"list them with ckpt ls" in data
    lines = packed_lines(data.decode("utf-8"))
    assert len(lines) == report.keys.packed
    assert b"more (search with the NaN/Inf filter" in data


@pytest.mark.parametrize("budget", [100, 4_000, 50_000])
def test_packed_keys_stay_within_their_budget(budget: int) -> None:
    rng = np.random.default_rng(budget)
    keys = [rng.bytes(20).hex() for _ in range(5_000)]
    packed = pack_keys(((0, k) for k in keys), len(keys), budget, chunk=1_000)
    assert len(packed.text) <= budget
    text = zlib.decompress(base64.b64decode(packed.text), -15).decode()
    got = text.split("\n") if text else []
    assert [line[1:] for line in got] == keys[:packed.packed] and len(got) == packed.packed < len(keys)
    assert len(packed.text) >= 0.9 * budget or budget < 1_000  # halving fills the budget


def test_a_million_tiny_keys_fit(tmp_path: Path) -> None:
    keys = [f"model/block_{i // 100:04d}/unit_{i % 100:02d}/w" for i in range(1_000_000)]
    packed = pack_keys(((0, k) for k in keys), len(keys), 5_000_000)
    assert packed.complete and packed == PackedKeys(packed.text, 1_000_000, 1_000_000, packed.raw_bytes)


def _calls(count: int) -> int:
    """Python and C function calls made building and drawing the summary of ``count`` tiny tensors."""
    ckpt = memory_checkpoint("mem", {f"layer_{i}/w": np.full(2, i, np.float32) for i in range(count)})
    calls = 0

    def counter(frame: Any, event: str, arg: Any) -> None:
        nonlocal calls
        calls += event in ("call", "c_call")

    sys.setprofile(counter)
    try:
        summary = checkpoint_summary(ckpt, detail_limit=10)
        render_summary_html(summary)
    finally:
        sys.setprofile(None)
    return calls


def test_work_grows_linearly_with_the_tensor_count() -> None:
    small, large = _calls(10_000), _calls(40_000)
    assert large <= 4.4 * small, (small, large)


def test_diff_summary_lists_the_largest_changes_first(tmp_path: Path, run_cli) -> None:
    rng = np.random.default_rng(5)
    a = {f"block_{i}/w": rng.normal(size=(4, 4)).astype(np.float32) for i in range(40)}
    a["gone"] = np.ones(2, np.float32)
    b = {k: v.copy() for k, v in a.items() if k != "gone"}
    b["extra"] = np.ones(2, np.float32)
    for i, scale in ((3, 0.5), (11, 0.01), (20, 2.0)):
        b[f"block_{i}/w"] = b[f"block_{i}/w"] + scale * rng.normal(size=(4, 4)).astype(np.float32)
    b["block_30/w"][0, 0] = np.nan
    write_checkpoint(tmp_path / "a" / "ckpt-1", a)
    write_checkpoint(tmp_path / "b" / "ckpt-1", b)
    out = tmp_path / "diff.html"
    result = run_cli("report", tmp_path / "a" / "ckpt-1", tmp_path / "b" / "ckpt-1", "--page", "summary", "-o", out)
    assert result.exit_code == 0, result.stderr
    text = out.read_text()
    bits = dict(FLAGS["diff"])
    flags = {line[1:]: ord(line[0]) - 64 for line in packed_lines(text)}
    assert set(flags) == set(a) | set(b)
    changed = {k for k in a if k in b and not np.array_equal(a[k], b[k], equal_nan=True)}
    assert {k for k, f in flags.items() if f & bits["changed"]} == changed
    assert {k for k, f in flags.items() if f & bits["NaN/Inf"]} == {"block_30/w"}
    assert {k for k, f in flags.items() if f & bits["only in A"]} == {"gone"}
    assert {k for k, f in flags.items() if f & bits["only in B"]} == {"extra"}
    finite = [k for k in changed if k != "block_30/w"]
    rel = {k: np.linalg.norm(b[k] - a[k]) / np.linalg.norm(a[k]) for k in finite}
    order = re.findall(r'<tr data-key="([^"]+)"><td class="k"><a', text.split("Largest changes", 1)[1])
    assert [k for k in order if k in rel] == sorted(rel, key=lambda k: -rel[k])
    assert [r[0] for r in table_rows(text, "flagged")] == ["block_30/w"]


def test_report_object_draws_the_summary_in_jupyter(bundle) -> None:
    import formats

    report = formats.report(bundle[0], page="summary")
    assert isinstance(report, Report) and report.summary is not None
    assert report._repr_html_().startswith('<div class="ckpt-report summary">')


def test_run_summary_lists_diverged_variables_and_largest_norm_changes(tmp_path: Path, run_cli) -> None:
    from formats.tf_bundle.state_file import update_state_file

    rng = np.random.default_rng(9)
    base = {f"layer_{i}/w": rng.normal(size=(3,)).astype(np.float32) for i in range(1_100)}
    folder = tmp_path / "run"
    for step, growth in ((1, 1.0), (2, 1.5), (3, 2.0)):
        values = {k: v.copy() for k, v in base.items()}
        values["layer_5/w"] *= growth ** 4  # moves most: 16x from first to last
        values["layer_9/w"] *= growth  # second: 2x
        if step >= 2:
            values["layer_7/w"][1] = np.nan
        write_checkpoint(folder / f"ckpt-{step}", values)
    update_state_file(str(folder), str(folder / "ckpt-3"))
    out = tmp_path / "run.html"
    result = run_cli("report", folder, "-o", out)
    assert result.exit_code == 0, result.stderr
    assert "summary of 1100 variables, 1 held NaN/Inf" in result.stdout
    text = out.read_text()
    flags = {line[1:]: ord(line[0]) - 64 for line in packed_lines(text)}
    assert set(flags) == set(base) and {k for k, f in flags.items() if f & 1} == {"layer_7/w"}
    assert [r[0] for r in table_rows(text, "flagged")] == ["layer_7/w"]
    order = re.findall(r'<tr data-key="([^"]+)"><td class="k"><a', text.split("Largest norm changes", 1)[1])
    assert order[:2] == ["layer_5/w", "layer_9/w"]
    assert {r[0]: r[1] for r in table_rows(text, "groups")}["layer_{i}/w"] == "1,100"


def test_scan_counts_as_numpy_does_for_every_dtype_and_size() -> None:
    import ml_dtypes

    from formats.ops.report.scan import SMALL_ELEMENTS, STREAM_ELEMENTS, scan_keys

    rng = np.random.default_rng(11)
    big = rng.normal(size=SMALL_ELEMENTS * 5 + 7).astype(np.float32)
    big[[3, STREAM_ELEMENTS + 1, -1]] = [np.nan, np.inf, 0.0]
    values = {"a_f16": np.array([1.5, np.nan, -np.inf, 0.0], np.float16),
              "b_bf16": np.array([2.0, -3.0, np.nan], ml_dtypes.bfloat16),
              "c_i32": np.array([[0, -7], [5, 0]], np.int32), "d_bool": np.array([True, False, False]),
              "e_c64": np.array([1 + 1j, np.nan + 0j, 0j, complex(np.inf, 1)], np.complex64),
              "f_empty": np.zeros((0, 3), np.float32), "g_big": big, "h_f64": np.array(-4.0),
              "i_str": np.array([b"x"], dtype=object)}
    cols, _ = scan_keys(memory_checkpoint("mem", values), list(values))
    for i, (key, v) in enumerate(values.items()):
        if v.dtype == object:
            assert not cols.numeric[i] and cols.nan[i] == cols.inf[i] == 0
            continue
        x = np.abs(v.astype(np.complex128)) if v.dtype.kind == "c" else v.astype(np.float64)
        finite = x[np.isfinite(x)]
        assert (cols.nan[i], cols.inf[i], cols.zeros[i]) == (np.isnan(x).sum(), np.isinf(x).sum(),
                                                              (x == 0).sum()), key
        assert cols.absmax[i] == (np.abs(finite).max() if finite.size else 0.0), key
        assert cols.sumsq[i] == pytest.approx(float((finite * finite).sum()), rel=1e-12), key


def test_summary_lists_each_unreadable_tensor(tmp_path: Path) -> None:
    import formats

    from .test_unreadable_entries import DATETIME, PICKLED, _npz

    report = formats.report(_npz(tmp_path / "m.npz"), page="summary")
    doc = report.to_json()["checkpoint"]
    assert {r["key"]: r["unreadable"] for r in doc["flagged"]} == {"bad": PICKLED, "t": DATETIME}
    flags = {line[1:]: ord(line[0]) - 64 for line in packed_lines(report.to_html())}
    assert {k for k, f in flags.items() if f & BIT["unreadable"]} == {"bad", "t"} and set(flags) == {"ok", "bad", "t"}
