"""Issue 38: what a command keeps per tensor. A bundle's tensor takes the key its caller asked with (not a second
copy of the string decoded from the index), and ``ls --tree`` looks each key up once (not once per question
about it, each lookup keeping a tensor object)."""
from __future__ import annotations

import os

import pytest

from formats import open_checkpoint
from formats.ops.inspect.tree import build_tree
from tests.memory import record_items_at_once, traced
from tests.scale_bundles import name_based, object_based


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    prefix = name_based(tmp_path_factory.mktemp("objects"), 300)
    return {"name": prefix, "object": object_based(prefix)}


@pytest.mark.parametrize("layout", ["name", "object"])
def test_a_tensor_keeps_the_key_it_was_asked_for(bundles, layout):
    with open_checkpoint(bundles[layout]) as ckpt:
        keys = [k for k in ckpt]
        asked = [("" + k + "!")[:-1] for k in keys[:50]]  # equal strings, other objects
        assert all(a == k and a is not k for a, k in zip(asked, keys))
        assert all(entry.key is key for entry, key in zip(ckpt.entries_of(asked), asked))
        assert all(ckpt[key].key is key for key in asked[:10])


@pytest.mark.parametrize("layout", ["name", "object"])
def test_the_tree_looks_each_key_up_once(bundles, layout, monkeypatch):
    from formats.tf_bundle import checkpoint

    looked: list[str] = []
    getitem, entries_of = checkpoint._Tensors.__getitem__, checkpoint._Tensors.entries_of
    monkeypatch.setattr(checkpoint._Tensors, "__getitem__", lambda self, key: looked.append(key) or getitem(self, key))
    monkeypatch.setattr(checkpoint._Tensors, "entries_of",
                        lambda self, keys: entries_of(self, [looked.append(k) or k for k in keys]))
    with open_checkpoint(bundles[layout]) as ckpt:
        tree = build_tree(ckpt)
        assert tree.root.tensors == len(ckpt) == 300 + (2 if layout == "object" else 0)
        assert sorted(looked) == sorted(ckpt)



@pytest.mark.parametrize("layout", ["name", "object"])
@pytest.mark.parametrize("walk", ["ls", "ls --names", "ls --no-optimizer", "ls --tree", "ls --tree --no-optimizer",
                                  "shared names"])
def test_a_listing_keeps_no_tensor_a_key(bundles, layout, walk):
    """A walk over every key makes its tensors a batch at a time (Checkpoint.entries_by_batch) and keeps none: a
    tensor object a key was 92 bytes (9 MB at 10^5 keys) held to the end of the command."""
    from formats.ops.inspect.doctor import duplicate_names
    from formats.ops.inspect.summary import summarise

    with open_checkpoint(bundles[layout]) as ckpt:
        if walk == "shared names":
            assert duplicate_names(ckpt) == {}
        elif walk.startswith("ls --tree"):
            tree = build_tree(ckpt, include_optimizer="--no-optimizer" not in walk)
            assert tree.root.tensors == len(ckpt) - tree.hidden
        else:
            rows = summarise(ckpt, names="--names" in walk, include_optimizer="--no-optimizer" not in walk).rows
            assert sorted(r.key for r in rows) == sorted(ckpt)
        assert ckpt._entries._count == 0  # type: ignore[attr-defined]
        ckpt[next(iter(ckpt))]
        assert ckpt._entries._count == 1  # type: ignore[attr-defined]  # (what the count counts)


