"""Issue 38: the object graph as columns (:mod:`formats.concepts.object_graph_columns`) and the graph's work on
arrays (:mod:`formats.concepts.object_graph_table`), against independent oracles.

- decoding: the generic decoder (:func:`formats.concepts.proto.messages.decode`, itself checked against protobuf
  in ``test_wire.py``) gives the same nodes for every object-based checkpoint of the corpus, for random graphs
  (names with dots, slashes, other scripts, empty; aliases, slot variables, id 0 children) and for damaged
  bytes (or the same error);
- the traversal: a plain node-by-node breadth-first walk written here (TensorFlow's rule, as the module doc
  states it) gives the same paths, parents, aliases, slot paths and optimizers, and the same first error when a
  graph is too deep or its paths too long;
- both ways a graph is walked: a small one (at most ``SMALL_NODES`` nodes, at most ``SMALL_GRAPH_BYTES``
  decoded) in plain Python, a larger one on numpy arrays, give the same results and the same first error;
- growth: ``verify``, ``ls --tree`` and ``ls --names`` of object-based bundles make a bounded number of Python
  calls per tensor from 10,000 to 40,000 tensors (the node-per-object decoder made about 40 per tensor more in
  ``verify`` than the same tensors name-based).
"""
from __future__ import annotations

import random
from collections import deque

import pytest

from formats.concepts import object_graph, object_graph_codec, object_graph_columns, object_graph_table
from formats.concepts.object_graph import (Attribute, ChildRef, ObjectGraph, ObjectNode, SlotVariableRef,
                                           escape_local_name)
from formats.concepts.object_graph_codec import encode_object_graph
from formats.core.errors import CorruptCheckpointError

from tests.test_object_graph_wire import GRAPHS, decoded_nodes as _columns, generic_nodes as _generic, vars_of


@pytest.fixture(params=["small", "arrays", "runs"])
def walked(request, monkeypatch) -> str:
    """Each test three times: graphs as small as these decoded node by node and walked in plain Python (as they
    are), then decoded into columns and walked on arrays (as larger graphs are), then so with the bytes scanned
    and each level's edges taken a few at a time (as a graph of millions is: the runs' edges exercised)."""
    if request.param != "small":
        monkeypatch.setattr(object_graph_codec, "SMALL_GRAPH_BYTES", -1)
        monkeypatch.setattr(object_graph_table, "SMALL_NODES", -1)
    if request.param == "runs":
        from formats.concepts import object_graph_columns

        monkeypatch.setattr(object_graph_table, "_LEVEL_RUN", 3)
        monkeypatch.setattr(object_graph_columns, "_CHUNK", 5)
        monkeypatch.setattr(object_graph_columns, "_SPANS_AT_ONCE", 2)  # (keys looked up a run of 2 at a time)
    return request.param


def _reference(nodes: list[ObjectNode]) -> dict[str, object]:
    """The traversal node by node, as TensorFlow states it: breadth-first from node 0, a node's path fixed by
    the first edge that reaches it, every further edge an alias; slot variables named after their variable."""
    paths: dict[int, str] = {0: ""}
    parents: dict[int, tuple[int, str]] = {}
    aliases: dict[int, list[str]] = {}
    queue = deque([0])
    while queue:
        current = queue.popleft()
        for ref in nodes[current].children:
            prefix = paths[current]
            path = f"{prefix}/{escape_local_name(ref.local_name)}" if prefix else escape_local_name(ref.local_name)
            if ref.node_id in paths:
                aliases.setdefault(ref.node_id, []).append(path)
                continue
            paths[ref.node_id] = path
            parents[ref.node_id] = (current, ref.local_name)
            queue.append(ref.node_id)
    for node in nodes:
        for s in node.slot_variables:
            if s.slot_variable_node_id not in paths and s.original_variable_node_id in paths:
                paths[s.slot_variable_node_id] = (f"{paths[s.original_variable_node_id]}/.OPTIMIZER_SLOT/"
                                                  f"{paths.get(node.id, '')}/{escape_local_name(s.slot_name)}")
    return {"paths": paths, "parents": parents, "aliases": aliases}


def _optimizer(nodes: list[ObjectNode], node: ObjectNode) -> bool:
    names = {c.local_name: c.node_id for c in node.children}
    it = names.get("iter")
    return bool(node.slot_variables) or {"_iterations", "_variables"} <= names.keys() or \
        (it is not None and any(a.full_name.endswith("/iter") for a in nodes[it].attributes))


