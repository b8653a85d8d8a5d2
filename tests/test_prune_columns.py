"""An object-based edit prunes a graph decoded into columns on its arrays (``prune._ColumnPrune``), each staying node
made as it is encoded: the graph's bytes and the problems must be what pruning node by node gives (the path
TensorFlow's loads of edits are tested on), for every object-based checkpoint of the corpus and many selections;
what it does not take it leaves to that path."""
from __future__ import annotations

import random

import pytest

from formats import open_checkpoint
from formats.concepts.object_graph import Attribute, ChildRef, ObjectGraph, ObjectNode
from formats.concepts.object_graph_codec import decode_object_graph, encode_object_graph
from formats.core.model import OBJECT_GRAPH_KEY
from formats.ops.edit import prune

from tests.test_rename_in_place import OBJECT_BASED

V = "/.ATTRIBUTES/VARIABLE_VALUE"


@pytest.fixture
def in_columns(monkeypatch):
    """Every graph decoded into columns, as a large one is (a small one's nodes are built as it is read)."""
    from formats.concepts import object_graph_codec

    monkeypatch.setattr(object_graph_codec, "SMALL_GRAPH_BYTES", 0)


def _selections(keys: list[str]) -> list[tuple[str, set[str]]]:
    rng = random.Random(len(keys))
    sets = [("all", set(keys)), ("none", set()), ("all but the first", set(keys[1:])),
            ("the first alone", set(keys[:1])),
            ("no optimizer state", {k for k in keys if "optimizer" not in k.lower() and "OPTIMIZER_SLOT" not in k}),
            ("no slots", {k for k in keys if "OPTIMIZER_SLOT" not in k}),
            ("slots alone", {k for k in keys if "OPTIMIZER_SLOT" in k})]
    sets += [(f"random half {i}", {k for k in keys if rng.random() < 0.5}) for i in range(4)]
    return sets


def _both(graph: ObjectGraph, keys: list[str], kept: set[str]) -> tuple[tuple, tuple]:
    dropped = set(keys) - kept  # (pruning is told the keys left out)
    columns = prune._ColumnPrune(graph).run(keys, dropped)
    assert columns is not None, "not pruned on the columns"
    pruned, problems = prune._prune_nodes(graph, keys, dropped)
    nodes = (encode_object_graph(pruned.nodes) if pruned is not None else None,
             [(p.kind, p.key, p.message, p.severity) for p in problems])
    return (columns[1], [(p.kind, p.key, p.message, p.severity) for p in columns[2]]), nodes


@pytest.mark.parametrize("prefix", OBJECT_BASED, ids=lambda p: p.split("corpus/")[-1])
def test_pruning_on_columns_writes_what_pruning_node_by_node_writes(prefix, in_columns):
    with open_checkpoint(prefix) as ckpt:
        graph = ckpt.object_graph
        keys = sorted(k for k in ckpt if k != OBJECT_GRAPH_KEY)
        assert type(graph.table).__name__ == "GraphColumns"
        for what, kept in _selections(keys):
            on_columns, node_by_node = _both(graph, keys, kept)
            assert on_columns == node_by_node, what
            if on_columns[0] is not None:  # (the graph given with the bytes is theirs)
                pruned, data, _ = prune.prune_graph(graph, keys, set(keys) - kept)
                assert data == on_columns[0] and encode_object_graph(list(pruned.nodes)) == data, what


def _graph_bytes(nodes: list[ObjectNode]) -> bytes:
    return encode_object_graph(nodes)


