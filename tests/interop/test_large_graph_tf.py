"""TensorFlow restores what `ckpt rename` and `ckpt edit` write of a graph large enough to be decoded into columns:
the paths the in-place rename and the column pruning take (their graph written from arrays), not the rebuilding
a small graph gets. The checkpoint is TensorFlow's own (a model of 1,200 variables and an Adam optimizer's slots);
the values compared are TensorFlow's."""
from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("tf_keras")

pytestmark = pytest.mark.interop
LAYERS, UNITS = 30, 40


def _model(skip: tuple[int, ...] = ()) -> tf.Module:
    """``layer_<i>/unit_<j>`` variables (random values), but the layers in ``skip``."""
    rng = np.random.default_rng(38)
    model = tf.Module()
    for i in range(LAYERS):
        layer = tf.Module()
        for j in range(UNITS):
            setattr(layer, f"unit_{j}", tf.Variable(rng.standard_normal(3).astype(np.float32)))
        if i not in skip:
            setattr(model, f"layer_{i}", layer)
    return model


def _optimizer(model: tf.Module):
    opt = keras.optimizers.legacy.Adam(0.1)
    opt._create_all_weights(model.trainable_variables)
    return opt


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """TensorFlow's checkpoint of the model and its optimizer (slots set to known values), and those values."""
    model = _model()
    opt = _optimizer(model)
    values = {}
    for i in range(LAYERS):
        for j in range(UNITS):
            var = getattr(getattr(model, f"layer_{i}"), f"unit_{j}")
            for k, slot in enumerate(("m", "v")):
                opt.get_slot(var, slot).assign(var * (k + 2))
            values[(i, j)] = var.numpy()
    prefix = tf.train.Checkpoint(model=model, optimizer=opt).save(str(tmp_path_factory.mktemp("tf") / "ckpt"))
    return prefix, values


def _zeroed(model: tf.Module) -> tf.Module:
    """``model`` with every variable set to zero (what a restore must then fill)."""
    for var in model.trainable_variables:
        var.assign(tf.zeros_like(var))
    return model


def _renamed_in_place(run_cli, monkeypatch, prefix: str, out, *rules: str):  # type: ignore[no-untyped-def]
    """``ckpt rename PREFIX -o OUT RULES``, which must succeed, planned in place (``_InPlace``)."""
    from formats.ops.convert import rename_objects

    taken = []
    run = rename_objects._InPlace.run
    monkeypatch.setattr(rename_objects._InPlace, "run", lambda self: taken.append(run(self)) or taken[-1])
    result = run_cli("rename", prefix, "-o", out, *rules)
    assert result.exit_code == 0, result.output
    assert taken == [True]
    return result


def _restored(prefix: str, values: dict, name: str, skip: tuple[int, ...] = ()) -> None:
    model = _zeroed(_model(skip))
    opt = keras.optimizers.legacy.Adam(0.1)
    status = tf.train.Checkpoint(optimizer=opt, **{name: model}).restore(prefix)
    opt._create_all_weights(model.trainable_variables)  # slots made now, restored from the checkpoint
    status.assert_consumed()
    for i in range(LAYERS):
        if i in skip:
            continue
        for j in range(UNITS):
            var = getattr(getattr(model, f"layer_{i}"), f"unit_{j}")
            np.testing.assert_array_equal(var.numpy(), values[(i, j)])
            np.testing.assert_array_equal(opt.get_slot(var, "v").numpy(), values[(i, j)] * 3)


def _in_columns(prefix: str) -> bool:
    from formats import open_checkpoint

    with open_checkpoint(prefix) as ckpt:
        return type(ckpt.object_graph.table).__name__ == "GraphColumns"


def test_tensorflow_restores_a_large_graph_renamed_in_place(saved, run_cli, tmp_path, monkeypatch):
    prefix, values = saved
    assert _in_columns(prefix)
    out = tmp_path / "renamed" / "ckpt"
    _renamed_in_place(run_cli, monkeypatch, prefix, out, "--map", "model/layer_3=net/third", "--map", "model=net")
    with pytest.raises(AssertionError):  # (layer_3 is found as net/third: the program names it so)
        _restored(str(out), values, "net")
    model = _zeroed(_model())
    model.third = model.layer_3
    del model.layer_3
    opt = keras.optimizers.legacy.Adam(0.1)
    status = tf.train.Checkpoint(optimizer=opt, net=model).restore(str(out))
    opt._create_all_weights(model.trainable_variables)
    status.assert_consumed()
    np.testing.assert_array_equal(model.third.unit_7.numpy(), values[(3, 7)])
    np.testing.assert_array_equal(opt.get_slot(model.layer_29.unit_39, "m").numpy(), values[(29, 39)] * 2)


