"""Issue 38: the renderers of ``ls --tree``, ``stats``, ``diff``, ``rename`` and ``edit`` format a table a
column at a time, and the same bytes come out as before. The expected text in ``tests/data/render_scale/``
was written by ckpt at f5c3622 (before the column-at-a-time renderers: one object and one escape call per
cell) for the bundles of :mod:`tests.render_scale_inputs`; ``writers.json`` holds the SHA-256 of every file
``rename`` and ``edit`` wrote then. The work of each renderer grows linearly with its rows: Python calls are
counted at N, 2N and 4N rows, not seconds."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from tests.render_scale_inputs import COMMANDS, WRITERS, argv, make_bundles
from tests.call_counts import python_calls

EXPECTED = Path(__file__).parent / "data" / "render_scale"


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    return make_bundles(tmp_path_factory.mktemp("render"))


def _shown(stdout: str, paths: dict[str, str]) -> str:
    """``stdout`` with the bundles' folder written ``TMP`` (as in the expected files)."""
    folder = str(Path(paths["a"]).parent.parent)
    return stdout.replace(folder, "TMP/in")


@pytest.mark.parametrize("name", list(COMMANDS))
def test_output_is_byte_for_byte_as_before(bundles, run_cli, tmp_path, name):
    result = run_cli(*argv(COMMANDS[name], bundles, str(tmp_path)))
    expected = (EXPECTED / f"{name}.txt").read_bytes().decode("utf-8", "surrogateescape")
    assert f"exit {result.exit_code}\n" + _shown(result.stdout, bundles) == expected


@pytest.mark.parametrize("name", list(WRITERS))
def test_written_files_are_byte_for_byte_as_before(bundles, run_cli, tmp_path, name):
    expected = json.loads((EXPECTED / "writers.json").read_text())[name]
    out = str(tmp_path / "w")
    result = run_cli(*argv(WRITERS[name], bundles, out))
    assert result.exit_code == expected["exit"]
    assert result.stdout.replace(out, "OUT") == expected["stdout"]
    files = {}
    for root, _, names in os.walk(out):
        for f in names:
            path = os.path.join(root, f)
            files[os.path.relpath(path, out)] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    assert files == expected["files"]


def test_plain_table_escapes_only_the_cells_that_need_it():
    from ckpt_cli.render.table import TextTable, plain_table

    table = TextTable([("key", "left"), ("n", "right")],
                      [["a\x1b[2J", "1"], ["\u00e9t\u00e9", "22"], ["b\udcfe", "333"], ["c\u202e", "4"],
                       ["plain", " "]])
    assert plain_table(table) == ["key" + " " * 9 + "n",
                                  "a\\x1b[2J" + " " * 4 + "1",
                                  "\u00e9t\u00e9" + " " * 8 + "22",
                                  "b\\xfe" + " " * 5 + "333",
                                  "c\\u202e" + " " * 5 + "4",
                                  "plain"]
    assert plain_table(TextTable([("key", "left"), ("size", "right")])) == ["key  size"]


def test_terminal_text_leaves_printable_text_as_it_is():
    from formats.core.names import all_printable, terminal_text

    for text in ["", "a/b", "\u00e9t\u00e9", "a b", "\u4e2d"]:
        assert all_printable([text]) and terminal_text(text) is text
    for text in ["\x1b", "a\nb", "\udcff", "\ud800", "\u202e", "\x9b", "\t"]:
        assert not all_printable(["ok", text]) and terminal_text(text) != text


N = 500
SLACK = 2.3
"""The calls from 2N to 4N may be at most this many times those from N to 2N (linear: 2; quadratic: 4)."""


@pytest.fixture(scope="module")
def sized(tmp_path_factory):
    """Bundles (a, b, o) of N, 2N and 4N tensors."""
    folder = tmp_path_factory.mktemp("sized")
    return [make_bundles(folder / str(n), n) for n in (N, 2 * N, 4 * N)]


def _calls(run_cli, args: list[str]) -> int:
    return python_calls(run_cli, args, exit_codes=(0, 1))


