"""``ckpt convert full.h5 -o model.keras --to keras`` on whole models tf-keras saved (``tests/data/keras_legacy``,
made by ``tests/data/corpus/generators/keras_legacy.py``), without any framework.

The expected files are Keras 3's own: ``oracle.keras`` is the same architecture built by Keras 3, with Keras 2's
weights loaded by Keras 3's legacy loader and its prediction checked against Keras 2's. The archive ckpt writes
must hold exactly the oracle's datasets (paths and bytes), every Keras 2 weight (read with h5py) exactly once,
and a config of the classes Keras 3 wrote, with only arguments Keras 3 itself writes for them.
"""
from __future__ import annotations

import io
import json
import shutil
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

from formats.ops.convert.cross.legacy_model import translate_model

DATA = Path(__file__).parent / "data" / "keras_legacy"
MODELS = ("cnn", "rnn", "mha", "nested", "shared", "conv1d", "sequential", "names", "ops", "submodel", "constants")
TAKEN_UNWRITTEN = {"LSTM": ("implementation",), "GRU": ("implementation",)}
"""Arguments Keras 3 takes without writing them (``keras/src/layers/rnn/lstm.py``: ``kwargs.pop("implementation")``)."""


def _archive(path: Path) -> tuple[list[str], dict[str, Any], dict[str, bytes]]:
    """(member names, parsed config.json, every dataset of model.weights.h5 -> bytes), read with zipfile and h5py."""
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        config = json.loads(zf.read("config.json"))
        found: dict[str, bytes] = {}
        with h5py.File(io.BytesIO(zf.read("model.weights.h5")), "r") as h5:
            h5.visititems(lambda n, o: found.__setitem__(n, np.asarray(o).tobytes()) if isinstance(o, h5py.Dataset)
                          else None)
    return names, config, found


def _keras2_weights(path: Path) -> list[bytes]:
    """The bytes of every weight of a Keras 2 whole model, read with h5py."""
    found: list[bytes] = []
    with h5py.File(path, "r") as h5:
        group = h5["model_weights"]
        for layer in group.attrs["layer_names"]:
            found += [np.asarray(group[layer][w]).tobytes() for w in group[layer].attrs["weight_names"]]
    return found


