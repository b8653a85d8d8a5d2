"""Fine-tuned BERTs as google-research/bert's own scripts save them, and the oracle's answer for them.

    /work/oracle/bin/python tests/data/hf/generators/make_originals_a.py [checkpoints] [golden] [case ...]

(the oracle venv: tensorflow-cpu, torch==2.13.0 CPU, transformers 4.57.6; default: both steps, every case below).
Step ``checkpoints`` writes tests/data/hf/<case>/ with real TensorFlow (``tf.compat.v1.train.Saver``, as
TPUEstimator does), step ``golden`` writes tests/data/hf/golden/<case>/ with make_golden.py's own functions.

- ``bert_classifier``: what ``run_classifier.py`` leaves in its ``--output_dir``: ``model.ckpt-3`` + ``checkpoint``
  holding the BERT encoder (``bert/...``, pooler included), the classifier ``output_weights`` [num_labels, hidden]
  (already [out, in]) and ``output_bias`` [num_labels] at the top level, AdamWeightDecayOptimizer's ``adam_m`` /
  ``adam_v`` for each, ``global_step``; ``bert_config.json`` (which has no ``num_labels``: the script takes the
  label count from its data processor, here 3).
- ``bert_squad``: what ``run_squad.py`` leaves: the encoder (pooler included: modeling.BertModel always makes it,
  run_squad never uses it), ``cls/squad/output_weights`` [2, hidden], ``cls/squad/output_bias`` [2], the slots.

The oracle: transformers 4.57.6's ``load_tf_weights_in_bert`` **refuses both layouts** (recorded in oracle.json,
``loader_on_this_layout``): the top-level ``output_weights`` makes it ask the model itself for ``.weight``; for
``cls/squad/`` it asks ``BertForQuestionAnswering`` for ``.classifier`` (it has ``qa_outputs``), and it walks into
the pooler ``BertForQuestionAnswering`` does not have. So each golden case is made by that same loader from a
copy of the checkpoint re-saved by TensorFlow under the names the loader reads (``classifier/output_weights``;
``qa_outputs/output_weights``, the pooler left out; the slots left out), written to a temporary directory and not
kept; ``sources`` in oracle.json then traces every golden tensor to the committed checkpoint by value.
Config: ``BertConfig.from_json_file(bert_config.json)`` with ``num_labels`` of cases.json (the classifier's 3; the
QA head's 2 is transformers' default).
"""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import make_checkpoints as mc  # noqa: E402
import make_golden as mg  # noqa: E402
from tfwrite import clean, save_tf1, value, write_json  # noqa: E402

ROOT = HERE.parent
SMALL_BERT = {"attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
              "hidden_size": 16, "initializer_range": 0.02, "intermediate_size": 24,
              "max_position_embeddings": 32, "num_attention_heads": 2, "num_hidden_layers": 2,
              "type_vocab_size": 2, "vocab_size": 50}
"""Smaller than the ``bert`` case's (hidden 16): these cases hold a whole encoder each, under the hf data budget."""

CASES: dict[str, dict] = {
    "bert_classifier": {"family": "bert", "layout": "tf1-run-classifier", "checkpoint": "bert_classifier/model.ckpt-3",
                        "config": "bert_classifier/bert_config.json", "class": "BertForSequenceClassification",
                        "loader": "load_tf_weights_in_bert", "num_labels": 3,
                        "golden_made_by": "make_originals_a.py"},
    "bert_squad": {"family": "bert", "layout": "tf1-run-squad", "checkpoint": "bert_squad/model.ckpt-3",
                   "config": "bert_squad/bert_config.json", "class": "BertForQuestionAnswering",
                   "loader": "load_tf_weights_in_bert", "golden_made_by": "make_originals_a.py"},
}
SEEDS = {"bert_classifier": 11, "bert_squad": 12}
HEADS = {"bert_classifier": {"output_weights": [3, 16], "output_bias": [3]},
         "bert_squad": {"cls/squad/output_weights": [2, 16], "cls/squad/output_bias": [2]}}
RENAMED = {"bert_classifier": {"output_weights": "classifier/output_weights", "output_bias": "classifier/output_bias"},
           "bert_squad": {"cls/squad/output_weights": "qa_outputs/output_weights",
                          "cls/squad/output_bias": "qa_outputs/output_bias"}}
"""The names load_tf_weights_in_bert reads into the class's head (no transpose: output_weights is [out, in])."""


def model_tensors(case: str) -> dict:
    """The fine-tuned model's variables: the encoder of modeling.BertModel (no cls/ pretraining heads) + the head."""
    shapes = {n: s for n, s in mc.bert_shapes(SMALL_BERT).items() if n.startswith("bert/")}
    shapes.update(HEADS[case])
    return {n: value(SEEDS[case], n, s) for n, s in shapes.items()}


def make_checkpoint(case: str) -> None:
    d = ROOT / case
    clean(d)
    write_json(d / "bert_config.json", SMALL_BERT)
    print(save_tf1(d / "model.ckpt", mc.with_adam_slots(SEEDS[case], model_tensors(case)), global_step=3,
                   write_checkpoint_file=True))


def renamed_copy(case: str, directory: str) -> str:
    """The case's model variables re-saved under the names transformers' loader reads (see the docstring)."""
    out = {}
    for name, array in model_tensors(case).items():
        if case == "bert_squad" and name.startswith("bert/pooler/"):
            continue  # BertForQuestionAnswering has no pooler; the loader would fail walking into it
        out[RENAMED[case].get(name, name)] = array
    return save_tf1(Path(directory) / "model.ckpt", out)


def _config_with_labels(case: dict):
    config = mg.bert_config(case)
    if "num_labels" in case:
        config.num_labels = case["num_labels"]
    return config


def make_golden_case(case: str) -> None:
    spec = {**CASES[case], "loader_refuses_layout_use": "renamed copy"}  # make_golden's twin: the copy below
    mg.CONFIGS["bert"] = _config_with_labels
    with tempfile.TemporaryDirectory() as tmp:
        twin = {"family": "bert", "loader": "load_tf_weights_in_bert", "checkpoint": renamed_copy(case, tmp)}
        mg.CASES["renamed copy"] = twin
        record = mg.make(case, spec, ROOT / "golden", None)
    names = ", ".join(f"{a} -> {b}" for a, b in RENAMED[case].items())
    record["made_from"] = (f"a copy of {spec['checkpoint']}'s model variables re-saved by TensorFlow under the names "
                           f"the loader reads ({names}{'; bert/pooler left out' if case == 'bert_squad' else ''}), "
                           "by the same loader; 'sources' traces every tensor to this checkpoint by value")
    (ROOT / "golden" / case / "oracle.json").write_text(json.dumps(record, indent=2) + "\n")
    print(case, "untouched:", record["untouched"], "refused:", record.get("loader_on_this_layout"))


def main(argv: list[str]) -> None:
    steps = [a for a in argv if a in ("checkpoints", "golden")] or ["checkpoints", "golden"]
    cases = [a for a in argv if a in CASES] or list(CASES)
    for case in cases:
        if "checkpoints" in steps:
            make_checkpoint(case)
        if "golden" in steps:
            make_golden_case(case)


if __name__ == "__main__":
    main(sys.argv[1:])
