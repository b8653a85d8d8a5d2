"""``ckpt convert --to hf`` of BERTs fine-tuned by google-research/bert's own scripts (issue 37): run_classifier.py's
top-level ``output_weights`` [num_labels, hidden] / ``output_bias`` as ``BertForSequenceClassification`` with
``num_labels`` from the shape, run_squad.py's ``cls/squad/output_weights`` [2, hidden] / ``output_bias`` as
``BertForQuestionAnswering`` (which has no pooler: the checkpoint's is left out by name); and Model Garden's
``BertPretrainerV2`` checkpoint (``encoder/...`` + ``masked_lm/...``, made by tf-models-official itself) as
``BertForMaskedLM``; and google-research/albert's run_classifier.py checkpoint (the same top-level head) as
``AlbertForSequenceClassification``.

The checkpoints are ``tests/data/hf/bert_classifier``, ``bert_squad`` and ``bert_tf2_pretrainer`` (real TensorFlow, the scripts' variable
names, AdamWeightDecayOptimizer slots; ``generators/make_originals_a.py``). Their golden state dicts (transformers
4.x's ``load_tf_weights_in_bert``) are checked bitwise by ``tests/test_hf_convert.py`` and, loaded by transformers
5, by ``tests/interop/test_hf_transformers5.py``; here: the plan, exactly (numpy only), and bad input.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import formats

HF_DATA = Path(__file__).parent / "data" / "hf"
H, FF, LAYERS = 16, 24, 2
LAYER_PARAMS = {"attention.self.query.weight": [H, H], "attention.self.query.bias": [H],
                "attention.self.key.weight": [H, H], "attention.self.key.bias": [H],
                "attention.self.value.weight": [H, H], "attention.self.value.bias": [H],
                "attention.output.dense.weight": [H, H], "attention.output.dense.bias": [H],
                "attention.output.LayerNorm.weight": [H], "attention.output.LayerNorm.bias": [H],
                "intermediate.dense.weight": [FF, H], "intermediate.dense.bias": [FF],
                "output.dense.weight": [H, FF], "output.dense.bias": [H],
                "output.LayerNorm.weight": [H], "output.LayerNorm.bias": [H]}
ENCODER = {"bert.embeddings.word_embeddings.weight": [50, H], "bert.embeddings.position_embeddings.weight": [32, H],
           "bert.embeddings.token_type_embeddings.weight": [2, H], "bert.embeddings.LayerNorm.weight": [H],
           "bert.embeddings.LayerNorm.bias": [H],
           **{f"bert.encoder.layer.{n}.{k}": s for n in range(LAYERS) for k, s in LAYER_PARAMS.items()}}
POOLER = {"bert.pooler.dense.weight": [H, H], "bert.pooler.dense.bias": [H]}


def _plan(run_cli, src: Path, *extra: str) -> dict:
    result = run_cli("convert", src, "-o", src.parent / "never", "--to", "hf", "--dry-run", "--json", *extra)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _copy(tmp_path: Path, case: str, change: dict[str, np.ndarray | None]) -> Path:
    """The case's checkpoint rewritten by ckpt with ``change`` (name -> new value, or None to remove it)."""
    with formats.open_checkpoint(HF_DATA / case / "model.ckpt-3") as ckpt:
        tensors = {k: ckpt[k].read() for k in ckpt if k != "_CHECKPOINTABLE_OBJECT_GRAPH"}
    for name, new in change.items():
        if new is None:
            tensors.pop(name)
        else:
            tensors[name] = new
    folder = tmp_path / case
    folder.mkdir()
    (folder / "bert_config.json").write_bytes((HF_DATA / case / "bert_config.json").read_bytes())
    formats.write_checkpoint(str(folder / "model.ckpt-3"), tensors)
    return folder / "model.ckpt-3"