def _tricky() -> list[ObjectNode]:
    """A model with an alias, a layer without weights, a nested layer whose variable goes (its path would change if
    its first parent went), an unreachable node, a slot, and a variable stored as two keys (partitioned)."""
    return [
        ObjectNode(0, [ChildRef(1, "model"), ChildRef(6, "optimizer"), ChildRef(8, "save_counter")]),
        ObjectNode(1, [ChildRef(2, "dense"), ChildRef(3, "dropout"), ChildRef(4, "block"), ChildRef(2, "alias")]),
        ObjectNode(2, [ChildRef(5, "kernel")]),
        ObjectNode(3),
        ObjectNode(4, [ChildRef(9, "inner"), ChildRef(10, "w")]),
        ObjectNode(5, attributes=[Attribute("VARIABLE_VALUE", "dense/kernel", "model/dense/kernel" + V)]),
        ObjectNode(6, [ChildRef(7, "iter")], slot_variables=[
            __import__("formats.concepts.object_graph", fromlist=["x"]).SlotVariableRef(5, "m", 11)]),
        ObjectNode(7, attributes=[Attribute("VARIABLE_VALUE", "iter", "optimizer/iter" + V)]),
        ObjectNode(8, attributes=[Attribute("VARIABLE_VALUE", "save_counter", "save_counter" + V)]),
        ObjectNode(9, [ChildRef(10, "w")]),
        ObjectNode(10, attributes=[Attribute("VARIABLE_VALUE", "w", "model/block/w" + V)]),
        ObjectNode(11, attributes=[Attribute("VARIABLE_VALUE", "kernel/m",
                                             "model/dense/kernel/.OPTIMIZER_SLOT/optimizer/m" + V)]),
        ObjectNode(12, attributes=[Attribute("VARIABLE_VALUE", "lost", "lost" + V)]),
    ]


def test_pruning_on_columns_of_aliases_moves_and_slots(in_columns):
    graph = decode_object_graph(_graph_bytes(_tricky()))
    keys = sorted(["model/dense/kernel" + V, "optimizer/iter" + V, "save_counter" + V, "model/block/w" + V,
                   "model/dense/kernel/.OPTIMIZER_SLOT/optimizer/m" + V, "lost" + V,
                   "model/block/w" + V + "/part_0", "model/block/w" + V + "/part_1"])
    checked = 0
    for size in range(len(keys) + 1):  # every subset of a random order's prefixes, and each key alone left out
        for kept in [set(keys[:size]), set(keys) - set(keys[size:size + 1])]:
            on_columns, node_by_node = _both(graph, keys, kept)
            assert on_columns == node_by_node, sorted(kept)
            checked += 1
    assert checked == 2 * (len(keys) + 1)


def test_a_problem_is_found_on_columns_as_node_by_node(in_columns):
    graph = decode_object_graph(_graph_bytes(_tricky()))
    keys = sorted(["model/dense/kernel" + V, "model/block/w" + V, "optimizer/iter" + V])
    (data, problems), expected = _both(graph, keys, {"model/block/w" + V})
    assert (data, problems) == expected
    assert data is not None  # block/w keeps its path: its first parent, block, stays on the way to it


def test_a_node_with_two_attributes_of_one_name_is_pruned_node_by_node(in_columns):
    nodes = [ObjectNode(0, [ChildRef(1, "v")]),
             ObjectNode(1, attributes=[Attribute("VALUE", "a", "v/.ATTRIBUTES/VALUE"),
                                       Attribute("VALUE", "b", "v/.ATTRIBUTES/VALUE_2")])]
    graph = decode_object_graph(_graph_bytes(nodes))
    keys = ["v/.ATTRIBUTES/VALUE", "v/.ATTRIBUTES/VALUE_2"]
    assert prune._ColumnPrune(graph).run(keys, {keys[1]}) is None
    pruned, data, problems = prune.prune_graph(graph, keys, {keys[1]})
    assert (pruned, data) == (None, None)
    assert [p.message for p in problems] == ["attribute 'VALUE' is stored as several tensors, and only some of them "
                                             "would be kept"]  # (its name is the node's, not the tensor's)
    pruned, data, problems = prune.prune_graph(graph, [*keys, "other"], {"other"})
    assert problems == [] and data == encode_object_graph(pruned.nodes)
    assert [a.checkpoint_key for a in pruned.nodes[1].attributes] == keys


def _layered(n: int) -> tuple[ObjectGraph, list[str]]:
    nodes = [ObjectNode(0, [ChildRef(1 + i, f"layer_{i}") for i in range(n)])]
    nodes += [ObjectNode(1 + i, [ChildRef(1 + n + i, "w")]) for i in range(n)]
    nodes += [ObjectNode(1 + n + i, attributes=[Attribute("VARIABLE_VALUE", f"w{i}", f"layer_{i}/w" + V)])
              for i in range(n)]
    return decode_object_graph(_graph_bytes(nodes)), [f"layer_{i}/w" + V for i in range(n)]


