"""The object graph's fast decoder (:mod:`formats.concepts.object_graph_wire`) against the generic one
(:func:`formats.concepts.proto.messages.decode`, itself checked against protobuf in ``test_wire.py``): the same
nodes for every object-based checkpoint TensorFlow wrote in the corpus, and for damaged graphs either the same
nodes or the generic decoder's answer (it falls back), never a different graph."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from formats.concepts import object_graph_codec
from formats.core.errors import CorruptCheckpointError
from formats.core.model import OBJECT_GRAPH_KEY
from formats.tf_bundle.checkpoint import open_bundle

CORPUS = Path(__file__).parent / "data"


def _graph_bytes() -> list[tuple[str, bytes]]:
    found = []
    for index in sorted(CORPUS.rglob("*.index")):
        try:
            ckpt = open_bundle(str(index)[:-len(".index")])
        except Exception:  # not a bundle this test needs (damaged on purpose, variables of a SavedModel...)
            continue
        if OBJECT_GRAPH_KEY in ckpt:
            found.append((str(index.relative_to(CORPUS)), bytes(ckpt[OBJECT_GRAPH_KEY].read().item())))
        ckpt.close()
    return found


GRAPHS = _graph_bytes()


@pytest.fixture(autouse=True)
def _node_by_node(monkeypatch: pytest.MonkeyPatch) -> None:
    """This module checks the node-by-node decoder: the columns (tests/test_object_graph_columns.py) are set aside."""
    monkeypatch.setattr(object_graph_codec, "_columns_graph", lambda view, source: None)


def generic_nodes(data: bytes, monkeypatch: pytest.MonkeyPatch) -> object:
    """What the generic decoder alone gives (the columns' and the node-by-node decoders switched off): the nodes
    as :func:`vars_of` tuples, or the error's words."""
    with monkeypatch.context() as m:
        m.setattr(object_graph_codec, "_columns_graph", lambda view, source: None)
        m.setattr(object_graph_codec, "_fast_graph", lambda view, source: None)
        return decoded_nodes(data)


def decoded_nodes(data: bytes) -> object:
    """What ``decode_object_graph`` gives: the nodes as :func:`vars_of` tuples, or the error's words."""
    try:
        return [vars_of(n) for n in object_graph_codec.decode_object_graph(data, "x").nodes]
    except CorruptCheckpointError as exc:
        return exc.message




def vars_of(node: object) -> tuple[object, ...]:
    return (node.id, node.children, node.attributes, node.slot_variables, node.registered_saver,  # type: ignore[attr-defined]
            node.has_checkpoint_values)  # type: ignore[attr-defined]


def test_the_corpus_holds_object_graphs() -> None:
    assert len(GRAPHS) >= 10, [name for name, _ in GRAPHS]


@pytest.mark.parametrize("name,data", GRAPHS, ids=[name for name, _ in GRAPHS])
def test_every_graph_tensorflow_wrote_decodes_the_same(name: str, data: bytes, monkeypatch) -> None:
    from formats.concepts.object_graph_wire import node_spans

    assert node_spans(memoryview(data)) is not None  # the fast path is taken
    assert decoded_nodes(data) == generic_nodes(data, monkeypatch)


def test_damaged_graphs_decode_as_the_generic_decoder_says(monkeypatch) -> None:
    rng = random.Random(38)
    for _, data in GRAPHS[:6]:
        for _ in range(60):
            damaged = bytearray(data)
            for _ in range(rng.randint(1, 3)):
                damaged[rng.randrange(len(damaged))] = rng.randrange(256)
            assert decoded_nodes(bytes(damaged)) == generic_nodes(bytes(damaged), monkeypatch)


def test_a_node_with_a_registered_saver_or_unknown_field_falls_back(monkeypatch) -> None:
    from formats.concepts.object_graph_wire import fast_node

    child = b"\x0a\x05\x08\x01\x12\x01a"  # children { node_id: 1 local_name: "a" }
    assert fast_node(0, child, 0, len(child)).children[0].local_name == "a"
    saver = b"\x22\x04\x0a\x02ab"  # registered_saver { name: "ab" }
    assert fast_node(0, saver, 0, len(saver)) is None
    graph = b"\x0a" + bytes([len(child + saver)]) + child + saver + b"\x0a\x00"
    assert decoded_nodes(graph) == generic_nodes(graph, monkeypatch)
    assert decoded_nodes(graph)[0][4].name == "ab"  # type: ignore[index]