def _same_as_reference(graph: ObjectGraph, nodes: list[ObjectNode]) -> None:
    ref = _reference(nodes)
    for i in range(len(nodes)):
        assert graph.path(i) == ref["paths"].get(i), i  # type: ignore[attr-defined]
        assert graph.parent(i) == ref["parents"].get(i), i  # type: ignore[attr-defined]
        assert graph.aliases(i) == ref["aliases"].get(i, []), i  # type: ignore[attr-defined]
        assert graph.is_optimizer(i) == _optimizer(nodes, nodes[i]), i
        up: int | None = i
        while up is not None and not _optimizer(nodes, nodes[up]):
            up = ref["parents"].get(up, (None,))[0]  # type: ignore[attr-defined]
        assert graph.optimizer_of(i) == up, i
    first_children = graph.first_children_reader()  # (the tree's walk: views made once)
    for i, node in enumerate(nodes):  # the edges that give a child its path: its parent's, by that name
        want = [(c.node_id, c.local_name) for c in node.children
                if c.node_id and ref["parents"].get(c.node_id) == (i, c.local_name)]  # type: ignore[attr-defined]
        assert graph.first_children(i) == first_children(i) == want, i
    keys = [a.checkpoint_key for n in nodes for a in n.attributes]
    by_key = {a.checkpoint_key: (n.id, a) for n in nodes for a in n.attributes}
    mapping = graph.map_keys([*keys, "not/a/key"])
    assert mapping == {k: by_key[k] for k in keys} and len(mapping) == len(keys)
    assert list(mapping.items()) == [(k, by_key[k]) for k in keys] and list(mapping) == keys  # in the keys' order
    assert list(mapping.values()) == [by_key[k] for k in keys] and all(mapping.get(k) == by_key[k] for k in keys)
    assert "not/a/key" not in mapping and mapping.get("not/a/key", 7) == 7 and all(k in mapping for k in keys)
    with pytest.raises(KeyError):
        mapping["not/a/key"]
    with pytest.raises(KeyError):
        mapping.index("not/a/key")
    assert all(mapping.index(k) == mapping.position(k) and (mapping.owners[mapping.index(k)], mapping.name(
        mapping.index(k)), mapping.full_name(mapping.index(k))) == (by_key[k][0], by_key[k][1].name,
                                                                    by_key[k][1].full_name) for k in keys)
    assert graph.slot_owners() == [n.id for n in nodes if n.slot_variables]


def _kept(nodes: list[ObjectNode], ids: list[int]) -> list[ObjectNode]:
    """The graph of the nodes ``ids`` (increasing, 0 first) renumbered in order, with the edges and slot variables
    among them (what an edit keeps)."""
    new = {old: i for i, old in enumerate(ids)}
    out = [ObjectNode(i) for i in range(len(ids))]
    for i, old in enumerate(ids):
        out[i].children = [ChildRef(new[c.node_id], c.local_name) for c in nodes[old].children if c.node_id in new]
        out[i].attributes = list(nodes[old].attributes)
        out[i].slot_variables = [SlotVariableRef(new[s.original_variable_node_id], s.slot_name,
                                                 new[s.slot_variable_node_id]) for s in nodes[old].slot_variables
                                 if s.original_variable_node_id in new and s.slot_variable_node_id in new]
    return out


def test_a_kept_graph_keeps_its_paths_as_the_oracle_says(walked) -> None:
    """``keeps_paths_of`` (a small graph's node by node, a larger one's on arrays) says whether every kept node
    has the path it had, as the node-by-node traversal finds the paths of both graphs."""
    rng = random.Random(3839)
    answers = []
    for count in (1, 3, 8, 40, 300):
        for _ in range(6):
            nodes = _random_nodes(rng, count)
            ids = [0] + sorted(rng.sample(range(1, count), rng.randrange(count))) if count > 1 else [0]
            kept = _kept(nodes, ids)
            graph = object_graph_codec.decode_object_graph(encode_object_graph(nodes, fill_has_values=False), "x")
            sub = ObjectGraph(kept)
            old_paths, new_paths = _reference(nodes)["paths"], _reference(kept)["paths"]
            expected = all(new_paths.get(i) == old_paths.get(old) for i, old in enumerate(ids))  # type: ignore[attr-defined]
            assert sub.keeps_paths_of(graph, ids) == expected, (count, ids)
            assert sub.keeps_paths_of(graph, ids[:-1]) is (len(ids) == 0)
            answers.append(expected)
    assert True in answers and False in answers


