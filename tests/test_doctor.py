"""`ckpt doctor`: width mismatches against 8- and 20-unit templates, renames turned into a rules file that
`ckpt diff --rules` then accepts, optimizer notes, exit codes."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from formats import write_checkpoint
from formats.ops.inspect.doctor import diagnose, is_optimizer_state

from .conftest import CORPUS, MANIFEST
from .test_diff import GOLDEN, memory_checkpoint, read_all

EST200, ADAM200 = "tf1_estimator/model.ckpt-200", "tf1_adam/model.ckpt-200"
WIDE = {"dnn/hiddenlayer_0/bias": [10], "dnn/hiddenlayer_0/kernel": [4, 10], "dnn/hiddenlayer_1/bias": [10],
        "dnn/hiddenlayer_1/kernel": [10, 10], "dnn/logits/kernel": [10, 3]}


def _template_20(tmp_path: Path) -> Path:
    """The estimator's variables, written with 20-unit hidden layers (what a wider model would save)."""
    shapes = {k: [20 if d == 10 else d for d in v["shape"]] for k, v in MANIFEST[EST200]["tensors"].items()}
    values = read_all(EST200)
    prefix = tmp_path / "wide" / "model.ckpt-1"
    write_checkpoint(prefix, {k: np.zeros(shapes[k], values[k].dtype) for k in values})
    return prefix


def test_estimator_against_a_20_unit_template(run_cli, tmp_path):
    template = _template_20(tmp_path)
    rules = tmp_path / "fix.json"
    result = run_cli("doctor", "--json", CORPUS / EST200, "--against", template, "--write-rules", rules)
    assert result.exit_code == 1, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["would_load"], doc["missing"], doc["unexpected"], doc["suggestions"]) == (False, [], [], [])
    wide = {**WIDE, **{f"{k}/Adagrad": v for k, v in WIDE.items()}}
    assert [(m["name"], m["ckpt"]["shape"], m["target"]["shape"]) for m in doc["mismatched"]] == \
        sorted((k, v, [20 if d == 10 else d for d in v]) for k, v in wide.items())
    assert doc["notes"] == ["10 variables differ in shape (different layer sizes?); no rename can fix that"]
    assert json.loads(rules.read_text()) == {"rules": []}


def test_estimator_against_the_8_unit_adam_run(run_cli, tmp_path):
    result = run_cli("doctor", "--json", CORPUS / EST200, "--against", CORPUS / ADAM200)
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    ka, kb = set(MANIFEST[EST200]["tensors"]), set(MANIFEST[ADAM200]["tensors"])
    assert [m["name"] for m in doc["missing"]] == sorted(kb - ka)
    assert [m["name"] for m in doc["unexpected"]] == sorted(ka - kb)
    assert {m["name"]: (m["ckpt"]["shape"], m["target"]["shape"]) for m in doc["mismatched"]} == \
        {k: (v, [8 if d == 10 else d for d in v]) for k, v in WIDE.items()}
    assert doc["suggestions"] == [] and doc["rules"] == []  # Adagrad accumulators are not Adam slots
    assert doc["notes"][1] == ("optimizer differs: the checkpoint has Adagrad slots, the target expects Adam, "
                               "Adam_1; restore the model variables only (--ignore-optimizer shows them)")
    model_only = json.loads(run_cli("doctor", "--json", "--ignore-optimizer", CORPUS / EST200, "--against",
                                    CORPUS / ADAM200).stdout)
    assert (model_only["missing"], model_only["unexpected"], len(model_only["mismatched"])) == ([], [], 5)


def test_golden_doctor_table(run_cli, monkeypatch):
    monkeypatch.chdir(CORPUS)
    result = run_cli("doctor", EST200, "--against", ADAM200)
    assert result.stdout == (GOLDEN / "doctor_widths.txt").read_text()


def _renamed(tmp_path: Path) -> Path:
    values = read_all(EST200)
    renames = {"dnn/hiddenlayer_0/kernel": "dnn/hiddenlayer_0/weights", "dnn/hiddenlayer_0/bias": "dnn/hiddenlayer_0/biases"}

    def rename(key: str) -> str:
        for old, new in renames.items():
            if key == old or key.startswith(old + "/"):
                return new + key[len(old):]
        return key.replace("dnn/logits/", "dnn/output/")

    prefix = tmp_path / "old" / "model.ckpt-200"
    write_checkpoint(prefix, {rename(k): v for k, v in values.items()})
    return prefix