def _objects(config: Any) -> list[dict[str, Any]]:
    """Every serialized layer or model in a Keras 3 config (nested ones too)."""
    found = []
    if isinstance(config, dict):
        if "module" in config and "class_name" in config and config.get("module", "").startswith("keras"):
            found.append(config)
        for value in config.values():
            found += _objects(value)
    elif isinstance(config, list):
        for value in config:
            found += _objects(value)
    return found


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from click.testing import CliRunner

    from .conftest import SHIPPED

    out = tmp_path_factory.mktemp("keras_legacy")
    done = {}
    for model in MODELS:
        result = CliRunner().invoke(SHIPPED, ["convert", str(DATA / model / "full.h5"), "-o", str(out / f"{model}.keras"),
                                              "--to", "keras"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        done[model] = out / f"{model}.keras"
    return done


@pytest.mark.parametrize("model", MODELS)
def test_the_weights_are_where_keras_3_keeps_them(converted: dict[str, Path], model: str) -> None:
    names, _, datasets = _archive(converted[model])
    assert names == ["metadata.json", "config.json", "model.weights.h5"]  # as Keras 3's saving_lib writes them
    expected = _archive(DATA / model / "oracle.keras")[2]
    assert expected and datasets == expected
    assert Counter(datasets.values()) == Counter(_keras2_weights(DATA / model / "full.h5"))  # each weight once


@pytest.mark.parametrize("model", MODELS)
def test_the_config_has_the_classes_and_only_the_arguments_keras_3_writes(converted: dict[str, Path],
                                                                          model: str) -> None:
    _, config, _ = _archive(converted[model])
    _, oracle, _ = _archive(DATA / model / "oracle.keras")
    ours, theirs = _objects(config), _objects(oracle)
    kinds = {(o["module"], o["class_name"]) for o in ours if o["class_name"] != "Add"}
    want = {(o["module"], o["class_name"]) for o in theirs if o["class_name"] != "Add"}
    assert kinds == want
    layers = [la["class_name"] for la in config["config"]["layers"]]
    assert sorted(layers) == sorted(la["class_name"] for la in oracle["config"]["layers"]) or model == "ops"
    if model == "ops":  # tf-keras' x + y is a TFOpLambda, Keras 3's an operation; ckpt writes the Add layer
        assert [o["module"] for o in ours if o["class_name"] == "Add"] == ["keras.layers"]
    allowed: dict[tuple[str, str], set[str]] = {}
    for obj in theirs:
        allowed.setdefault((obj["module"], obj["class_name"]), set(TAKEN_UNWRITTEN.get(obj["class_name"], ()))).update(
            obj["config"])
    for obj in ours:
        if (obj["module"], obj["class_name"]) in allowed:
            assert set(obj["config"]) <= allowed[obj["module"], obj["class_name"]], obj["class_name"]
    assert config["class_name"] == oracle["class_name"] and config["module"] == oracle["module"]
    assert config.get("registered_name") == oracle.get("registered_name")


def test_names_keras_3_refuses_are_renamed_with_their_references(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "m.keras"
    result = run_cli("convert", DATA / "names" / "full.h5", "-o", out, "--to", "keras")
    assert result.exit_code == 0, result.output
    assert "3 layer name(s) hold '/', which Keras 3 refuses: '/' becomes '_' (block1/dense -> block1_dense" \
        in result.output
    text = zipfile.ZipFile(out).read("config.json").decode()
    assert "block1/" not in text and "head/" not in text
    layers = json.loads(text)["config"]["layers"]
    assert [la["name"] for la in layers] == [la["config"]["name"] for la in layers]
    assert layers[2]["inbound_nodes"] == [[["block1_dense", 0, 0, {}]]]


def test_a_sequential_with_an_input_is_called_from_node_0(converted: dict[str, Path]) -> None:
    """tf-keras numbered the calls of a Sequential built with an input from 1 (node 0 was its input's); Keras 3
    numbers them from 0, as its own config says."""
    _, config, _ = _archive(converted["nested"])
    _, oracle, _ = _archive(DATA / "nested" / "oracle.keras")
    ours = [la for la in config["config"]["layers"] if la["class_name"] == "Dense"][0]["inbound_nodes"]
    theirs = [la for la in oracle["config"]["layers"] if la["class_name"] == "Dense"][0]["inbound_nodes"]
    assert ours[0][0][:3] == ["outer", 0, 0]
    assert theirs[0]["args"][0]["config"]["keras_history"][1:] == [0, 0]


def test_calls_of_functional_models_count_as_keras_3_counts_them(converted: dict[str, Path]) -> None:
    """tf-keras numbered a nested Functional model's calls from 1; Keras 3 from 0 in calls and from 1 in
    ``output_layers`` (its ``get_tensor`` takes 1 off), as its own config says."""
    _, config, _ = _archive(converted["submodel"])
    _, oracle, _ = _archive(DATA / "submodel" / "oracle.keras")
    ours = {la["name"]: la["inbound_nodes"] for la in config["config"]["layers"]}
    theirs = [la["inbound_nodes"] for la in oracle["config"]["layers"] if la["class_name"] == "Dense"]
    dense = [nodes for name, nodes in ours.items() if name.startswith("dense")][0]
    assert dense[0][0][:3] == ["inner", 0, 0] and theirs[0][0]["args"][0]["config"]["keras_history"][1:] == [0, 0]
    assert config["config"]["output_layers"] == ["head", 1, 0]
    assert oracle["config"]["output_layers"][1:] == [1, 0]


def test_a_custom_layer_is_named_in_a_one_line_error(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "m.keras"
    result = run_cli("convert", DATA / "custom" / "full.h5", "-o", out, "--to", "keras")
    assert result.exit_code == 3
    assert result.stderr.strip().splitlines() == [
        f"ckpt: error: {DATA / 'custom' / 'full.h5'}: cannot rebuild the model in Keras 3: layer 'scale': class Scale "
        "is not built into Keras (a custom layer: Keras 3 needs its code, which a config does not hold)"]
    assert not out.exists()


def test_dry_run_and_json(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "m.keras"
    dry = run_cli("convert", DATA / "mha" / "full.h5", "-o", out, "--to", "keras", "--dry-run")
    assert dry.exit_code == 0 and not out.exists()
    assert "layers/multi_head_attention/output_dense/vars/0" in dry.stdout
    assert "dry run: 12 tensors would be written (keras); 0 errors, 0 warnings" in dry.stdout
    plan = json.loads(run_cli("convert", DATA / "mha" / "full.h5", "-o", out, "--to", "keras", "--json").stdout)
    assert plan["ok"] and plan["target"] == "keras" and plan["written"]["tensors"] == 12
    rows = {r["source"]: r["key"] for r in plan["rows"]}
    assert rows["model_weights/multi_head_attention/multi_head_attention/attention_output/bias:0"] == \
        "layers/multi_head_attention/output_dense/vars/1"


def test_the_training_config_and_optimizer_state_are_left_out_with_a_warning(run_cli, tmp_path: Path) -> None:
    from .conftest import CORPUS

    result = run_cli("convert", CORPUS / "keras2_tagger" / "tagger_model.h5", "-o", tmp_path / "t.keras", "--to",
                     "keras")
    assert result.exit_code == 0, result.output
    assert "warning: unused: optimizer: 21 optimizer tensor(s) left out (the model is written uncompiled)" \
        in result.output
    assert "the training config (optimizer, loss, metrics) is left out" in result.output
    _, config, datasets = _archive(tmp_path / "t.keras")
    assert "compile_config" not in config and len(datasets) == 12


def test_what_is_not_a_whole_keras_2_model_is_refused(run_cli, tmp_path: Path) -> None:
    from .conftest import CORPUS

    weights_only = run_cli("convert", CORPUS / "keras2_tagger" / "tagger_weights.h5", "-o", tmp_path / "a.keras",
                           "--to", "keras")
    assert weights_only.exit_code == 1 and "has no model config" in weights_only.output
    template = run_cli("convert", DATA / "cnn" / "full.h5", "-o", tmp_path / "b.keras", "--to", "keras",
                       "--template", DATA / "cnn" / "oracle.keras")
    assert template.exit_code == 1 and "takes no template" in template.output
    not_keras = run_cli("convert", DATA / "cnn" / "full.h5", "-o", tmp_path / "c.h5", "--to", "keras")
    assert not_keras.exit_code == 2 and "ending in .keras" in not_keras.output
    assert not list(tmp_path.iterdir())


def test_weights_out_of_order_are_an_error_not_a_guess(run_cli, tmp_path: Path) -> None:
    """A Keras 2 file whose BatchNormalization lists its weights in another order than Keras 2 creates them: each
    weight's kind is checked against its place."""
    source = tmp_path / "full.h5"
    shutil.copyfile(DATA / "cnn" / "full.h5", source)
    with h5py.File(source, "r+") as h5:
        group = h5["model_weights"]["batch_normalization"]
        group.attrs["weight_names"] = list(reversed(list(group.attrs["weight_names"])))
    result = run_cli("convert", source, "-o", tmp_path / "m.keras", "--to", "keras")
    assert result.exit_code == 1
    assert "Keras 2 weight 'batch_normalization/moving_variance' is a moving_variance, where Keras 3 expects " \
           "BatchNormalization 'batch_normalization''s beta" in result.output
    assert not (tmp_path / "m.keras").exists()


def _functional(*layers: dict[str, Any]) -> dict[str, Any]:
    entries = [{"class_name": "InputLayer", "config": {"batch_input_shape": [None, 4], "dtype": "float32",
                                                        "name": "in"}, "name": "in", "inbound_nodes": []}]
    for layer in layers:
        entries.append({**layer, "name": layer["config"]["name"], "inbound_nodes": [[[entries[-1]["name"], 0, 0, {}]]]})
    return {"class_name": "Functional", "config": {"name": "m", "layers": entries, "input_layers": [["in", 0, 0]],
                                                   "output_layers": [[entries[-1]["name"], 0, 0]]}}


@pytest.mark.parametrize("layer,refusal", [
    ({"class_name": "Dense", "config": {"name": "d", "units": 2, "activation": "hard_sigmoid"}},
     "layer 'd': activation 'hard_sigmoid' differs in Keras 3"),
    ({"class_name": "Dense", "config": {"name": "d", "units": 2, "activation": "my_act"}},
     "layer 'd': activation 'my_act' is not built into Keras 3"),
    ({"class_name": "Conv2DTranspose", "config": {"name": "t", "filters": 2, "kernel_size": 1, "groups": 2}},
     "layer 't': Conv2DTranspose with groups=2, which Keras 3 does not have (only groups=1 translates)"),
    ({"class_name": "LSTM", "config": {"name": "r", "units": 2, "time_major": True}},
     "layer 'r': LSTM with time_major=True"),
    ({"class_name": "Lambda", "config": {"name": "f", "function": ["code", None, None]}},
     "layer 'f': a Lambda layer holds Python bytecode"),
    ({"class_name": "TFOpLambda", "config": {"name": "tf.math.reduce_sum", "function": "math.reduce_sum"}},
     "layer 'tf.math.reduce_sum': a TensorFlow operation (TFOpLambda) that Keras 3 cannot rebuild"),
    ({"class_name": "LocallyConnected2D", "config": {"name": "lc"}},
     "layer 'lc': class LocallyConnected2D is a Keras 2 layer that Keras 3 does not have"),
    ({"class_name": "Dense", "config": {"name": "d", "units": 2, "kernel_initializer":
                                        {"class_name": "MyInit", "config": {}}}},
     "layer 'd': initializer MyInit is not built into Keras 3"),
])
def test_what_keras_3_would_compute_otherwise_is_refused(layer: dict[str, Any], refusal: str) -> None:
    model = translate_model(_functional(layer))
    assert model.config is None and len(model.refusals) == 1 and model.refusals[0].startswith(refusal)


def test_arguments_keras_3_renamed_or_dropped() -> None:
    model = translate_model(_functional(
        {"class_name": "LeakyReLU", "config": {"name": "a", "alpha": 0.2, "dtype": "float32"}},
        {"class_name": "DepthwiseConv2D", "config": {"name": "b", "kernel_size": 1, "groups": 1, "trainable": True}},
        {"class_name": "BatchNormalization", "config": {"name": "c", "axis": [3], "fused": True,
                                                        "batch_input_shape": [None, 4]}},
        {"class_name": "Dense", "config": {"name": "d", "units": 1, "kernel_initializer":
                                           {"class_name": "VarianceScaling", "config": {
                                               "scale": 1.0, "distribution": "normal", "dtype": "float32"}},
                                           "dtype": {"class_name": "Policy", "config": {"name": "mixed_float16"}}}}))
    assert model.config is not None, model.refusals
    layers = {la["name"]: la["config"] for la in model.config["config"]["layers"]}
    policy = {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": None}
    assert layers["a"] == {"name": "a", "negative_slope": 0.2, "dtype": policy}
    assert layers["b"] == {"name": "b", "kernel_size": 1, "trainable": True}
    assert layers["c"] == {"name": "c", "axis": 3}
    assert layers["d"]["kernel_initializer"] == {"module": "keras.initializers", "class_name": "VarianceScaling",
                                                 "config": {"scale": 1.0, "distribution": "truncated_normal"},
                                                 "registered_name": None}
    assert layers["d"]["dtype"]["config"] == {"name": "mixed_float16"}
    assert layers["in"] == {"batch_shape": [None, 4], "dtype": "float32", "name": "in"}
    assert model.config["config"]["input_layers"] == ["in", 0, 0]  # one input: bare, as Keras 3 writes it


def _with_number(function: str, data: list[Any]) -> dict[str, Any]:
    """A Functional model of an input and one tf-keras ``TFOpLambda`` called as ``data`` (tf-keras' own form)."""
    model = _functional()
    model["config"]["layers"].append({"class_name": "TFOpLambda", "name": "op", "inbound_nodes": [data],
                                      "config": {"name": "op", "dtype": "float32", "function": function}})
    model["config"]["output_layers"] = [["op", 0, 0]]
    return model


@pytest.mark.parametrize("function,data,operation", [
    ("__operators__.add", ["in", 0, 0, {"y": 3.0, "name": None}], "Add"),  # x + 3.0, tf-keras' MobileNetV3
    ("math.truediv", ["in", 0, 0, {"y": 4.0, "name": None}], "TrueDivide"),
    ("math.multiply", ["_CONSTANT_VALUE", -1, 2.0, {"y": ["in", 0, 0], "name": None}], "Multiply"),  # 2.0 * x
])
def test_a_layer_output_and_a_number_become_the_keras_3_operation(function: str, data: list[Any],
                                                                  operation: str) -> None:
    number = data[3]["y"] if data[0] == "in" else data[2]
    op = translate_model(_with_number(function, data)).config["config"]["layers"][-1]  # type: ignore[index]
    assert op == {"module": "keras.src.ops.numpy", "class_name": operation, "config": {"name": "op"},
                  "registered_name": operation, "name": "op", "inbound_nodes": [[["in", 0, 0, {"x2": number}]]]}


@pytest.mark.parametrize("function,data", [
    ("math.subtract", ["_CONSTANT_VALUE", -1, 2.0, {"y": ["in", 0, 0], "name": None}]),  # 2.0 - x: no x2 form
    ("math.truediv", ["in", 0, 0, {"y": "half", "name": None}]),
    ("__operators__.add", ["in", 0, 0, {"y": 3.0, "name": "plus"}]),
])
def test_operations_ckpt_cannot_write_as_keras_3_computes_them_are_refused(function: str, data: list[Any]) -> None:
    model = translate_model(_with_number(function, data))
    assert model.config is None and len(model.refusals) == 1
    assert model.refusals[0].startswith(f"layer 'op': tf.{function} is translated between two layer outputs")


def test_a_model_config_that_cannot_be_read_is_named_as_such(run_cli, tmp_path: Path) -> None:
    source = tmp_path / "deep.h5"
    shutil.copy(DATA / "constants" / "full.h5", source)
    with h5py.File(source, "r+") as h5:
        h5.attrs["model_config"] = "[" * 200_000 + "]" * 200_000
    result = run_cli("convert", source, "-o", tmp_path / "m.keras", "--to", "keras")
    assert result.exit_code == 1
    assert (f"unsupported: {source}: --to keras rebuilds the model from its config, which cannot be read: attribute "
            "model_config nests deeper than 64 levels") in result.output
    assert not (tmp_path / "m.keras").exists()
