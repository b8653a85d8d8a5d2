"""The report page's stylesheet and script, inlined into every page (no network, no external file).

Every rule is scoped under ``.ckpt-report`` so a report shown in Jupyter leaves the notebook's own styles
alone. The script only filters by key, opens the tree along a search and switches every histogram between
linear and log heights (each histogram's own switch is CSS alone): everything it reads is in the page's elements (``data-key``), so a report reads
the same, unfiltered, where scripts do not run.
"""
from __future__ import annotations

__all__ = ["CSS", "SCRIPT"]

CSS = """
.ckpt-report{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d2330;max-width:1100px;margin:0 auto;padding:8px 16px}
.ckpt-report h1{font-size:20px;margin:8px 0 2px}
.ckpt-report h2{font-size:16px;margin:20px 0 6px;border-bottom:1px solid #d8dce4;padding-bottom:2px}
.ckpt-report h3{font-size:14px;margin:0 0 4px;font-family:ui-monospace,Menlo,Consolas,monospace;word-break:break-all}
.ckpt-report .facts{color:#555e70;margin:2px 0 8px}
.ckpt-report .bar-top{position:sticky;top:0;background:#fff;padding:6px 0;z-index:2;border-bottom:1px solid #eceff4;display:flex;gap:16px;align-items:center}
.ckpt-report input[type=search]{width:340px;padding:4px 8px;font:inherit;border:1px solid #b8bfcc;border-radius:4px}
.ckpt-report .count{color:#555e70}
.ckpt-report table{border-collapse:collapse;font-size:13px}
.ckpt-report td,.ckpt-report th{padding:2px 8px;text-align:right;white-space:nowrap}
.ckpt-report th{font-weight:600;border-bottom:1px solid #d8dce4}
.ckpt-report td.k,.ckpt-report th.k{text-align:left;font-family:ui-monospace,Menlo,Consolas,monospace;white-space:normal;word-break:break-all}
.ckpt-report .tree{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:13px}
.ckpt-report .tree details>div,.ckpt-report .tree details>details{margin-left:18px}
.ckpt-report .tree summary{cursor:pointer}
.ckpt-report .tree .row{display:inline-flex;gap:12px}
.ckpt-report .tree .leaf{margin-left:14px}
.ckpt-report .tree .m{color:#555e70}
.ckpt-report .tree .opt{color:#8a5a00}
.ckpt-report article.var{border:1px solid #e1e5ec;border-radius:6px;padding:8px 10px;margin:8px 0;display:grid;grid-template-columns:minmax(0,1fr) 340px;gap:4px 16px}
.ckpt-report article.var:target{outline:2px solid #3b6fd8}
.ckpt-report article.var>h3,.ckpt-report article.var>.facts,.ckpt-report article.var>.plots{grid-column:1/3}
.ckpt-report .plots{display:flex;flex-wrap:wrap;gap:8px 24px;align-items:flex-start}
.ckpt-report table.stats{align-self:start}
.ckpt-report .flag{display:inline-block;font:600 11px system-ui,sans-serif;padding:0 6px;border-radius:8px;margin-left:6px;vertical-align:middle}
.ckpt-report .flag.nan,.ckpt-report .flag.inf,.ckpt-report .flag.unreadable{background:#fde2e1;color:#a40e0b}
.ckpt-report .flag.all-zero{background:#fff1c2;color:#7a5b00}
.ckpt-report .flag.only{background:#e6ecfa;color:#24478f}
.ckpt-report svg text{font:10px ui-monospace,Menlo,Consolas,monospace;fill:#555e70}
.ckpt-report svg.hist path{fill:#3b6fd8}
.ckpt-report svg.hist .ylog,.ckpt-report article:has(input.log-one:checked) svg.hist .ylin{display:none}
.ckpt-report article:has(input.log-one:checked) svg.hist .ylog{display:inline}
.ckpt-report svg.line path{fill:none;stroke-width:1.5}
.ckpt-report svg.line .l0{stroke:#3b6fd8}.ckpt-report svg.line .l1{stroke:#d8742b;stroke-dasharray:4 3}
.ckpt-report svg.line .t0{fill:#3b6fd8}.ckpt-report svg.line .t1{fill:#d8742b}
.ckpt-report svg.heat image{image-rendering:pixelated}
.ckpt-report svg.bar .bg{fill:#eceff4}.ckpt-report svg.bar .fg{fill:#d8742b}
.ckpt-report label.scale{font-size:12px;color:#555e70;user-select:none}
.ckpt-report .hidden{display:none!important}
.ckpt-report .notes li{color:#7a5b00}
.ckpt-report a{color:#24478f;text-decoration:none}.ckpt-report a:hover{text-decoration:underline}
"""

SCRIPT = r"""
(function () {
  "use strict";
  var root = document.currentScript ? document.currentScript.closest(".ckpt-report") : null;
  if (!root) { root = document.querySelector(".ckpt-report"); }
  if (!root) { return; }
  var search = root.querySelector("input[type=search]");
  var count = root.querySelector(".count");
  var keyed = Array.prototype.slice.call(root.querySelectorAll("[data-key]"));
  var branches = Array.prototype.slice.call(root.querySelectorAll(".tree details"));
  function matches(el, q) { return el.getAttribute("data-key").toLowerCase().indexOf(q) >= 0; }
  function filter() {
    var q = search.value.trim().toLowerCase();
    var shown = 0;
    keyed.forEach(function (el) {
      var hit = !q || matches(el, q);
      el.classList.toggle("hidden", !hit);
      if (hit && el.tagName === "ARTICLE") { shown += 1; }
    });
    branches.slice().reverse().forEach(function (d) {  // children before parents
      var hit = !q || matches(d, q) || d.querySelector(":scope > :not(summary):not(.hidden)") !== null;
      d.classList.toggle("hidden", !hit);
      if (q) { d.open = hit; }
    });
    if (count) { count.textContent = q ? shown + " shown" : ""; }
  }
  if (search) { search.addEventListener("input", filter); }
  var all = root.querySelector("input.log-all");
  if (all) {
    all.addEventListener("change", function () {
      root.querySelectorAll("input.log-one").forEach(function (box) { box.checked = all.checked; });
    });
  }
})();
"""
