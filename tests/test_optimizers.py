"""The optimizer table and the conversions that move optimizer state by meaning, without TensorFlow.

Expected numbers are computed here with numpy from the update rules (TF1 Momentum keeps
``accum = momentum*accum + g``, Keras ``m = momentum*m - lr*g``, so ``m = -lr * accum``; TF1 Adam keeps
``beta1_power = beta_1^(t+1)`` after t steps), never by the code under test.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import formats
from formats.concepts import keras3_optimizer as k3
from formats.concepts import optimizers as table
from formats.concepts.roles import SLOT_SUFFIXES, classify_names, slot_key
from formats.ops.convert.transforms import ScaledEntry, ZerosEntry

from .conftest import CORPUS
from .keras_templates import tf_keras_checkpoint

ADAM = CORPUS / "tf1_adam" / "model.ckpt-200"
LAYER = {"dense": {"kernel": (4, 3), "bias": (3,)}}
VV = "/.ATTRIBUTES/VARIABLE_VALUE"


# --- the table --------------------------------------------------------------------------------------------

def test_tf1_suffixes_are_the_names_tf1_optimizers_give():
    # tensorflow/python/training/*.py: _zeros_slot / _get_or_make_slot, in creation order; the graph
    # uniquifier names the first slot <Optimizer>, later ones <Optimizer>_1, _2
    assert SLOT_SUFFIXES == {
        "Momentum": ("Momentum", "momentum"), "Adam": ("Adam", "m"), "Adam_1": ("Adam", "v"),
        "AdamW": ("AdamW", "m"), "AdamW_1": ("AdamW", "v"), "Adagrad": ("Adagrad", "accumulator"),
        "RMSProp": ("RMSProp", "rms"), "RMSProp_1": ("RMSProp", "momentum"), "RMSProp_2": ("RMSProp", "momentum"),
        "Ftrl": ("Ftrl", "accum"), "Ftrl_1": ("Ftrl", "linear"), "Adadelta": ("Adadelta", "accum"),
        "Adadelta_1": ("Adadelta", "accum_update"), "AdagradDA": ("AdagradDA", "gradient_accumulator"),
        "AdagradDA_1": ("AdagradDA", "gradient_squared_accumulator"),
        "ProximalAdagrad": ("ProximalAdagrad", "accumulator")}
    assert [slot_key("v", "RMSProp", s, centered=True) for s in ("rms", "mg", "momentum")] == [
        "v/RMSProp", "v/RMSProp_1", "v/RMSProp_2"]
    assert slot_key("v", "RMSProp", "momentum") == "v/RMSProp_1"
    roles = classify_names(["w", "w/RMSProp", "w/RMSProp_1", "w/RMSProp_2"])
    assert [roles[k].slot_name for k in ("w/RMSProp", "w/RMSProp_1", "w/RMSProp_2")] == ["rms", "mg", "momentum"]


@pytest.mark.parametrize("name, slots", [
    ("sgd", {"tf1": ["momentum"], "tf-keras-legacy": ["momentum"], "tf-keras": ["m"], "keras3": ["momentum"]}),
    ("adam", {"tf1": ["m", "v"], "tf-keras-legacy": ["m", "v", "vhat"], "tf-keras": ["m", "v", "vhat"],
              "keras3": ["momentum", "velocity", "velocity_hat"]}),
    ("ftrl", {"tf1": ["accum", "linear"], "tf-keras-legacy": ["accumulator", "linear"],
              "tf-keras": ["accumulator", "linear"], "keras3": ["accumulator", "linear"]}),
    ("adadelta", {"tf1": ["accum", "accum_update"], "tf-keras-legacy": ["accum_grad", "accum_var"],
                  "tf-keras": ["accumulated_grad", "accumulated_delta_var"],
                  "keras3": ["accumulated_grad", "accumulated_delta_var"]}),
    ("rmsprop", {"tf1": ["rms", "mg", "momentum"], "tf-keras-legacy": ["rms", "mg", "momentum"],
                 "tf-keras": ["velocity", "average_gradient", "momentum"],
                 "keras3": ["velocity", "average_gradient", "momentum"]}),
])
def test_slot_names_per_framework(name, slots):
    fam = table.family(name)
    assert {fw: fam.slot_names(fw) for fw in table.FRAMEWORKS} == slots


def test_transforms_between_frameworks():
    velocity = table.family("sgd").slot("velocity")
    assert table.slot_transform(velocity, "tf1", "tf-keras").op == "mul"
    assert table.slot_transform(velocity, "keras3", "tf1").op == "div"
    assert table.slot_transform(velocity, "tf-keras-legacy", "keras3").op == "copy"
    assert table.slot_transform(table.family("adam").slot("m"), "tf1", "keras3").op == "copy"
    mul = table.slot_transform(velocity, "tf1", "keras3")
    assert (mul.describe(0.05), mul.factor(0.05)) == ("x (-0.05)", -0.05)
    div = table.slot_transform(velocity, "tf-keras", "tf1")
    assert (div.describe(0.05), div.factor(0.05)) == ("/ (-0.05)", -20.0)


def test_pairs_without_an_equivalent_say_why():
    adam, adagrad, nadam, adamw = (table.family(n) for n in ("adam", "adagrad", "nadam", "adamw"))
    assert table.equivalence(adam, "tf1", adam, "keras3") is None
    assert table.equivalence(adam, "tf1", adamw, "tf-keras") is None  # the same state; weight decay is a setting
    assert "no mathematical equivalent" in table.equivalence(adagrad, "tf1", adam, "tf-keras")
    assert "different algorithms" in table.equivalence(nadam, "tf-keras-legacy", nadam, "keras3")
    assert table.equivalence(nadam, "tf-keras", nadam, "keras3") is None
    assert table.equivalence(nadam, "tf-keras", nadam, "tf1") == "TF1 (tf.compat.v1.train) has no Nadam optimizer"


def test_step_and_powers_against_tf1_adam():
    with formats.open_checkpoint(ADAM) as ckpt:
        b1, b2 = (float(ckpt[k].read()) for k in ("beta1_power", "beta2_power"))
        step = int(ckpt["global_step"].read())
    assert step == 200
    assert round(np.log(np.float64(b1)) / np.log(0.9)) - 1 == step  # independent of the code under test
    assert round(table.step_from_power(b1, 0.9)) == step and round(table.step_from_power(b2, 0.999)) == step
    assert math.isclose(table.power_from_step(0.9, step), b1, rel_tol=1e-4)
    assert table.power_from_step(0.9, 0) == 0.9  # TF1 initialises beta1_power to beta_1
    with pytest.raises(ValueError):
        table.step_from_power(0.0, 0.9)


def test_keras_slot_names_parse():
    model = {"dense/kernel", "dense/bias"}
    got = [table.parse_keras_slot(n, model) for n in ("Adam/m/dense/kernel", "m/dense/kernel", "Adam/dense/kernel/m",
                                                      "dense/kernel/m", "Adam/iter", "dense/kernel")]
    assert [(g.framework, g.optimizer, g.slot, g.variable) if g else None for g in got] == [
        ("tf-keras", "Adam", "m", "dense/kernel"), ("tf-keras", None, "m", "dense/kernel"),
        ("tf-keras-legacy", "Adam", "m", "dense/kernel"), ("tf-keras-legacy", None, "m", "dense/kernel"), None, None]


def test_keras3_layouts_follow_add_optimizer_variables():
    # keras/src/optimizers: Adam adds (momentum, velocity) variable by variable; RMSprop one list per slot
    adam = k3.keras3_layout(table.family("adam"), 2)
    assert adam == [("iteration", None), ("learning_rate", None), ("momentum", 0), ("velocity", 0),
                    ("momentum", 1), ("velocity", 1)]
    rms = k3.keras3_layout(table.family("rmsprop"), 2, ("momentum",), learning_rate_variable=False)
    assert rms == [("iteration", None), ("velocity", 0), ("velocity", 1), ("momentum", 0), ("momentum", 1)]
    assert k3.keras3_layout(table.family("nadam"), 1)[-1] == ("u_product", None)
    assert table.family_of_class("rm_sprop", "keras3").name == "rmsprop"
    assert table.family_of_class("adam_1").name == "adam" and table.family_of_class("Lion") is None


def test_keras3_assignment_needs_unique_shapes_without_a_config():
    fam = table.family("rmsprop")
    candidates = [("dense/kernel", (4, 3), "k"), ("dense/bias", (3,), "b")]
    shapes = [(), (), (4, 3), (3,), (4, 3), (3,)]
    found = k3.keras3_assign(fam, shapes, [(c, True) for c in k3.KERAS3_SETTINGS["rmsprop"]], None, candidates)
    assert sorted(layout[4][0] for layout, _ in found) == ["average_gradient", "momentum"]  # ambiguous: two fit
    one = k3.keras3_assign(fam, shapes, [(("momentum",), True)], None, candidates)
    assert len(one) == 1 and [v[2] for v in one[0][1]] == ["k", "b"]
    same = [("a/kernel", (3,), "a"), ("b/kernel", (3,), "b")]
    assert k3.keras3_assign(table.family("adam"), [(), (), (3,), (3,), (3,), (3,)], [((), True)], None, same) == []


# --- transformed values ---------------------------------------------------------------------------------

def test_scaled_and_zero_entries_stream_what_they_read(tmp_path):
    prefix = tmp_path / "c"
    value = np.linspace(-3, 3, 7 * 5, dtype=np.float32).reshape(7, 5)
    formats.write_checkpoint(str(prefix), {"a": value})
    with formats.open_checkpoint(prefix) as ckpt:
        scaled = ScaledEntry(ckpt["a"], "mul", -0.05)
        want = (value.astype(np.float64) * -0.05).astype(np.float32)
        np.testing.assert_array_equal(scaled.read(), want)
        assert b"".join(scaled.byte_chunks(16)) == want.tobytes()
        back = ScaledEntry(ckpt["a"], "div", -0.05)
        np.testing.assert_array_equal(back.read(), (value.astype(np.float64) / -0.05).astype(np.float32))
    zeros = ZerosEntry("z", (3, 2), "float32")
    assert b"".join(zeros.byte_chunks(5)) == bytes(24) and zeros.read().shape == (3, 2)


# --- conversions ------------------------------------------------------------------------------------------

def _tf1(prefix: Path, optimizer: str, **extra: np.ndarray) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    values = {"dense/kernel": rng.normal(size=(4, 3)).astype(np.float32),
              "dense/bias": rng.normal(size=3).astype(np.float32), "global_step": np.int64(7)}
    for var in ("dense/kernel", "dense/bias"):
        for suffix in [s for s, (o, _) in SLOT_SUFFIXES.items() if o == optimizer and s != "RMSProp_2"]:
            values[f"{var}/{suffix}"] = rng.uniform(0.1, 1, size=values[var].shape).astype(np.float32)
    values.update(extra)
    formats.write_checkpoint(str(prefix), values)
    return values


def _read(prefix: Path) -> dict[str, np.ndarray]:
    with formats.open_checkpoint(prefix) as ckpt:
        return {k: ckpt[k].read() for k in ckpt if k != "_CHECKPOINTABLE_OBJECT_GRAPH"}


def test_tf1_momentum_onto_current_tf_keras_scales_by_minus_lr(run_cli, tmp_path):
    src = _tf1(tmp_path / "tf1" / "model.ckpt-7", "Momentum")
    keys = tf_keras_checkpoint(tmp_path / "tpl" / "ckpt", LAYER, "SGD", ["m"], hypers={"learning_rate": 0.05})
    out = tmp_path / "out" / "ckpt"
    result = run_cli("convert", tmp_path / "tf1" / "model.ckpt-7", "-o", out, "--to", "tf-object", "--template",
                     tmp_path / "tpl" / "ckpt", "--json")
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    got = _read(out)
    lr = np.float64(np.float32(0.05))  # the template's learning rate, a float32 variable
    for var in ("dense/kernel", "dense/bias"):
        want = (src[f"{var}/Momentum"].astype(np.float64) * -lr).astype(np.float32)
        np.testing.assert_array_equal(got[keys[f"{var}:m"]], want)
        row = next(r for r in plan["rows"] if r["key"] == keys[f"{var}:m"])
        assert (row["source"], row["transform"]) == (f"{var}/Momentum", "x (-0.05)")
    assert got[keys["step"]] == 7 and plan["transformed"] == 3
    step = next(r for r in plan["rows"] if r["key"] == keys["step"])
    assert (step["source"], step["transform"]) == ("global_step", "= global_step")
    assert got[keys["learning_rate"]] == np.float32(0.05)


def test_learning_rate_missing_everywhere_is_an_error_naming_it(run_cli, tmp_path):
    _tf1(tmp_path / "tf1" / "ckpt", "Momentum")
    tf_keras_checkpoint(tmp_path / "tpl" / "ckpt", LAYER, "SGD", ["m"], hypers={})  # a schedule: no variable
    args = ["convert", tmp_path / "tf1" / "ckpt", "-o", tmp_path / "out", "--to", "tf-object", "--template",
            tmp_path / "tpl" / "ckpt", "--json"]
    result = run_cli(*args)
    assert result.exit_code == 1 and not (tmp_path / "out.index").exists()
    errors = [p for p in json.loads(result.stdout)["problems"] if p["severity"] == "error"]
    assert {p["kind"] for p in errors} == {"optimizer"} and len(errors) == 2
    assert "the learning rate is in neither checkpoint (a schedule?): give --learning-rate" in errors[0]["message"]
    ok = run_cli(*args, "--learning-rate", "0.1")
    assert ok.exit_code == 0, ok.output
    row = next(r for r in json.loads(ok.stdout)["rows"] if r["source"] == "dense/bias/Momentum")
    assert row["transform"] == "x (-0.1)"


def test_tf1_adam_onto_legacy_tf_keras_derives_iterations_from_beta1_power(run_cli, tmp_path):
    b1 = np.float32(0.9 ** 13)
    _tf1(tmp_path / "tf1" / "ckpt", "Adam", beta1_power=b1, beta2_power=np.float32(0.999 ** 13))
    hypers = {"learning_rate": 0.01, "beta_1": 0.9, "beta_2": 0.999, "decay": 0.0}
    keys = tf_keras_checkpoint(tmp_path / "tpl" / "ckpt", LAYER, "Adam", ["m", "v"], legacy=True, hypers=hypers)
    src = tmp_path / "tf1" / "ckpt"
    args = ["convert", src, "-o", tmp_path / "out" / "ckpt", "--to", "tf-object", "--template",
            tmp_path / "tpl" / "ckpt", "--json"]
    mismatch = run_cli(*args)  # global_step is 7, but beta1_power says 12 steps
    assert mismatch.exit_code == 1
    message = next(p["message"] for p in json.loads(mismatch.stdout)["problems"] if p["severity"] == "error")
    assert message.startswith("global_step is 7 but log(beta1_power)/log(0.9) - 1 is 12")
    formats.write_checkpoint(str(src), {k: v for k, v in _read(src).items() if k != "global_step"}, force=True)
    result = run_cli(*args)
    assert result.exit_code == 0, result.output
    step = next(r for r in json.loads(result.stdout)["rows"] if r["key"] == keys["step"])
    assert (step["source"], step["transform"]) == ("beta1_power", "= log(beta1_power)/log(0.9) - 1 = 12")
    got = _read(tmp_path / "out" / "ckpt")
    assert got[keys["step"]] == round(np.log(np.float64(b1)) / np.log(0.9)) - 1 == 12
    assert got[keys["beta_1"]] == np.float32(0.9)


def test_no_equivalent_is_an_error_and_allow_missing_keeps_the_template(run_cli, tmp_path):
    _tf1(tmp_path / "tf1" / "ckpt", "Adagrad")
    keys = tf_keras_checkpoint(tmp_path / "tpl" / "ckpt", LAYER, "Adam", ["m", "v"])
    args = ["convert", tmp_path / "tf1" / "ckpt", "-o", tmp_path / "out" / "ckpt", "--to", "tf-object",
            "--template", tmp_path / "tpl" / "ckpt", "--json"]
    result = run_cli(*args)
    assert result.exit_code == 1
    problems = [p for p in json.loads(result.stdout)["problems"] if p["severity"] == "error"]
    assert [p["kind"] for p in problems] == ["optimizer"]
    assert problems[0]["message"].startswith("TF1 (tf.compat.v1.train) Adagrad -> tf-keras Adam: Adagrad state has "
                                             "no mathematical equivalent in Adam")
    kept = run_cli(*args, "--allow-missing")
    assert kept.exit_code == 0, kept.output
    assert _read(tmp_path / "out" / "ckpt")[keys["dense/kernel:m"]].tolist() == np.zeros((4, 3)).tolist()


def test_current_tf_keras_slots_without_prefix_are_slots(tmp_path):
    keys = tf_keras_checkpoint(tmp_path / "c", LAYER, "Adam", ["m", "v"], prefixed=False)
    with formats.open_checkpoint(tmp_path / "c") as ckpt:
        entry = ckpt[keys["dense/kernel:v"]]
        assert (entry.name, entry.role, entry.slot_name) == ("v/dense/kernel", "slot", "v")
        assert ckpt[entry.slot_of].name == "dense/kernel"


def test_keras_sgd_to_tf1_names_divides_by_minus_lr(run_cli, tmp_path):
    rng = np.random.default_rng(5)
    values = {"dense/kernel:m": rng.normal(size=(4, 3)).astype(np.float32),
              "dense/bias:m": rng.normal(size=3).astype(np.float32), "step": np.int64(9)}
    tf_keras_checkpoint(tmp_path / "k" / "ckpt", LAYER, "SGD", ["m"], hypers={"learning_rate": 0.05},
                        values=values)
    out = tmp_path / "tf1" / "model.ckpt"
    result = run_cli("convert", tmp_path / "k" / "ckpt", "-o", out, "--to", "tf-name", "--slot-names", "tf1")
    assert result.exit_code == 0, result.output
    got = _read(out)
    lr = np.float64(np.float32(0.05))
    for var in ("dense/kernel", "dense/bias"):
        np.testing.assert_array_equal(got[f"{var}/Momentum"],
                                      (values[f"{var}:m"].astype(np.float64) / -lr).astype(np.float32))
    assert got["global_step"] == 9 and got["global_step"].dtype == np.int64
    assert "3 transformed" in result.stdout


def test_keras_adam_to_tf1_names_needs_the_betas(run_cli, tmp_path):
    tf_keras_checkpoint(tmp_path / "k" / "ckpt", LAYER, "Adam", ["m", "v"], step=4)
    args = ["convert", tmp_path / "k" / "ckpt", "-o", tmp_path / "tf1" / "model.ckpt", "--to", "tf-name",
            "--slot-names", "tf1"]
    result = run_cli(*args, "--json")
    assert result.exit_code == 1
    messages = [p["message"] for p in json.loads(result.stdout)["problems"]]
    assert "beta1_power = beta_1^(step+1): beta_1 is in neither checkpoint; give --hparam beta_1=VALUE" in messages
    ok = run_cli(*args, "--hparam", "beta_1=0.9", "--hparam", "beta_2=0.999")
    assert ok.exit_code == 0, ok.output
    got = _read(tmp_path / "tf1" / "model.ckpt")
    assert got["beta1_power"] == np.float32(0.9 ** 5) and got["beta2_power"] == np.float32(0.999 ** 5)
    assert {"dense/kernel/Adam", "dense/kernel/Adam_1", "dense/bias/Adam", "dense/bias/Adam_1"} <= set(got)


def test_keras_rmsprop_without_momentum_gets_tf1_momentum_zeros(run_cli, tmp_path):
    tf_keras_checkpoint(tmp_path / "k" / "ckpt", LAYER, "RMSprop", ["velocity"])
    out = tmp_path / "tf1" / "model.ckpt"
    result = run_cli("convert", tmp_path / "k" / "ckpt", "-o", out, "--to", "tf-name", "--slot-names", "tf1")
    assert result.exit_code == 0, result.output
    got = _read(out)
    assert sorted(k for k in got if "RMSProp" in k) == ["dense/bias/RMSProp", "dense/bias/RMSProp_1",
                                                         "dense/kernel/RMSProp", "dense/kernel/RMSProp_1"]
    assert not got["dense/kernel/RMSProp_1"].any() and got["dense/kernel/RMSProp_1"].shape == (4, 3)


def test_hparam_is_name_equals_number(run_cli, tmp_path):
    result = run_cli("convert", ADAM, "-o", tmp_path / "o", "--to", "tf-object", "--hparam", "beta_1")
    assert result.exit_code == 2 and "is not NAME=NUMBER" in result.stderr


def test_partitioned_variables_written_whole_are_warned_about(run_cli, tmp_path):
    result = run_cli("convert", CORPUS / "tf1_partitioned" / "model.ckpt-200", "-o", tmp_path / "o", "--to",
                     "tf-object", "--dry-run", "--json")
    warned = [p for p in json.loads(result.stdout)["problems"] if p["kind"] == "partitioned"]
    assert [p["key"] for p in warned] == ["input_layer/embedding/weights", "input_layer/embedding/weights/Adagrad"]
    assert all("3 slices" in p["message"] and "TF1 Saver" in p["message"] for p in warned)


def test_doctor_explains_missing_slots_by_the_table(run_cli, tmp_path):
    _tf1(tmp_path / "tf1" / "ckpt", "Adam", beta1_power=np.float32(0.5), beta2_power=np.float32(0.9))
    tf_keras_checkpoint(tmp_path / "tpl" / "ckpt", LAYER, "Adam", ["m", "v"], prefixed=False)
    result = run_cli("doctor", "--json", tmp_path / "tf1" / "ckpt", "--against", tmp_path / "tpl" / "ckpt")
    doc = json.loads(result.stdout)
    assert result.exit_code == 1
    assert {(s["missing"], s["candidate"]) for s in doc["optimizer_state"]} == {
        ("m/dense/kernel", "dense/kernel/Adam"), ("v/dense/kernel", "dense/kernel/Adam_1"),
        ("m/dense/bias", "dense/bias/Adam"), ("v/dense/bias", "dense/bias/Adam_1")}
    assert doc["suggestions"] == []
    assert any("convert --template" in n for n in doc["notes"])


GOLDEN = Path(__file__).parent / "golden" / "convert_tf1_adam_to_tf_keras.txt"
MAPS = ["--map", "dnn/hiddenlayer_0=dense", "--map", "dnn/hiddenlayer_1=dense_1", "--map", "dnn/logits=dense_2"]
DNN = {"dense": {"kernel": (4, 8), "bias": (8,)}, "dense_1": {"kernel": (8, 8), "bias": (8,)},
       "dense_2": {"kernel": (8, 3), "bias": (3,)}}


def test_tf1_adam_to_tf_keras_plan_golden(run_cli, tmp_path):
    """The plan of an Estimator's Adam run onto a tf-keras Checkpoint(model=, optimizer=), transforms visible."""
    template = tmp_path / "keras" / "ckpt"
    tf_keras_checkpoint(template, DNN, "Adam", ["m", "v"], hypers={"learning_rate": 0.01})
    result = run_cli("convert", ADAM, "-o", tmp_path / "out" / "ckpt", "--to", "tf-object", "--template", template,
                     *MAPS, "--dry-run")
    assert result.exit_code == 0, result.output
    assert result.stdout.replace(str(tmp_path), "TMP") == GOLDEN.read_text()
