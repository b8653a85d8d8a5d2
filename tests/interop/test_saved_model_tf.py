"""TensorFlow's own view of the corpus SavedModels agrees with ckpt's, and TensorFlow reads what
``ckpt convert`` makes of a SavedModel's variables."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import formats

from ..conftest import CORPUS

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

pytestmark = pytest.mark.interop
SAVED = CORPUS / "saved_models"
MODELS = [SAVED / "module" / "1", SAVED / "tf1_builder" / "00000123", SAVED / "tf_keras_model"]


def _tf_values(prefix) -> dict[str, object]:
    reader = tf.train.load_checkpoint(str(prefix))
    return {k: reader.get_tensor(k) for k in reader.get_variable_to_shape_map()
            if k != "_CHECKPOINTABLE_OBJECT_GRAPH"}


def _same(a: dict[str, object], b: dict[str, object]) -> None:
    assert sorted(a) == sorted(b)
    for key in a:
        np.testing.assert_array_equal(np.asarray(a[key]), np.asarray(b[key]), err_msg=key)


def test_keras_loads_the_keras2_h5_made_from_the_saved_model(tmp_path, run_cli):
    keras = pytest.importorskip("tf_keras")
    model = MODELS[2]
    out = tmp_path / "weights.h5"
    assert run_cli("convert", model, "-o", out, "--to", "keras2-h5").exit_code == 0
    loaded = keras.models.load_model(str(model))
    expected = [w.numpy() for w in loaded.weights]
    for w in loaded.weights:
        w.assign(tf.zeros_like(w))
    loaded.load_weights(str(out))
    for got, want in zip([w.numpy() for w in loaded.weights], expected):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("model", MODELS, ids=lambda p: p.parent.name if p.name.isdigit() else p.name)
def test_signatures_as_tensorflow_parses_them(model, run_cli):
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel.FromString((model / "saved_model.pb").read_bytes())
    expected = []
    for meta in proto.meta_graphs:
        for name in sorted(meta.signature_def):
            if name.startswith("__saved_model"):
                continue
            sig = meta.signature_def[name]

            def specs(infos):
                return [{"name": k, "dtype": tf.as_dtype(v.dtype).name,
                         "shape": None if v.tensor_shape.unknown_rank else [d.size for d in v.tensor_shape.dim],
                         "tensor": v.name} for k, v in sorted(infos.items())]

            expected.append({"name": name, "method": sig.method_name, "tags": list(meta.meta_info_def.tags),
                             "inputs": specs(sig.inputs), "outputs": specs(sig.outputs)})
    assert json.loads(run_cli("ls", "--json", model).stdout)["signatures"] == expected


@pytest.mark.parametrize("model", [MODELS[0], MODELS[2]], ids=["module", "tf_keras_model"])
def test_names_are_tensorflows_saved_variable_names(model):
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel.FromString((model / "saved_model.pb").read_bytes())
    names = sorted(n.variable.name for n in proto.meta_graphs[0].object_graph_def.nodes
                   if n.WhichOneof("kind") == "variable")
    with formats.open_checkpoint(model) as ckpt:
        assert sorted(e.name for e in ckpt.values() if e.role != "object_graph") == names


def test_tensorflow_restores_the_converted_bundle_into_the_loaded_module(tmp_path, run_cli):
    model = MODELS[0]
    out = tmp_path / "bundle" / "ckpt"
    assert run_cli("convert", model, "-o", out, "--to", "tf-object").exit_code == 0
    _same(_tf_values(out), _tf_values(model / "variables" / "variables"))
    loaded = tf.saved_model.load(str(model))
    original = {"w": loaded.dense["w"].numpy(), "b": loaded.dense["b"].numpy(), "steps": loaded.steps.numpy(),
                "vocab": loaded.vocab.numpy()}
    for v in (loaded.dense["w"], loaded.dense["b"], loaded.steps):
        v.assign(tf.zeros_like(v))
    status = tf.train.Checkpoint(dense=loaded.dense, steps=loaded.steps, vocab=loaded.vocab).read(str(out))
    status.assert_consumed()  # every value of the bundle went into the module's variables
    restored = {"w": loaded.dense["w"].numpy(), "b": loaded.dense["b"].numpy(), "steps": loaded.steps.numpy(),
                "vocab": loaded.vocab.numpy()}
    _same(restored, original)


def test_keras_loads_the_converted_bundle(tmp_path, run_cli):
    keras = pytest.importorskip("tf_keras")
    model = MODELS[2]
    out = tmp_path / "bundle" / "ckpt"
    assert run_cli("convert", model, "-o", out, "--to", "tf-object").exit_code == 0
    loaded = keras.models.load_model(str(model))
    expected = [w.numpy() for w in loaded.weights]
    for w in loaded.weights:
        w.assign(tf.zeros_like(w))
    loaded.load_weights(str(out)).expect_partial()
    for got, want in zip([w.numpy() for w in loaded.weights], expected):
        np.testing.assert_array_equal(got, want)


def test_to_a_name_based_bundle_and_back(tmp_path, run_cli):
    model = MODELS[0]
    names, back = tmp_path / "names" / "model.ckpt", tmp_path / "back" / "ckpt"
    assert run_cli("convert", model, "-o", names, "--to", "tf-name").exit_code == 0
    assert run_cli("convert", names, "-o", back, "--to", "tf-object").exit_code == 0
    result = run_cli("diff", "--match", "name", model, back)
    assert result.exit_code == 0, result.output
    stored = _tf_values(model / "variables" / "variables")
    _same(_tf_values(names), {k.split("/.ATTRIBUTES/")[0].rsplit("/", 1)[-1]: v for k, v in stored.items()})


def test_a_tf1_export_to_an_object_based_bundle_and_back(tmp_path, run_cli):
    model = MODELS[1]
    objects, back = tmp_path / "objects" / "ckpt", tmp_path / "back" / "model.ckpt"
    assert run_cli("convert", model, "-o", objects, "--to", "tf-object").exit_code == 0
    assert run_cli("convert", objects, "-o", back, "--to", "tf-name").exit_code == 0
    # every key of the export comes back; the tf-object step added tf.train.Checkpoint's save_counter, kept by name
    result = run_cli("diff", "--json", model, back)
    assert result.exit_code == 1 and json.loads(result.stdout)["only_in_b"] == ["save_counter"]
    assert run_cli("diff", "--match", "name", model, back).exit_code == 0
    assert run_cli("diff", "--match", "name", model, objects).exit_code == 0
    values = _tf_values(back)
    assert values.pop("save_counter") == 1  # TensorFlow reads the save_counter the tf-object step wrote
    _same(values, _tf_values(model / "variables" / "variables"))
