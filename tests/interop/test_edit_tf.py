"""TensorFlow restores what `ckpt average` and `ckpt edit` write into the program that wrote the inputs.

The program is the guide's training loop (``Net`` with ``Dense(5)``, the legacy Keras Adam, a dataset
iterator, ``CheckpointManager(max_to_keep=3)``), run here once for the whole module.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("tf_keras")
ml_dtypes = pytest.importorskip("ml_dtypes")

pytestmark = pytest.mark.interop
GRAPH = "_CHECKPOINTABLE_OBJECT_GRAPH"


class Net(keras.Model):
    """The guide's model."""

    def __init__(self):
        super().__init__()
        self.l1 = keras.layers.Dense(5)

    def call(self, x):
        return self.l1(x)


def toy_dataset():
    inputs = tf.range(10.)[:, None]
    labels = inputs * 5. + tf.range(5.)[None, :]
    return tf.data.Dataset.from_tensor_slices(dict(x=inputs, y=labels)).repeat().batch(2)


def program(with_optimizer: bool = True):
    """The objects the training program checkpoints, built (optimizer slots created) but not trained."""
    net = Net()
    net(tf.zeros((1, 1)))
    opt = keras.optimizers.legacy.Adam(0.1)
    if with_optimizer:
        opt.apply_gradients(zip([tf.zeros_like(v) for v in net.trainable_variables], net.trainable_variables))
    iterator = iter(toy_dataset())
    ckpt = tf.train.Checkpoint(step=tf.Variable(1), optimizer=opt, net=net, iterator=iterator)
    return ckpt


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The guide's loop: 50 steps, a checkpoint every 10, the last three kept (ckpt-3, ckpt-4, ckpt-5)."""
    folder = tmp_path_factory.mktemp("guide") / "tf_ckpts"
    tf.random.set_seed(1)
    ckpt = program(with_optimizer=False)
    net, opt, iterator = ckpt.net, ckpt.optimizer, ckpt.iterator
    manager = tf.train.CheckpointManager(ckpt, str(folder), max_to_keep=3)
    for _ in range(50):
        example = next(iterator)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.abs(net(example["x"]) - example["y"]))
        grads = tape.gradient(loss, net.trainable_variables)
        opt.apply_gradients(zip(grads, net.trainable_variables))
        ckpt.step.assign_add(1)
        if int(ckpt.step) % 10 == 0:
            manager.save()
    assert [os.path.basename(p) for p in manager.checkpoints] == ["ckpt-3", "ckpt-4", "ckpt-5"]
    return folder


def variables(path) -> dict[str, np.ndarray]:
    """Every tensor TensorFlow reads from ``path`` (the iterator's variant state aside)."""
    reader = tf.train.load_checkpoint(str(path))
    dtypes = reader.get_variable_to_dtype_map()
    return {k: reader.get_tensor(k) for k in reader.get_variable_to_shape_map() if dtypes[k] != tf.variant}


def data_bytes(path) -> int:
    folder, name = os.path.split(str(path))
    return sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder) if f.startswith(name + ".data-"))