def test_tensorflow_restores_a_large_graph_pruned_on_its_columns(saved, run_cli, tmp_path, monkeypatch):
    from formats.ops.edit import prune

    prefix, values = saved
    taken = []
    run = prune._ColumnPrune.run
    monkeypatch.setattr(prune._ColumnPrune, "run", lambda self, *a: taken.append(run(self, *a)) or taken[-1])
    out = tmp_path / "edited" / "ckpt"
    result = run_cli("edit", prefix, "-o", out, "--exclude", "model/layer_0/*")
    assert result.exit_code == 0, result.output
    assert len(taken) == 1 and taken[0] is not None and taken[0][1] is not None
    _restored(str(out), values, "model", skip=(0,))


def test_tensorflow_restores_a_large_graph_moved_under_a_new_object_in_place(saved, run_cli, tmp_path, monkeypatch):
    """``--add-prefix top/level`` moves every edge of the root under two new objects (a graft), planned on the
    columns: TensorFlow restores it into a program holding the old root's objects two objects down."""
    prefix, values = saved
    out = tmp_path / "grafted" / "ckpt"
    result = _renamed_in_place(run_cli, monkeypatch, prefix, out, "--add-prefix", "top/level")
    assert "new object 'top' created as a parent" in result.output
    assert "new object 'top/level' created as a parent" in result.output
    model = _zeroed(_model())
    opt = keras.optimizers.legacy.Adam(0.1)
    level = tf.Module()
    level.model, level.optimizer, level.save_counter = model, opt, tf.Variable(0, dtype=tf.int64)
    top = tf.Module()
    top.level = level
    status = tf.train.Checkpoint(top=top).restore(str(out))
    opt._create_all_weights(model.trainable_variables)
    # every object and value of the checkpoint bound (checked first), and of the program's, all but the root's own
    # save counter: the checkpoint's is the one moved to top/level
    with pytest.raises(AssertionError, match=r"Found 1 Python objects .*\[<tf.Variable 'save_counter:0'"):
        status.assert_consumed()
    assert int(level.save_counter.numpy()) == 1
    for i in range(LAYERS):
        for j in range(UNITS):
            var = getattr(getattr(model, f"layer_{i}"), f"unit_{j}")
            np.testing.assert_array_equal(var.numpy(), values[(i, j)])
            np.testing.assert_array_equal(opt.get_slot(var, "m").numpy(), values[(i, j)] * 2)
    reader = tf.train.load_checkpoint(str(out))
    assert reader.get_tensor("top/level/save_counter/.ATTRIBUTES/VARIABLE_VALUE") == 1


def test_tensorflow_restores_a_large_graph_lifted_in_place(saved, run_cli, tmp_path, monkeypatch):
    """``--strip-prefix model`` moves the model's edges to the root (a lift), planned on the columns: TensorFlow
    restores it into a program whose root holds the layers and the optimizer, every object and value bound."""
    prefix, values = saved
    out = tmp_path / "lifted" / "ckpt"
    _renamed_in_place(run_cli, monkeypatch, prefix, out, "--strip-prefix", "model")
    model = _zeroed(_model())
    opt = keras.optimizers.legacy.Adam(0.1)
    layers = {f"layer_{i}": getattr(model, f"layer_{i}") for i in range(LAYERS)}
    status = tf.train.Checkpoint(optimizer=opt, **layers).restore(str(out))
    opt._create_all_weights(model.trainable_variables)
    status.assert_consumed()
    for i in range(LAYERS):
        for j in range(UNITS):
            var = getattr(getattr(model, f"layer_{i}"), f"unit_{j}")
            np.testing.assert_array_equal(var.numpy(), values[(i, j)])
            np.testing.assert_array_equal(opt.get_slot(var, "v").numpy(), values[(i, j)] * 3)
    assert tf.train.load_checkpoint(str(out)).get_tensor("layer_29/unit_39/.ATTRIBUTES/VARIABLE_VALUE").shape == (3,)
