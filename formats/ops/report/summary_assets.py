"""The summary page's own style and script (inlined, no network; the full page's are in :mod:`.assets`).

The script inflates the packed keys (base64 of raw deflate, one ``flag + key`` line each; the flag's bits as
the page's ``ckpt-summary`` data names them) with the browser's ``DecompressionStream``, then lists the keys
holding the search text (case-insensitive) and the chosen flag, the first :data:`SHOWN` of them, each linked
to its section when the page draws it; a click on a pattern's or a layer's row searches its text up to its
first number. Keys are set as text, never as HTML. Without scripts the page still
shows every section; only the search needs them.
"""
from __future__ import annotations

__all__ = ["SUMMARY_CSS", "SUMMARY_SCRIPT", "SHOWN"]

SHOWN = 200
"""Search results listed at once (the count says how many match)."""

SUMMARY_CSS = """
.ckpt-report table.found{margin:4px 0 8px}
.ckpt-report table.found:empty{display:none}
.ckpt-report tr.more td{color:#555e70;font-style:italic}
.ckpt-report select.which{font:inherit;padding:3px}
.ckpt-report table.groups tr[data-key]{cursor:pointer}
.ckpt-report table.groups tr[data-key]:hover{background:#f3f5f9}
"""

SUMMARY_SCRIPT = r"""
(function () {
  "use strict";
  var root = document.currentScript ? document.currentScript.closest(".ckpt-report") : null;
  if (!root) { root = document.querySelector(".ckpt-report.summary"); }
  if (!root) { return; }
  var SHOWN = %SHOWN%;
  var meta = JSON.parse(root.querySelector("script.ckpt-summary").textContent);
  var search = root.querySelector("input[type=search]");
  var which = root.querySelector("select.which");
  var count = root.querySelector(".count");
  var found = root.querySelector("table.found");
  var lines = null, lower = null;
  function anchor(key) {
    var bytes = new TextEncoder().encode(key), out = "k-";
    for (var i = 0; i < bytes.length; i++) {
      var b = bytes[i], c = String.fromCharCode(b);
      out += (b < 128 && /[A-Za-z0-9\/._:\-]/.test(c)) ? c : "%" + (b < 16 ? "0" : "") + b.toString(16).toUpperCase();
    }
    return out;
  }
  function cell(row, text, cls) {
    var td = document.createElement("td");
    if (cls) { td.className = cls; }
    td.textContent = text;
    row.appendChild(td);
    return td;
  }
  function show() {
    if (lines === null) { return; }
    var q = search.value.trim().toLowerCase(), bit = parseInt(which.value, 10) || 0;
    found.textContent = "";
    var partial = meta.packed < meta.total ? " (the search holds " + meta.packed.toLocaleString() + " of " +
      meta.total.toLocaleString() + ")" : "";
    if (!q && !bit) { count.textContent = lines.length.toLocaleString() + " keys" + partial; return; }
    var n = 0;
    for (var i = 0; i < lines.length; i++) {
      var flag = lines[i].charCodeAt(0) - 64;
      if (bit && !(flag & bit)) { continue; }
      if (q && lower[i].indexOf(q, 1) < 0) { continue; }
      n += 1;
      if (n > SHOWN) { continue; }
      var key = lines[i].slice(1), row = document.createElement("tr"), td = cell(row, "", "k");
      if (flag & 8) {
        var a = document.createElement("a");
        a.href = "#" + anchor(key);
        a.textContent = key;
        td.appendChild(a);
      } else { td.textContent = key; }
      var names = meta.flags.filter(function (f) { return f[1] !== 8 && (flag & f[1]); });
      names.forEach(function (f) {
        var span = document.createElement("span");
        span.className = "flag" + (f[1] === 1 ? " nan" : f[1] === 2 && meta.kind === "checkpoint" ? " unreadable" : " only");
        span.textContent = f[0];
        td.appendChild(span);
      });
      found.appendChild(row);
    }
    count.textContent = n.toLocaleString() + " of " + lines.length.toLocaleString() + " keys" +
      (n > SHOWN ? ", the first " + SHOWN + " shown" : "") + partial;
  }
  function load() {
    var text = root.querySelector("script.ckpt-keys").textContent.trim();
    var bin = atob(text), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { bytes[i] = bin.charCodeAt(i); }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
    return new Response(stream).text().then(function (all) {
      lines = all ? all.split("\n") : [];
      lower = lines.map(function (l) { return l.toLowerCase(); });
      root.setAttribute("data-keys-loaded", String(lines.length));
      show();
    });
  }
  root.querySelectorAll("table.groups tr[data-key]").forEach(function (row) {
    row.addEventListener("click", function () {  // a group's keys: search its text up to the first number
      var name = row.getAttribute("data-key"), cut = name.indexOf("{");
      search.value = cut < 0 ? name : name.slice(0, cut);
      which.value = "0";
      show();
      search.scrollIntoView({block: "start"});
    });
  });
  var timer = null;
  function later() { clearTimeout(timer); timer = setTimeout(show, 120); }
  search.addEventListener("input", later);
  which.addEventListener("change", show);
  load().catch(function (e) { count.textContent = "search unavailable: " + e; });
})();
""".replace("%SHOWN%", str(SHOWN))