def test_run_classifier_checkpoint_plans_a_sequence_classifier_with_num_labels_from_the_shape(run_cli) -> None:
    plan = _plan(run_cli, HF_DATA / "bert_classifier" / "model.ckpt-3")
    assert plan["details"]["class"] == "BertForSequenceClassification" and plan["details"]["layout"] == "tf1"
    rows = {r["key"]: r for r in plan["rows"]}
    want = {**ENCODER, **POOLER, "classifier.weight": [3, H], "classifier.bias": [3]}
    assert {k: r["shape"] for k, r in rows.items()} == want
    assert rows["classifier.weight"]["source"] == "output_weights" and rows["classifier.weight"]["transform"] is None
    assert rows["classifier.bias"]["source"] == "output_bias"
    config = plan["details"]["config"]
    assert config["num_labels"] == 3 and config["architectures"] == ["BertForSequenceClassification"]
    problems = {(p["kind"], p["key"]): p for p in plan["problems"]}
    assert problems[("config", "num_labels")]["message"] == "num_labels = 3 from the shape of output_weights"
    slots = problems[("dropped", "{*}/{s:adam_m|adam_v}")]["candidates"]
    assert sorted(slots) == sorted(f"{r['source']}/{m}" for r in rows.values() for m in ("adam_m", "adam_v"))
    assert problems[("dropped", "global_step")]["candidates"] == ["global_step"]
    assert len(problems) == 3


def test_run_squad_checkpoint_plans_question_answering_and_drops_the_pooler_by_name(run_cli) -> None:
    plan = _plan(run_cli, HF_DATA / "bert_squad" / "model.ckpt-3")
    assert plan["details"]["class"] == "BertForQuestionAnswering"
    rows = {r["key"]: r for r in plan["rows"]}
    assert {k: r["shape"] for k, r in rows.items()} == {**ENCODER, "qa_outputs.weight": [2, H], "qa_outputs.bias": [2]}
    assert rows["qa_outputs.weight"]["source"] == "cls/squad/output_weights"
    assert rows["qa_outputs.weight"]["transform"] is None
    assert "num_labels" not in plan["details"]["config"]
    dropped = {p["key"]: p for p in plan["problems"] if p["kind"] == "dropped"}
    assert sorted(dropped["pooler"]["candidates"]) == ["bert/pooler/dense/bias", "bert/pooler/dense/kernel"]
    assert dropped["pooler"]["message"] == ("2 tensors left out: pooler parameters, which BertForQuestionAnswering "
                                            "does not have")


def test_model_garden_pretrainer_plans_a_masked_lm_from_the_heads_embedding_table(run_cli) -> None:
    plan = _plan(run_cli, HF_DATA / "bert_tf2_pretrainer" / "bert_model.ckpt")
    assert plan["details"]["class"] == "BertForMaskedLM" and plan["details"]["layout"] == "tf2-model-garden"
    rows = {r["key"]: r for r in plan["rows"]}
    head = {"cls.predictions.transform.dense.weight": [H, H], "cls.predictions.transform.dense.bias": [H],
            "cls.predictions.transform.LayerNorm.weight": [H], "cls.predictions.transform.LayerNorm.bias": [H],
            "cls.predictions.bias": [50]}
    assert {k: r["shape"] for k, r in rows.items()} == {**ENCODER, **head}
    v = "/.ATTRIBUTES/VARIABLE_VALUE"
    assert rows["bert.embeddings.word_embeddings.weight"]["source"] == "masked_lm/embedding_table" + v
    assert rows["cls.predictions.bias"]["source"] == "masked_lm/output_bias.Sbias" + v
    assert rows["cls.predictions.transform.dense.weight"]["transform"] == "transpose"
    assert rows["bert.encoder.layer.1.attention.self.query.weight"]["transform"] == "reshape + transpose"
    assert plan["details"]["tied"] == {"cls.predictions.decoder.weight": "bert.embeddings.word_embeddings.weight",
                                       "cls.predictions.decoder.bias": "cls.predictions.bias"}
    assert [(p["kind"], p["key"], sorted(p["candidates"])) for p in plan["problems"]] == [
        ("dropped", "pooler", ["encoder/layer_with_weights-6/bias" + v, "encoder/layer_with_weights-6/kernel" + v])]


