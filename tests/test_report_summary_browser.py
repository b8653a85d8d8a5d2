"""The summary page of `ckpt report` in headless Chromium (as tests/test_report_browser.py): it opens from disk
with no console error (a refused script, a request or a failed inflate would be one), its search inflates every
key and finds them by substring and by flag, and a found key that the page details links to its section.
``CKPT_REPORT_SCREENS=DIR`` keeps a screenshot of a search there (report-summary-small.png; the one in
docs/screens is of a 100,001-tensor bundle)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from .browser import Page, chromium
from .test_report_summary import bundle, nonfinite, tensors  # noqa: F401 (bundle: a fixture)

pytest.importorskip("websocket", reason="needs websocket-client (the test extra)")
pytestmark = pytest.mark.skipif(chromium() is None, reason="needs chromium (apt-get install chromium)")


@pytest.fixture(scope="module")
def page():
    with Page(1100, 900) as p:
        yield p


def _search(page: Page, text: str, flag: int = 0) -> list[str]:
    """Type ``text``, choose ``flag``; the keys listed."""
    return page.eval(f"""(async () => {{
        const box = document.querySelector('input[type=search]'), which = document.querySelector('select.which');
        which.value = '{flag}'; which.dispatchEvent(new Event('change'));
        box.value = {text!r}; box.dispatchEvent(new Event('input'));
        await new Promise(r => setTimeout(r, 300));
        return [...document.querySelectorAll('table.found td.k')].map(td => td.firstChild.textContent); }})()""")


def test_summary_search_finds_every_key_offline(bundle, run_cli, tmp_path: Path, page: Page) -> None:  # noqa: F811
    out = tmp_path / "many.html"
    assert run_cli("report", bundle[0], "-o", out).exit_code == 0
    page.errors.clear()
    page.open(out)
    loaded = page.eval("""(async () => { for (let i = 0; i < 100; i++) {
        const n = document.querySelector('.ckpt-report').getAttribute('data-keys-loaded');
        if (n !== null) { return Number(n); } await new Promise(r => setTimeout(r, 50)); } return -1; })()""")
    values = tensors()
    assert loaded == len(values)
    assert page.errors == []
    found = _search(page, "LAYER_7/")
    assert sorted(found) == ["layer_7/bias", "layer_7/kernel"]
    assert sorted(_search(page, "", 1)) == sorted(nonfinite(values))
    assert page.eval("document.querySelector('.count').textContent").startswith("4 of 1,507 keys")
    many = _search(page, "layer_")
    assert len(many) == 200 and "the first 200 shown" in page.eval("document.querySelector('.count').textContent")
    _search(page, "emb/weights")
    page.eval("document.querySelector('table.found a').click()")
    assert page.eval("document.querySelector(':target').dataset.key") == "emb/weights"
    page.eval("document.querySelector('table.groups tr[data-key=\"h.{i}.attn.w\"]').click()")
    assert page.eval("document.querySelector('input[type=search]').value") == "h."
    assert page.eval("document.querySelector('.count').textContent").startswith("300 of 1,507 keys")
    folder = os.environ.get("CKPT_REPORT_SCREENS")
    if folder:
        _search(page, "attn")
        page.eval("window.scrollTo(0, 0)")
        page.screenshot(Path(folder) / "report-summary-small.png")
    assert page.errors == []


@pytest.mark.parametrize("kind", ["checkpoint", "diff"])
def test_hostile_keys_in_a_summary_run_no_script(tmp_path: Path, page: Page, kind: str) -> None:
    import numpy as np

    from formats.ops.report.build import build_report

    from .test_diff import memory_checkpoint
    from .test_report import HOSTILE

    values = {k: np.arange(6, dtype=np.float32).reshape(2, 3) + i for i, k in enumerate(HOSTILE)}
    values[HOSTILE[0]][0, 0] = np.nan
    sides = [memory_checkpoint("<b>x</b>", values)]
    if kind == "diff":
        sides.append(memory_checkpoint("b", {k: v * 2 for k, v in values.items()}))
    out = tmp_path / f"hostile-{kind}.html"
    build_report(sides, page="summary").write_html(str(out))
    page.errors.clear()
    page.open(out)
    assert page.eval("""(async () => { for (let i = 0; i < 100; i++) {
        if (document.querySelector('.ckpt-report').getAttribute('data-keys-loaded') !== null) { return true; }
        await new Promise(r => setTimeout(r, 50)); } return false; })()""")
    found = _search(page, "", 8)  # every detailed key, drawn by the script as text
    assert len(found) == len(HOSTILE) and any("<script>" in k for k in found)
    assert page.eval("typeof window.__pwned") == "undefined"
    assert page.eval("document.querySelectorAll('img').length") == 0
    assert page.errors == []


def test_a_search_missing_keys_says_so(tmp_path: Path, page: Page) -> None:
    import numpy as np

    from formats.ops.report.summary import checkpoint_summary
    from formats.ops.report.summary_html import render_summary_html

    from .test_diff import memory_checkpoint

    ckpt = memory_checkpoint("m", {f"{np.random.default_rng(i).bytes(16).hex()}": np.ones(2) for i in range(3000)})
    summary = checkpoint_summary(ckpt, key_budget=20_000)
    assert 0 < summary.keys.packed < 3000
    out = tmp_path / "partial.html"
    out.write_text(render_summary_html(summary), "utf-8")
    page.errors.clear()
    page.open(out)
    _search(page, "a")
    assert f"(the search holds {summary.keys.packed:,} of 3,000)" in page.eval(
        "document.querySelector('.count').textContent")
    assert page.errors == []
