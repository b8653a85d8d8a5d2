"""`ckpt report` pages in a real browser: headless Chromium (Debian's `chromium`) opens each kind of report
from disk with JavaScript on, over the DevTools protocol. No console error (a refused script or a request
would be one), the tree expands, the search filters, every tensor's section has its SVG, the log switch
shows the log histograms, and a page of hostile keys ran no script but its own. Skipped without Chromium or
websocket-client. ``CKPT_REPORT_SCREENS=DIR`` keeps a screenshot of each kind there (docs/screens/)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from .browser import Page, chromium
from .conftest import CORPUS
from .test_report import HOSTILE, hostile_report

pytest.importorskip("websocket", reason="needs websocket-client (the test extra)")
pytestmark = pytest.mark.skipif(chromium() is None, reason="needs chromium (apt-get install chromium)")

SLOTS = CORPUS / "seed_slots" / "tf_ckpts"
ESTIMATOR = CORPUS / "tf1_estimator"
KINDS = {"checkpoint": [CORPUS / "keras3_tagger" / "tagger.keras"],
         "diff": [ESTIMATOR / "model.ckpt-1", ESTIMATOR / "model.ckpt-200"], "run": [SLOTS]}


@pytest.fixture(scope="module")
def page():
    with Page(1000, 1000) as p:
        yield p


def written(run_cli, tmp_path: Path, kind: str) -> Path:
    out = tmp_path / f"{kind}.html"
    result = run_cli("report", *(os.path.relpath(p) for p in KINDS[kind]), "-o", out)
    assert result.exit_code == 0, result.stderr
    return out


def _screen(page: Page, kind: str) -> None:
    folder = os.environ.get("CKPT_REPORT_SCREENS")
    if folder:
        page.eval("document.querySelectorAll('.tree > details').forEach(d => { d.open = true; })")
        page.eval("window.scrollTo(0, 0)")
        height = None
        if kind == "diff":  # down to the first heatmap, under the table
            height = page.eval("(() => { const a = document.querySelector('svg.heat').closest('article');"
                               "return Math.ceil(a.getBoundingClientRect().bottom + 8); })()")
        page.screenshot(Path(folder) / f"report-{kind}.png", height)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_kind_opens_without_errors_and_draws_every_section(run_cli, tmp_path, page, kind):
    page.errors.clear()
    page.open(written(run_cli, tmp_path, kind))
    assert page.errors == []
    sections = page.eval("document.querySelectorAll('article.var').length")
    assert sections > 0
    assert page.eval("[...document.querySelectorAll('article.var')].every(a => a.querySelector('svg') !== null)")
    assert page.eval("[...document.querySelectorAll('svg')].every(s => s.getBoundingClientRect().width > 0 || "
                     "s.closest('article') && getComputedStyle(s).display === 'none')")
    _screen(page, kind)


def test_search_filters_sections_and_tree(run_cli, tmp_path, page):
    page.open(written(run_cli, tmp_path, "checkpoint"))
    total = page.eval("document.querySelectorAll('article.var').length")
    shown = page.eval("""(() => {
        const box = document.querySelector('input[type=search]');
        box.value = 'DENSE'; box.dispatchEvent(new Event('input'));
        return [...document.querySelectorAll('article.var')].filter(a => a.offsetParent !== null)
            .map(a => a.dataset.key); })()""")
    assert shown and len(shown) < total and all("dense" in k.lower() for k in shown)
    assert page.eval("document.querySelector('.count').textContent") == f"{len(shown)} shown"
    assert page.eval("[...document.querySelectorAll('.tree .leaf')].filter(d => d.offsetParent !== null)"
                     ".every(d => d.dataset.key.toLowerCase().includes('dense'))")
    assert page.eval("[...document.querySelectorAll('.tree details')].filter(d => d.offsetParent !== null)"
                     ".every(d => d.open)")
    page.eval("(() => { const b = document.querySelector('input[type=search]'); b.value = '';"
              "b.dispatchEvent(new Event('input')); })()")
    assert page.eval("[...document.querySelectorAll('article.var')].filter(a => a.offsetParent !== null).length") \
        == total
    assert page.errors == []


def test_tree_expands_and_log_switch_shows_log_histograms(run_cli, tmp_path, page):
    page.open(written(run_cli, tmp_path, "checkpoint"))
    assert page.eval("[...document.querySelectorAll('.tree > details')].every(d => !d.open)")
    assert page.eval("""(() => { const d = document.querySelector('.tree > details');
        d.querySelector('summary').click(); return d.open &&
        [...d.children].some(c => c.tagName !== 'SUMMARY' && c.offsetParent !== null); })()""")
    def shown(css: str) -> int:
        return page.eval(f"[...document.querySelectorAll('svg.hist path.{css}')]"
                         ".filter(p => getComputedStyle(p).display !== 'none').length")

    paths = page.eval("document.querySelectorAll('svg.hist path.ylog').length")
    assert paths > 0 and (shown("ylin"), shown("ylog")) == (paths, 0)
    page.eval("document.querySelector('input.log-all').click()")
    assert (shown("ylin"), shown("ylog")) == (0, paths)
    page.eval("document.querySelector('input.log-one').click()")  # one histogram back to linear heights
    assert (shown("ylin"), shown("ylog")) == (1, paths - 1)


def test_an_anchor_scrolls_to_its_section(run_cli, tmp_path, page):
    out = written(run_cli, tmp_path, "checkpoint")
    page.open(out)
    href = page.eval("document.querySelector('.tree a').getAttribute('href')")
    page.eval(f"document.querySelector('.tree a[href=\"{href}\"]').click()")
    assert page.eval("document.querySelector(':target') && document.querySelector(':target').tagName") == "ARTICLE"


@pytest.mark.parametrize("kind", ["checkpoint", "diff"])
def test_hostile_keys_run_no_script(tmp_path, page, kind):
    out = tmp_path / f"hostile-{kind}.html"
    hostile_report(kind).write_html(str(out))
    page.errors.clear()
    page.open(out)
    assert page.eval("typeof window.__pwned") == "undefined"
    assert page.eval("document.querySelectorAll('img').length") == 0
    titles = page.eval("[...document.querySelectorAll('article.var h3 a')].map(a => a.textContent)")
    assert len(titles) == len(HOSTILE) and any("<script>" in t for t in titles)
    assert page.errors == []
