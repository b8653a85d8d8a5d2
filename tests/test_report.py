"""`ckpt report` and formats.report: the report's data against numpy on the corpus (statistics, histogram bin
counts exact for the same bins, diff statistics, heatmap cells, a run's norms), the page's size bounds and
escaping of hostile keys, and the command line."""
from __future__ import annotations

import html
import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import formats
from formats import write_checkpoint
from formats.api import open_checkpoint
from formats.core.names import safe_text
from formats.ops.report.build import build_report, checkpoint_report
from formats.ops.report.heatmap import heatmap
from formats.ops.report.html import anchor, script_json

from .conftest import CORPUS, MANIFEST
from .test_diff import memory_checkpoint, read_all
from .test_stats import as_float64, close, expected

SLOTS = "seed_slots/tf_ckpts"


def values_of(rel: str) -> dict[str, np.ndarray]:
    """Every value: checked against the manifest (TensorFlow's own reading) where it has the checkpoint, else
    as read (the Keras readers are checked against h5py in test_contract)."""
    if rel in MANIFEST:
        return read_all(rel)
    with open_checkpoint(CORPUS / rel) as ckpt:
        return {k: e.read() for k, e in ckpt.items()}


def finite_float(value: np.ndarray) -> np.ndarray:
    """A value as the report bins it: float64 as the statistics see it (complex: magnitudes), finite elements
    only."""
    x = as_float64(value)
    return x[np.isfinite(x)]


def check_histograms(doc: dict[str, Any], value: np.ndarray) -> None:
    """Bin counts exactly numpy's for the same bins: linear over the values, log over log10 |x| of the
    non-zero ones."""
    x = finite_float(value)
    lin = doc["histograms"]["linear"]
    counts, _ = np.histogram(x, bins=len(lin["counts"]), range=(lin["edges"][0], lin["edges"][-1]))
    assert lin["counts"] == counts.tolist()
    assert sum(lin["counts"]) == x.size
    log = doc["histograms"].get("log")
    nonzero = np.abs(x[x != 0])
    if log is not None and nonzero.size:
        mags = np.clip(np.log10(nonzero), log["edges"][0], log["edges"][-1])
        counts, _ = np.histogram(mags, bins=len(log["counts"]), range=(log["edges"][0], log["edges"][-1]))
        assert log["counts"] == counts.tolist()
        assert log["zeros"] == int((x == 0).sum())


@pytest.mark.parametrize("rel", ["tf1_estimator/model.ckpt-200", "tf2_mixed/all_dtypes/ckpt-1",
                                 "tf1_partitioned/model.ckpt-200", f"{SLOTS}/ckpt-5",
                                 "keras3_tagger/tagger.keras"])
def test_checkpoint_report_matches_numpy(rel: str) -> None:
    values = values_of(rel)
    report = formats.report(CORPUS / rel, log_bins=rel.startswith("tf2_mixed"))
    doc = report.to_json()
    assert doc["kind"] == "checkpoint" and doc["paths"] == [str(CORPUS / rel)]
    variables = doc["checkpoint"]["variables"]
    assert [v["key"] for v in variables] == sorted(values)
    for v in variables:
        value = values[v["key"]]
        assert (v["shape"], v["dtype"]) == (list(value.shape), v["dtype"])
        if value.dtype.kind in "OSUV" and value.dtype.kind != "V" or v["dtype"] in ("string", "variant"):
            assert v["histograms"] == {}
            continue
        close(v["stats"], expected(value))
        assert sorted(v["histograms"]) == (["linear", "log"] if rel.startswith("tf2_mixed") else ["linear"])
        check_histograms(v, value)
        x = finite_float(value)
        assert ("all-zero" in v["flags"]) == (value.size > 0 and not np.count_nonzero(value))
        assert ("nan" in v["flags"]) == bool(np.isnan(x).any() or value.size != x.size and np.isnan(
            value.astype(np.complex128) if value.dtype.kind == "c" else value.astype(np.float64)).any())


