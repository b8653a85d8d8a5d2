"""The bounds issue 14 put on hostile files leave what TensorFlow writes alone: keys that share long
prefixes (SSTable key widening), an object graph of thousands of small objects (items per byte), objects
nested deep (MAX_NESTING) and a wide string tensor (fixed-width .npy allowance) - read as TensorFlow reads them."""
from __future__ import annotations

import os

import numpy as np
import pytest

import formats
from formats.concepts.object_graph import MAX_NESTING
from formats.ops.inspect.extract import extract
from formats.ops.inspect.tree import build_tree

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

pytestmark = pytest.mark.interop


def test_long_shared_prefixes_within_the_key_widening_bound(tmp_path):
    base = "scope/" * 300  # 1,800-byte names differing in their last characters: prefix compression at its best
    names = [f"{base}v{i:04d}" for i in range(600)]
    with tf.Graph().as_default():
        variables = [tf.compat.v1.get_variable(n, shape=[1], initializer=tf.compat.v1.constant_initializer(i))
                     for i, n in enumerate(names)]
        saver = tf.compat.v1.train.Saver(variables)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            prefix = saver.save(sess, str(tmp_path / "model.ckpt"))
    reader = tf.train.load_checkpoint(prefix)
    with formats.open_checkpoint(prefix) as ckpt:
        assert sorted(ckpt) == sorted(reader.get_variable_to_shape_map())
        assert ckpt[names[123]].read().tolist() == reader.get_tensor(names[123]).tolist() == [123.0]


def test_thousands_of_small_objects(tmp_path):
    root = tf.Module()
    root.items = [tf.Module() for _ in range(20_000)]  # empty objects named "0".."19999": a few bytes each
    root.w = tf.Variable([1.0, 2.0])
    prefix = tf.train.Checkpoint(root=root).write(str(tmp_path / "ckpt"))
    with formats.open_checkpoint(prefix) as ckpt:
        graph = ckpt.object_graph
        assert len(graph) >= 20_000
        assert ckpt["w/.ATTRIBUTES/VARIABLE_VALUE"].name == "Variable"  # Checkpoint(root=...) is the root itself


def test_objects_nested_as_deep_as_allowed(tmp_path):
    top = node = tf.Module()
    for _ in range(MAX_NESTING - 2):  # checkpoint -> top -> ... : the variable MAX_NESTING below the root
        node.child = tf.Module()
        node = node.child
    node.v = tf.Variable(3.0)
    prefix = tf.train.Checkpoint(top=top).write(str(tmp_path / "ckpt"))
    key = "top/" + "child/" * (MAX_NESTING - 2) + "v/.ATTRIBUTES/VARIABLE_VALUE"
    assert key in tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
    with formats.open_checkpoint(prefix) as ckpt:
        assert ckpt[key].read() == 3.0
        assert build_tree(ckpt).root.tensors == 2


def test_a_vocabulary_with_one_long_entry_is_written_fixed_width(tmp_path):
    words = [b"w%05d" % i for i in range(50_000)] + [b"x" * 1000]  # 50 MB as S1000: the allowance covers it
    prefix = tf.train.Checkpoint(vocab=tf.Variable(words)).write(str(tmp_path / "ckpt"))
    with formats.open_checkpoint(prefix) as ckpt:
        report = extract(ckpt, ["vocab/*"], tmp_path / "vocab.npy")
    assert report.verified and report.contents[0].stored_dtype == "|S1000"
    assert np.load(tmp_path / "vocab.npy").tolist() == words
