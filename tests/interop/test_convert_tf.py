"""TensorFlow restores what `ckpt convert` and `ckpt rename` write: TF1 Saver, tf-keras load_weights, tf.train.Checkpoint."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from ..conftest import CORPUS

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("tf_keras")

pytestmark = pytest.mark.interop
ESTIMATOR = CORPUS / "tf1_estimator" / "model.ckpt-200"
SLOTS = CORPUS / "seed_slots" / "tf_ckpts" / "ckpt-5"
GOLDEN = Path(__file__).parent.parent / "golden" / "convert_mismatch_estimator_20units"
"""``.stdout.txt`` (the warnings) and ``.stderr.txt`` (the errors and "nothing written"), as tests/test_convert.py."""
MAPS = ["--map", "dnn/hiddenlayer_0=dense", "--map", "dnn/hiddenlayer_1=dense_1", "--map", "dnn/logits=dense_2"]


def _sequential(units: int, fresh_names: bool = True):
    if fresh_names:  # layer names (and so full names) restart at dense, dense_1, dense_2
        keras.backend.clear_session()
    model = keras.Sequential([keras.layers.Dense(units, activation="relu"), keras.layers.Dense(units, activation="relu"),
                              keras.layers.Dense(3)])
    model.build((None, 4))
    return model


def test_tf1_saver_restores_generic_conversion(run_cli, tmp_path):
    out = tmp_path / "tf2" / "ckpt-1"
    result = run_cli("convert", ESTIMATOR, "-o", out, "--to", "tf-object")
    assert result.exit_code == 0, result.output
    source = tf.train.load_checkpoint(str(ESTIMATOR))
    shapes, dtypes = source.get_variable_to_shape_map(), source.get_variable_to_dtype_map()
    assert "_CHECKPOINTABLE_OBJECT_GRAPH" in tf.train.load_checkpoint(str(out)).get_variable_to_shape_map()
    v1 = tf.compat.v1
    with tf.Graph().as_default():
        variables = {n: v1.get_variable(n, shape=shapes[n], dtype=dtypes[n]) for n in sorted(shapes)}
        saver = v1.train.Saver(variables)
        with v1.Session() as sess:
            saver.restore(sess, str(out))  # falls back to full_name -> checkpoint_key
            values = sess.run(variables)
    assert sorted(values) == sorted(shapes) and len(values) == 13
    for name, value in values.items():
        np.testing.assert_array_equal(value, source.get_tensor(name), err_msg=name)


def test_tf_keras_loads_template_conversion(run_cli, tmp_path):
    template = tmp_path / "template" / "ckpt"
    _sequential(10).save_weights(str(template))
    out = tmp_path / "out" / "ckpt"
    result = run_cli("convert", ESTIMATOR, "-o", out, "--to", "tf-object", "--template", template, *MAPS, "--verbose")
    assert result.exit_code == 0, result.output
    assert "warning: unused: dnn/logits/kernel/Adagrad: " in result.output  # each warning under --verbose
    model = _sequential(10, fresh_names=False)
    model.load_weights(str(out)).assert_existing_objects_matched()
    source = tf.train.load_checkpoint(str(ESTIMATOR))
    for i, scope in enumerate(["dnn/hiddenlayer_0", "dnn/hiddenlayer_1", "dnn/logits"]):
        kernel, bias = model.layers[i].get_weights()
        np.testing.assert_array_equal(kernel, source.get_tensor(f"{scope}/kernel"))
        np.testing.assert_array_equal(bias, source.get_tensor(f"{scope}/bias"))


def test_mismatch_report_with_a_real_tf_keras_template(run_cli, tmp_path):
    template = tmp_path / "template" / "ckpt"
    _sequential(20).save_weights(str(template))
    out = tmp_path / "out" / "ckpt"
    result = run_cli("convert", ESTIMATOR, "-o", out, "--to", "tf-object", "--template", template, *MAPS)
    assert result.exit_code == 1
    assert result.stdout == (GOLDEN.parent / (GOLDEN.name + ".stdout.txt")).read_text()
    assert result.stderr == (GOLDEN.parent / (GOLDEN.name + ".stderr.txt")).read_text()
    assert not out.parent.exists() or not any(out.parent.iterdir())


def test_to_tf_name_keys_are_full_names(run_cli, tmp_path):
    out = tmp_path / "tf1" / "model.ckpt"
    result = run_cli("convert", SLOTS, "-o", out, "--to", "tf-name")
    assert result.exit_code == 0, result.output
    from formats.api import open_checkpoint
    from formats.concepts.object_graph import label_keys

    written = tf.train.load_checkpoint(str(out))
    source = tf.train.load_checkpoint(str(SLOTS))
    with open_checkpoint(SLOTS) as ckpt:
        labels = label_keys(ckpt.object_graph, list(ckpt))
    checked = 0
    for key, label in labels.items():
        if label.attribute != "VARIABLE_VALUE":
            continue
        name = label.name if label.role != "slot" else f"{labels[label.slot_of].name}/{label.slot_name}"
        np.testing.assert_array_equal(written.get_tensor(name), source.get_tensor(key), err_msg=key)
        checked += 1
    assert checked == 13
    assert "_CHECKPOINTABLE_OBJECT_GRAPH" not in written.get_variable_to_shape_map()
    assert written.get_tensor("net/dense/kernel/m").shape == (1, 5)


def _toy_dataset(width: int = 5):
    inputs = tf.range(10.)[:, None]
    labels = inputs * 5. + tf.range(float(width))[None, :]
    return tf.data.Dataset.from_tensor_slices(dict(x=inputs, y=labels)).repeat().batch(2)


def test_tensorflow_restores_renamed_objects_with_slots(run_cli, tmp_path):
    out = tmp_path / "renamed" / "ckpt-5"
    result = run_cli("rename", SLOTS, "-o", out, "--map", "net/l1=net/dense")
    assert result.exit_code == 0, result.output
    assert_restores_renamed_guide(out)


def assert_restores_renamed_guide(out: Path) -> None:
    """The guide's program with its layer renamed ``net/dense`` restores ``out`` (the corpus's ``seed_slots``
    ckpt-5 with ``net/l1`` renamed): every value, slot and the step, each consumed."""
    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(5)

        def call(self, x):
            return self.dense(x)

    net, opt = Net(), keras.optimizers.legacy.Adam(0.1)
    iterator = iter(_toy_dataset())
    net(tf.zeros([1, 1]))
    ckpt = tf.train.Checkpoint(step=tf.Variable(1), optimizer=opt, net=net, iterator=iterator)
    status = ckpt.restore(str(out))
    opt._create_all_weights(net.trainable_variables)  # slots are created now and restored from the checkpoint
    status.assert_consumed()
    source = tf.train.load_checkpoint(str(SLOTS))
    for var, name in ((net.dense.kernel, "kernel"), (net.dense.bias, "bias")):
        np.testing.assert_array_equal(var.numpy(), source.get_tensor(f"net/l1/{name}/.ATTRIBUTES/VARIABLE_VALUE"))
        for slot in ("m", "v"):
            want = source.get_tensor(f"net/l1/{name}/.OPTIMIZER_SLOT/optimizer/{slot}/.ATTRIBUTES/VARIABLE_VALUE")
            np.testing.assert_array_equal(opt.get_slot(var, slot).numpy(), want)
    assert int(ckpt.step) == int(source.get_tensor("step/.ATTRIBUTES/VARIABLE_VALUE"))


def test_tensorflow_restores_strip_prefix_output(run_cli, tmp_path):
    """`--strip-prefix net` moves `net`'s children to the root: a program holding the layer at the root
    (`Checkpoint(l1=dense, ...)`) restores every value and slot."""
    out = tmp_path / "stripped" / "ckpt-5"
    result = run_cli("rename", SLOTS, "-o", out, "--strip-prefix", "net")
    assert result.exit_code == 0, result.output
    dense, opt = keras.layers.Dense(5), keras.optimizers.legacy.Adam(0.1)
    dense(tf.zeros([1, 1]))
    ckpt = tf.train.Checkpoint(step=tf.Variable(1), optimizer=opt, l1=dense, iterator=iter(_toy_dataset()))
    status = ckpt.restore(str(out))
    opt._create_all_weights(dense.trainable_variables)
    status.assert_consumed()
    source = tf.train.load_checkpoint(str(SLOTS))
    np.testing.assert_array_equal(dense.kernel.numpy(), source.get_tensor("net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE"))
    np.testing.assert_array_equal(opt.get_slot(dense.bias, "v").numpy(),
                                  source.get_tensor("net/l1/bias/.OPTIMIZER_SLOT/optimizer/v/.ATTRIBUTES/VARIABLE_VALUE"))
