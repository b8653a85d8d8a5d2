"""Issue 38: what a command keeps per tensor. A bundle's tensor takes the key its caller asked with (not a second
copy of the string decoded from the index), and ``ls --tree`` looks each key up once (not once per question
about it, each lookup keeping a tensor object)."""
from __future__ import annotations

import pytest

from formats import open_checkpoint
from formats.ops.inspect.tree import build_tree
from tests.memory import traced
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
                                         ("formats.core.provenance", "TensorRecord"),
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