@pytest.mark.parametrize("name,data", GRAPHS, ids=[name for name, _ in GRAPHS])
def test_a_small_graph_labels_its_keys_as_a_large_one_does(name: str, data: bytes, monkeypatch) -> None:
    """Labels (roles, slots, optimizers, Keras 3 slots from the graph's structure) of a small graph, worked out in
    plain Python without importing numpy (a small bundle's convert, edit and rename), are those of the same
    graph on arrays."""
    def labels() -> tuple[object, object]:
        graph = object_graph_codec.decode_object_graph(data, "x")
        keys = [a.checkpoint_key for i in range(len(graph.nodes)) for a in graph.nodes[i].attributes]
        return object_graph.label_keys(graph, keys), object_graph._keras3_structural_slots(graph)

    small = labels()
    monkeypatch.setattr(object_graph_codec, "SMALL_GRAPH_BYTES", -1)
    monkeypatch.setattr(object_graph_table, "SMALL_NODES", -1)
    assert labels() == small


_FULL_NAMES = ["", "net/w", "net/w/Adam", "a/Adam_1", "beta1_power", "x/beta2_power", "global_step", "w/Momentum",
               "ünï/RMSProp", "save_counter", "net/save_counter", "layer/counter", "_CHECKPOINTABLE_OBJECT_GRAPH",
               "x/ITERATOR_STATE", "Adam", "dam", "m", "b/Adam/m", "日本/Ftrl_1", "kernel/", "/Adam"]
"""Full names: model variables', and ones whose last segment (or whole name) tells another role, or ends in the
same two bytes as one that does without telling (``layer/counter``, ``dam``, ``b/Adam/m``)."""


def _labelled_nodes(rng: random.Random, count: int) -> list[ObjectNode]:
    """A random graph whose attributes are mostly ``VARIABLE_VALUE`` with full names of :data:`_FULL_NAMES`, some
    under an optimizer (a node with slot variables), a ``save_counter``, an attribute whose key is the object
    graph's."""
    nodes = _random_nodes(rng, count)
    for node in nodes:
        for i, a in enumerate(node.attributes):
            name = "VARIABLE_VALUE" if rng.random() < 0.8 else a.name
            key = "_CHECKPOINTABLE_OBJECT_GRAPH" if rng.random() < 0.02 else f"k{node.id}/.ATTRIBUTES/{name}"
            node.attributes[i] = Attribute(name, rng.choice(_FULL_NAMES), key, a.optional_restore)
    if count > 2:
        nodes[0].children.append(ChildRef(count - 1, "save_counter"))
    return nodes


def _every_keys_label(data: bytes) -> dict[str, object]:
    """The label of every attribute's key of the graph ``data``, of the object graph's key and of keys none has (20
    of them before the object graph's key: it is not the first)."""
    graph = object_graph_codec.decode_object_graph(data, "x")
    keys = sorted({a.checkpoint_key for i in range(len(graph.nodes)) for a in graph.nodes[i].attributes}
                  | {"_CHECKPOINTABLE_OBJECT_GRAPH", "zz/none"} | {f"A{i}/none" for i in range(20)})
    return dict(object_graph.label_keys(graph, keys))


@pytest.mark.parametrize("run", [None, 7], ids=["one-run", "runs-of-7"])
def test_a_large_graphs_labels_worked_out_on_arrays_are_the_loops(monkeypatch, run) -> None:
    """The labels of a graph in columns, the model's variables found on arrays (``_label_by_columns``: full names
    decoded only where their last two bytes may tell a role), are those the loop over every key gives for the
    same graph decoded small - for random graphs whose full names tell roles, or end like names that do, whose
    nodes are under optimizers or slots, with a key that is the object graph's; the keys in one run, and a few at
    a time."""
    rng = random.Random(3839)
    taken = []
    real = object_graph._label_by_columns

    def spy(*args: object) -> object:
        found = real(*args)  # type: ignore[arg-type]
        taken.append(found is not None)
        return found

    monkeypatch.setattr(object_graph, "_label_by_columns", spy)
    if run is not None:  # the keys a few at a time, the object graph's key in some run but the first
        monkeypatch.setattr(object_graph, "_LABEL_RUN", run)
    roles: set[str] = set()
    for count in (3, 40, 300, 1500):
        for _ in range(6):
            data = encode_object_graph(_labelled_nodes(rng, count), fill_has_values=False)
            with monkeypatch.context() as m:
                m.setattr(object_graph_codec, "SMALL_GRAPH_BYTES", 1 << 30)
                m.setattr(object_graph_table, "SMALL_NODES", 1 << 30)
                small = _every_keys_label(data)
            assert taken.pop() is False
            with monkeypatch.context() as m:
                m.setattr(object_graph_codec, "SMALL_GRAPH_BYTES", -1)
                m.setattr(object_graph_table, "SMALL_NODES", -1)
                large = _every_keys_label(data)
            assert taken.pop() is True
            assert large == small
            roles.update(str(label.role) for label in small.values())
    assert roles >= {"variable", "slot", "optimizer", "save_counter", "object_graph", "other"}


