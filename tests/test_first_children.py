"""Issue 38: every command that labels an object-based checkpoint's keys asks the root for its children (the save
counter among them). Of a graph in columns, :meth:`ObjectGraph.first_children` of one node decodes that node's
edge names alone, not every edge's (at 10^6 variables two million names decoded and escaped for a few): the same
answer as :meth:`first_children_reader`, which decodes them all for a walk over many nodes."""
from __future__ import annotations

import random

import pytest

from formats.concepts import object_graph
from formats.concepts.object_graph import Attribute, ChildRef, ObjectGraph, ObjectNode
from formats.concepts.object_graph_codec import encode_object_graph
from formats.concepts.object_graph_columns import decode_columns

V = "VARIABLE_VALUE"


def _in_columns(nodes: list[ObjectNode]) -> ObjectGraph:
    columns = decode_columns(encode_object_graph(nodes))
    assert columns is not None
    return ObjectGraph.from_columns(columns)


def _graph(seed: int) -> list[ObjectNode]:
    """A random graph: a tree of names with dots, slashes and UTF-8, aliases (a second edge to a node, under its
    own name or the first edge's), edges to the root, and an object no edge reaches."""
    rng = random.Random(seed)
    count = rng.randrange(3, 60)
    kids: list[list[ChildRef]] = [[] for _ in range(count)]
    names = ["a", "b.c", "d/e", "zé", "save_counter", "x", "x"]
    for child in range(1, count - 1):
        kids[rng.randrange(child)].append(ChildRef(child, rng.choice(names) + str(child % 3)))
    for _ in range(rng.randrange(6)):  # aliases
        parent, child = rng.randrange(count - 1), rng.randrange(1, count - 1)
        same = [ref.local_name for refs in kids for ref in refs if ref.node_id == child]
        kids[parent].append(ChildRef(child, rng.choice([*same, "alias"])))
    if rng.random() < 0.3:
        kids[1 if count > 2 else 0].append(ChildRef(0, "up"))
    return [ObjectNode(i, kids[i], [Attribute(V, f"n{i}", f"k{i}/.ATTRIBUTES/{V}")] if i % 2 else [])
            for i in range(count)]


@pytest.mark.parametrize("seed", range(40))
def test_one_nodes_first_children_are_the_readers(seed: int) -> None:
    nodes = _graph(seed)
    fresh = _in_columns(nodes)
    answers = [fresh.first_children(i) for i in range(len(nodes))]
    assert fresh._stored_names is None  # (no name decoded but the asked nodes')
    reader = _in_columns(nodes).first_children_reader()
    assert answers == [reader(i) for i in range(len(nodes))]


def test_the_root_of_a_large_graph_is_answered_without_every_name(monkeypatch: pytest.MonkeyPatch) -> None:
    nodes = [ObjectNode(0, [ChildRef(1, "model"), ChildRef(2, "save_counter"), ChildRef(3, "optimizer")]),
             ObjectNode(1, [ChildRef(4 + i, f"layer.{i}") for i in range(3000)]),
             ObjectNode(2, attributes=[Attribute(V, "save_counter", f"save_counter/.ATTRIBUTES/{V}")]),
             ObjectNode(3)] + [ObjectNode(4 + i) for i in range(3000)]
    graph = _in_columns(nodes)
    assert graph.first_children(0) == [(1, "model"), (2, "save_counter"), (3, "optimizer")]
    assert graph._stored_names is None
    monkeypatch.setattr(object_graph, "_FEW_CHILDREN", 100)  # a node of many children: all names decoded at once
    assert graph.first_children(1) == [(4 + i, f"layer.{i}") for i in range(3000)]
    assert graph._stored_names is not None
    assert graph.first_children(0) == [(1, "model"), (2, "save_counter"), (3, "optimizer")]


@pytest.mark.parametrize("seed", range(40))
def test_one_nodes_parent_is_the_lists(seed: int) -> None:
    """:meth:`ObjectGraph.parent` of a node asked alone is what it is once every name is decoded, for every node,
    the root, an unreachable object and ids past the graph."""
    nodes = _graph(seed)
    fresh, listed = _in_columns(nodes), _in_columns(nodes)
    listed._lists()
    asked = [*range(-1, len(nodes) + 2), "1"]
    assert [fresh.parent(i) for i in asked] == [listed.parent(i) for i in asked]  # type: ignore[arg-type]
    assert fresh._stored_names is None


def test_parent_decodes_every_name_after_a_few_asks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(object_graph, "_FEW_ASKED", 3)
    nodes = _graph(7)
    graph = _in_columns(nodes)
    answers = [graph.parent(i) for i in range(len(nodes))]
    assert graph._stored_names is not None  # (past three: every name at once)
    listed = _in_columns(nodes)
    listed._lists()
    assert answers == [listed.parent(i) for i in range(len(nodes))]


def test_labelling_keys_decodes_no_name(tmp_path: object) -> None:
    """The roles of an object-based bundle's keys (the save counter's found by its parent edge) with no edge name
    decoded: at 10^6 variables, two million names."""
    from pathlib import Path

    from formats.concepts import object_graph_columns
    from formats.tf_bundle.checkpoint import BundleCheckpoint
    from tests.scale_bundles import name_based, object_based

    prefix = object_based(name_based(Path(str(tmp_path)), 2_000))
    decoded = []
    original = object_graph_columns.GraphColumns.child_names
    try:
        object_graph_columns.GraphColumns.child_names = (  # type: ignore[method-assign]
            lambda self: decoded.append(1) or original(self))
        ckpt = BundleCheckpoint(prefix)
        roles = {str(entry.role.value) for entry in ckpt.entries_by_batch(list(ckpt))}
    finally:
        object_graph_columns.GraphColumns.child_names = original  # type: ignore[method-assign]
    assert roles == {"object_graph", "save_counter", "variable"}
    assert decoded == []