def test_albert_run_classifier_checkpoint_plans_a_sequence_classifier(run_cli, tmp_path: Path) -> None:
    src = HF_DATA / "albert_classifier" / "model.ckpt-3"
    plan = _plan(run_cli, src)
    assert plan["details"]["class"] == "AlbertForSequenceClassification"
    assert plan["details"]["config"]["num_labels"] == 4
    rows = {r["key"]: r for r in plan["rows"]}
    assert len(rows) == 27 and (rows["classifier.weight"]["source"], rows["classifier.weight"]["shape"]) == (
        "output_weights", [4, H])
    assert (rows["classifier.bias"]["source"], rows["classifier.bias"]["shape"]) == ("output_bias", [4])
    assert [(p["kind"], p["key"]) for p in plan["problems"]] == [("config", "num_labels"), ("dropped", "global_step")]
    back = tmp_path / "back" / "model.ckpt"
    assert run_cli("convert", src, "-o", tmp_path / "hf", "--to", "hf").exit_code == 0
    assert run_cli("convert", tmp_path / "hf", "-o", back, "--to", "tf-name", "--family", "albert").exit_code == 0
    with formats.open_checkpoint(back) as restored, formats.open_checkpoint(src) as original:
        assert sorted(restored) == sorted(k for k in original if k != "global_step")
        assert all(restored[k].read().tobytes() == original[k].read().tobytes() for k in restored)


@pytest.mark.parametrize("case, ckpt, cls", [("bert", "bert_model.ckpt", "BertForPreTraining"),
                                              ("albert", "model.ckpt-best", "AlbertForPreTraining")])
def test_a_pretraining_checkpoint_gets_no_num_labels(run_cli, case: str, ckpt: str, cls: str) -> None:
    plan = _plan(run_cli, HF_DATA / case / ckpt)
    assert plan["details"]["class"] == cls and "num_labels" not in plan["details"]["config"]


@pytest.mark.parametrize("how", ["bias", "hparam", "squad", "missing-bias"])
def test_a_head_that_contradicts_itself_is_one_error_exit_1_nothing_written(run_cli, tmp_path: Path, how: str) -> None:
    rng = np.random.default_rng(0)
    case = "bert_squad" if how == "squad" else "bert_classifier"
    change: dict[str, np.ndarray | None] = {
        "bias": {"output_bias": rng.standard_normal(4).astype(np.float32)},
        "hparam": {},
        "squad": {"cls/squad/output_weights": rng.standard_normal((3, H)).astype(np.float32)},
        "missing-bias": {"output_bias": None, "output_bias/adam_m": None, "output_bias/adam_v": None},
    }[how]
    src = _copy(tmp_path, case, change)
    out = tmp_path / "out"
    result = run_cli("convert", src, "-o", out, "--to", "hf", *(["--hparam", "num_labels=5"] if how == "hparam" else []))
    assert result.exit_code == 1, result.output
    assert not out.exists() and not list(tmp_path.glob(".out*"))
    errors = [line for line in result.output.splitlines() if line.startswith("error")]
    expected = {
        "bias": "error: config: num_labels=3: the configuration contradicts the shapes: 'output_bias' [4] does not "
                "fit 'classifier.bias' [3] (candidates: output_bias)",
        "hparam": "error: config: num_labels=5: the configuration contradicts the shapes: 'output_bias' [3] does not "
                  "fit 'classifier.bias' [5] (and 1 more tensor) (candidates: output_bias; output_weights)",
        "squad": "error: config: hidden_size=16: the configuration contradicts the shapes: 'cls/squad/output_weights' "
                 "[3, 16] does not fit 'qa_outputs.weight' [2, 16] (candidates: cls/squad/output_weights)",
        "missing-bias": "error: missing: classifier.bias: parameter 'classifier.bias' [3] of "
                        "BertForSequenceClassification has no source tensor",
    }[how]
    assert errors == [expected]
