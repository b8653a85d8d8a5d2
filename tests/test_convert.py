"""ckpt convert: generic name -> object, onto a template, object -> name; read back with our own reader."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import formats
from formats.ops.convert.graph_build import GraphBuilder, encode_object_graph
from formats.concepts.object_graph import ChildRef, ObjectNode

from .conftest import CORPUS

ESTIMATOR = CORPUS / "tf1_estimator" / "model.ckpt-200"
ADAM = CORPUS / "tf1_adam" / "model.ckpt-200"
PARTITIONED = CORPUS / "tf1_partitioned" / "model.ckpt-200"
SLOTS = CORPUS / "seed_slots" / "tf_ckpts" / "ckpt-5"
GOLDEN = Path(__file__).parent / "golden" / "convert_mismatch_estimator_20units"
"""``.stdout.txt`` (the warnings, part of the report) and ``.stderr.txt`` (the errors and "nothing written")."""
MAPS = ["--map", "dnn/hiddenlayer_0=dense", "--map", "dnn/hiddenlayer_1=dense_1", "--map", "dnn/logits=dense_2"]
VV = "/.ATTRIBUTES/VARIABLE_VALUE"


def keras_like_template(prefix: Path, units: int, inputs: int = 4, dtype: str = "float32") -> Path:
    """What tf-keras ``Sequential([Dense(units), Dense(units), Dense(3)]).save_weights(prefix)`` writes
    (the same graph: layer_with_weights-N and layer-N aliases, the root's self edge ``root``)."""
    dims = [(inputs, units), (units, units), (units, 3)]
    nodes = [ObjectNode(0)]
    for i in range(3):
        nodes[0].children += [ChildRef(i + 1, f"layer_with_weights-{i}"), ChildRef(i + 1, f"layer-{i}")]
    nodes[0].children.append(ChildRef(0, "root"))
    tensors = {}
    rng = np.random.default_rng(units)
    for i in range(3):
        nodes.append(ObjectNode(i + 1, children=[ChildRef(4 + 2 * i, "kernel"), ChildRef(5 + 2 * i, "bias")]))
    for i, (a, b) in enumerate(dims):
        layer = "dense" if i == 0 else f"dense_{i}"
        for j, (name, shape) in enumerate((("kernel", (a, b)), ("bias", (b,)))):
            key = f"layer_with_weights-{i}/{name}{VV}"
            from formats.concepts.object_graph import Attribute

            nodes.append(ObjectNode(4 + 2 * i + j, attributes=[Attribute("VARIABLE_VALUE", f"{layer}/{name}", key)]))
            tensors[key] = rng.normal(size=shape).astype(dtype)
    formats.write_checkpoint(str(prefix), tensors, encode_object_graph(nodes))
    return prefix


def _read(prefix: Path) -> dict[str, np.ndarray]:
    with formats.open_checkpoint(prefix) as ckpt:
        return {k: ckpt[k].read() for k in ckpt if k != "_CHECKPOINTABLE_OBJECT_GRAPH"}


def _graph(prefix: Path):
    ckpt = formats.open_checkpoint(prefix)
    graph = ckpt.object_graph
    ckpt.close()
    return graph


# --- generic name -> object -------------------------------------------------------------------

def test_generic_estimator_keys_full_names_and_values(run_cli, tmp_path):
    out = tmp_path / "out" / "ckpt-1"
    result = run_cli("convert", ESTIMATOR, "-o", out, "--to", "tf-object")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"wrote {out}: 15 tensors")  # 13 variables, the graph, the save_counter
    source = _read(ESTIMATOR)
    with formats.open_checkpoint(out) as ckpt:
        assert ckpt.format == "tf-object"
        names = {ckpt[k].name: k for k in ckpt if k != "_CHECKPOINTABLE_OBJECT_GRAPH"}
        assert names.pop("save_counter") == "save_counter" + VV
        assert ckpt["save_counter" + VV].read().tolist() == 1 and ckpt["save_counter" + VV].dtype == "int64"
        assert sorted(names) == sorted(source)
        for name, key in names.items():
            assert ckpt[key].read().tobytes() == source[name].tobytes()
        assert names["dnn/hiddenlayer_0/kernel"] == "dnn/hiddenlayer_0/kernel" + VV
        assert names["dnn/logits/bias/Adagrad"] == "dnn/logits/bias/.OPTIMIZER_SLOT/optimizer/accumulator" + VV
        assert names["global_step"] == "global_step" + VV
        assert ckpt[names["dnn/logits/bias/Adagrad"]].role == "slot"