def test_renames_become_a_rules_file_that_diff_accepts(run_cli, tmp_path):
    old = _renamed(tmp_path)
    rules = tmp_path / "fix.json"
    result = run_cli("doctor", "--json", old, "--against", CORPUS / EST200, "--write-rules", rules)
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert len(doc["missing"]) == 8 and doc["mismatched"] == [] and doc["fixed_by_rules"] == 8
    reasons = {s["candidate"]: (s["missing"], s["reason"].split(" (")[0]) for s in doc["suggestions"]}
    assert reasons["dnn/hiddenlayer_0/weights"] == ("dnn/hiddenlayer_0/kernel", "known rename")
    assert reasons["dnn/hiddenlayer_0/biases/Adagrad"] == ("dnn/hiddenlayer_0/bias/Adagrad", "known rename")
    assert reasons["dnn/output/kernel"] == ("dnn/logits/kernel",
                                            "whole scope dnn/output -> dnn/logits: same variables, shapes and dtypes")
    assert reasons["dnn/output/kernel/Adagrad"] == ("dnn/logits/kernel/Adagrad", "slot of dnn/output/kernel, follows it")
    assert json.loads(rules.read_text()) == {"rules": [
        {"map": ["dnn/hiddenlayer_0/biases", "dnn/hiddenlayer_0/bias"]},
        {"map": ["dnn/hiddenlayer_0/weights", "dnn/hiddenlayer_0/kernel"]},
        {"map": ["dnn/output", "dnn/logits"]}]}
    check = run_cli("diff", "--json", "--rules", rules, old, CORPUS / EST200)
    assert check.exit_code == 0, check.stdout
    assert json.loads(check.stdout)["same"] == 13
    again = run_cli("doctor", old, "--against", CORPUS / EST200, "--write-rules", rules)
    assert again.exit_code == 4 and "rules file exists" in again.stderr


def test_would_load_exits_0(run_cli):
    result = run_cli("doctor", CORPUS / EST200, "--against", CORPUS / "tf1_estimator/model.ckpt-1")
    assert result.exit_code == 0
    assert result.stdout.endswith("would load into " + str(CORPUS / "tf1_estimator/model.ckpt-1") +
                                  ": 0 missing, 0 mismatched, 0 unexpected\n")


def test_object_based_conversion_would_load_into_the_name_based_original(run_cli, tmp_path):
    from .test_diff import _generic_object_conversion

    converted = _generic_object_conversion(EST200, tmp_path / "obj" / "ckpt-1")
    result = run_cli("doctor", "--json", converted, "--against", CORPUS / EST200)
    assert result.exit_code == 0, result.stdout
    doc = json.loads(result.stdout)
    assert (doc["missing"], doc["unexpected"], doc["mismatched"]) == ([], [], [])


def test_object_slots_are_not_paired_with_variables():
    z = np.zeros(3, np.float32)
    ckpt = memory_checkpoint("c", {"k1": z}, names={"k1": "Adam/net/dense/kernel/m"})
    ckpt["k1"].role = "slot"
    target = memory_checkpoint("t", {"k2": z}, names={"k2": "Adam/net/dense/kernel/mm"})
    assert diagnose(ckpt, target).suggestions == []
    target["k2"].role = "slot"
    assert [s.candidate for s in diagnose(ckpt, target).suggestions] == ["Adam/net/dense/kernel/m"]
    assert diagnose(ckpt, target, ignore_optimizer=True).unexpected == []


def test_names_not_keys_are_compared():
    ckpt = memory_checkpoint("c", {"dense/kernel": np.zeros((2, 3), np.float32)})
    target = memory_checkpoint("t", {"model/layer/kernel/.ATTRIBUTES/VARIABLE_VALUE": np.zeros((2, 3), np.float32),
                                     "_CHECKPOINTABLE_OBJECT_GRAPH": np.array(b"g", dtype=object)},
                               names={"model/layer/kernel/.ATTRIBUTES/VARIABLE_VALUE": "dense/kernel"})
    assert diagnose(ckpt, target).would_load


def test_slot_pairing_and_optimizer_names():
    assert is_optimizer_state("dense/kernel/Adam_1") and is_optimizer_state("beta1_power")
    assert is_optimizer_state("net/l1/kernel/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE")
    assert not is_optimizer_state("dense/kernel") and not is_optimizer_state("Adam")
    z = np.zeros(3, np.float32)
    ckpt = memory_checkpoint("c", {"a/weights": z, "a/weights/Adam": z, "b/w": z})
    target = memory_checkpoint("t", {"a/kernel": z, "a/kernel/Momentum": z, "b/wx": z})
    report = diagnose(ckpt, target)
    assert [(s.candidate, s.missing) for s in report.suggestions] == [("a/weights", "a/kernel"), ("b/w", "b/wx")]
    assert [str(r) for r in report.rules] == ["--map a/weights=a/kernel", "--map b/w=b/wx"]


# -- scope-consistent suggestions and rules that convert applies ---------------------------------------
DNN10 = {"dense": {"kernel": (4, 10), "bias": (10,)}, "dense_1": {"kernel": (10, 10), "bias": (10,)},
         "dense_2": {"kernel": (10, 3), "bias": (3,)}}