@pytest.mark.parametrize("name", ["tree", "tree_object", "stats", "rename_dry_all", "edit_dry", "diff"])
def test_rendering_grows_linearly_with_the_rows(sized, run_cli, tmp_path, name):
    _calls(run_cli, argv(COMMANDS[name], sized[0], str(tmp_path)))  # imports, caches: not counted
    counts = [_calls(run_cli, argv(COMMANDS[name], paths, str(tmp_path))) for paths in sized]
    assert counts[2] - counts[1] <= SLACK * (counts[1] - counts[0]), counts


def test_copied_tensors_are_read_back_in_batches_in_order():
    from formats.tf_bundle.readback import BATCH_BYTES, _batches

    big = BATCH_BYTES + 1
    assert _batches(["a", "b", "c", "d"], [big, 10, BATCH_BYTES - 10, 1]) == \
        [(["a"], big), (["b", "c"], BATCH_BYTES), (["d"], 1)]
    keys = [f"k{i}" for i in range(5000)]
    runs = _batches(keys, [0] * 5000)
    assert [len(run) for run, _ in runs] == [4096, 904] and [k for run, _ in runs for k in run] == keys
    assert _batches([], []) == []


@pytest.mark.parametrize("name", ["stats", "stats_finite", "stats_columns"])
@pytest.mark.parametrize("rows", [1, 7, 4096])
def test_stats_written_a_part_at_a_time_is_byte_for_byte_as_before(bundles, run_cli, tmp_path, monkeypatch, name,
                                                                   rows):
    """On a pipe ``stats`` formats its rows ``ROWS_PER_PART`` at a time (hostile keys in some parts, not in
    others; widths from every part): the same bytes as the table made whole."""
    from ckpt_cli.render import stats as render_stats

    monkeypatch.setattr(render_stats, "ROWS_PER_PART", rows)
    result = run_cli(*argv(COMMANDS[name], bundles, str(tmp_path)))
    expected = (EXPECTED / f"{name}.txt").read_bytes().decode("utf-8", "surrogateescape")
    assert f"exit {result.exit_code}\n" + _shown(result.stdout, bundles) == expected


@pytest.mark.parametrize("name", ["tree", "tree_object"])
@pytest.mark.parametrize("rows", [1, 7, 4096])
def test_a_tree_written_a_part_at_a_time_is_byte_for_byte_as_before(bundles, run_cli, tmp_path, monkeypatch, name,
                                                                    rows):
    """On a pipe ``ls --tree`` draws and formats its rows ``ROWS_PER_PART`` at a time (``drawn_parts``): the same
    bytes as the tree made whole; and the parts are :func:`drawn_rows`' rows, in order."""
    from ckpt_cli.render import tree as render_tree
    from formats import open_checkpoint
    from formats.ops.inspect.tree import build_tree

    monkeypatch.setattr(render_tree, "ROWS_PER_PART", rows)
    result = run_cli(*argv(COMMANDS[name], bundles, str(tmp_path)))
    expected = (EXPECTED / f"{name}.txt").read_bytes().decode("utf-8", "surrogateescape")
    assert f"exit {result.exit_code}\n" + _shown(result.stdout, bundles) == expected
    with open_checkpoint(bundles["o" if name == "tree_object" else "a"]) as ckpt:
        root = build_tree(ckpt).root
    whole = render_tree.drawn_rows(root)
    parts = list(render_tree.drawn_parts(root, rows))
    assert all(len(labels) == rows for labels, _, _ in parts[:-1]) and 0 < len(parts[-1][0]) <= rows
    assert [sum((part[i] for part in parts), []) for i in range(3)] == list(whole)
    assert render_tree.drawn_rows(type(root)("")) == ([], [], [])