def test_generic_graph_mirrors_tensorflow(tmp_path):
    out = tmp_path / "ckpt"
    from formats.ops.convert.name_to_object import plan_name_to_object
    from formats.ops.convert.plan import ConvertOptions, execute_plan

    with formats.open_checkpoint(ADAM) as src:
        execute_plan(plan_name_to_object(src, ConvertOptions()), str(out))
    graph = _graph(out)
    paths = [graph.path(n.id) for n in graph.nodes]
    assert paths[:8] == ["", "dnn", "global_step", "optimizer", "save_counter", "dnn/hiddenlayer_0",
                         "dnn/hiddenlayer_1", "dnn/logits"]
    optimizer = graph.nodes[3]
    assert [c.local_name for c in optimizer.children] == ["beta1_power", "beta2_power"]
    slots = {(graph.path(s.original_variable_node_id), s.slot_name): graph.path(s.slot_variable_node_id)
             for s in optimizer.slot_variables}
    assert len(slots) == 12
    assert slots[("dnn/logits/kernel", "v")] == "dnn/logits/kernel/.OPTIMIZER_SLOT/optimizer/v"
    assert [s.slot_name for s in optimizer.slot_variables] == ["m"] * 6 + ["v"] * 6
    assert all(n.has_checkpoint_values for n in graph.nodes)
    slot_nodes = [s.slot_variable_node_id for s in optimizer.slot_variables]
    assert slot_nodes == list(range(len(graph.nodes) - 12, len(graph.nodes)))  # slots numbered last
    assert graph.nodes[slot_nodes[0]].attributes[0].full_name == "dnn/hiddenlayer_0/bias/Adam"


def test_adam_round_trip_through_tf_name_with_tf1_slot_names(run_cli, tmp_path):
    obj, back = tmp_path / "obj" / "ckpt", tmp_path / "back" / "model.ckpt"
    assert run_cli("convert", ADAM, "-o", obj, "--to", "tf-object").exit_code == 0
    result = run_cli("convert", obj, "-o", back, "--to", "tf-name", "--slot-names", "tf1")
    assert result.exit_code == 0, result.output
    source, got = _read(ADAM), _read(back)
    assert got.pop("save_counter").tolist() == 1  # the object-based step's save_counter, kept by name
    assert sorted(got) == sorted(source) and all(got[k].tobytes() == source[k].tobytes() for k in source)
    with formats.open_checkpoint(back) as ckpt:
        assert ckpt.format == "tf-name" and len(ckpt) == 22


def test_partitioned_variable_is_written_whole(run_cli, tmp_path):
    out = tmp_path / "ckpt"
    assert run_cli("convert", PARTITIONED, "-o", out, "--to", "tf-object").exit_code == 0
    whole = _read(PARTITIONED)["input_layer/embedding/weights"]
    got = _read(out)
    assert got["input_layer/embedding/weights" + VV].shape == (97, 8)
    np.testing.assert_array_equal(got["input_layer/embedding/weights" + VV], whole)
    assert got["input_layer/embedding/weights/.OPTIMIZER_SLOT/optimizer/accumulator" + VV].shape == (97, 8)


def test_generic_refuses_object_based_source(run_cli, tmp_path):
    result = run_cli("convert", SLOTS, "-o", tmp_path / "x", "--to", "tf-object")
    assert result.exit_code == 1
    assert "already object-based" in result.stderr
    assert not list(tmp_path.iterdir())


