"""TensorFlow writes object graphs with awkward attribute names; ckpt decodes them as TF itself does."""
from __future__ import annotations

import os

import pytest

from formats import open_checkpoint
from formats.concepts.object_graph import attribute_key, split_path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

pytestmark = pytest.mark.interop

NAMES = ["a/b", "c.d", "..", ".S", "ünï/cødé.ß", "x.Sy", "plain"]


def _write(tmp_path) -> str:
    module = tf.Module()
    for i, name in enumerate(NAMES):
        setattr(module, name, tf.Variable(float(i)))
    inner = tf.Module()
    setattr(inner, "w/.", module.plain)  # shared with a second, escaped path
    ckpt = tf.train.Checkpoint(mod=module, inner=inner)
    return ckpt.write(str(tmp_path / "ckpt"))


def test_awkward_names_decode_like_tensorflow(tmp_path) -> None:
    prefix = _write(tmp_path)
    reader = tf.train.load_checkpoint(prefix)
    from tensorflow.core.protobuf.trackable_object_graph_pb2 import TrackableObjectGraph

    proto = TrackableObjectGraph()  # TensorFlow's own message, parsed by TensorFlow's protobuf
    proto.ParseFromString(reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))
    tf_keys = set(reader.get_variable_to_shape_map())
    with open_checkpoint(prefix) as ckpt:
        graph = ckpt.object_graph
        assert len(graph.nodes) == len(proto.nodes)
        for ours, theirs in zip(graph.nodes, proto.nodes):
            assert [(c.node_id, c.local_name) for c in ours.children] == [
                (c.node_id, c.local_name) for c in theirs.children]
            assert [(a.name, a.full_name, a.checkpoint_key) for a in ours.attributes] == [
                (a.name, a.full_name, a.checkpoint_key) for a in theirs.attributes]
            for attr in ours.attributes:
                assert attribute_key(graph.path(ours.id), attr.name) == attr.checkpoint_key
                assert attr.checkpoint_key in tf_keys
                assert ckpt[attr.checkpoint_key].name == attr.full_name
        assert set(ckpt) == tf_keys
        assert [c.local_name for c in graph.root.children] == ["inner", "mod"]  # TF sorts dependencies
        paths = {graph.path(i): i for i in range(len(graph.nodes))}
        # breadth first, first path wins: the shared variable is inner/"w/." and mod/plain is its alias
        shared = paths["inner/w.S.."]
        assert graph.aliases(shared) == ["mod/plain"] and split_path("inner/w.S..") == ["inner", "w/."]
        assert {split_path(p)[-1] for p in paths if p.startswith("mod/")} == set(NAMES) - {"plain"}