def test_pruning_on_columns_holds_no_node_a_node(monkeypatch):
    """At 20k objects in columns, pruning builds no node of the graph (each pruned one is made as it is encoded)
    and its peak is some 300 bytes an object, the pruned graph decoded into columns included (node by node: 477)."""
    import tracemalloc

    from formats.concepts.object_graph_columns import GraphColumns

    n = 20_000
    graph, keys = _layered(n)
    assert type(graph.table).__name__ == "GraphColumns"
    graph.map_keys(keys)  # what the graph keeps once asked (decoded names, attributes) is not the pruning's
    graph.table.child_names()
    monkeypatch.setattr(GraphColumns, "all_nodes", lambda self: pytest.fail("every node built"))
    monkeypatch.setattr(GraphColumns, "node", lambda self, i: pytest.fail(f"node {i} built"))
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        pruned, data, problems = prune.prune_graph(graph, keys, set(keys[:1]))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert problems == [] and len(pruned) == 1 + 2 * (n - 1)
    monkeypatch.undo()
    assert [pruned.path(i) for i in (1, n, n + 1)] == ["layer_1", "layer_1/w", "layer_2/w"]
    assert decode_object_graph(data, "x").table.count == len(pruned)
    per_object = (peak - base) / (3 * n)
    assert per_object < 360, per_object


def _checked(monkeypatch) -> list[bool]:
    """What each column prune's check of the paths on arrays (``_paths_kept``) answered."""
    answers: list[bool] = []
    check = prune._ColumnPrune._paths_kept
    monkeypatch.setattr(prune._ColumnPrune, "_paths_kept", lambda self: answers.append(check(self)) or answers[-1])
    return answers


@pytest.mark.parametrize("prefix", OBJECT_BASED, ids=lambda p: p.split("corpus/")[-1])
def test_paths_checked_on_the_arrays_are_what_comparing_the_paths_finds(prefix, in_columns, monkeypatch):
    """The check on arrays says the paths are kept exactly where pruning node by node (which compares every path
    of the decoded pruned graph) finds no object moved; asked for the bytes alone, a prune it clears decodes
    nothing and gives the same bytes."""
    answers = _checked(monkeypatch)
    with open_checkpoint(prefix) as ckpt:
        graph = ckpt.object_graph
        keys = sorted(k for k in ckpt if k != OBJECT_GRAPH_KEY)
        for what, kept in _selections(keys):
            answers.clear()
            pruned, problems = prune._prune_nodes(graph, keys, set(keys) - kept)
            decoded, data, found = prune._ColumnPrune(graph).run(keys, set(keys) - kept, decoded=False)
            if not answers:  # (an attribute split: refused before any path is asked about)
                assert pruned is None and found and all("several tensors" in p.message for p in found), what
                continue
            moved = [p for p in problems if "would be found as" in p.message]
            assert answers == [not moved] and decoded is None and (data is None) == bool(moved), what
            if data is not None:
                assert data == encode_object_graph(pruned.nodes) and found == [], what


def test_both_answers_of_the_check_are_met_in_the_corpus(in_columns, monkeypatch):
    """A slot variable whose variable goes moves (seed_slots' optimizer slots kept alone): the check must say so,
    and says the paths are kept where nothing moves."""
    answers = _checked(monkeypatch)
    prefix = next(p for p in OBJECT_BASED if p.endswith("seed_slots/tf_ckpts/ckpt-5"))
    with open_checkpoint(prefix) as ckpt:
        graph = ckpt.object_graph
        keys = sorted(k for k in ckpt if k != OBJECT_GRAPH_KEY)
        slots = {k for k in keys if "OPTIMIZER_SLOT" in k}
        pruned, data, problems = prune.prune_graph(graph, keys, set(keys) - slots, decoded=False)
        assert (pruned, data) == (None, None) and len(problems) == 4 and answers == [False]
        assert all(p.message.startswith("the object would be found as ") for p in problems)
        pruned, data, problems = prune.prune_graph(graph, keys, slots, decoded=False)
        assert pruned is None and data is not None and problems == [] and answers == [False, True]