def test_generic_with_rules_names_and_unused_rule(run_cli, tmp_path):
    out = tmp_path / "ckpt"
    result = run_cli("convert", ESTIMATOR, "-o", out, "--to", "tf-object", "--map", "dnn=model", "--map", "nope=x",
                     "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["written"]["tensors"] == 15 and data["ok"] is True
    assert [p["key"] for p in data["problems"]] == ["--map nope=x"]
    assert {r["key"] for r in data["rows"]} >= {"model/logits/kernel" + VV, "global_step" + VV}
    with formats.open_checkpoint(out) as ckpt:
        assert ckpt["model/logits/kernel" + VV].name == "model/logits/kernel"


# --- onto a template --------------------------------------------------------------------------

def test_template_conversion_values_and_keys(run_cli, tmp_path):
    template = keras_like_template(tmp_path / "t" / "ckpt", 10)
    out = tmp_path / "out" / "ckpt"
    result = run_cli("convert", ESTIMATOR, "-o", out, "--to", "tf-object", "--template", template, *MAPS)
    assert result.exit_code == 0, result.output
    source, got = _read(ESTIMATOR), _read(out)
    assert sorted(got) == sorted(_read(template))
    for i, scope in enumerate(["dnn/hiddenlayer_0", "dnn/hiddenlayer_1", "dnn/logits"]):
        for name in ("kernel", "bias"):
            np.testing.assert_array_equal(got[f"layer_with_weights-{i}/{name}{VV}"], source[f"{scope}/{name}"])
    with formats.open_checkpoint(out) as o, formats.open_checkpoint(template) as t:
        assert o["_CHECKPOINTABLE_OBJECT_GRAPH"].read() == t["_CHECKPOINTABLE_OBJECT_GRAPH"].read()
    # the problems: every Adagrad slot and global_step are unused (warnings): one line, each with --verbose
    lines = result.stdout.splitlines()
    assert lines[0] == ("warning: unused: 7 keys like dnn/hiddenlayer_0/bias/Adagrad: not used (as dense/bias/Adagrad, "
                        "slot, [10])")
    assert lines[1] == "--verbose (or --json) lists every problem and the keys behind each"
    verbose = run_cli("convert", ESTIMATOR, "-o", tmp_path / "out2" / "ckpt", "--to", "tf-object", "--template",
                      template, *MAPS, "--verbose").stdout.splitlines()
    assert [line.split(": ")[2] for line in verbose if line.startswith("warning: unused: ")] == [
        f"{scope}/{name}/Adagrad" for scope in ("dnn/hiddenlayer_0", "dnn/hiddenlayer_1", "dnn/logits")
        for name in ("bias", "kernel")] + ["global_step"]


def test_mismatch_report_golden(run_cli, tmp_path):
    template = keras_like_template(tmp_path / "t" / "ckpt", 20)
    out = tmp_path / "out" / "ckpt"
    result = run_cli("convert", ESTIMATOR, "-o", out, "--to", "tf-object", "--template", template, *MAPS)
    assert result.exit_code == 1
    assert result.stdout == (GOLDEN.parent / (GOLDEN.name + ".stdout.txt")).read_text()
    assert result.stderr == (GOLDEN.parent / (GOLDEN.name + ".stderr.txt")).read_text()
    assert not (tmp_path / "out").exists()


def test_missing_and_allow_missing(run_cli, tmp_path):
    template = keras_like_template(tmp_path / "t" / "ckpt", 10)
    maps = MAPS[:4]  # no rule for the logits: dense_2/* has no source
    out = tmp_path / "out" / "ckpt"
    result = run_cli("convert", ESTIMATOR, "-o", out, "--to", "tf-object", "--template", template, *maps, "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    missing = [p for p in data["problems"] if p["kind"] == "missing"]
    assert [(p["key"], p["severity"]) for p in missing] == [
        ("layer_with_weights-2/bias" + VV, "error"), ("layer_with_weights-2/kernel" + VV, "error")]
    assert missing[1]["message"] == "no source tensor named 'dense_2/kernel'"
    assert missing[1]["candidates"] == ["dnn/logits/kernel [10, 3]"]
    assert not out.parent.exists()
    result = run_cli("convert", ESTIMATOR, "-o", out, "--to", "tf-object", "--template", template, *maps,
                     "--allow-missing")
    assert result.exit_code == 0, result.output
    np.testing.assert_array_equal(_read(out)["layer_with_weights-2/kernel" + VV],
                                  _read(template)["layer_with_weights-2/kernel" + VV])


def test_shape_mismatch_lists_same_shape_candidates(run_cli, tmp_path):
    template = keras_like_template(tmp_path / "t" / "ckpt", 10)
    # swapped: hiddenlayer_1 [10, 10] is asked for dense/kernel [4, 10]
    result = run_cli("convert", ESTIMATOR, "-o", tmp_path / "o", "--to", "tf-object", "--template", template,
                     "--map", "dnn/hiddenlayer_1=dense", "--map", "dnn/hiddenlayer_0=dense_1",
                     "--map", "dnn/logits=dense_2", "--json")
    assert result.exit_code == 1
    problems = {(p["kind"], p["key"]): p for p in json.loads(result.stdout)["problems"]}
    kernel = problems[("shape", "layer_with_weights-0/kernel" + VV)]
    assert kernel["message"] == ("dense/kernel <- dnn/hiddenlayer_1/kernel: shape [10, 10] does not match the "
                                 "template's [4, 10]")
    assert kernel["candidates"] == ["dnn/hiddenlayer_0/kernel [4, 10]"]
    assert ("shape", "layer_with_weights-1/kernel" + VV) in problems


def test_dtype_mismatch(run_cli, tmp_path):
    template = keras_like_template(tmp_path / "t" / "ckpt", 10, dtype="float64")
    result = run_cli("convert", ESTIMATOR, "-o", tmp_path / "o", "--to", "tf-object", "--template", template,
                     *MAPS, "--json")
    kinds = [p["kind"] for p in json.loads(result.stdout)["problems"] if p["severity"] == "error"]
    assert kinds == ["dtype"] * 6
    assert result.exit_code == 1


def test_template_slots_follow_their_variables(run_cli, tmp_path):
    """ckpt-5 -> names with TF1 slot names -> back onto ckpt-5 as template: the very same tensors."""
    names = tmp_path / "names" / "model.ckpt"
    assert run_cli("convert", SLOTS, "-o", names, "--to", "tf-name", "--slot-names", "tf1").exit_code == 0
    assert "net/dense/kernel/Adam_1" in _read(names)
    back = tmp_path / "back" / "ckpt"
    result = run_cli("convert", names, "-o", back, "--to", "tf-object", "--template", SLOTS, "--dry-run")
    rows = [line.split()[:2] for line in result.stdout.splitlines()]
    assert ["net/dense/kernel/Adam_1", "net/l1/kernel/.OPTIMIZER_SLOT/optimizer/v" + VV] in rows
    assert not back.parent.exists()
    result = run_cli("convert", names, "-o", back, "--to", "tf-object", "--template", SLOTS)
    assert result.exit_code == 0, result.output
    assert run_cli("verify", back, "--against", SLOTS).exit_code == 0


def test_template_must_be_object_based(run_cli, tmp_path):
    result = run_cli("convert", ESTIMATOR, "-o", tmp_path / "o", "--to", "tf-object", "--template", ADAM)
    assert result.exit_code == 3
    assert "not an object-based checkpoint" in result.stderr


# --- object -> name ---------------------------------------------------------------------------

def test_to_tf_name_keys(run_cli, tmp_path):
    out = tmp_path / "model.ckpt"
    result = run_cli("convert", SLOTS, "-o", out, "--to", "tf-name")
    assert result.exit_code == 0, result.output
    got = _read(out)
    assert sorted(got) == sorted([
        "Adam/beta_1", "Adam/beta_2", "Adam/decay", "Adam/iter", "Adam/learning_rate", "Variable",
        "iterator/ITERATOR_STATE", "net/dense/bias", "net/dense/bias/m", "net/dense/bias/v", "net/dense/kernel",
        "net/dense/kernel/m", "net/dense/kernel/v", "save_counter"])
    source = _read(SLOTS)
    assert got["net/dense/kernel/v"].tobytes() == source["net/l1/kernel/.OPTIMIZER_SLOT/optimizer/v" + VV].tobytes()
    assert "fallback" in result.stdout and "unnamed variable" in result.stdout


def test_to_tf_name_duplicate_full_names_fall_back_to_paths(run_cli, tmp_path):
    builder = GraphBuilder()
    a, b = builder.object(["a"]), builder.object(["b"])
    ka, kb = builder.variable(a, "Variable"), builder.variable(b, "Variable")
    src = tmp_path / "src" / "ckpt"
    formats.write_checkpoint(str(src), {ka: np.arange(3, dtype=np.float32), kb: np.ones(2, np.int64)},
                             builder.encode())
    out = tmp_path / "out" / "ckpt"
    result = run_cli("convert", src, "-o", out, "--to", "tf-name", "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert [(p["kind"], p["key"], p["candidates"]) for p in data["problems"]] == [
        ("duplicate-name", "Variable", [ka, kb])]
    assert sorted(_read(out)) == ["a", "b"]


def test_to_tf_name_refuses_name_based_source(run_cli, tmp_path):
    result = run_cli("convert", ESTIMATOR, "-o", tmp_path / "o", "--to", "tf-name")
    assert result.exit_code == 1 and "already name-based" in result.stderr


# --- refusals and state file ------------------------------------------------------------------

def test_refuses_existing_output_and_input(run_cli, tmp_path, corpus_copy):
    out = tmp_path / "o" / "ckpt"
    assert run_cli("convert", ESTIMATOR, "-o", out, "--to", "tf-object").exit_code == 0
    before = (out.parent / "ckpt.index").read_bytes()
    result = run_cli("convert", ADAM, "-o", out, "--to", "tf-object")
    assert result.exit_code == 4 and "output checkpoint exists" in result.stderr
    assert (out.parent / "ckpt.index").read_bytes() == before
    assert run_cli("convert", ADAM, "-o", out, "--to", "tf-object", "--force").exit_code == 0
    copy = corpus_copy("tf1_adam") / "model.ckpt-200"
    result = run_cli("convert", copy, "-o", copy, "--to", "tf-object", "--force")
    assert result.exit_code == 4 and "which is being read" in result.stderr


def test_dry_run_writes_nothing_and_update_state(run_cli, tmp_path):
    out = tmp_path / "o" / "ckpt-7"
    result = run_cli("convert", ESTIMATOR, "-o", out, "--to", "tf-object", "--dry-run")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["SOURCE", "KEY", "SHAPE", "DTYPE", "NOTE"]
    assert ["dnn/logits/kernel/Adagrad", "dnn/logits/kernel/.OPTIMIZER_SLOT/optimizer/accumulator" + VV, "[10,",
            "3]", "float32", "slot", "accumulator", "of", "dnn/logits/kernel"] in [line.split() for line in lines]
    assert lines[-1] == "dry run: 15 tensors would be written (tf-object); 0 errors, 0 warnings"
    assert not out.parent.exists()
    assert run_cli("convert", ESTIMATOR, "-o", out, "--to", "tf-object", "--update-state").exit_code == 0
    state = (out.parent / "checkpoint").read_text()
    assert state.splitlines()[0] == 'model_checkpoint_path: "ckpt-7"'


def test_unreadable_source_exits_3(run_cli, tmp_path):
    result = run_cli("convert", tmp_path / "nothing", "-o", tmp_path / "o", "--to", "tf-object")
    assert result.exit_code == 3


@pytest.mark.parametrize("target", ["tf-object", "tf-name"])
def test_targets_table_resolves(target):
    from formats.ops.convert.targets import planner as target_function

    assert callable(target_function(target))


def test_problems_are_one_line_each_at_80_columns(tmp_path):
    """Issue 24, item 11: the problem table was 250+ characters wide, wrapped into 30+ lines at 80 columns with
    keys broken mid-word, and its CANDIDATES column listed unused source keys. Now one line per problem (a key
    never cut), the keys behind a problem under --verbose. Through the shipped entry point, on a terminal."""
    import os
    import subprocess
    import sys

    source = CORPUS / "keras2_tagger/tagger_tf/ckpt"
    env = {**os.environ, "COLUMNS": "80", "CKPT_FORCE_RICH": "1", "NO_COLOR": "1"}
    argv = [sys.executable, "-m", "ckpt_cli", "convert", str(source), "-o", str(tmp_path / "k.h5"), "--to",
            "keras2-h5"]
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    problems = [line for line in lines if line.startswith("warning: ")]
    assert problems == [
        "warning: unused: object_graph: 1 object_graph tensor(s) of the source left out (Keras 2 .h5 weights files "
        "hold model weights only)",
        "warning: unused: optimizer: 2 optimizer tensor(s) of the source left out (Keras 2 .h5 weights files hold "
        "model weights only)",
        "warning: unused: slot: 20 slot tensor(s) of the source left out (Keras 2 .h5 weights files hold model "
        "weights only)",
        "warning: fallback: layer_with_weights-3: the weights of 'layer_with_weights-3' share no layer name (dense, "
        "dense_1); its group is named 'layer_with_weights-3' (tf-keras loads .h5 weights by order, so load_weights "
        "is unaffected; by_name=True is not)"]
    assert "--verbose (or --json) lists every problem and the keys behind each" in lines
    assert "optimizer/_variables/1/.ATTRIBUTES/VARIABLE_VALUE" not in done.stdout
    verbose = subprocess.run(argv + ["--verbose", "--force"], capture_output=True, text=True, env=env).stdout
    with formats.open_checkpoint(source) as ckpt:
        slots = sorted(k for k in ckpt if ckpt[k].role == "slot")
    listed = verbose.splitlines()
    at = listed.index(problems[2])
    assert listed[at + 1:at + 1 + len(slots)] == [f"    {k}" for k in slots]