SCOPES = [{"map": ["dnn/hiddenlayer_0", "dense"]}, {"map": ["dnn/hiddenlayer_1", "dense_1"]},
          {"map": ["dnn/logits", "dense_2"]}]


def test_estimator_against_tf_keras_templates_rules_that_convert_applies(run_cli, tmp_path):
    from .keras_templates import tf_keras_checkpoint

    for legacy in (False, True):
        template = tmp_path / f"tpl{legacy}" / "ckpt"
        tf_keras_checkpoint(template, DNN10, "Adagrad", ["accumulator"], legacy=legacy)
        rules = tmp_path / f"fix{legacy}.json"
        result = run_cli("doctor", "--json", CORPUS / EST200, "--against", template, "--write-rules", rules)
        assert result.exit_code == 1, result.output
        doc = json.loads(result.stdout)
        assert json.loads(rules.read_text()) == {"rules": SCOPES}
        pairs = {(s["candidate"], s["missing"]) for s in doc["suggestions"]}
        assert pairs == {(f"{old}/{leaf}", f"{new}/{leaf}") for (old, new) in (r["map"] for r in SCOPES)
                         for leaf in ("kernel", "bias")}
        assert len(doc["optimizer_state"]) == 6 and "convert --template" in doc["notes"][-1]
        out = tmp_path / f"out{legacy}" / "ckpt"
        converted = run_cli("convert", CORPUS / EST200, "-o", out, "--to", "tf-object", "--template", template,
                            "--rules", rules)
        assert converted.exit_code == 0, converted.output
        assert "0 errors, 0 warnings" in converted.stdout
        check = json.loads(run_cli("diff", "--json", "--match", "name", "--rules", rules, CORPUS / EST200, out,
                                   "-f", "dense*").stdout)
        assert (check["changed"], check["same"]) == ([], 6)


def test_whole_scopes_not_same_shaped_tensors_of_other_layers():
    """Both biases are [10] and hidden_1's kernel is the only [10, 10]: a name-by-name pairing puts
    hiddenlayer_0's bias on dense_1; scopes pair whole, and the rules are one per scope."""
    f = np.float32
    ckpt = memory_checkpoint("c", {"dnn/hiddenlayer_0/kernel": np.zeros((4, 10), f),
                                   "dnn/hiddenlayer_0/bias": np.zeros(10, f),
                                   "dnn/hiddenlayer_1/kernel": np.zeros((10, 10), f),
                                   "dnn/hiddenlayer_1/bias": np.zeros(10, f)})
    target = memory_checkpoint("t", {"dense/kernel": np.zeros((4, 10), f), "dense/bias": np.zeros(10, f),
                                     "dense_1/kernel": np.zeros((10, 10), f), "dense_1/bias": np.zeros(10, f)})
    report = diagnose(ckpt, target)
    assert sorted((s.candidate, s.missing) for s in report.suggestions) == [
        ("dnn/hiddenlayer_0/bias", "dense/bias"), ("dnn/hiddenlayer_0/kernel", "dense/kernel"),
        ("dnn/hiddenlayer_1/bias", "dense_1/bias"), ("dnn/hiddenlayer_1/kernel", "dense_1/kernel")]
    assert [str(r) for r in report.rules] == ["--map dnn/hiddenlayer_0=dense", "--map dnn/hiddenlayer_1=dense_1"]
    assert report.fixed_by_rules == 4


def test_alike_scopes_pair_in_natural_order():
    z = np.zeros((10, 10), np.float32)
    ckpt = memory_checkpoint("c", {f"tower/layer_{i}/kernel": z for i in (2, 10, 1)})
    target = memory_checkpoint("t", {f"model/dense_{i}/kernel": z for i in (3, 11, 20)})
    report = diagnose(ckpt, target)
    assert [str(r) for r in report.rules] == ["--map tower/layer_1=model/dense_3", "--map tower/layer_2=model/dense_11",
                                              "--map tower/layer_10=model/dense_20"]
    assert report.suggestions[0].reason.endswith("3 scopes alike, paired in order")


def test_unique_shapes_are_suggested_without_similar_names():
    f = np.float32
    ckpt = memory_checkpoint("c", {"enc/w": np.zeros((3, 4), f), "enc/q": np.zeros(7, f), "misc/z": np.zeros(5, f),
                                   "misc/y": np.zeros(5, f)})
    target = memory_checkpoint("t", {"first/kernel": np.zeros((3, 4), f), "other/table": np.zeros(7, f),
                                     "u/a": np.zeros(5, f), "u/b": np.zeros(5, f)})
    report = diagnose(ckpt, target)
    assert [(s.candidate, s.missing, s.reason) for s in report.suggestions] == [
        ("enc/w", "first/kernel", "the only unpaired variable of this shape and dtype on each side")]
    # enc's other variable goes nowhere but to first/ (scope-consistency), and [5] is ambiguous
    assert report.missing == ["first/kernel", "other/table", "u/a", "u/b"]
