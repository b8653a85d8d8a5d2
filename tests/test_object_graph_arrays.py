"""``encode_graph_arrays`` writes a graph held as arrays with numpy, no Python step a node: it must write byte for byte
what ``encode_object_graph`` (TensorFlow's layout, tested against protobuf itself) writes of the same nodes - ids and
lengths of every varint size, empty and non-ASCII strings, optional restores, slot references, nodes with and
without values - in batches of nodes and of string bytes of any size, with strings taken from a buffer's spans,
joined from Python strings, or given one by one."""
from __future__ import annotations

import random

import numpy as np
import pytest

from formats.concepts import object_graph_arrays
from formats.concepts.object_graph import Attribute, ChildRef, ObjectNode, SlotVariableRef
from formats.concepts.object_graph_arrays import GraphArrays, TextColumn, encode_graph_arrays
from formats.concepts.object_graph_codec import encode_object_graph

NAMES = ["", "a", "kernel", "layer_with_a_long_name" * 7, "ünïcödé", "日本", "x" * 200, ".ATTRIBUTES", "a/b"]
LONG = ["y" * 127, "y" * 128, "z" * 16383, "z" * 16384]  # (one- to three-byte lengths)


def _nodes(rng: random.Random, count: int) -> list[ObjectNode]:
    def name() -> str:
        if rng.random() < 0.02:
            return rng.choice(LONG)
        return rng.choice(NAMES) if rng.random() < 0.7 else "".join(rng.choice("ab/é.") for _ in range(rng.randrange(9)))

    def some_id() -> int:  # (a node of the graph: the node-by-node encoder writes an id past them in three bytes)
        return rng.choice([0, count - 1, count // 2, rng.randrange(count)])

    nodes = []
    for i in range(count):
        children = [ChildRef(some_id(), name()) for _ in range(rng.choice([0, 0, 1, 2, 5]))]
        attributes = [Attribute(name(), name(), name(), rng.random() < 0.3) for _ in range(rng.choice([0, 0, 1, 3]))]
        slots = [SlotVariableRef(some_id(), name(), some_id()) for _ in range(rng.choice([0, 0, 0, 2]))]
        nodes.append(ObjectNode(i, children, attributes, slots))
    return nodes


def _arrays(nodes: list[ObjectNode], valued: bytes, how: str, index: type = np.int64) -> GraphArrays:
    """The nodes as arrays, their strings as ``how`` says: ``joined`` (of_strings), ``spans`` (of_spans of a buffer
    holding them in another order, between other bytes) or ``extra`` (spans, every third string given alone);
    positions, ids and spans as ``index`` (int32: as a decoded graph's columns hold them, widened a batch at a
    time)."""
    def ptr(lists: list[list]) -> np.ndarray:
        return np.concatenate(([0], np.cumsum([len(x) for x in lists]))).astype(index)

    def texts(strings: list[str]) -> TextColumn:
        if how == "joined":
            column = TextColumn.of_strings(strings)
            assert column is not None
            return column
        raw = [s.encode() for s in strings]
        order = list(range(len(raw)))
        random.Random(len(raw)).shuffle(order)
        extra = {i: raw[i] for i in range(0, len(raw), 3)} if how == "extra" else {}
        stored = [b"not this one" + r if i in extra else r for i, r in enumerate(raw)]  # (extra's win)
        buffer, where = bytearray(b"\x80junk"), {}
        for i in order:
            where[i] = len(buffer)
            buffer += stored[i] + b"\xff"
        spans = np.array([[where[i] for i in range(len(raw))], [where[i] + len(stored[i]) for i in range(len(raw))]],
                         dtype=index).reshape(2, len(raw))
        return TextColumn.of_spans(bytes(buffer), spans, extra=extra)

    children = [c for n in nodes for c in n.children]
    attributes = [a for n in nodes for a in n.attributes]
    slots = [s for n in nodes for s in n.slot_variables]
    return GraphArrays(
        ptr([n.children for n in nodes]), np.array([c.node_id for c in children], index),
        texts([c.local_name for c in children]), ptr([n.attributes for n in nodes]),
        texts([a.name for a in attributes]), texts([a.full_name for a in attributes]),
        texts([a.checkpoint_key for a in attributes]), np.array([a.optional_restore for a in attributes], bool),
        ptr([n.slot_variables for n in nodes]), np.array([s.original_variable_node_id for s in slots], index),
        texts([s.slot_name for s in slots]), np.array([s.slot_variable_node_id for s in slots], index), valued)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("how", ["joined", "spans", "extra"])
@pytest.mark.parametrize("index", [np.int64, np.int32], ids=["int64", "int32"])
def test_a_graph_written_from_arrays_is_the_one_written_node_by_node(seed, how, index, monkeypatch):
    rng = random.Random(seed)
    nodes = _nodes(rng, {0: 0, 1: 20_000}.get(seed, rng.choice([1, 7, 60, 300])))  # (20,000: ids of three bytes)
    valued = bytes(rng.random() < 0.5 for _ in nodes)
    want = encode_object_graph(nodes, valued={i for i, v in enumerate(valued) if v})
    monkeypatch.setattr(object_graph_arrays, "NODES_AT_ONCE", rng.choice([1, 3, 64, 1 << 14]))
    monkeypatch.setattr(object_graph_arrays, "COPY_BYTES", rng.choice([1, 7, 100, 1 << 18]))
    assert encode_graph_arrays(_arrays(nodes, valued, how, index)) == want


def test_an_id_past_five_varint_bytes_or_negative_is_left_to_the_node_by_node_encoder():
    for bad in (1 << 35, -1):
        nodes = [ObjectNode(0, [ChildRef(bad, "x")])]
        assert encode_graph_arrays(_arrays(nodes, b"\x00", "joined")) is None
    nodes = [ObjectNode(0, slot_variables=[SlotVariableRef(1, "m", -5)])]
    assert encode_graph_arrays(_arrays(nodes, b"\x01", "joined")) is None


def test_strings_not_utf8_are_not_joined():
    assert TextColumn.of_strings(["ok", "\udcff"]) is None
    column = TextColumn.of_strings(["", "é", "abc", "d"])
    assert column is not None and column.lengths.tolist() == [0, 2, 3, 1]
    part = column.part(1, 4)  # (a part's strings encoded into a buffer of their own)
    assert part.buffer.tobytes() == "éabcd".encode() and part.starts.tolist() == [0, 2, 5]
    assert part.lengths.tolist() == [2, 3, 1] and column.part(2, 2).buffer.tobytes() == b""


def test_every_varint_is_protobufs():
    """Ids and lengths of one to five bytes (a graph with ids past 2**21 would hold millions of nodes)."""
    from formats.io.protowire import encode_varint

    values = sorted({0, 1, 127, 128, 255, 16383, 16384, (1 << 21) - 1, 1 << 21, (1 << 28) - 1, 1 << 28,
                     (1 << 35) - 1} | {random.Random(v).randrange(1 << 35) for v in range(200)})
    sizes = [len(encode_varint(v)) for v in values]
    out = np.zeros(sum(sizes), np.uint8)
    places = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    after = object_graph_arrays._varint(np, out, places, np.array(values, np.int64))
    assert out.tobytes() == b"".join(map(encode_varint, values))
    assert after.tolist() == (places + np.array(sizes)).tolist()