def test_tree_puts_optimizer_state_apart() -> None:
    with open_checkpoint(CORPUS / SLOTS / "ckpt-5") as ckpt:
        report = checkpoint_report(ckpt)
        roles = {k: e.role for k, e in ckpt.items()}

    def keys(tree: Any) -> set[str]:
        return {n.key for _, _, n in tree.root.walk() if n.key is not None}

    model, optimizer = keys(report.tree), keys(report.optimizer)
    assert model and optimizer and not model & optimizer
    assert all(roles[k] in ("slot", "optimizer") for k in optimizer)
    assert all(roles[k] not in ("slot", "optimizer") for k in model)
    assert model | optimizer == {k for k in roles if k != "_CHECKPOINTABLE_OBJECT_GRAPH"} | (
        model | optimizer) & {"_CHECKPOINTABLE_OBJECT_GRAPH"}
    assert report.tree.root.parameters + report.optimizer.root.parameters == report.parameters


def test_nan_inf_and_all_zero_flags() -> None:
    ckpt = memory_checkpoint("mem", {"a": np.array([1.0, np.nan, 2.0], np.float32),
                                     "b": np.array([np.inf, 1.0]), "z": np.zeros((3, 4), np.float16),
                                     "s": np.array([b"x", b"y"], dtype=object)})
    doc = {v.key: v for v in checkpoint_report(ckpt).variables}
    assert doc["a"].flags == ["nan"] and doc["b"].flags == ["inf"] and doc["z"].flags == ["all-zero"]
    assert doc["s"].flags == [] and doc["s"].stats.histograms == {}


def test_diff_report_matches_numpy_and_is_sorted() -> None:
    a_rel, b_rel = f"{SLOTS}/ckpt-3", f"{SLOTS}/ckpt-5"
    va, vb = read_all(a_rel), read_all(b_rel)
    doc = formats.report(CORPUS / a_rel, CORPUS / b_rel).to_json()["diff"]
    rels = []
    for pair in doc["changed"]:
        a, b = va[pair["key"]], vb[pair["key"]]
        if a.dtype.kind in "fiu":
            fa, fb = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
            assert pair["rel_l2"] == pytest.approx(np.linalg.norm(fb - fa) / np.linalg.norm(fa), rel=1e-9)
            assert pair["cosine"] == pytest.approx(fa @ fb / np.linalg.norm(fa) / np.linalg.norm(fb), rel=1e-9)
        rels.append(pair.get("rel_l2"))
        if a.ndim == 2 and a.dtype.kind == "f":
            assert pair["heatmap"]["cells"] == pytest.approx(block_means(np.abs(b - a)).ravel().tolist())
        else:
            assert pair["heatmap"] is None
    known = [r for r in rels if r is not None]
    assert known == sorted(known, reverse=True)
    assert doc["same"] + len(doc["changed"]) == len(va)


