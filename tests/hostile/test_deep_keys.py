"""Issue 36 #5: a key of hundreds or thousands of ``/`` segments gives ``report`` (HTML and --json) and
``ls --tree`` one clear result - the tree bounded at MAX_TREE_DEPTH rows deep, the rest of the key one
label - never a RecursionError; the data behind the report is walked without recursion."""
from __future__ import annotations

import html
import json
import re

import numpy as np
import pytest

from formats.ops.inspect.tree import MAX_TREE_DEPTH
from formats.tf_bundle.writer import write_checkpoint


def _depth(data: object) -> int:
    """The nesting depth of JSON data, counted without recursion."""
    best, stack = 0, [(data, 1)]
    while stack:
        node, depth = stack.pop()
        best = max(best, depth)
        if isinstance(node, dict):
            stack += [(v, depth + 1) for v in node.values()]
        elif isinstance(node, list):
            stack += [(v, depth + 1) for v in node]
    return best


@pytest.fixture(params=[300, 5000], ids=lambda n: f"{n}-segments")
def deep(request, tmp_path) -> tuple[str, str]:
    key = "/".join(f"s{i}" for i in range(request.param))
    prefix = str(tmp_path / "deep")
    write_checkpoint(prefix, {key: np.arange(4, dtype=np.float32), "ok/w": np.zeros(2)})
    return prefix, key


def test_report_html(run_cli, deep, tmp_path) -> None:
    prefix, key = deep
    out = tmp_path / "r.html"
    result = run_cli("report", prefix, "-o", out)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert result.stdout.splitlines() == [f"wrote {out}: checkpoint report (2 tensors), "
                                          f"{result.stdout.split('), ')[1].strip()}"]
    page = out.read_text()
    assert html.escape(key) in page
    data = json.loads(re.search(r'<script type="application/json" class="ckpt-data">(.*?)</script>', page, re.S)[1])
    assert _depth(data) <= 2 * MAX_TREE_DEPTH + 8


def test_report_json(run_cli, deep) -> None:
    prefix, key = deep
    result = run_cli("report", prefix, "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert key in result.stdout.replace("\\/", "/") or key in json.dumps(doc)


def test_ls_tree(run_cli, deep) -> None:
    prefix, key = deep
    result = run_cli("ls", "--tree", prefix)
    assert result.exit_code == 0, result.output
    rows = result.stdout.splitlines()
    assert len(rows) == 1 + MAX_TREE_DEPTH + 2 + 1  # header, the deep key's rows, ok and w, summary
    rest = "/".join(key.split("/")[MAX_TREE_DEPTH - 1:])
    assert re.search(r"^ *└── " + re.escape(rest) + r"  float32  \[4\] +16 B +4$", result.stdout, re.M), rest[:80]
    tree = json.loads(run_cli("ls", "--tree", "--json", prefix).stdout)
    assert _depth(tree) <= 2 * MAX_TREE_DEPTH + 8


def test_map_data_has_no_depth_limit() -> None:
    from formats.core.names import map_data, safe_data

    data: object = "x\udcff"
    for i in range(100_000):
        data = {"k": [data, 1.5]} if i % 2 else [data]
    copy = safe_data(data)
    for i in reversed(range(100_000)):
        copy = copy["k"][0] if i % 2 else copy[0]
    assert copy == "x\\xff"
    assert map_data({"a": (1, [2.0, {"b": float("nan")}])}, lambda v: None if v != v else v) == {"a": [1, [2.0, {"b": None}]]}
