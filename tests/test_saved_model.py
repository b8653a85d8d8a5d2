"""SavedModel directories (the ``saved-model`` format): opened as users type them, checked against what
TensorFlow's own reader saw (manifest_more.json), with names, roles and slots from the SavedObjectGraph."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import formats
from formats.core.errors import CheckpointNotFoundError

from .conftest import CORPUS, digest
from .hostile.craft_saved_model import (FLOAT, MODULE, field, meta_graph, module_graph, object_graph, saved_model,
                                        saved_model_dir, shape, signature, tensor_info, user_object, variable)

MORE = json.loads((CORPUS / "manifest_more.json").read_text())["entries"]
SAVED_MODELS = sorted(k for k, v in MORE.items() if v["format"] == "saved-model")
KERAS = CORPUS / "saved_models" / "tf_keras_model"
BUILDER = CORPUS / "saved_models" / "tf1_builder" / "00000123"
TEXT = Path(__file__).parent / "data" / "saved_model_text" / "module_1"


def test_the_corpus_holds_three_kinds_of_saved_model():
    assert SAVED_MODELS == ["saved_models/module/1", "saved_models/tf1_builder/00000123",
                            "saved_models/tf_keras_model"]


@pytest.mark.parametrize("rel", SAVED_MODELS)
def test_keys_shapes_dtypes_and_values_match_tensorflow(rel):
    expected = MORE[rel]["tensors"]
    with formats.open_checkpoint(CORPUS / rel) as ckpt:
        assert ckpt.format == "saved-model"
        assert sorted(ckpt) == sorted(expected)
        for key, want in expected.items():
            entry = ckpt[key]
            assert (list(entry.shape), entry.dtype) == (want["shape"], want["dtype"]), key
            value = entry.read()
            # as the manifest saw it: TensorFlow's get_tensor returns scalars as Python values (bytes for
            # strings, which numpy then reads as a NUL-stripped bytes_)
            assert digest(value[()] if value.ndim == 0 else value) == want["sha256"], key


@pytest.mark.parametrize("rel", SAVED_MODELS)
def test_opened_from_its_saved_model_pb_and_through_the_tf_drop_in(rel):
    with formats.open_checkpoint(CORPUS / rel / "saved_model.pb") as ckpt:
        assert ckpt.path == str(CORPUS / rel) and len(ckpt) == len(MORE[rel]["tensors"])
    reader = formats.load_checkpoint(CORPUS / rel)
    shapes = reader.get_variable_to_shape_map()
    assert shapes == {k: v["shape"] for k, v in MORE[rel]["tensors"].items()}


def test_files_are_the_graph_then_the_variables():
    with formats.open_checkpoint(MODULE) as ckpt:
        assert ckpt.files == [str(MODULE / "saved_model.pb"), str(MODULE / "fingerprint.pb"),
                              str(MODULE / "variables/variables.index"),
                              str(MODULE / "variables/variables.data-00000-of-00001")]
        assert ckpt["steps/.ATTRIBUTES/VARIABLE_VALUE"].files == tuple(ckpt.files[2:])


def test_names_and_roles_of_an_object_based_export():
    with formats.open_checkpoint(MODULE) as ckpt:
        assert {k: (e.name, e.role) for k, e in ckpt.items()} == {
            "_CHECKPOINTABLE_OBJECT_GRAPH": ("_CHECKPOINTABLE_OBJECT_GRAPH", "object_graph"),
            "dense/w/.ATTRIBUTES/VARIABLE_VALUE": ("w", "variable"),
            "dense/b/.ATTRIBUTES/VARIABLE_VALUE": ("b", "variable"),
            "steps/.ATTRIBUTES/VARIABLE_VALUE": ("steps", "variable"),
            "vocab/.ATTRIBUTES/VARIABLE_VALUE": ("vocab", "variable")}


def test_keras_slots_and_optimizer_state_from_the_saved_object_graph():
    layers = {"hidden": "layer_with_weights-0", "bn": "layer_with_weights-1", "out": "layer_with_weights-2"}
    order = [("hidden", "kernel"), ("hidden", "bias"), ("bn", "gamma"), ("bn", "beta"), ("out", "kernel"),
             ("out", "bias")]
    with formats.open_checkpoint(KERAS) as ckpt:
        for i, (layer, var) in enumerate(order):  # Keras keeps m, v of each variable in _variables 1..12
            for j, slot in enumerate("mv"):
                entry = ckpt[f"optimizer/_variables/{1 + 2 * i + j}/.ATTRIBUTES/VARIABLE_VALUE"]
                assert (entry.name, entry.role, entry.slot_name, entry.optimizer) == \
                    (f"Adam/{slot}/{layer}/{var}", "slot", slot, "optimizer")
                assert entry.slot_of == f"{layers[layer]}/{var}/.ATTRIBUTES/VARIABLE_VALUE"
        assert [(ckpt[f"optimizer/_{n}/.ATTRIBUTES/VARIABLE_VALUE"].name,
                 ckpt[f"optimizer/_{n}/.ATTRIBUTES/VARIABLE_VALUE"].role) for n in ("iterations", "learning_rate")] \
            == [("iteration", "optimizer"), ("learning_rate", "optimizer")]
        assert ckpt["layer_with_weights-1/moving_mean/.ATTRIBUTES/VARIABLE_VALUE"].name == "bn/moving_mean"
        # a Keras metric's state (its object's identifier is _tf_keras_metric) is not a model weight
        assert [(ckpt[f"keras_api/metrics/0/{n}/.ATTRIBUTES/VARIABLE_VALUE"].name,
                 ckpt[f"keras_api/metrics/0/{n}/.ATTRIBUTES/VARIABLE_VALUE"].role) for n in ("total", "count")] \
            == [("total", "other"), ("count", "other")]


def test_names_come_from_the_saved_model_not_the_variables_bundle(tmp_path):
    d = saved_model_dir(tmp_path / "m", saved_model(meta_graph(graph=module_graph(("net/w", "net/b", "n", "v")))))
    with formats.open_checkpoint(d) as ckpt:
        assert ckpt["dense/w/.ATTRIBUTES/VARIABLE_VALUE"].name == "net/w"
        assert ckpt["steps/.ATTRIBUTES/VARIABLE_VALUE"].name == "n"
        assert ckpt.object_graph.path(4) == "dense/w"


def test_slot_variables_of_the_saved_object_graph(tmp_path):
    graph = object_graph([
        user_object([(1, "dense"), (2, "steps"), (3, "vocab"), (6, "opt")]),
        user_object([(4, "w"), (5, "b")]), variable("steps", 9, []), variable("vocab", 7, [3]),
        variable("w", FLOAT, [4, 7]), variable("b", FLOAT, [7]),
        user_object([], "optimizer", slots=[(4, "momentum", 7)]), variable("w/Momentum", FLOAT, [4, 7])])
    d = saved_model_dir(tmp_path / "m", saved_model(meta_graph(graph=graph)))
    with formats.open_checkpoint(d) as ckpt:
        assert ckpt.object_graph.path(7) == "dense/w/.OPTIMIZER_SLOT/opt/momentum"
        problems = [(p.where, p.message) for p in ckpt.problems()]
    assert problems == [("dense/w/.OPTIMIZER_SLOT/opt/momentum/.ATTRIBUTES/VARIABLE_VALUE",
                         "the SavedModel declares variable 'w/Momentum' here, but variables/variables does not hold it")]


def test_a_tf1_builder_export_is_name_based():
    with formats.open_checkpoint(BUILDER) as ckpt:
        assert ckpt.object_graph is None
        assert {k: (e.name, e.role) for k, e in ckpt.items()} == {"a": ("a", "variable"), "b": ("b", "variable")}
        assert ckpt.metadata["variables_format"] == "tf-name"


SIGNATURE = {"name": "serving_default", "method": "tensorflow/serving/predict", "tags": ["serve"],
             "inputs": [{"name": "x", "dtype": "float32", "shape": [-1, 4], "tensor": "serving_default_x:0"}],
             "outputs": [{"name": "output_0", "dtype": "float32", "shape": [-1, 7],
                          "tensor": "StatefulPartitionedCall:0"}]}


def test_ls_json_lists_the_signatures(run_cli):
    result = run_cli("ls", "--json", MODULE)
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["format"] == "saved-model" and doc["signatures"] == [SIGNATURE]
    doc = json.loads(run_cli("ls", "--json", BUILDER).stdout)
    assert doc["signatures"] == [{"name": "serving_default", "method": "tensorflow/serving/predict",
                                  "tags": ["serve"],
                                  "inputs": [{"name": "x", "dtype": "float32", "shape": [-1], "tensor": "x:0"}],
                                  "outputs": [{"name": "y", "dtype": "float32", "shape": [-1], "tensor": "y:0"}]}]
    assert "signatures" not in json.loads(run_cli("ls", "--json", CORPUS / "tf1_adam/model.ckpt-1").stdout)


def test_ls_of_a_saved_model_directory_lists_its_tensors(run_cli):
    result = run_cli("ls", MODULE)
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1] == f"{MODULE}: saved-model, 5 tensors, 36 parameters, 562 B, 1 data file"


def test_ls_tree_shows_functions_and_signatures(run_cli):
    result = run_cli("ls", "--tree", MODULE)
    assert result.exit_code == 0
    rows = [line.rstrip() for line in result.stdout.splitlines()]
    assert rows[7:10] == [
        "_CHECKPOINTABLE_OBJECT_GRAPH  string   []      401 B       0  object graph",
        "signatures                                       0 B       0",
        "└── serving_default                              0 B       0  signature (x: float32 [?, 4]) -> "
        "(output_0: float32 [?, 7])"]
    assert rows[6] == "__call__                                         0 B       0  function: (x: float32 [?, 4]) -> " \
                      "(float32 [?, 7])"
    filtered = run_cli("ls", "--tree", MODULE, "-f", "dense/*").stdout
    assert "__call__" not in filtered and "signatures" not in filtered


def test_ls_tree_of_a_tf1_export_shows_its_signature(run_cli):
    rows = [line.rstrip() for line in run_cli("ls", "--tree", BUILDER).stdout.splitlines()]
    assert rows[3:5] == ["signatures                            0 B       0",
                         "└── serving_default                   0 B       0  signature (x: float32 [?]) -> (y: float32 [?])"]


def test_keras_functions_in_the_tree(run_cli):
    tree = json.loads(run_cli("ls", "--tree", "--json", KERAS).stdout)["tree"]
    top = {node["label"]: node for node in tree}
    assert top["__call__"]["note"] == "function (2 traces): (input_1: float32 [?, 5]) -> (float32 [?, 2])"
    assert top["__call__"]["aliases"] == ["keras_api/__call__"]
    assert top["_default_save_signature"]["note"] == \
        "concrete function: (input_1: float32 [?, 5]) -> (out: float32 [?, 2])"
    layer = {node["label"]: node for node in top["layer_with_weights-1"]["children"]}
    assert layer["__call__"]["note"] == "function (2 traces): (inputs: float32 [?, 7]) -> (float32 [?, 7])"


def test_text_format_saved_model_reads_as_the_binary_one(run_cli):
    with formats.open_checkpoint(TEXT) as text, formats.open_checkpoint(MODULE) as binary:
        assert text.files[0] == str(TEXT / "saved_model.pbtxt")
        assert {k: (e.name, e.role, e.shape) for k, e in text.items()} == \
            {k: (e.name, e.role, e.shape) for k, e in binary.items()}
        assert text.metadata["signatures"] == binary.metadata["signatures"] == [SIGNATURE]
        assert [n.note for n in text.object_graph.nodes] == [n.note for n in binary.object_graph.nodes]


def test_verify(run_cli):
    for d in (MODULE, KERAS, BUILDER, TEXT):
        result = run_cli("verify", d)
        assert result.exit_code == 0, result.output
    assert run_cli("verify", KERAS).stdout == (f"ok {KERAS}: saved-model, checked 25 tensors, 6.2 KiB in 5 files\n")


def test_verify_finds_a_variable_stored_with_another_shape(tmp_path, run_cli):
    graph = object_graph([user_object([(1, "dense"), (2, "steps"), (3, "vocab")]),
                          user_object([(4, "w"), (5, "b")]), variable("steps", 9, []), variable("vocab", 7, [3]),
                          variable("w", FLOAT, [4, 8]), variable("b", 2, [-1])])
    d = saved_model_dir(tmp_path / "m", saved_model(meta_graph(graph=graph)))
    result = run_cli("verify", "--json", d)
    assert result.exit_code == 1
    assert json.loads(result.stdout)["problems"] == [
        {"where": "dense/w/.ATTRIBUTES/VARIABLE_VALUE",
         "message": "variable 'w' is declared with shape [4, 8] but stored as [4, 7]"},
        {"where": "dense/b/.ATTRIBUTES/VARIABLE_VALUE", "message": "variable 'b' is declared float64 but stored as float32"}]


def test_without_variables_and_with_data_but_no_index(tmp_path):
    empty = saved_model_dir(tmp_path / "empty", saved_model(meta_graph(signatures={"s": signature({}, {})})), None)
    with formats.open_checkpoint(empty) as ckpt:
        assert len(ckpt) == 0 and ckpt.files == [str(empty / "saved_model.pb")]
    broken = saved_model_dir(tmp_path / "broken", saved_model(meta_graph()))
    (broken / "variables/variables.index").unlink()
    with pytest.raises(CheckpointNotFoundError, match="variables.index: index file missing"):
        formats.open_checkpoint(broken)


def test_several_meta_graphs_and_internal_signatures(tmp_path):
    x = tensor_info("x:0", FLOAT, None)
    sparse = field(4, field(1, "sp/values:0")) + field(2, FLOAT) + field(3, shape([-1, 3]))
    ragged = field(5, field(2, tensor_info("r/flat_values:0", FLOAT, [-1])))
    pb = saved_model(meta_graph(["serve"], {"predict": signature({"x": x, "sp": sparse, "rg": ragged}, {}),
                                            "__saved_model_init_op":
                                            signature({}, {"o": tensor_info("NoOp", 0, None)})}),
                     meta_graph(["train", "serve"], {"fit": signature({}, {"loss": tensor_info("l:0", FLOAT, [])},
                                                                      "tensorflow/serving/regress")}))
    with formats.open_checkpoint(saved_model_dir(tmp_path / "m", pb)) as ckpt:
        meta = ckpt.metadata
    assert meta["meta_graphs"] == [["serve"], ["train", "serve"]]
    assert [(s["name"], s["tags"]) for s in meta["signatures"]] == [("predict", ["serve"]), ("fit", ["train", "serve"])]
    assert meta["signatures"][0]["inputs"] == [
        {"name": "rg", "dtype": "composite", "shape": None},
        {"name": "sp", "dtype": "float32", "shape": [-1, 3], "tensor": "sp/values:0"},
        {"name": "x", "dtype": "float32", "shape": None, "tensor": "x:0"}]


# --- model base directories (TF Serving's layout) -------------------------------------------------------------

@pytest.fixture
def model_base(tmp_path):
    base = tmp_path / "model"
    for version in ("1", "2", "10"):
        shutil.copytree(MODULE, base / version)
    for f in (base / "10" / "variables").iterdir():
        f.chmod(0o644)
    return base


def test_ls_of_a_model_base_lists_its_versions(model_base, run_cli):
    result = run_cli("ls", "--json", model_base)
    assert result.exit_code == 0
    rows = json.loads(result.stdout)["checkpoints"]
    assert [(r["path"], r["step"], r["format"], r["tensors"], r["nbytes"], r["latest"]) for r in rows] == [
        (str(model_base / v), int(v), "saved-model", 5, 562, v == "10") for v in ("1", "2", "10")]
    assert all(r["mtime"] > 0 for r in rows)


def test_a_model_base_opens_its_latest_version(model_base, run_cli):
    result = run_cli("ls", "--tree", "--json", model_base)
    assert json.loads(result.stdout)["path"] == str(model_base / "10")
    assert run_cli("diff", model_base / "1", model_base / "2").exit_code == 0


def test_diff_of_two_versions_finds_the_change(model_base, run_cli):
    with formats.open_checkpoint(model_base / "2") as ckpt:
        w = ckpt["dense/w/.ATTRIBUTES/VARIABLE_VALUE"].read()
    w[0, 0] += 1
    from formats.tf_bundle.writer import write_checkpoint

    with formats.open_checkpoint(model_base / "1") as ckpt:
        tensors = {k: (w if k.startswith("dense/w") else e.read()) for k, e in ckpt.items()}
    prefix = model_base / "2" / "variables" / "variables"
    for f in prefix.parent.iterdir():
        f.unlink()
    write_checkpoint(str(prefix), tensors)  # version 2's variables again, one value changed
    result = run_cli("diff", "--json", model_base / "1", model_base / "2")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert [(c["key"], c["differ"]) for c in doc["changed"]] == [("dense/w/.ATTRIBUTES/VARIABLE_VALUE", 1)]
    assert doc["only_in_a"] == doc["only_in_b"] == []


def test_trend_over_versions(model_base, run_cli):
    result = run_cli("trend", "--json", model_base)
    assert result.exit_code == 0
    assert [c["step"] for c in json.loads(result.stdout)["checkpoints"]] == [1, 2, 10]


def test_ls_recursive_lists_each_saved_model_once(run_cli):
    rows = json.loads(run_cli("ls", "-r", "--json", CORPUS / "saved_models").stdout)["checkpoints"]
    assert [(Path(r["path"]).relative_to(CORPUS / "saved_models").as_posix(), r["step"], r["latest"])
            for r in rows] == [("tf_keras_model", None, False), ("module/1", 1, True),
                               ("tf1_builder/00000123", 123, True)]


# --- everything else works through the contract --------------------------------------------------------------

def test_convert_to_a_bundle_diffs_identical(tmp_path, run_cli):
    for src in (MODULE, KERAS):
        out = tmp_path / src.name / "ckpt"
        assert run_cli("convert", src, "-o", out, "--to", "tf-object").exit_code == 0
        assert run_cli("diff", src, out).exit_code == 0
        with formats.open_checkpoint(src) as a, formats.open_checkpoint(out) as b:
            assert {k: (e.name, e.slot_of) for k, e in a.items()} == {k: (e.name, e.slot_of) for k, e in b.items()}
            # only the SavedModel knows which objects are Keras metrics
            assert {k: e.role for k, e in a.items() if "/metrics/" not in k} == \
                {k: e.role for k, e in b.items() if "/metrics/" not in k}


def test_convert_to_tf_name_and_back(tmp_path, run_cli):
    names, back = tmp_path / "names" / "model.ckpt", tmp_path / "back" / "ckpt"
    assert run_cli("convert", MODULE, "-o", names, "--to", "tf-name").exit_code == 0
    with formats.open_checkpoint(names) as ckpt:
        assert sorted(ckpt) == ["b", "steps", "vocab", "w"]
    assert run_cli("convert", names, "-o", back, "--to", "tf-object").exit_code == 0
    assert run_cli("diff", "--match", "name", MODULE, back).exit_code == 0
    tf1 = tmp_path / "tf1" / "ckpt"
    assert run_cli("convert", BUILDER, "-o", tf1, "--to", "tf-object").exit_code == 0
    assert run_cli("diff", "--match", "name", BUILDER, tf1).exit_code == 0


def test_convert_to_npz_and_extract(tmp_path, run_cli):
    out = tmp_path / "m.npz"
    assert run_cli("convert", MODULE, "-o", out, "--to", "npz").exit_code == 0
    with np.load(out) as npz:  # strings as fixed-width bytes; ckpt adds its provenance record and the object graph
        assert sorted(npz.files) == ["__ckpt_object_graph__", "__ckpt_provenance__", "dense/b/.ATTRIBUTES/VARIABLE_VALUE",
                                     "dense/w/.ATTRIBUTES/VARIABLE_VALUE", "steps/.ATTRIBUTES/VARIABLE_VALUE",
                                     "vocab/.ATTRIBUTES/VARIABLE_VALUE"]
        assert digest(npz["dense/w/.ATTRIBUTES/VARIABLE_VALUE"]) == \
            MORE["saved_models/module/1"]["tensors"]["dense/w/.ATTRIBUTES/VARIABLE_VALUE"]["sha256"]
    result = run_cli("extract", MODULE, "dense/*", "-o", tmp_path / "x.npz")  # through the contract
    assert result.exit_code == 0, result.output
    with np.load(tmp_path / "x.npz") as npz:
        assert sorted(f for f in npz.files if not f.startswith("__")) == \
            ["dense/b/.ATTRIBUTES/VARIABLE_VALUE", "dense/w/.ATTRIBUTES/VARIABLE_VALUE"]


def test_outputs_never_replace_a_saved_model_file(run_cli):
    result = run_cli("convert", MODULE, "-o", MODULE / "variables" / "variables", "--to", "tf-object", "--force")
    assert result.exit_code == 4
    assert result.stderr.startswith(f"ckpt: error: {MODULE / 'variables' / 'variables'}: output would overwrite ")
    assert result.stderr.rstrip().endswith("which is being read; write elsewhere")


def test_convert_a_keras_saved_model_to_keras2_h5(tmp_path, run_cli):
    out = tmp_path / "weights.h5"
    result = run_cli("convert", KERAS, "-o", out, "--to", "keras2-h5")
    assert result.exit_code == 0, result.output
    with formats.open_checkpoint(out) as h5, formats.open_checkpoint(KERAS) as sm:
        assert sorted(h5) == ["bn/bn/beta:0", "bn/bn/gamma:0", "bn/bn/moving_mean:0", "bn/bn/moving_variance:0",
                              "hidden/hidden/bias:0", "hidden/hidden/kernel:0", "out/out/bias:0", "out/out/kernel:0"]
        np.testing.assert_array_equal(h5["hidden/hidden/kernel:0"].read(),
                                      sm["layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE"].read())


def test_show_and_stats(run_cli):
    result = run_cli("show", MODULE, "vocab/.ATTRIBUTES/VARIABLE_VALUE")
    assert result.exit_code == 0
    assert run_cli("stats", MODULE).exit_code == 0


def test_the_registry_asks_saved_model_first():
    from formats.core import registry

    assert registry.BUILTIN[0] == "formats.saved_model.format:FORMAT"
    spec = registry.get_format("saved-model")
    assert spec.claims_directories and spec.sniff(str(MODULE)) and not spec.sniff(str(MODULE / "variables"))
    assert spec.find(str(CORPUS / "saved_models" / "module")) == [str(MODULE)]