def block_means(d: np.ndarray, cells: int = 48) -> np.ndarray:
    """Independent down-sampling: cell (i, j) is the mean over rows [ceil(i*m/R), ceil((i+1)*m/R)), same for
    columns."""
    m, n = d.shape
    rows, cols = min(m, cells), min(n, cells)
    out = np.zeros((rows, cols))
    for i in range(rows):
        for j in range(cols):
            r0, r1 = -(-i * m // rows), -(-(i + 1) * m // rows)
            c0, c1 = -(-j * n // cols), -(-(j + 1) * n // cols)
            out[i, j] = d[r0:r1, c0:c1].astype(np.float64).mean()
    return out


@pytest.mark.parametrize("shape,chunk", [((37, 101), 50), ((3, 1000), 64), ((200, 7), 13), ((1, 5), 2),
                                         ((100, 100), 1 << 20)])
def test_heatmap_streams_any_chunking(shape: tuple[int, int], chunk: int) -> None:
    rng = np.random.default_rng(sum(shape))
    a = rng.normal(size=shape).astype(np.float32)
    b = a + rng.normal(size=shape).astype(np.float32) * np.linspace(0, 1, shape[1], dtype=np.float32)
    b[0, 0] = np.nan  # a cell with a non-finite element: the mean of the others
    ca, cb = memory_checkpoint("a", {"w": a}), memory_checkpoint("b", {"w": b})
    got = heatmap(ca["w"], cb["w"], chunk_elements=chunk)
    d = np.abs(b.astype(np.float64) - a.astype(np.float64))
    want = block_means(np.where(np.isfinite(d), d, 0))
    counts = block_means(np.isfinite(d).astype(np.float64))
    with np.errstate(invalid="ignore"):
        want = want / counts  # a cell of only the NaN: None
    assert (got.rows, got.cols) == want.shape
    assert [c is None for c in got.cells] == np.isnan(want).ravel().tolist()
    assert [c for c in got.cells if c is not None] == pytest.approx(want[~np.isnan(want)].tolist(), rel=1e-9)


def test_run_report_norms_steps_and_times() -> None:
    doc = formats.report(CORPUS / SLOTS).to_json()
    assert doc["kind"] == "run"
    run = doc["run"]
    assert [c["step"] for c in run["checkpoints"]] == [3, 4, 5]
    for c in run["checkpoints"]:
        assert c["mtime"] == pytest.approx(os.stat(c["path"] + ".index").st_mtime, abs=1.0)
    values = [read_all(f"{SLOTS}/ckpt-{s}") for s in (3, 4, 5)]
    for v in run["variables"]:
        norms = [float(np.linalg.norm(finite_float(vals[v["key"]]))) for vals in values]
        assert v["norm"] == pytest.approx(norms, rel=1e-9)


def test_kind_is_found_from_the_paths() -> None:
    assert formats.report(CORPUS / SLOTS, kind="checkpoint").checkpoint.path.endswith("ckpt-5")
    with pytest.raises(formats.UsageError):
        formats.report(CORPUS / SLOTS, kind="diff")


# -- the page ----------------------------------------------------------------------------------------------
def generated(tmp_path: Path, count: int, rows: int, name: str = "big") -> Path:
    rng = np.random.default_rng(0)
    tensors = {f"layer_{i:04d}/kernel": rng.normal(size=(rows, 64)).astype(np.float32) for i in range(count)}
    prefix = tmp_path / name / "ckpt-1"
    write_checkpoint(str(prefix), tensors)
    return prefix


def test_page_size_does_not_grow_with_tensor_size(tmp_path: Path) -> None:
    small = formats.report(generated(tmp_path, 20, 8, "small")).to_html()
    large = formats.report(generated(tmp_path, 20, 4096, "large")).to_html()
    assert abs(len(large) - len(small)) < 20 * 400  # only the numbers' digits differ
    per_tensor = (len(large) - len(formats.report(generated(tmp_path, 1, 4096, "one")).to_html())) / 19
    assert per_tensor < 6000, per_tensor


def test_diff_and_run_pages_stay_small(tmp_path: Path) -> None:
    a, b = generated(tmp_path, 30, 2048, "a"), generated(tmp_path, 30, 2048, "b")
    page = formats.report(a, b).to_html()
    assert len(page) < 30 * 8000  # a heatmap (a 48x48 PNG) and a bar per changed tensor


HOSTILE = ["<script>window.__pwned = 1</script>", '"><img src=x onerror="window.__pwned=2">',
           "</script><script>window.__pwned=3</script>", "a\u2028b\u2029c/<!--x", "raw/\udcff\udcfe",
           "lone/\ud800", "amp&lt;/kernel", "javascript:window.__pwned=4"]


def hostile_report(kind: str) -> Any:
    tensors = {k: np.arange(6, dtype=np.float32).reshape(2, 3) + i for i, k in enumerate(HOSTILE)}
    if kind == "checkpoint":
        return build_report([memory_checkpoint("<b>x</b>", tensors)])
    other = {k: v * 2 for k, v in tensors.items()}
    return build_report([memory_checkpoint("<i>a</i>", tensors), memory_checkpoint("b", other)])


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.h3: list[str] = []
        self._in_h3 = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_h3 = self._in_h3 or tag == "h3"
        if tag == "h3":
            self.h3.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "h3":
            self._in_h3 = False

    def handle_data(self, data: str) -> None:
        if self._in_h3:
            self.h3[-1] += data


@pytest.mark.parametrize("kind", ["checkpoint", "diff"])
def test_hostile_keys_are_escaped(kind: str) -> None:
    page = hostile_report(kind).to_html()
    page.encode("utf-8")  # valid UTF-8 whatever the keys
    parser = _Collect()
    parser.feed(page)
    assert [t for t, _ in parser.tags].count("script") == 2  # the data and the page's own script
    assert not any(t == "img" for t, _ in parser.tags)
    assert not any(name.startswith("on") for _, attrs in parser.tags for name in attrs)
    assert sorted(h.strip() for h in parser.h3) == sorted(safe_text(k) for k in HOSTILE)
    data = re.search(r'<script type="application/json" class="ckpt-data">(.*?)</script>', page, re.S)
    assert data is not None and "<" not in data.group(1) and "\u2028" not in data.group(1)
    doc = json.loads(data.group(1))
    keys = [v["key"] for v in doc["checkpoint"]["variables"]] if kind == "checkpoint" else \
        [c["key"] for c in doc["diff"]["changed"]]
    assert sorted(keys) == sorted(safe_text(k) for k in HOSTILE)
    for key in HOSTILE:  # every anchor is an id and a link to it
        assert f'id="{html.escape(anchor("k-", key))}"' in page
        assert re.fullmatch(r"k-[A-Za-z0-9/._:%-]+", anchor("k-", key))


def test_script_json_cannot_end_its_script() -> None:
    text = script_json({"k": "</script><!-- \u2028\u2029 & >", "nan": float("nan")})
    assert not re.search(r"[<>&\u2028\u2029]", text)
    assert json.loads(text) == {"k": "</script><!-- \u2028\u2029 & >", "nan": None}


def test_repr_html_is_the_pages_body() -> None:
    report = formats.report(CORPUS / SLOTS / "ckpt-5")
    fragment = report._repr_html_()
    assert fragment.startswith('<div class="ckpt-report">') and fragment in report.to_html()
    assert "<html" not in fragment


# -- the command line --------------------------------------------------------------------------------------
def test_cli_writes_the_page_and_refuses_to_replace_it(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    result = run_cli("report", CORPUS / SLOTS / "ckpt-5", "-o", out)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith(f"wrote {out}: checkpoint report (15 tensors)")
    page = out.read_text()
    assert page.startswith("<!doctype html>") and page.count('<article class="var"') == 15
    again = run_cli("report", CORPUS / SLOTS / "ckpt-5", "-o", out)
    assert again.exit_code != 0 and "exists" in again.stderr
    assert run_cli("report", CORPUS / SLOTS / "ckpt-5", "-o", out, "--force").exit_code == 0


def test_an_existing_page_is_refused_before_anything_is_read(run_cli, tmp_path: Path) -> None:
    """The refusal comes first: a checkpoint that cannot even be read still gets "output file exists"."""
    out = tmp_path / "r.html"
    out.write_bytes(b"keep")
    result = run_cli("report", tmp_path / "no-such-ckpt", "-o", out)
    assert result.exit_code == 4 and "output file exists" in result.stderr and out.read_bytes() == b"keep"
    inside = run_cli("report", CORPUS / SLOTS / "ckpt-5", "-o", CORPUS / SLOTS / "ckpt-5.index", "--force")
    assert inside.exit_code != 0 and (CORPUS / SLOTS / "ckpt-5.index").read_bytes()[:4] != b"<!do"


def test_cli_json_is_the_library_data(run_cli) -> None:
    result = run_cli("report", CORPUS / SLOTS / "ckpt-3", CORPUS / SLOTS / "ckpt-5", "--json", "-j", "1")
    assert result.exit_code == 0, result.stderr
    want = formats.report(CORPUS / SLOTS / "ckpt-3", CORPUS / SLOTS / "ckpt-5", jobs=1).to_json()
    assert json.loads(result.stdout) == json.loads(json.dumps(want))


def test_cli_needs_an_output(run_cli) -> None:
    result = run_cli("report", CORPUS / SLOTS / "ckpt-5")
    assert result.exit_code == 2 and "-o OUT.html" in result.stderr


def test_cli_never_overwrites_an_input(run_cli, corpus_copy) -> None:
    folder = corpus_copy(SLOTS)
    result = run_cli("report", folder / "ckpt-5", "-o", folder / "ckpt-5.index", "--force")
    assert result.exit_code != 0 and "being read" in result.stderr


@pytest.mark.parametrize("rel", ["saved_models/module", "saved_models/tf_keras_model", "tf1_v1_adam/model.ckpt-30",
                                 "tf1_v1_sharded", "keras2_tagger/tagger_model.h5", "keras2_tagger/tagger_weights.h5"])
def test_every_format_gets_a_section_per_tensor(rel: str) -> None:
    report = formats.report(CORPUS / rel, jobs=1)
    with open_checkpoint(CORPUS / rel) as ckpt:
        keys = sorted(ckpt)
        numeric = {k for k, e in ckpt.items() if e.dtype not in ("string", "variant")}
    page = report.to_html()
    assert page.count('<article class="var"') == len(keys)
    for v in report.checkpoint.variables:
        hist = (v.stats.histograms or {}).get("linear")
        assert (hist is not None) == (v.key in numeric)
        if hist is not None:
            assert hist.binned == v.stats.size - (v.stats.nan or 0) - (v.stats.inf or 0)