def test_one_string_is_copied_once(tmp_path):
    """A scalar string (an object-based bundle's graph: 13 MB at 10^5 objects) is copied from the map once, not
    copied whole and then sliced into a second copy."""
    import numpy as np

    from formats.tf_bundle.writer import write_checkpoint

    size = 16 << 20
    value = bytes(range(256)) * (size // 256)
    write_checkpoint(tmp_path / "ckpt", {"blob": np.array(value, dtype=object), "pair": np.array([b"ab", b"c"])})
    with open_checkpoint(tmp_path / "ckpt") as ckpt:
        assert ckpt["pair"].read().tolist() == [b"ab", b"c"]
        got, _, peak = traced(ckpt["blob"].read)
        assert got.shape == () and got.item() == value
        assert peak < size * 1.3, peak / size


def test_a_rename_lets_go_of_its_maps_before_encoding_the_graph(bundles, tmp_path, monkeypatch, run_cli):
    """Encoding the renamed graph is an object-based rename's peak: the maps only the rebuilding used (edges by
    name, nodes by path, new paths) are gone by then (at 100k tensors: 432 -> 354 MB), and so are the source
    graph's old paths (a string per object: 341 -> 331 MB)."""
    from formats.ops.convert import rename_objects

    seen = []
    encode = rename_objects.encode_object_graph

    def watched(nodes):
        import gc

        live = [o for o in gc.get_referrers(nodes) if isinstance(o, rename_objects.ObjectRename)]
        seen.extend((len(o.named), len(o.by_path), len(o.new_paths), len(o.graph._paths)) for o in live)
        return encode(nodes)

    monkeypatch.setattr(rename_objects, "encode_object_graph", watched)
    result = run_cli("rename", bundles["object"], "-o", tmp_path / "r" / "ckpt", "--map", "model=net")
    assert result.exit_code == 0, result.output
    assert seen == [(0, 0, 0, 1)]  # (the root's path, "", stays)


def test_checking_one_string_copies_nothing(tmp_path):
    """``verify`` checks a scalar string (an object-based bundle's graph, which its decoded graph holds already)
    where it lies in the map: no copy of it (at 100k objects: a second 13 MB at verify's peak)."""
    import numpy as np

    from formats.core.errors import ChecksumError
    from formats.tf_bundle.writer import write_checkpoint

    size = 16 << 20
    write_checkpoint(tmp_path / "ckpt", {"blob": np.array(b"x" * size, dtype=object)})
    with open_checkpoint(tmp_path / "ckpt") as ckpt:
        _, _, peak = traced(ckpt["blob"].check)
        assert peak < size / 16, peak / size
    data = next(tmp_path.glob("ckpt.data-*"))
    raw = bytearray(data.read_bytes())
    raw[-1] ^= 1
    data.write_bytes(bytes(raw))
    with open_checkpoint(tmp_path / "ckpt") as ckpt:
        with pytest.raises(ChecksumError):
            ckpt["blob"].check()


@pytest.mark.parametrize("layout", ["name", "object"])
def test_a_diff_makes_nothing_per_pair(bundles, layout, monkeypatch, tmp_path):
    """Pairs whose key is their name on both sides are handed to the units as that key alone (the string the
    checkpoint holds), not as a tuple per pair (at a million pairs: 112 MB), and checkpoints with the same keys
    are paired without a map of names; other pairs stay ``(name, key in A, key in B)``."""
    import formats
    from formats.ops.compare import diff, keying

    handed: list = []
    run_units = diff.run_units
    monkeypatch.setattr(diff, "run_units", lambda ckpts, fn, sizes, *a, **k: run_units(
        ckpts, fn, [handed.append(item) or (item, n) for item, n in sizes], *a, **k))
    named = []
    pairing_names = keying.pairing_names
    monkeypatch.setattr(diff, "pairing_names", lambda *a, **k: named.append(a) or pairing_names(*a, **k))
    with open_checkpoint(bundles[layout]) as a, open_checkpoint(bundles[layout]) as b:
        result = formats.diff(a, b)
        keys_a = sorted(a)
        assert result.same == len(a) and not result.changed and named == []
        assert handed == keys_a and all(h is k for h, k in zip(handed, keys_a))
        handed.clear()
        result = formats.diff(a, b, strip_prefix_a="model/", strip_prefix_b="model/")
        assert result.same == len(a) and len(named) == 2
        pairs = [h for h in handed if isinstance(h, tuple)]
        assert len(pairs) == 300 and all(not h.startswith("model/") for h in handed if isinstance(h, str))
        assert pairs[0] == ("layer_0/unit_0/w" + ("/.ATTRIBUTES/VARIABLE_VALUE" if layout == "object" else ""),
                            "model/" + pairs[0][0], "model/" + pairs[0][0])


def test_a_tree_row_without_children_or_aliases_holds_no_lists(tmp_path):
    """``ls --tree``: a leaf row shares the empty tuple for its children and other paths (two empty lists a
    row were 112 bytes of the about 600 a key the tree held); the tree of 5,000 keys holds under 500 bytes a key."""
    tree, held, _ = _traced_tree(name_based(tmp_path, 5000))
    leaves = [node for node in tree.root.nodes() if not node.children]
    assert len(leaves) == 5000 and all(n.children == () and n.aliases == () for n in leaves)
    assert tree.root.tensors == 5000 and held / 5000 < 500, held / 5000


def test_an_object_tree_keeps_no_work_per_leaf(tmp_path):
    """Building an object-based tree: a row without children is finished when it is made (its key set), so the
    rows kept for the bottom-up pass are those with children, and a node's own key is held as it is, not in a
    list: the peak of 5,000 keys stays under 2,450 bytes a key (2,560 before)."""
    tree, _, peak = _traced_tree(object_based(name_based(tmp_path, 5000)))
    assert tree.root.tensors == 5002
    assert peak / 5002 < 2450, peak / 5002


@pytest.mark.parametrize("where, name", [("formats.ops.inspect.stats", "TensorStats"), ("formats.io.writing", "Stored"),
                                         ("formats.ops.convert.plan", "PlanRow"),
                                         ("formats.ops.convert.conversion_source", "SourceTensor"),
                                         ("formats.concepts.object_graph", "EntryLabel"),
                                         ("formats.ops.edit.plan", "KeyAction"),
                                         ("formats.ops.inspect.tree", "TreeNode")])
def test_records_made_per_tensor_hold_their_fields_in_slots(where, name):
    """A record a command makes for every tensor (stats, what a writer stored, a plan's row, a label...) keeps its
    fields in slots, not in a dict of its own (a dict was about 100 bytes a tensor more)."""
    import importlib
    import pickle

    cls = getattr(importlib.import_module(where), name)
    assert "__slots__" in cls.__dict__ and "__dict__" not in dir(cls)
    fields = cls.__record_fields__
    assert set(cls.__slots__) == set(fields)
    if name == "TensorStats":  # it travels from cluster workers: it pickles
        value = cls("k", "float32", (4,), 4, 1.0, 2.0, 3.0, 0.5, 4.0, 0, 0, 0)
        assert pickle.loads(pickle.dumps(value)) == value and not hasattr(value, "__dict__")


def _traced_tree(prefix: str):
    """The tree of the bundle ``prefix`` (its tensors' labels made first: not the tree's) and what building it
    held at the end and at most (:func:`tests.memory.traced`)."""
    with open_checkpoint(prefix) as ckpt:
        ckpt.entries_of(list(ckpt)[:1])
        return traced(lambda: build_tree(ckpt))


def test_a_name_based_tree_keeps_no_index_per_scope_nor_every_entry(tmp_path):
    """Building a name-based tree: a scope with one child (``unit_<j>`` holding ``w``) keeps no dictionary of its
    children, and the tensors' entries are asked for a batch at a time, not all held while the tree is built. The
    peak of 5,000 keys stays under 800 bytes a key (893 before)."""
    tree, _, peak = _traced_tree(name_based(tmp_path, 5000))
    assert tree.root.tensors == 5000 and tree.root.nbytes == 5000 * 16
    assert peak / 5000 < 800, peak / 5000


def test_a_key_tree_finds_a_scope_again_when_natural_order_interleaves_it():
    """Natural order can put a scope's keys apart (``b1`` and ``b01`` are one number): the scope is one row, its
    children all under it, however many children it has when it comes back."""
    from formats.ops.inspect.tree import _key_tree

    keys = ["a/b1/x", "a/b01/y", "a/b1/z", "a/b01/w", "a/b1/v/u", "a/b001/t", "a/b1/s", "c"]
    found: dict[str, str | None] = {}
    stack = [("", node) for node in _key_tree(keys).children]
    while stack:
        above, node = stack.pop()
        path = above + node.label
        assert path not in found, path  # each scope one row
        found[path] = node.key
        stack += [(path + "/", child) for child in node.children]
    scopes = {"/".join(key.split("/")[:i]) for key in keys for i in range(1, key.count("/") + 1)}
    assert found == {**{scope: None for scope in scopes}, **{key: key for key in keys}}


def test_the_tree_on_a_pipe_holds_no_string_per_row(tmp_path):
    """``ls --tree`` on a pipe draws and formats its rows a few thousand at a time (:func:`~ckpt_cli.render.tree.
    _emit_packed`): no label, drawing or cell string per row is held for the whole tree. Rendering 5,000 keys (10,000
    rows) peaks under 750 bytes a key (895 before), and prints what the table of every row prints."""
    import contextlib
    import io
    import os

    from ckpt_cli.render.table import TextTable, plain_table
    from ckpt_cli.render.tree import render_tree, tree_table

    prefix = name_based(tmp_path, 5000)
    with open_checkpoint(prefix) as ckpt:
        tree = build_tree(ckpt)
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        _, _, peak = traced(lambda: render_tree(tree))
    assert peak / 5000 < 750, peak / 5000
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        render_tree(tree)
    table = tree_table(tree)
    assert isinstance(table, TextTable) and table.row_count() == 10_051
    lines = out.getvalue().splitlines()
    assert lines[:-1] == plain_table(table)
    assert lines[:4] == ["object           dtype    shape      size  params  note",
                         "model                            78.1 KiB  20,000",
                         "├── layer_0                       1.6 KiB     400",
                         "│   ├── unit_0                       16 B       4"]
    assert lines[-1] == f"{prefix}: tf-name, 5000 tensors, 20,000 parameters, 78.1 KiB"


def test_stats_keeps_no_pair_per_tensor_while_it_runs(tmp_path):
    """``stats`` gives its units the keys and sizes as it reads them (run_units reads them once), not as a list of a
    pair per tensor held for the whole run (64 bytes a tensor: 64 MB at a million). The peak of 5,000 tensors'
    statistics stays under 380 bytes a tensor (396 before, 362 after)."""
    from formats.ops.inspect.stats import checkpoint_stats

    with open_checkpoint(name_based(tmp_path, 5000)) as ckpt:
        ckpt.entries_of(list(ckpt)[:1])
        found, _, peak = traced(lambda: checkpoint_stats(ckpt, jobs=1))
    assert len(found.tensors) == 5000 and {t.key: t.max for t in found.tensors}["model/layer_49/unit_99/w"] == 4999.0
    assert peak / 5000 < 380, peak / 5000


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="reads Linux's /proc/self/smaps")
def test_one_string_is_read_without_touching_the_map(tmp_path):
    """A scalar string (an object graph) is checked and read with ``pread``: its pages do not join the process
    through the data file's map (13 MB of an object graph at 10^5 objects were resident twice, mapped and copied).
    After checking, then reading, a 16 MB string, the data file's mapping holds under 1 MB in memory (16 MB before)."""
    import numpy as np

    from formats.tf_bundle.writer import write_checkpoint

    size = 16 << 20
    value = bytes(range(256)) * (size // 256)
    write_checkpoint(tmp_path / "ckpt", {"blob": np.array(value, dtype=object)})
    data = str(tmp_path / "ckpt.data-00000-of-00001")
    with open_checkpoint(tmp_path / "ckpt") as ckpt:
        ckpt["blob"].check()
        assert _mapped(data) < 1 << 20, _mapped(data)
        assert ckpt["blob"].read().item() == value
        assert _mapped(data) < 1 << 20, _mapped(data)


def _mapped(path: str) -> int:
    """Bytes of ``path``'s mappings in this process's memory (``Rss`` of /proc/self/smaps)."""
    resident, mapping = 0, None
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5 and ":" in fields[3]:  # a mapping's first line
                mapping = fields[5] if len(fields) > 5 else None
            elif fields[0] == "Rss:" and mapping == path:
                resident += int(fields[1]) << 10
    return resident


def test_a_provenance_item_already_true_is_stored_as_it_is():
    """``as_written`` keeps each item of the record whose dtype and shape are those written (an extraction's, a
    conversion's: every item) rather than copying it (a dict a tensor beside the record's own: 26 MB at 100k);
    an item a cast changed is a new dict, the record given is left as it was, and a row it lacks is added."""
    from types import SimpleNamespace

    from formats.core.provenance import as_written

    items = [{"key": f"k{i}", "source_key": f"s{i}", "dtype": "float32", "shape": [i, 2]} for i in range(3)]
    record = {"version": 1, "tensors": items}
    rows = [SimpleNamespace(key="k0", dtype="float32", shape=(0, 2)), SimpleNamespace(key="k1", dtype="float16",
                                                                                       shape=(1, 2)),
            SimpleNamespace(key="k2", dtype="float32", shape=(2, 2)), SimpleNamespace(key="new", dtype="int8",
                                                                                       shape=())]
    found = as_written(record, rows)
    assert found is not None and found["version"] == 1 and record["tensors"] is items
    kept = list(found["tensors"])  # made as a writer reaches them
    assert kept[0] is items[0] and kept[2] is items[2]
    assert kept[1] == {"key": "k1", "source_key": "s1", "dtype": "float16", "shape": [1, 2]} and kept[1] is not items[1]
    assert items[1]["dtype"] == "float32" and kept[3] == {"key": "new", "dtype": "int8", "shape": []}


def _as_written_by_dict(items, rows):  # type: ignore[no-untyped-def]
    """What ``as_written``'s items were, every row in a dict first (the reference)."""
    written = {r.key: r for r in rows}
    for item in items:
        row = written.pop(item.get("key"), None) if isinstance(item, dict) else None
        if row is not None and (item.get("dtype") != row.dtype or item.get("shape") != list(row.shape)):
            item = {**item, "dtype": row.dtype, "shape": list(row.shape)}
        yield item
    for r in written.values():
        yield {"key": r.key, "dtype": r.dtype, "shape": list(r.shape)}


@pytest.mark.parametrize("seed", range(200))
def test_provenance_items_following_the_rows_are_matched_without_a_dict(seed):
    """Items in the rows' order (a conversion's record: no dict of the rows is made), then out of it, missing rows,
    items no row has, items that are not dicts or have no key: the same items, the same objects kept, as matching
    through a dict of every row gives."""
    import random
    from types import SimpleNamespace

    from formats.core.provenance import as_written

    rng = random.Random(seed)
    rows = [SimpleNamespace(key=f"k{i}", dtype=rng.choice(["float32", "int8"]), shape=(i % 3,))
            for i in range(rng.randrange(0, 12))]
    items: list[object] = [{"key": r.key, "dtype": rng.choice(["float32", "int8"]), "shape": [r.shape[0]]}
                           for r in rows if rng.random() < 0.8]
    if rng.random() < 0.4 and len(items) > 1:  # out of the rows' order from somewhere on
        at = rng.randrange(len(items))
        tail = items[at:]
        rng.shuffle(tail)
        items[at:] = tail
    for _ in range(rng.randrange(0, 3)):
        items.insert(rng.randrange(len(items) + 1), rng.choice([{"key": "other"}, {"dtype": "int8"}, "text", 7]))
    found = list(as_written({"tensors": items}, rows)["tensors"])  # type: ignore[index]
    expected = list(_as_written_by_dict(items, rows))
    assert found == expected
    assert [id(a) for a in found if any(a is i for i in items)] == [id(b) for b in expected
                                                                    if any(b is i for i in items)]


def test_patterns_found_by_shape_are_those_found_key_by_key():
    """``group_rows`` splits a key of a shape seen before (its digits aside, the same text) without the regular
    expression: the patterns and numbers are those :func:`_split` finds for each key, whatever the digits and the
    characters around them (Unicode digits, NUL, numbers inside words, leading zeros); 3,000 keys of 3 shapes run
    the expression 3 times (3,000 before)."""
    import random

    from formats.ops.report import digest

    rng = random.Random(3)
    parts = ["layer_", "/", ".", "-", "_", "conv", "2d", "h.", "\x00", "٣", ":", "a", "0", "07", "12", "x9", "/w"]
    keys = ["".join(rng.choice(parts) + rng.choice(["", str(rng.randint(0, 300))]) for _ in range(rng.randint(1, 6)))
            for _ in range(4000)]
    split = digest._splitter()
    assert [split(k) for k in keys] == [digest._split(k) for k in keys]

    calls = []
    regex = digest._NUMBER

    class Counting:
        def split(self, key):
            calls.append(key)
            return regex.split(key)

        def finditer(self, key):
            return regex.finditer(key)

    keys = [f"model/layer_{i // 100}/unit_{i % 100}/w" for i in range(3000)]
    digest._NUMBER = Counting()
    try:
        groups = digest.group_rows(keys, [16] * 3000, [4] * 3000, [False] * 3000, "pattern")
    finally:
        digest._NUMBER = regex
    assert [(g.name, g.tensors, g.ranges) for g in groups] == [("model/layer_{i}/unit_{j}/w", 3000, [[0, 29], [0, 99]])]
    assert len(calls) <= 4, len(calls)


def test_the_layer_depth_stops_at_the_second_layer(monkeypatch):
    """``layer_depth`` reads keys until it meets a second layer at a depth, not every key's layer into a set at every
    depth tried: 3,000 keys under one scope take 3,000 + 101 looks (6,000 before), and the depth is the one the set
    of every key's layer gives."""
    from formats.ops.report import digest

    keys = [f"model/layer_{i // 100}/unit_{i % 100}/w" for i in range(3000)]
    looked = []
    layer_of = digest.layer_of
    monkeypatch.setattr(digest, "layer_of", lambda key, depth: looked.append(key) or layer_of(key, depth))
    assert digest.layer_depth(keys) == 2 and len(looked) == 3101, len(looked)
    for some in ([], ["a"], ["a", "b"], ["a/x", "a/y"], ["m/a/x", "m/b/y"], ["m/a/x", "m/a/y", "m/b"], keys[:1]):
        expected = next((d for d in (1, 2) if len({layer_of(k, d) for k in some}) > 1), 3)
        assert digest.layer_depth(some) == expected, some


def test_a_report_scans_a_span_of_small_tensors_as_one_array_per_dtype(tmp_path):
    """``report``'s scan reduces the small tensors of a span one dtype at a time, from their bytes joined (no numpy
    array made and gathered per tensor): 22 Python calls a tensor (27 before), and every column is what numpy gives
    each tensor on its own."""
    import numpy as np

    from formats import write_checkpoint
    from formats.ops.report.scan import scan_keys
    from tests.call_counts import calls_of

    def written(n: int, values: dict | None = None) -> str:
        folder = tmp_path / f"n{n}"
        write_checkpoint(folder / "ckpt", values or {f"v/{i:05d}": np.full((4,), i, np.float32) for i in range(n)})
        return str(folder / "ckpt")

    counts = []
    for n in (2000, 4000):
        with open_checkpoint(written(n)) as ckpt:
            counts.append(calls_of(scan_keys, ckpt, list(ckpt))[1])
    assert (counts[1] - counts[0]) / 2000 < 24, (counts[1] - counts[0]) / 2000

    rng = np.random.default_rng(4)
    values = {f"f{i}": rng.standard_normal((i % 5 + 1, 3)).astype(np.float32) for i in range(40)}
    values["f3"][0, 0], values["f7"][1, 2], values["f9"][0, 1] = np.nan, np.inf, -np.inf
    values["f11"][:] = 0
    values |= {"i": np.array([0, -7, 3], np.int64), "b": np.array([True, False]), "h": np.arange(6, dtype=np.float16),
               "c": np.array([1 + 2j, np.nan, 0], np.complex64), "big": rng.standard_normal(70_000).astype(np.float32)}
    with open_checkpoint(written(0, values)) as ckpt:
        keys = list(ckpt)
        cols, _ = scan_keys(ckpt, keys)
    for i, key in enumerate(keys):
        x = np.abs(values[key].astype(np.complex128)) if key == "c" else values[key].astype(np.float64)
        finite = np.isfinite(x)
        clean = np.where(finite, x, 0.0)
        assert (cols.nan[i], cols.inf[i], cols.zeros[i]) == (np.isnan(x).sum(), (~finite & ~np.isnan(x)).sum(),
                                                             (x == 0).sum()), key
        assert cols.absmax[i] == np.abs(clean).max() and np.isclose(cols.sumsq[i], (clean * clean).sum()), key
        assert cols.numeric[i] and not cols.unreadable[i], key


def test_a_name_based_tree_is_walked_once(tmp_path, monkeypatch):
    """Building a name-based tree walks it once (the totals, bottom-up): the rows of the keys are those
    ``_key_tree`` made, kept as it made them, not found by a second walk of every row."""
    from formats.ops.inspect.tree import TreeNode

    walks = []
    nodes = TreeNode.nodes
    monkeypatch.setattr(TreeNode, "nodes", lambda self: walks.append(self) or nodes(self))
    with open_checkpoint(name_based(tmp_path, 500)) as ckpt:
        tree = build_tree(ckpt)
    assert len(walks) == 1 and tree.root.tensors == 500 and tree.root.parameters == 2000
    assert all(node.dtype == "float32" and node.own_parameters == 4 for node in nodes(tree.root) if node.key)


def test_a_summary_report_makes_a_tensor_object_only_for_those_it_details(tmp_path, monkeypatch, run_cli):
    """``report`` of 3,000 small tensors scans them from the bundle's columns (:func:`scan_keys`) and adds up the
    progress bar's total from them too: a tensor object is made only for the tensors the page details (the largest,
    the NaN) and for those the scan reads one by one (the big one, the string), not one each (3,000 before); its
    columns and element counts are numpy's, tensor by tensor."""
    import json

    import numpy as np

    from formats import write_checkpoint
    from formats.ops.report.summary import DETAIL_LIMIT
    from formats.tf_bundle.checkpoint import BundleTensor

    rng = np.random.default_rng(2)
    values = {f"v/{i:04d}": rng.standard_normal((i % 4 + 1,)).astype([np.float32, np.int16, np.float16][i % 3])
              for i in range(3000)}
    values |= {"w/nan": np.array([1.0, np.nan], np.float32), "w/big": np.arange(70_000, dtype=np.float32),
               "w/str": np.array([b"a", b"bc"]), "w/empty": np.zeros((0, 2), np.float32)}
    write_checkpoint(tmp_path / "ckpt", values)
    made: list[str] = []
    init = BundleTensor.__init__
    monkeypatch.setattr(BundleTensor, "__init__", lambda self, *a: made.append(a[1]) or init(self, *a))
    result = run_cli("report", tmp_path / "ckpt", "--json")
    assert result.exit_code == 0, result.output
    assert 0 < len(made) <= 2 * DETAIL_LIMIT + 4, len(made)  # chosen (the detailed), then the rest of the scan
    page = json.loads(result.stdout)["checkpoint"]
    monkeypatch.setattr(BundleTensor, "__init__", init)
    from formats.ops.report.scan import scan_keys

    with open_checkpoint(tmp_path / "ckpt") as ckpt:
        keys = sorted(ckpt)
        cols, sizes = scan_keys(ckpt, keys)
    assert sizes.tolist() == [values[k].size for k in keys]
    for i, key in enumerate(keys):
        numeric = values[key].dtype.kind != "S" and values[key].size > 0
        assert (bool(cols.numeric[i]), bool(cols.unreadable[i])) == (numeric, False), key
        x = values[key].astype(np.float64) if numeric else np.zeros(0)
        clean = np.where(np.isfinite(x), x, 0.0)
        assert (cols.nan[i], cols.inf[i], cols.zeros[i]) == (np.isnan(x).sum(), np.isinf(x).sum(), (x == 0).sum()), key
        assert cols.absmax[i] == (np.abs(clean).max() if x.size else 0.0), key
        assert np.isclose(cols.sumsq[i], (clean * clean).sum(), rtol=1e-12), key
    assert [(row["key"], row["nan"]) for row in page["flagged"]] == [("w/nan", 1)]
    assert (page["summary"], page["tensors"]) == (True, len(values))


@pytest.mark.parametrize("record", [
    {"source": "a/ckpt-1", "format": "tf-bundle", "tensors": [{"key": "k", "shape": [1, 2]}, {"key": "é\n", "x": None}]},
    {"tensors": [], "source": "s"},
    {"source": "s", "tensors": [{"key": "only"}]},
    {"tensors": [{"v": float("nan"), "w": [float("inf")], "u": "\x00\u2603\U0001F600"}]},
    {"source": "no tensors"},
    {"tensors": [{"a": 1}] * 3, "after": {"nested": [1, {"b": "c"}]}, "last": True},
    {"source": "s", "tensors": [{"i": i, "k": f"k{i}"} for i in range(5)]},
])
@pytest.mark.parametrize("at_once", [1024, 2])
def test_the_record_in_pieces_is_json_dumps(record, at_once, monkeypatch):
    """The provenance record written a run of items at a time is the text ``json.dumps`` makes of it, the items
    given as a list or as a generator consumed once, whatever the runs' length."""
    import json

    from formats.core import provenance
    from formats.core.provenance import record_pieces

    monkeypatch.setattr(provenance, "_ITEMS_AT_ONCE", at_once)

    assert "".join(record_pieces(record)) == json.dumps(record)
    if "tensors" in record:
        once = {**record, "tensors": (dict(item) for item in record["tensors"])}
        assert "".join(record_pieces(once)) == json.dumps(record)


@pytest.mark.parametrize("spool", [None, 64])
def test_extract_to_npz_makes_each_record_item_as_it_writes_it(bundles, tmp_path, monkeypatch, run_cli, spool):
    """``extract`` to ``.npz`` of N tensors made the provenance record's N dicts, then its whole JSON text and that
    text's chunks, all at once (at 100k tensors: 184 -> 121 MB peak); now the items are made, encoded and spooled a
    run at a time as they are reached, and the record numpy reads back is the same (``spool``: a record longer than
    this many characters waits for its header in a temporary file)."""
    import json

    import numpy as np

    from formats.npz import writer

    if spool is not None:
        monkeypatch.setattr(writer, "_SPOOL_CHARS", spool)
    most = record_items_at_once(monkeypatch, 16)
    out = tmp_path / "all.npz"
    result = run_cli("extract", bundles["name"], "-o", out)
    assert result.exit_code == 0, result.output
    assert most[0] == 16, most[0]  # a run of 16 made and encoded at once (300 before)
    with np.load(out) as npz:
        record = json.loads(str(npz["__ckpt_provenance__"]))
        assert npz["__ckpt_provenance__"].dtype == np.dtype(f"<U{len(json.dumps(record))}")
    keys = sorted(f"model/layer_{i // 100}/unit_{i % 100}/w" for i in range(300))
    assert record == {"source": bundles["name"], "format": "tf-name",
                      "tensors": [{"key": k, "dtype": "float32", "shape": [4]} for k in keys]}  # (the rest defaults)


def test_an_attribute_keeps_the_key_it_was_mapped_with(bundles, monkeypatch):
    """Mapping a bundle's keys to a large graph's attributes (held as columns) leaves each attribute holding the
    caller's key, not the copy decoded from the graph (100k keys: 10 MB less for every object-based command that
    labels its keys)."""
    from formats.concepts import object_graph_codec
    from formats.concepts.object_graph_codec import decode_object_graph

    monkeypatch.setattr(object_graph_codec, "SMALL_GRAPH_BYTES", 0)  # 300 keys' graph decoded as a large one is

    with open_checkpoint(bundles["object"]) as ckpt:
        data = ckpt["_CHECKPOINTABLE_OBJECT_GRAPH"].read()[()]
        keys = ["".join(key) for key in ckpt if key != "_CHECKPOINTABLE_OBJECT_GRAPH"]  # strings of their own
    graph = decode_object_graph(data, "x.index")
    mapping = graph.map_keys(keys)
    assert len(mapping) == len(keys) == 301  # 300 variables and the save counter
    assert all(attr.checkpoint_key is key for key, (_, attr) in mapping.items())


def _nodes_asked(monkeypatch, cls, method: str) -> list[int]:
    """The nodes ``cls.method(node)`` is asked about from now on, in order (it still answers)."""
    asked: list[int] = []
    original = getattr(cls, method)
    monkeypatch.setattr(cls, method, lambda self, node: asked.append(node) or original(self, node))
    return asked


def test_keys_of_a_graph_without_an_optimizer_are_not_asked_about_keras_slots(bundles, monkeypatch):
    """A Keras slot is a node under an optimizer: where no node is, labelling the keys asks no variable whether it
    is a slot's (it asked each of them, and found every one's optimizer, which is none)."""
    from formats.concepts import object_graph

    asked = _nodes_asked(monkeypatch, object_graph.ObjectGraph, "slot_of")
    with open_checkpoint(bundles["object"]) as ckpt:
        graph = ckpt.object_graph
        keys = sorted(ckpt)
        asked.clear()
        labels = object_graph.label_keys(graph, keys)
        assert object_graph._keras_slots(graph, graph.map_keys(keys)) == {}
    assert len(asked) < 3, len(asked)  # (the keys left to the label one by one: the save counter's; it was 603, 301 a call)
    roles = [str(labels[k].role) for k in keys]
    assert roles.count("variable") == 300 and roles.count("save_counter") == 1


def test_the_owners_of_edges_of_a_name_are_those_a_walk_over_every_node_finds(in_corpus_graphs):
    """``ObjectGraph.owners_named`` (the nodes a Keras optimizer or its lists may be, found with no Python step an
    edge) against each node's own children, on every object graph of the corpus, small (nodes) and in columns."""
    for graph in in_corpus_graphs:
        names = {name for node in range(len(graph)) for _, name in graph.children(node)}
        near = {name[:-1] for name in names} | {name + "_" for name in names}  # (the bytes compared to the end)
        for name in sorted(names | near | {"_trainable_variables", "iter", "no such name"}):
            expected = [node for node in range(len(graph)) if any(n == name for _, n in graph.children(node))]
            assert graph.owners_named(name) == expected, name


def test_the_owners_of_edges_of_a_name_beyond_ascii_are_found_in_columns(monkeypatch):
    """A graph in columns compares a name's UTF-8 bytes with its edges' stored ones: names beyond ASCII, of one
    length in characters and another in bytes, empty, and a string no UTF-8 holds (a lone surrogate)."""
    from formats.concepts import object_graph_codec
    from formats.concepts.object_graph import ChildRef, ObjectNode

    names = ["é", "e", "ée", "日本", "", "xé", "é"]
    nodes = [ObjectNode(0, [ChildRef(1 + i, name) for i, name in enumerate(names)] + [ChildRef(1, "日")]),
             *[ObjectNode(1 + i, [ChildRef(0, names[i])] if i % 2 else []) for i in range(len(names))]]
    monkeypatch.setattr(object_graph_codec, "SMALL_GRAPH_BYTES", 0)
    graph = object_graph_codec.decode_object_graph(object_graph_codec.encode_object_graph(nodes))
    assert type(graph.table).__name__ == "GraphColumns"
    found = {name: graph.owners_named(name) for name in [*names, "日", "本", "\udce9", "ée_"]}
    assert found == {"é": [0], "e": [0, 2], "ée": [0], "日本": [0, 4], "": [0], "xé": [0, 6], "日": [0],
                     "本": [], "\udce9": [], "ée_": []}


def test_no_node_s_children_are_gathered_to_find_a_keras_3_optimizer(bundles, monkeypatch):
    """A Keras 3 optimizer has a child ``_trainable_variables``: its structural slots are looked for under the owners
    of such edges only (every node with three children or more was asked for its children by name: each layer)."""
    from formats.concepts import object_graph

    asked = _nodes_asked(monkeypatch, object_graph.ObjectGraph, "children_of")
    with open_checkpoint(bundles["object"]) as ckpt:
        graph = ckpt.object_graph
        assert object_graph._keras3_structural_slots(graph) == {}
    assert asked == []  # (it was 4: the model and its 3 layers)


@pytest.fixture
def in_corpus_graphs(monkeypatch):
    """Every object graph of the corpus twice: decoded node by node and into columns."""
    from formats.concepts import object_graph_codec
    from tests.conftest import CORPUS

    graphs = []
    for small in (True, False):
        monkeypatch.setattr(object_graph_codec, "SMALL_GRAPH_BYTES", 1 << 30 if small else 0)
        for index in sorted(CORPUS.rglob("*.index")):
            with open_checkpoint(str(index)[: -len(".index")]) as ckpt:
                graph = getattr(ckpt, "object_graph", None)
                if graph is not None:
                    graphs.append(graph)
    assert len(graphs) >= 16
    return graphs
