"""Issue 14 #21: recursion - a 5,000-segment key in ``ls --tree`` and ``extract -o dir/``, a 3,000-deep
object graph, slot variables of slot variables. Everything is iterative and bounded: a clean error or a
tree that renders and serializes, never a RecursionError."""
from __future__ import annotations

import json
import re

import numpy as np

from formats.concepts.object_graph import MAX_NESTING
from formats.io.atomic import remove_tree
from formats.ops.inspect.tree import MAX_TREE_DEPTH

from .craft import bundle, entry, graph_node, object_bundle

FLOAT = 1
ONE = np.ones(1, "<f4").tobytes()


def _depth(doc: dict) -> int:
    depth, level = 0, doc["tree"]
    while level:
        depth, level = depth + 1, level[0].get("children", [])
    return depth


def test_key_of_5000_segments(tmp_path, run_cli):
    key = "/".join(f"s{i}" for i in range(5000))
    prefix = bundle(tmp_path, "c", [(key.encode(), entry(FLOAT, [1], 0, 4, ONE))], ONE)
    result = run_cli("ls", "--tree", prefix)
    assert result.exit_code == 0
    rows = result.stdout.splitlines()
    assert len(rows) == MAX_TREE_DEPTH + 2  # header, the rows, the summary line
    rest = "/".join(f"s{i}" for i in range(MAX_TREE_DEPTH - 1, 5000))  # the last row: the rest of the key
    assert rows[-2].split()[-7:] == ["└──", rest, "float32", "[1]", "4", "B", "1"]
    doc = json.loads(run_cli("ls", "--tree", "--json", prefix).stdout)
    assert doc["tensors"] == 1 and _depth(doc) == MAX_TREE_DEPTH
    out = tmp_path / "out"
    result = run_cli("extract", prefix, "-o", f"{out}/")
    assert result.exit_code == 4 and not out.exists()
    first, hint = result.stderr.splitlines()
    assert re.fullmatch(rf"ckpt: error: {re.escape(str(out))}/: key 's0/s1/s2/.*\.\.\. \(28891 chars\) needs a path of "
                        r"[\d,]+ bytes \(at most 4,096\) as a file under this directory", first)
    assert hint == "  hint: write a .npz instead"
    assert run_cli("extract", prefix, "-o", tmp_path / "all.npz").exit_code == 0
    with np.load(tmp_path / "all.npz") as npz:
        assert npz[key].tolist() == [1.0]


def _chain(depth: int) -> tuple[list[dict], str]:
    nodes = [graph_node([(i + 1, "a")]) for i in range(depth)]
    key = "/".join(["a"] * depth) + "/.ATTRIBUTES/VARIABLE_VALUE"
    return nodes + [graph_node(attributes=[("VARIABLE_VALUE", "deep", key)])], key


def test_object_graph_3000_deep(tmp_path, run_cli):
    nodes, key = _chain(3000)
    prefix = object_bundle(tmp_path, "c", nodes, [(key.encode(), [1], ONE)])
    for args in (["ls", "--tree"], ["ls", "--names"], ["graph"], ["ls", "--tree", "--json"]):
        result = run_cli(*args, prefix)
        assert result.exit_code == 3, args
        assert result.stderr == f"ckpt: error: {prefix}.index: the object graph nests objects more than {MAX_NESTING} deep\n"
    assert run_cli("ls", prefix).exit_code == 0  # the keys need no graph
    result = run_cli("verify", prefix)
    assert result.exit_code == 1
    assert f"problem _CHECKPOINTABLE_OBJECT_GRAPH: the object graph nests objects more than {MAX_NESTING} deep" in result.stdout


def test_object_graph_as_deep_as_allowed(tmp_path, run_cli):
    nodes, key = _chain(MAX_NESTING)
    prefix = object_bundle(tmp_path, "c", nodes, [(key.encode(), [1], ONE)])
    doc = json.loads(run_cli("ls", "--tree", "--json", prefix).stdout)
    assert _depth(doc) == MAX_NESTING
    names = json.loads(run_cli("ls", "--names", "--json", prefix).stdout)
    assert [t["name"] for t in names["tensors"] if t["key"] == key] == ["deep"]


def _slot_chain(length: int) -> tuple[list[dict], list[bytes]]:
    """A variable whose slot has a slot that has a slot... (``length`` slots), each with a value."""
    keys = [f"v{i}/.ATTRIBUTES/VARIABLE_VALUE".encode() for i in range(length + 1)]
    nodes = [graph_node([(i + 1, f"v{i}") for i in range(length + 1)] + [(length + 2, "opt")])]
    nodes += [graph_node(attributes=[("VARIABLE_VALUE", f"v{i}", keys[i].decode())]) for i in range(length + 1)]
    opt = graph_node()
    opt["slot_variables"] = [{"original_variable_node_id": i + 1, "slot_name": "m", "slot_variable_node_id": i + 2}
                             for i in range(length)]
    return nodes + [opt], keys


def test_slots_of_slots_nest_no_deeper_than_the_tree_allows(tmp_path, run_cli):
    nodes, keys = _slot_chain(2000)
    prefix = object_bundle(tmp_path, "c", nodes, [(k, [1], ONE) for k in keys])
    result = run_cli("ls", "--tree", prefix)
    assert result.exit_code == 3
    assert result.stderr == (f"ckpt: error: {prefix}.index: the object graph nests objects more than {MAX_TREE_DEPTH} "
                             "deep (slot variables of slot variables?)\n")
    nodes, keys = _slot_chain(3)
    prefix = object_bundle(tmp_path, "d", nodes, [(k, [1], ONE) for k in keys])
    doc = json.loads(run_cli("ls", "--tree", "--json", prefix).stdout)
    assert doc["tensors"] == 5 and _depth(doc) == 4  # v0, its slot v1, v1 slot v2, v2 slot v3 (+ the graph key)


def test_key_1100_segments_deep_is_extracted_to_a_directory_twice(tmp_path, run_cli):
    """Deep enough for os.makedirs and shutil.rmtree to recurse past Python's limit, short enough for a path."""
    key = "/".join(["a"] * 1100)
    prefix = bundle(tmp_path, "c", [(key.encode(), entry(FLOAT, [1], 0, 4, ONE))], ONE)
    out = tmp_path / "out"
    try:
        for extra in ([], ["--force"]):  # a new directory (renamed into place), then an existing one (files moved in)
            result = run_cli("extract", prefix, "-o", f"{out}/", *extra)
            assert result.exit_code == 0, result.output
        assert np.load(out.joinpath(*key.split("/")).with_suffix(".npy")).tolist() == [1.0]
        assert sorted(p.name for p in tmp_path.iterdir()) == ["c.data-00000-of-00001", "c.index", "out"]
        assert [p.name for p in out.iterdir()] == ["a"]
    finally:
        remove_tree(str(out))  # pytest's own clean-up recurses


def test_files_and_directories_of_deep_keys_that_collide(tmp_path, run_cli):
    keys = ["/".join(["x"] * 1000 + [str(i)]) for i in range(2000)] + ["p.npy/q", "p"]
    data = ONE * len(keys)
    prefix = bundle(tmp_path, "c", [(k.encode(), entry(FLOAT, [1], 4 * i, 4, ONE)) for i, k in enumerate(keys)], data)
    result = run_cli("extract", prefix, "-o", f"{tmp_path / 'out'}/")
    assert result.exit_code == 4 and not (tmp_path / "out").exists()
    assert result.stderr.splitlines() == [f"ckpt: error: {tmp_path / 'out'}/: 'p.npy' would be both a file and a directory",
                                          "  hint: write a .npz instead"]