def test_a_node_reached_by_another_edge_is_a_move_the_arrays_see(in_columns, monkeypatch):
    """Were the edge that first reaches ``dense`` (``model/dense``) left out, it would be found by its alias: the
    check on arrays must see the move, and the paths compared report it."""
    graph = decode_object_graph(_graph_bytes(_tricky()))
    keys = sorted(["model/dense/kernel" + V, "optimizer/iter" + V, "save_counter" + V])
    plan = prune._ColumnPrune._plan
    first = graph.table.child_ptr[1]  # (model's first edge: to dense)

    def without_first_edge(self):  # type: ignore[no-untyped-def]
        valued = plan(self)
        self.keep_edge[first] = False
        return valued

    answers = _checked(monkeypatch)
    assert prune._ColumnPrune(graph).run(keys, set(), decoded=False)[1] is not None and answers == [True]
    monkeypatch.setattr(prune._ColumnPrune, "_plan", without_first_edge)
    pruned, data, problems = prune._ColumnPrune(graph).run(keys, set(), decoded=False)
    assert answers == [True, False] and (pruned, data) == (None, None)
    assert [p.message for p in problems][:1] == ["the object would be found as 'model/alias' once other objects are "
                                                 "left out; its keys name 'model/dense'"]


def _slot_of_slot() -> list[ObjectNode]:
    """_tricky's graph with a slot of the slot variable (its variable reached by no edge) listed before the slot
    it is a slot of, and a second reference to that slot."""
    from formats.concepts.object_graph import SlotVariableRef

    nodes = _tricky()
    nodes[6].slot_variables = [SlotVariableRef(11, "v", 13), SlotVariableRef(5, "m", 11),
                               SlotVariableRef(11, "w", 13), SlotVariableRef(10, "m", 14)]
    nodes += [ObjectNode(13, attributes=[Attribute("VARIABLE_VALUE", "v", "v" + V)]),
              ObjectNode(14, attributes=[Attribute("VARIABLE_VALUE", "m", "m" + V)])]
    return nodes


def _two_references() -> list[ObjectNode]:
    """_tricky's graph with its slot variable referenced a second time, from another variable."""
    from formats.concepts.object_graph import SlotVariableRef

    nodes = _tricky()
    nodes[6].slot_variables = [SlotVariableRef(5, "m", 11), SlotVariableRef(10, "m", 11)]
    return nodes


@pytest.mark.parametrize("nodes", [_tricky, _slot_of_slot, _two_references])
def test_the_slot_references_paths_come_from_are_the_graphs_own(nodes, in_columns):
    """``_slot_path_refs`` names the slot variables with a path and the reference each takes it from, as the decoded
    graph gives them (its slot paths built independently, by :class:`ObjectGraph`)."""
    import numpy as np

    from formats.core.object_keys import slot_variable_key

    graph = decode_object_graph(_graph_bytes(nodes()))
    t = graph.table
    original, slot = np.asarray(t.slot_original, np.int64), np.asarray(t.slot_id, np.int64)
    found, refs = prune._slot_path_refs(np, np.asarray(graph.traversal.reached, bool), original, slot)
    owner = np.repeat(np.arange(t.count), np.diff(np.asarray(t.slot_ptr, np.int64)))
    names = t.slot_names()
    expected = {i: graph.path(i) for i in range(len(graph)) if not graph.traversal.reached[i]
                and graph.path(i) is not None}
    assert {int(n): slot_variable_key(graph.path(int(original[k])), graph.path(int(owner[k])), names[k])
            for n, k in zip(found, refs)} == expected
    assert len(expected) == (3 if nodes is _slot_of_slot else 1)