@pytest.mark.parametrize("name,data", GRAPHS, ids=[name for name, _ in GRAPHS])
def test_every_graph_in_the_corpus_decodes_and_walks_the_same(name: str, data: bytes, monkeypatch, walked) -> None:
    from formats.concepts.object_graph_columns import decode_columns

    assert decode_columns(data) is not None  # the columns are taken
    assert _columns(data) == _generic(data, monkeypatch)
    graph = object_graph_codec.decode_object_graph(data, "x")
    _same_as_reference(graph, [graph.nodes[i] for i in range(len(graph.nodes))])


_NAMES = ["a", "b.c", "d/e", "", "ünï", "日本", "x" * 200, "_iterations", "_variables", "iter", "..S", "kernel"]


def _random_nodes(rng: random.Random, count: int) -> list[ObjectNode]:
    nodes = [ObjectNode(i) for i in range(count)]
    for i in range(1, count):  # a tree, then extra edges (aliases, cycles, edges to the root)
        nodes[rng.randrange(i)].children.append(ChildRef(i, rng.choice(_NAMES)))
    for _ in range(count // 4):
        nodes[rng.randrange(count)].children.append(ChildRef(rng.randrange(count), rng.choice(_NAMES)))
    for node in nodes:
        if rng.random() < 0.5:
            name = rng.choice(["VARIABLE_VALUE", "ITERATOR", "ä"])
            node.attributes.append(Attribute(name, rng.choice(["", "net/w", "opt/iter", "Adam/m/w"]),
                                             f"k{node.id}/.ATTRIBUTES/{name}", rng.random() < 0.2))
        if rng.random() < 0.1:
            node.slot_variables.append(SlotVariableRef(rng.randrange(count), rng.choice(_NAMES),
                                                       rng.randrange(count)))
        node.has_checkpoint_values = rng.choice([None, True, False])
    return nodes


def test_random_graphs_decode_and_walk_as_the_oracles_say(monkeypatch, walked) -> None:
    rng = random.Random(3838)
    for count in (1, 2, 3, 5, 40, 300, 1500):
        for _ in range(4):
            nodes = _random_nodes(rng, count)
            data = encode_object_graph(nodes, fill_has_values=False)
            assert _columns(data) == _generic(data, monkeypatch) == [vars_of(n) for n in nodes]
            graph = object_graph_codec.decode_object_graph(data, "x")
            small = walked == "small" and len(data) <= object_graph_codec.SMALL_GRAPH_BYTES
            assert type(graph.nodes).__name__ == ("list" if small else "LazyNodes")
            assert isinstance(graph._table.child_ptr, list) == small  # a small graph walked in plain Python
            _same_as_reference(graph, nodes)
            _same_as_reference(ObjectGraph(nodes), nodes)  # nodes given as objects: the same arrays


def test_a_node_of_2_mib_or_more_is_decoded_into_columns(monkeypatch) -> None:
    """A node whose length takes four bytes (2 MiB or more: the optimizer's of a million slot variables) is decoded
    into columns like any other; it sent the whole graph to the node-by-node decoder (an object per node: 1.7 GB and
    16 s to verify 10^6 tensors)."""
    from formats.concepts.object_graph_columns import decode_columns

    count = 20_000
    nodes = [ObjectNode(0, [ChildRef(1, "model"), ChildRef(2, "optimizer")]), ObjectNode(1, [ChildRef(3, "w")]),
             ObjectNode(2, slot_variables=[SlotVariableRef(3, f"{'s' * 100}{i}", 4 + i) for i in range(count)]),
             ObjectNode(3, attributes=[Attribute("VARIABLE_VALUE", "w", "model/w/.ATTRIBUTES/VARIABLE_VALUE")])]
    nodes += [ObjectNode(4 + i, attributes=[Attribute("VARIABLE_VALUE", f"w/s{i}", f"slot/{i}")]) for i in range(count)]
    data = encode_object_graph(nodes, fill_has_values=False)
    assert 2 ** 21 <= _node_length(data, 2) < 2 ** 28
    assert decode_columns(data) is not None
    assert _columns(data) == _generic(data, monkeypatch) == [vars_of(n) for n in nodes]
    graph = object_graph_codec.decode_object_graph(data, "x")
    last = f"model/w/.OPTIMIZER_SLOT/optimizer/{'s' * 100}{count - 1}"
    assert type(graph.nodes).__name__ == "LazyNodes" and graph.path(4 + count - 1) == last


def _node_length(data: bytes, index: int) -> int:
    """The length of node ``index`` of a serialized graph (its top-level field's varint)."""
    from formats.io.protowire import read_varint

    p = 0
    for _ in range(index):
        length, p = read_varint(data, p + 1, len(data), 10)
        p += length
    return read_varint(data, p + 1, len(data), 10)[0]


def test_damaged_graphs_give_the_generic_decoders_nodes_or_words(monkeypatch) -> None:
    rng = random.Random(38)
    sources = [data for _, data in GRAPHS[:6]] + [encode_object_graph(_random_nodes(rng, 60), False)
                                                  for _ in range(4)]
    for data in sources:
        for _ in range(80):
            damaged = bytearray(data)
            for _ in range(rng.randint(1, 3)):
                damaged[rng.randrange(len(damaged))] = rng.randrange(256)
            if rng.random() < 0.2:
                del damaged[rng.randrange(len(damaged)):]
            assert _columns(bytes(damaged)) == _generic(bytes(damaged), monkeypatch)


def _chain(count: int, name: str = "x") -> list[ObjectNode]:
    return [ObjectNode(i, [ChildRef(i + 1, name)] if i + 1 < count else []) for i in range(count)]


def test_a_graph_too_deep_or_with_paths_too_long_gives_the_first_error_a_walk_meets(monkeypatch, walked) -> None:
    deep = object_graph.MAX_NESTING
    data = encode_object_graph(_chain(deep + 1), False)
    assert object_graph_codec.decode_object_graph(data, "x").path(deep) == "/".join(["x"] * deep)
    too_deep = encode_object_graph(_chain(deep + 2), False)
    with pytest.raises(CorruptCheckpointError, match=f"nests objects more than {deep} deep"):
        object_graph_codec.decode_object_graph(too_deep, "x")
    # the paths' characters (each with a separator): 1+1, 3+1, 5+1, ... - the edge that passes the bound first
    monkeypatch.setattr(object_graph, "MAX_PATH_BYTES", sum(2 * k for k in range(1, deep + 1)))
    object_graph_codec.decode_object_graph(data, "x")  # exactly at the bound: kept
    monkeypatch.setattr(object_graph, "MAX_PATH_BYTES", sum(2 * k for k in range(1, deep + 1)) - 1)
    with pytest.raises(CorruptCheckpointError, match="object paths add up to more than"):
        object_graph_codec.decode_object_graph(data, "x")
    monkeypatch.setattr(object_graph, "MAX_PATH_BYTES", sum(2 * k for k in range(1, deep + 2)))
    with pytest.raises(CorruptCheckpointError, match="nests objects more than"):  # the path of the edge fits
        object_graph_codec.decode_object_graph(too_deep, "x")
    monkeypatch.setattr(object_graph, "MAX_PATH_BYTES", sum(2 * k for k in range(1, deep + 2)) - 1)
    with pytest.raises(CorruptCheckpointError, match="object paths add up"):  # the same edge's path, first
        object_graph_codec.decode_object_graph(too_deep, "x")


def test_a_reference_to_a_missing_node_is_the_first_in_node_order(walked) -> None:
    nodes = [ObjectNode(0, [ChildRef(1, "a")]), ObjectNode(1, [ChildRef(7, "b")], [],
                                                             [SlotVariableRef(9, "m", 0)]),
             ObjectNode(2, [ChildRef(8, "c")])]
    with pytest.raises(CorruptCheckpointError, match="node 1 refers to node 7, but there are 3 nodes"):
        object_graph_codec.decode_object_graph(encode_object_graph(nodes, False), "x")
    nodes[1].children = []
    with pytest.raises(CorruptCheckpointError, match="node 1 refers to node 9, but there are 3 nodes"):
        object_graph_codec.decode_object_graph(encode_object_graph(nodes, False), "x")


def test_a_node_is_built_once_and_only_when_asked_for(monkeypatch) -> None:
    monkeypatch.setattr(object_graph_codec, "SMALL_GRAPH_BYTES", -1)  # decoded into columns
    nodes = _chain(50)
    graph = object_graph_codec.decode_object_graph(encode_object_graph(nodes, False), "x")
    assert graph.path(49) == "/".join(["x"] * 49) and graph.optimizer_of(49) is None
    assert graph.nodes._built == {}  # type: ignore[attr-defined]
    graph.nodes[3].note = "kept"
    assert graph.nodes[3].note == "kept" and graph.nodes[-1].id == 49 and len(graph.nodes[10:13]) == 3


# -- growth: Python calls per tensor ------------------------------------------------------------------------------

SMALL, LARGE = 10_000, 40_000
BUDGET = {"ls --tree": 165, "ls --names": 125}
"""Python calls per tensor from SMALL to LARGE tensors: now 145 and 104; with a node object per graph node and
a walk in Python (main before this work), 201 and 158."""
GRAPH_BUDGET = 8
"""What ``verify`` of an object-based bundle may make per tensor beyond the same tensors name-based: now 2 (the
walk over the graph's nodes); a node object per graph node made 40."""
COMMANDS = {"verify": ["verify", "--jobs", "1"], "ls --tree": ["ls", "--tree"], "ls --names": ["ls", "--names"]}


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    """``{layout: {n: prefix}}``: SMALL and LARGE tensors, name-based and the same converted to object-based."""
    from tests.scale_bundles import name_based, object_based

    folder = tmp_path_factory.mktemp("object-scale")
    name = {n: name_based(folder, n) for n in (SMALL, LARGE)}
    return {"name": name, "object": {n: object_based(p) for n, p in name.items()}}


def _per_tensor(run_cli, args: list[str], prefixes: dict[int, str]) -> float:
    from tests.call_counts import python_calls

    python_calls(run_cli, [*args, prefixes[SMALL]])  # imports, caches: not counted
    small = python_calls(run_cli, [*args, prefixes[SMALL]])
    large = python_calls(run_cli, [*args, prefixes[LARGE]])
    return (large - small) / (LARGE - SMALL)


@pytest.mark.parametrize("command", ["ls --tree", "ls --names"])
def test_object_based_listings_make_a_bounded_number_of_calls_per_tensor(bundles, run_cli, command) -> None:
    per_tensor = _per_tensor(run_cli, COMMANDS[command], bundles["object"])
    assert 0 < per_tensor <= BUDGET[command], f"{command}: {per_tensor:.1f} calls per tensor"


def test_verifying_an_object_graph_costs_a_few_calls_per_tensor(bundles, run_cli) -> None:
    graph = _per_tensor(run_cli, COMMANDS["verify"], bundles["object"]) - \
        _per_tensor(run_cli, COMMANDS["verify"], bundles["name"])
    assert graph <= GRAPH_BUDGET, f"verify: {graph:.1f} calls per tensor for the object graph"
    result = run_cli("verify", bundles["object"][LARGE])
    assert result.exit_code == 0 and f"checked {LARGE + 2} tensors" in result.stdout


def test_node_copies_are_the_callers_and_a_columns_graph_keeps_none(monkeypatch, walked) -> None:
    """What rename and edit rebuild the graph from: every node, new lists, the graph's own nodes not built (a
    graph in columns) and not changed by the caller's changes; a node the graph built and annotated is copied."""
    nodes = _random_nodes(random.Random(5), 200)
    graph = object_graph_codec.decode_object_graph(encode_object_graph(nodes, False), "x")
    copies = graph.node_copies()
    assert [vars_of(n) for n in copies] == [vars_of(n) for n in nodes]
    if walked == "arrays":
        assert graph.nodes._built == {} and graph.nodes._all is None  # type: ignore[attr-defined]
    for copy in copies:
        copy.children.clear()
        copy.attributes.append(Attribute("VARIABLE_VALUE", "", "new", False))
        copy.slot_variables.clear()
    assert [vars_of(graph.nodes[i]) for i in range(len(nodes))] == [vars_of(n) for n in nodes]
    graph.nodes[7].note = "kept"
    assert graph.node_copies()[7].note == "kept" and graph.node_copies()[7] is not graph.nodes[7]


def test_repeated_names_are_decoded_once_and_shared() -> None:
    """Edge names and attribute names repeat (``unit_0``... under every layer, ``VARIABLE_VALUE`` on every
    variable): each distinct one is one string every edge or attribute holding it shares; the names are those the
    generic decoder gives."""
    from formats.concepts.object_graph_columns import decode_columns

    nodes = [ObjectNode(0, [ChildRef(1 + i, f"layer_{i}") for i in range(20)])]
    for i in range(20):
        nodes.append(ObjectNode(1 + i, [ChildRef(21 + 3 * i + j, f"unit_{j}") for j in range(3)]))
    for i in range(60):
        attribute = Attribute("VARIABLE_VALUE", f"v{i}", f"k{i}/.ATTRIBUTES/VARIABLE_VALUE")
        nodes.append(ObjectNode(21 + i, attributes=[attribute]))
    columns = decode_columns(encode_object_graph(nodes))
    names = columns.child_names()
    assert names == [c.local_name for n in nodes for c in n.children]
    assert len({id(n) for n in names}) == len(set(names)) == 23
    attributes = columns.attributes()
    assert [(a.name, a.full_name, a.checkpoint_key) for a in attributes] == \
        [(a.name, a.full_name, a.checkpoint_key) for n in nodes for a in n.attributes]
    assert len({id(a.name) for a in attributes}) == 1


@pytest.mark.parametrize("where", ["child", "attr_name", "attr_full", "attr_key", "slot"])
def test_a_string_that_is_not_utf8_gives_the_generic_decoders_words(monkeypatch, walked, where: str) -> None:
    names = {k: "ZZZZ" if k == where else v for k, v in
             {"child": "lé.yer", "attr_name": "VARIABLE_VALUE", "attr_full": "dense/kernel",
              "attr_key": "lé.yer/.ATTRIBUTES/VARIABLE_VALUE", "slot": "m/ü"}.items()}
    nodes = [ObjectNode(0, [ChildRef(1, names["child"]), ChildRef(2, "opt")]),
             ObjectNode(1, [], [Attribute(names["attr_name"], names["attr_full"], names["attr_key"])]),
             ObjectNode(2, [ChildRef(3, "m")], [], [SlotVariableRef(1, names["slot"], 3)]), ObjectNode(3)]
    data = encode_object_graph(nodes, fill_has_values=False)
    assert _columns(data) == _generic(data, monkeypatch) == [vars_of(n) for n in nodes]
    assert data.count(b"ZZZZ") == 1
    for bad in (b"\xff\xfeZZ", b"Z\xc3ZZ", b"ZZZ\xe2"):  # not UTF-8: a stray byte, a cut sequence at either end
        damaged = data.replace(b"ZZZZ", bad)
        words = _generic(damaged, monkeypatch)
        assert isinstance(words, str) and _columns(damaged) == words


def test_shared_texts_of_more_spans_than_are_made_ints_at_once_are_every_spans_text(monkeypatch):
    """Each span's string, in order, equal strings one object, across runs of spans (here of 7)."""
    import numpy as np

    from formats.concepts import object_graph_columns
    from formats.concepts.object_graph_columns import GraphColumns

    monkeypatch.setattr(object_graph_columns, "_SPANS_AT_ONCE", 7)
    words = [f"unit_{i % 5}" if i % 3 else f"layer_{i}" for i in range(50)] + ["é", ""]
    data = "".join(words).encode()
    ends = np.cumsum([len(w.encode()) for w in words])
    spans = np.stack([ends - [len(w.encode()) for w in words], ends])
    columns = GraphColumns.__new__(GraphColumns)
    columns.data = data
    got = columns.shared_texts(spans)
    assert got == words
    assert len({id(t) for t in got}) == len(set(words))


@pytest.mark.parametrize("seed", range(30))
def test_strings_are_checked_as_decoding_each_of_them_would(seed, monkeypatch) -> None:
    """``_utf8`` finds the bytes beyond ASCII inside strings a chunk at a time, from the strings' ends: whatever the
    chunk size (strings crossing one or several chunks, ending at a chunk's edge, empty), bytes beyond ASCII
    outside every string (a varint's) and groups of spans taking turns, its answer is that of decoding every
    string."""
    import random

    import numpy as np

    rng = random.Random(seed)
    pieces = [b"A", b"\xc3\xa9", b"\xe6\x97\xa5", b"\xff", b"\xc3", b"\x80", b"zz"]
    data, groups = bytearray(), [([], []) for _ in range(rng.randrange(1, 6))]
    for _ in range(rng.randrange(0, 60)):
        data += bytes(rng.choice([0x08, 0x80, 0xff, 0x12]) for _ in range(rng.randrange(0, 4)))  # outside strings
        start = len(data)
        data += b"".join(rng.choice(pieces[:3] if rng.random() < 0.8 else pieces) for _ in range(rng.randrange(5)))
        starts, stops = rng.choice(groups)
        starts.append(start)
        stops.append(len(data))
    spans = [np.array([starts, stops], dtype=np.int64).reshape(2, len(starts)) for starts, stops in groups]

    def valid(raw: bytes) -> bool:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return True

    expected = all(valid(bytes(data[a:b])) for starts, stops in groups for a, b in zip(starts, stops))
    for chunk in (1, 2, 3, 7, 64, 1 << 20):
        monkeypatch.setattr(object_graph_columns, "_CHUNK", chunk)
        raw = bytes(data)
        assert object_graph_columns._utf8(np, object_graph_columns._Bytes(np, raw), raw, spans) == expected, chunk


def _found_by_reference(attributes: list[Attribute], keys: list[str]) -> dict[str, int]:
    """Each key's attribute position as TensorFlow's loader finds it: the last attribute whose checkpoint key is the
    key, else the attribute with the longest checkpoint key under the same ``<path>/.ATTRIBUTES/`` that the key
    extends (an object saved through ``_serialize_to_tensors``)."""
    marker = "/.ATTRIBUTES/"
    out: dict[str, int] = {}
    for key in keys:
        exact = [k for k, a in enumerate(attributes) if a.checkpoint_key == key]
        if exact:
            out[key] = exact[-1]
            continue
        if marker not in key:
            continue
        base = key[:key.find(marker) + len(marker)]
        longer = [(len(a.checkpoint_key), k) for k, a in enumerate(attributes)
                  if a.checkpoint_key.startswith(base) and len(a.checkpoint_key) < len(key)
                  and key.startswith(a.checkpoint_key)]
        if longer:
            best = max(n for n, _ in longer)
            out[key] = [k for n, k in longer if n == best][-1]
    return out


def test_keys_are_found_among_attributes_decoded_a_run_at_a_time(walked) -> None:
    """Stored keys are matched with the attributes' checkpoint keys however these are held (a small graph's
    strings, a large one's decoded a run at a time, runs of 2 under ``runs``): exact keys, a key two attributes
    share (the last wins), keys that extend an attribute's (an iterator's ``ITERATOR_STATE``), keys with none; each
    found key's attribute then holds the caller's very string."""
    def attr(key: str) -> Attribute:
        return Attribute("VARIABLE_VALUE", key.split("/.")[0], key)

    nodes = [ObjectNode(0, [ChildRef(i, f"n{i}") for i in range(1, 7)]),
             ObjectNode(1, attributes=[attr("n1/.ATTRIBUTES/VARIABLE_VALUE")]),
             ObjectNode(2, attributes=[attr("shared/.ATTRIBUTES/VARIABLE_VALUE")]),
             ObjectNode(3, attributes=[attr("shared/.ATTRIBUTES/VARIABLE_VALUE"), attr("n3/.ATTRIBUTES/x")]),
             ObjectNode(4, attributes=[Attribute("ITERATOR", "", "it/.ATTRIBUTES/ITERATOR"),
                                       Attribute("ITERATOR_STATE", "", "it/.ATTRIBUTES/ITERATOR_STATE")]),
             ObjectNode(5, attributes=[Attribute("table", "", "tab/.ATTRIBUTES/table")]),
             ObjectNode(6, attributes=[attr("z/.ATTRIBUTES/VARIABLE_VALUE")])]
    graph = object_graph_codec.decode_object_graph(encode_object_graph(nodes))
    assert isinstance(graph.table, object_graph_columns.GraphColumns) == (walked != "small")
    keys = sorted("".join(parts) for parts in [  # (strings made here: not the graph's)
        ("n1/.ATTRIBUTES/", "VARIABLE_VALUE"), ("shared/.ATTRIBUTES/", "VARIABLE_VALUE"), ("n3/.ATTRIBUTES/", "x"),
        ("it/.ATTRIBUTES/", "ITERATOR_STATE_1"), ("it/.ATTRIBUTES/", "ITERATOR_2"), ("tab/.ATTRIBUTES/", "table-keys"),
        ("z/.ATTRIBUTES/", "VARIABLE_VALUE"), ("no/.ATTRIBUTES/", "VARIABLE_VALUE"), ("n1/", "kernel")])
    attributes = [a for n in nodes for a in n.attributes]
    want = _found_by_reference(attributes, keys)
    assert want["shared/.ATTRIBUTES/VARIABLE_VALUE"] == 2 and want["it/.ATTRIBUTES/ITERATOR_STATE_1"] == 5 \
        and want["it/.ATTRIBUTES/ITERATOR_2"] == 4  # (the longest it extends)
    found, rows = graph.key_attributes(keys)
    assert dict(found.items()) == want and len(found) == len(want) == 7
    assert [rows[k].checkpoint_key for k in range(len(attributes))] == [a.checkpoint_key for a in attributes]
    for key, k in want.items():  # a columns graph's attribute of an exact key holds the caller's string (no copy)
        if attributes[k].checkpoint_key == key and walked != "small":
            assert rows[k].checkpoint_key is keys[keys.index(key)]