def stored_string(n: int) -> int:
    """Bytes a scalar string of ``n`` bytes takes in a data file: varint length, masked CRC, the bytes."""
    return n + max(1, (n.bit_length() + 6) // 7) + 4


def test_average_of_three_checkpoints_restores_with_the_mean_and_the_newest_counters(run, tmp_path, run_cli):
    out = tmp_path / "avg" / "ckpt-5"
    result = run_cli("average", run, "--last", "3", "-o", out)
    assert result.exit_code == 0, result.output
    inputs = [variables(run / f"ckpt-{i}") for i in (3, 4, 5)]
    restored = program()
    restored.restore(str(out)).assert_consumed()
    for name, var in (("kernel", restored.net.l1.kernel), ("bias", restored.net.l1.bias)):
        key = f"net/l1/{name}/.ATTRIBUTES/VARIABLE_VALUE"
        stack = np.stack([v[key] for v in inputs])
        np.testing.assert_array_equal(var.numpy(), stack.astype(np.float64).mean(axis=0).astype(np.float32))
        np.testing.assert_allclose(var.numpy(), stack.mean(axis=0), rtol=2.0 ** -23, atol=0)  # float32 rounding
        slot = restored.optimizer.get_slot(var, "m").numpy()
        np.testing.assert_array_equal(slot, inputs[2][f"net/l1/{name}/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/"
                                                     "VARIABLE_VALUE"])
    assert int(restored.step) == int(inputs[2]["step/.ATTRIBUTES/VARIABLE_VALUE"]) == 50
    assert int(restored.save_counter) == 5
    assert int(restored.optimizer.iterations) == int(inputs[2]["optimizer/iter/.ATTRIBUTES/VARIABLE_VALUE"]) == 49
    newest = program()
    newest.restore(str(run / "ckpt-5")).assert_consumed()
    np.testing.assert_array_equal(next(restored.iterator)["x"], next(newest.iterator)["x"])


def test_drop_optimizer_restores_the_net_alone_and_is_smaller_by_the_optimizer(run, tmp_path, run_cli):
    src, out = run / "ckpt-5", tmp_path / "model" / "ckpt-5"
    assert run_cli("edit", src, "-o", out, "--drop-optimizer").exit_code == 0
    net = Net()
    net(tf.zeros((1, 1)))
    tf.train.Checkpoint(net=net).restore(str(out)).assert_existing_objects_matched()
    source = variables(src)
    np.testing.assert_array_equal(net.l1.kernel.numpy(), source["net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE"])
    np.testing.assert_array_equal(net.l1.bias.numpy(), source["net/l1/bias/.ATTRIBUTES/VARIABLE_VALUE"])
    written = variables(out)
    assert not [k for k in written if k.startswith("optimizer/") or ".OPTIMIZER_SLOT" in k]
    from tensorflow.core.protobuf import trackable_object_graph_pb2

    graph = trackable_object_graph_pb2.TrackableObjectGraph.FromString(written[GRAPH])
    assert not any(node.slot_variables for node in graph.nodes)
    assert [c.local_name for c in graph.nodes[0].children] == ["iterator", "net", "step", "save_counter"]
    dtypes = tf.train.load_checkpoint(str(src)).get_variable_to_dtype_map()
    dropped = sum(source[k].nbytes for k in source if k not in written)
    slots = sum(source[k].nbytes for k in source if ".OPTIMIZER_SLOT" in k)
    assert slots == 4 * 5 * 4 and dropped == slots + 4 * 4 + 8  # m and v of kernel and bias; 4 hyperparameters, iter
    assert all(dtypes[k] in (tf.float32, tf.int64) for k in source if k not in written)
    assert data_bytes(src) - data_bytes(out) == dropped + stored_string(len(source[GRAPH])) - \
        stored_string(len(written[GRAPH]))


@pytest.mark.parametrize("args", [["--select", "net/*"],
                                  ["--exclude", "optimizer/*", "--exclude", "*/.OPTIMIZER_SLOT/*",
                                   "--exclude", "iterator/*", "--exclude", "step/*"]])
def test_a_subset_restores_into_a_program_that_only_has_the_net(run, tmp_path, run_cli, args):
    src, out = run / "ckpt-5", tmp_path / "net" / "ckpt-5"
    assert run_cli("edit", src, "-o", out, *args).exit_code == 0
    net = Net()
    net(tf.zeros((1, 1)))
    status = tf.train.Checkpoint(net=net).restore(str(out))
    status.assert_existing_objects_matched()
    if "--exclude" in args:
        status.assert_consumed()  # nothing else is left in the checkpoint
    source = variables(src)
    np.testing.assert_array_equal(net.l1.kernel.numpy(), source["net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE"])
    assert sorted(k.split("/")[0] for k in variables(out) if k != GRAPH) == sorted(
        ["net"] * (6 if "--select" in args else 2) + ["save_counter"])


def test_cast_to_bfloat16_and_back_is_ml_dtypes_round_trip(run, tmp_path, run_cli):
    src, bf16, back = run / "ckpt-5", tmp_path / "bf16" / "ckpt-5", tmp_path / "back" / "ckpt-5"
    assert run_cli("edit", src, "-o", bf16, "--cast", "float32=bfloat16").exit_code == 0
    assert run_cli("edit", bf16, "-o", back, "--cast", "bfloat16=float32").exit_code == 0
    source, half = variables(src), tf.train.load_checkpoint(str(bf16))
    cast = [k for k in source if k.startswith("net/")]
    assert len(cast) == 6
    for key in cast:
        assert half.get_variable_to_dtype_map()[key] == tf.bfloat16
        expected = source[key].astype(ml_dtypes.bfloat16)
        np.testing.assert_array_equal(np.asarray(half.get_tensor(key)).view(np.uint16), expected.view(np.uint16))
    restored = program()
    restored.restore(str(back)).assert_consumed()
    kernel = "net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE"
    np.testing.assert_array_equal(restored.net.l1.kernel.numpy(),
                                  source[kernel].astype(ml_dtypes.bfloat16).astype(np.float32))
    assert float(restored.optimizer.learning_rate.numpy()) == pytest.approx(0.1)  # hyperparameters stay float32


def test_resharded_to_four_data_files_and_back_to_one(run, tmp_path, run_cli):
    src, four, one = run / "ckpt-5", tmp_path / "four" / "ckpt-5", tmp_path / "one" / "ckpt-5"
    assert run_cli("edit", src, "-o", four, "--shards", "4").exit_code == 0
    assert run_cli("edit", four, "-o", one, "--shards", "1").exit_code == 0
    assert len([f for f in os.listdir(four.parent) if ".data-" in f]) == 4
    source = variables(src)
    for path in (four, one):
        got = variables(path)
        assert sorted(got) == sorted(source)
        for key in source:
            np.testing.assert_array_equal(got[key], source[key], err_msg=key)
        restored = program()
        restored.restore(str(path)).assert_consumed()
        np.testing.assert_array_equal(restored.net.l1.kernel.numpy(),
                                      source["net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE"])