def test_a_slot_reference_held_by_an_unreachable_object_is_left_to_the_paths_compared(in_columns, monkeypatch):
    """A slot variable's path names its optimizer's: held by an optimizer no edge reaches, the check on arrays
    cannot tell, and the decoded pruned graph's paths are compared (nothing moves)."""
    from formats.concepts.object_graph import SlotVariableRef

    nodes = _tricky()
    nodes[6].slot_variables = []
    nodes.append(ObjectNode(13, slot_variables=[SlotVariableRef(5, "m", 11)]))
    graph = decode_object_graph(_graph_bytes(nodes))
    keys = sorted(["model/dense/kernel" + V, "optimizer/iter" + V, "lost" + V,
                   "model/dense/kernel/.OPTIMIZER_SLOT/optimizer/m" + V])
    answers = _checked(monkeypatch)
    pruned, data, problems = prune.prune_graph(graph, keys, {"lost" + V}, decoded=False)
    assert answers == [False] and problems == [] and data is not None and pruned is not None
    slot_path = "model/dense/kernel/.OPTIMIZER_SLOT//m"  # (its optimizer's path: none, "")
    assert graph.path(11) == slot_path and slot_path in [pruned.path(i) for i in range(len(pruned))]


def _random_graph(rng: random.Random, n: int) -> tuple[list[ObjectNode], list[str]]:
    """A graph of ``n`` objects with edges to later objects, aliases (second edges, some of a name used twice),
    edges back up, objects no edge reaches, variables (an attribute each), and slot references from an optimizer
    (to slot variables reached by no edge, some of them slots of slots)."""
    from formats.concepts.object_graph import SlotVariableRef

    nodes = [ObjectNode(i) for i in range(n)]
    for i in range(1, n):  # a first parent before each, most of them
        if rng.random() < 0.9:
            nodes[rng.randrange(i)].children.append(ChildRef(i, rng.choice(["a", "b", "c", f"n{i}"])))
    for _ in range(n // 2):  # aliases, some of them up the graph
        parent, child = rng.randrange(n), rng.randrange(1, n)
        nodes[parent].children.append(ChildRef(child, rng.choice(["a", "b", "alias", f"x{child}"])))
    keys = []
    for i in range(1, n):
        if rng.random() < 0.6:
            key = f"k{i}" + V
            nodes[i].attributes.append(Attribute("VARIABLE_VALUE", f"v{i}", key))
            keys.append(key)
    variables = [i for i in range(n) if nodes[i].attributes]
    slots = []
    for j in range(rng.randrange(4)):
        slot = len(nodes)
        key = f"slot{j}" + V
        nodes.append(ObjectNode(slot, attributes=[Attribute("VARIABLE_VALUE", f"s{j}", key)]))
        keys.append(key)
        original = rng.choice(variables + slots) if variables else slot
        nodes[rng.randrange(n)].slot_variables.append(SlotVariableRef(original, rng.choice("mv"), slot))
        slots.append(slot)
    return nodes, sorted(keys)


def test_the_check_on_arrays_answers_as_the_paths_compared_on_random_graphs(in_columns, monkeypatch):
    """On 300 random graphs (aliases, edges up, unreachable objects, slots of slots) and random selections, the
    check on arrays says the paths are kept exactly where the pruned graph's paths, decoded and compared node by
    node, have not moved - but where a slot reference is held by an object no edge reaches, when it may say it
    cannot tell (and the paths are compared); and what it clears is written as pruning node by node writes it."""
    rng = random.Random(38)
    answers = _checked(monkeypatch)
    said: dict[tuple[bool, bool], int] = {}
    for case in range(300):
        nodes, keys = _random_graph(rng, rng.randrange(2, 40))
        graph = decode_object_graph(_graph_bytes(nodes))
        held_unreached = any(n.slot_variables and not graph.traversal.reached[n.id] for n in nodes)
        for _ in range(3):
            kept = {k for k in keys if rng.random() < 0.7}
            answers.clear()
            pruned, problems = prune._prune_nodes(graph, keys, set(keys) - kept)
            done = prune._ColumnPrune(graph).run(keys, set(keys) - kept, decoded=False)
            assert done is not None and answers, case
            moved = [p for p in problems if "would be found as" in p.message]
            assert not (answers[0] and moved), (case, sorted(kept))  # (never cleared where an object moves)
            if not held_unreached:
                assert answers == [not moved], (case, sorted(kept))
            assert (done[1] is None) == bool(moved) and done[2] == moved, case
            if not moved:
                assert done[1] == encode_object_graph(pruned.nodes), case
            said[answers[0], bool(moved)] = said.get((answers[0], bool(moved)), 0) + 1
    assert said[True, False] > 300 and said[False, True] > 20 and said.get((False, False), 0) < 100, said