def test_tree_cells_of_rows_alike_are_made_once_and_of_unshared_facts_each():
    """The cells of rows that say the same facts are made once; facts that cannot be looked up (a shape given as a
    list) are each made as they are: the same cells either way."""
    from ckpt_cli.render import tree as render_tree
    from formats.core.shapes import shape_text
    from formats.core.units import human_bytes
    from formats.ops.inspect.tree import TreeNode

    def row(label: str, key: str | None, own: tuple, sums: tuple) -> TreeNode:
        node = TreeNode(label, key=key)
        node.own, node.sums = own, sums
        return node

    shared = ("float32", (3, 4), "variable", 48, 12)
    nodes = [row("a", "a", shared, (48, 12, 1)), row("b", "b", shared, (48, 12, 1)),
             row("scope", None, (None, None, None, 0, 0), (2048, 1_234_567, 2)),
             row("c", "c", ("string", None, "other", 5, 0), (5, 0, 1))]
    listed = [*nodes, row("d", "d", ("int64", [2, 2], "variable", 32, 4), (32, 4, 1))]
    made = []
    real = render_tree._texts
    render_tree._texts = lambda *a: made.append(a) or real(*a)
    try:
        for given in (nodes, listed):
            del made[:]
            cells = render_tree._cells([n.label for n in given], given)
            expected_shapes = ["[3, 4]", "[3, 4]", "", "", "[2, 2]"][:len(given)]
            assert cells[2] == expected_shapes
            assert cells[3] == [human_bytes(n) for n in (48, 48, 2048, 5, 32)][:len(given)]
            assert cells[4] == ["12", "12", "1,234,567", "0", "4"][:len(given)]
            assert cells[1] == ["float32", "float32", "", "string", "int64"][:len(given)]
            assert len(made) == (3 if given is nodes else 5)  # (alike: once; a list shape: each row its own)
        assert shape_text((3, 4)) == "[3, 4]"
    finally:
        render_tree._texts = real


def test_stats_on_a_pipe_holds_no_string_per_cell():
    """Rows of ten statistics: what rendering holds at its peak grows by under 75 bytes a row from 20,000 to 40,000
    rows (the cells of the rows written so far, packed, beside one part's strings, the keys referred to, not copied;
    a string per cell, as the whole table held them, was over 400 bytes a row, the keys copied 97)."""
    import io
    import sys
    import tracemalloc

    from ckpt_cli.render.stats import render_stats
    from formats.ops.inspect.stats import CheckpointStats, TensorStats

    class Sink(io.TextIOBase):  # a pipe: counts what is written, keeps the first lines
        def __init__(self):
            self.head, self.lines = "", 0

        def write(self, text):
            if len(self.head) < 200:
                self.head += text[:200]
            self.lines += text.count("\n")
            return len(text)

    peaks = []
    for n in (20_000, 40_000):
        tensors = [TensorStats(f"model/layer_{i // 100}/unit_{i % 100}/kernel_with_a_long_name", "float32", (4,), 16,
                               -1.0 - i, 2.5 * i, i / 7, 1 / (i + 3), i * 1.5, 0, 0, 0) for i in range(n)]
        out = Sink()
        old, sys.stdout = sys.stdout, out
        tracemalloc.start()
        try:
            render_stats(CheckpointStats("ckpt", "tf-name", tensors), check_finite=False)
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
            sys.stdout = old
        assert out.lines == n + 2
        assert out.head.splitlines()[1].split() == ["model/layer_0/unit_0/kernel_with_a_long_name", "float32", "[4]",
                                                    "-1", "0", "0", "0.33333", "0", "0", "0", "0"]
    assert (peaks[1] - peaks[0]) / 20_000 < 75, (peaks[1] - peaks[0]) / 20_000


def test_a_column_of_floats_is_formatted_as_each_float_alone():
    """``stat_column`` formats a column of floats with float's own ``__format__`` (no template parsed per value):
    the very text ``"{:.5g}".format`` gives each, for every kind of float."""
    import math
    import random

    from ckpt_cli.render.stats import stat, stat_column

    rng = random.Random(5)
    values = [0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324, 1.7976931348623157e308, 1e16, 123456.5, 0.1, 1 / 3,
              *(rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30) for _ in range(2000))]
    assert stat_column(values) == [f"{v:.5g}" for v in values] == [stat(v) for v in values]
    assert stat_column([1, 2, None]) == [stat(1), stat(2), stat(None)]
