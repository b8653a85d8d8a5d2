"""TAPAS and Funnel-Transformer as their TF1 code saves them, and the oracle's answer for them (issue 37, part D).

    /work/oracle/bin/python tests/data/hf/generators/make_originals_d.py [checkpoints] [golden] [case ...]

(the oracle venv: tensorflow-cpu, torch==2.13.0 CPU, transformers 4.57.6; default: both steps, every case below).
Step ``checkpoints`` writes tests/data/hf/<case>/ with real TensorFlow (``tf.compat.v1.train.Saver``, as
TPUEstimator does), step ``golden`` writes tests/data/hf/golden/<case>/ with make_golden.py's own functions.

- ``tapas``: a TAPAS encoder checkpoint (``model.ckpt`` + ``bert_config.json``): tapas/models/bert/modeling.py's
  ``bert/embeddings/word_embeddings``, **seven** token-type tables ``bert/embeddings/token_type_embeddings_0..6``
  [type_vocab_size[i], hidden] (the config's ``type_vocab_size`` is a list, one size per token type: segment,
  column, row, previous label, column rank, inverse rank, numeric relation), ``position_embeddings``, the
  embeddings' ``LayerNorm``, BERT's encoder layers and pooler; ``global_step``. As transformers' ``TapasModel``
  (convert_tapas_original_tf_checkpoint_to_pytorch.py's task INTERMEDIATE_PRETRAINING).
- ``tapas_sqa``: what tapas's ``run_task_main.py --task=SQA`` leaves: the same encoder and the cell-selection head of
  tapas_classifier_model_utils.py at the top level: ``output_weights`` [hidden] and ``column_output_weights``
  [hidden] (vectors) and their **scalar** biases ``output_bias`` [] and ``column_output_bias`` []; ``global_step``.
  As ``TapasForQuestionAnswering`` (task SQA: no aggregation head, temperature 1).
- ``tapas_tabfact``: what ``run_task_main.py --task=TABFACT`` leaves: the encoder with its pooler, the token
  logits' ``output_weights`` [hidden] / ``output_bias`` [] (tapas_classifier_model.py computes them for every task;
  TabFact's run selects no column, so no ``column_output_*``) and the classifier ``output_weights_cls`` [2, hidden]
  (already [out, in]) / ``output_bias_cls`` [2]. As ``TapasForSequenceClassification`` (task TABFACT): the loader
  skips ``output_weights`` and ``output_bias``.
- ``tapas_mlm``: what tapas's pretraining (tapas_pretraining_model.py) leaves: the encoder with its pooler,
  ``cls/predictions/transform/dense``, ``cls/predictions/transform/LayerNorm``, ``cls/predictions/output_bias``
  [vocab] and the next-sentence head ``cls/seq_relationship/output_weights`` [2, hidden] / ``output_bias``;
  ``global_step``. As ``TapasForMaskedLM`` (task MLM): the loader skips the pooler and ``seq_relationship``.

- ``funnel``: a Funnel-Transformer (laiguokun/Funnel-Transformer, tensorflow/modeling.py and ops.py) with two
  encoder blocks of 1 and 2 layers and a 1-layer decoder, as its pretraining saves it (``model.ckpt`` + the
  FunnelConfig JSON transformers' script takes, ``config.json``): ``model/input/word_embedding/lookup_table``,
  ``model/input/layer_norm``, ``model/encoder/layer_{0,1,2}/...`` and ``model/decoder/layer_3/...``: the layers
  numbered **globally** (encoder block after block, then the decoder), each ``rel_attn/q/kernel`` [d_model, n_head,
  d_head] (no bias), ``k``, ``v`` (kernel + bias [n_head, d_head]), ``r/kernel``, ``r_w_bias``, ``r_r_bias``,
  ``r_s_bias``, ``seg_embed`` [2, n_head, d_head], ``o/kernel`` [n_head, d_head, d_model] + bias,
  ``rel_attn/layer_norm``, ``ff/layer_1``, ``ff/layer_2``, ``ff/layer_norm``; ``global_step``. As ``FunnelModel``
  (convert_funnel_original_tf_checkpoint_to_pytorch.py without ``--base_model``): ``load_tf_weights_in_funnel``
  finds each encoder layer's block from ``block_sizes`` and each decoder layer by its number minus the encoder's
  layer count. The inputs add ``token_type_ids`` (two segments), so that ``seg_embed`` and ``r_s_bias`` take part.

The oracle for TAPAS: ``load_tf_weights_in_tapas`` on the checkpoint as it is, with the conversion script's config
(``TapasConfig.from_json_file(bert_config.json)``, ``reset_position_index_per_cell`` False: the script's default)
**plus ``type_vocab_sizes`` = the file's ``type_vocab_size``**: ``TapasConfig`` reads the sizes from
``type_vocab_sizes`` and keeps the file's list-valued ``type_vocab_size`` as an unused extra field, so the script as
it is builds the released sizes [3, 256, 256, 2, 256, 256, 10] whatever the file says (it works on the released
checkpoints, which have those sizes); these tiny cases have [3, 8, 8, 2, 8, 8, 10]. Inputs: ``token_type_ids``
[batch, seq, 7] within each table's size, so that every table takes part in the outputs.
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import make_checkpoints as mc  # noqa: E402
from tfwrite import clean, save_tf1, value, write_json  # noqa: E402

ROOT = HERE.parent
TAPAS_CONFIG = {"attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
                "hidden_size": 16, "initializer_range": 0.02, "intermediate_size": 24,
                "max_position_embeddings": 32, "num_attention_heads": 2, "num_hidden_layers": 2,
                "type_vocab_size": [3, 8, 8, 2, 8, 8, 10], "vocab_size": 50}
"""bert_config.json as the TAPAS releases ship it (a list-valued type_vocab_size), tiny."""

CASES: dict[str, dict] = {
    "tapas": {"family": "tapas", "layout": "tf1", "checkpoint": "tapas/model.ckpt-3", "config": "tapas/bert_config.json",
              "class": "TapasModel", "loader": "load_tf_weights_in_tapas", "golden_made_by": "make_originals_d.py"},
    "tapas_sqa": {"family": "tapas", "layout": "tf1", "checkpoint": "tapas_sqa/model.ckpt-3",
                  "config": "tapas_sqa/bert_config.json", "class": "TapasForQuestionAnswering",
                  "loader": "load_tf_weights_in_tapas", "golden_made_by": "make_originals_d.py"},
}
SEEDS = {"tapas": 41, "tapas_sqa": 42, "funnel": 43, "tapas_mlm": 44, "tapas_tabfact": 45}
CASES["tapas_tabfact"] = {"family": "tapas", "layout": "tf1", "checkpoint": "tapas_tabfact/model.ckpt-3",
                          "config": "tapas_tabfact/bert_config.json", "class": "TapasForSequenceClassification",
                          "loader": "load_tf_weights_in_tapas", "golden_made_by": "make_originals_d.py"}
CASES["tapas_mlm"] = {"family": "tapas", "layout": "tf1", "checkpoint": "tapas_mlm/model.ckpt-3",
                      "config": "tapas_mlm/bert_config.json", "class": "TapasForMaskedLM",
                      "loader": "load_tf_weights_in_tapas", "golden_made_by": "make_originals_d.py"}
FUNNEL_CONFIG = {"activation_dropout": 0.0, "attention_dropout": 0.1, "attention_type": "relative_shift",
                 "block_repeats": [1, 1], "block_sizes": [1, 2], "d_head": 8, "d_inner": 24, "d_model": 16,
                 "hidden_act": "gelu_new", "hidden_dropout": 0.1, "initializer_range": 0.1, "layer_norm_eps": 1e-9,
                 "n_head": 2, "num_decoder_layers": 1, "pool_q_only": True, "pooling_type": "mean",
                 "separate_cls": True, "truncate_seq": True, "vocab_size": 40}
"""The FunnelConfig JSON convert_funnel_original_tf_checkpoint_to_pytorch.py takes, tiny (blocks of 1 and 2
layers, so that the global layer numbers and transformers' block/layer numbers differ)."""
CASES["funnel"] = {"family": "funnel", "layout": "tf1", "checkpoint": "funnel/model.ckpt-3", "config": "funnel/config.json",
                   "class": "FunnelModel", "loader": "load_tf_weights_in_funnel", "golden_made_by": "make_originals_d.py"}


def funnel_shapes(c: dict) -> dict[str, list[int]]:
    """Funnel-Transformer's TF variables: the input embedding, every encoder layer and decoder layer, numbered
    globally."""
    m, h, d, i = c["d_model"], c["n_head"], c["d_head"], c["d_inner"]
    s = {"model/input/word_embedding/lookup_table": [c["vocab_size"], m],
         "model/input/layer_norm/gamma": [m], "model/input/layer_norm/beta": [m]}
    n_enc = sum(c["block_sizes"])
    layers = [f"model/encoder/layer_{n}/" for n in range(n_enc)]
    layers += [f"model/decoder/layer_{n_enc + n}/" for n in range(c["num_decoder_layers"])]
    for p in layers:
        a = p + "rel_attn/"
        s.update({a + "q/kernel": [m, h, d], a + "k/kernel": [m, h, d], a + "k/bias": [h, d], a + "v/kernel": [m, h, d],
                  a + "v/bias": [h, d], a + "r/kernel": [m, h, d], a + "r_w_bias": [h, d], a + "r_r_bias": [h, d],
                  a + "r_s_bias": [h, d], a + "seg_embed": [2, h, d], a + "o/kernel": [h, d, m], a + "o/bias": [m],
                  a + "layer_norm/gamma": [m], a + "layer_norm/beta": [m],
                  p + "ff/layer_1/kernel": [m, i], p + "ff/layer_1/bias": [i], p + "ff/layer_2/kernel": [i, m],
                  p + "ff/layer_2/bias": [m], p + "ff/layer_norm/gamma": [m], p + "ff/layer_norm/beta": [m]})
    return s


def tapas_shapes(c: dict, case: str) -> dict[str, list[int]]:
    """The encoder's variables (tapas/models/bert/modeling.py) and, for tapas_sqa, the cell-selection head."""
    h = c["hidden_size"]
    s = {n: sh for n, sh in mc.bert_shapes({**c, "type_vocab_size": 2}).items()
         if n.startswith("bert/") and n != "bert/embeddings/token_type_embeddings"}
    for i, size in enumerate(c["type_vocab_size"]):
        s[f"bert/embeddings/token_type_embeddings_{i}"] = [size, h]
    if case == "tapas_mlm":
        v = c["vocab_size"]
        s.update({"cls/predictions/transform/dense/kernel": [h, h], "cls/predictions/transform/dense/bias": [h],
                  "cls/predictions/transform/LayerNorm/gamma": [h], "cls/predictions/transform/LayerNorm/beta": [h],
                  "cls/predictions/output_bias": [v], "cls/seq_relationship/output_weights": [2, h],
                  "cls/seq_relationship/output_bias": [2]})
    if case == "tapas_tabfact":
        s.update({"output_weights": [h], "output_bias": [], "output_weights_cls": [2, h], "output_bias_cls": [2]})
    if case == "tapas_sqa":
        s.update({"output_weights": [h], "output_bias": [], "column_output_weights": [h], "column_output_bias": []})
    return s


def make_checkpoint(case: str) -> None:
    d = ROOT / case
    clean(d)
    if case == "funnel":
        write_json(d / "config.json", FUNNEL_CONFIG)
        tensors = {n: value(SEEDS[case], n, sh) for n, sh in funnel_shapes(FUNNEL_CONFIG).items()}
        print(save_tf1(d / "model.ckpt", tensors, global_step=3, write_checkpoint_file=True))
        return
    write_json(d / "bert_config.json", TAPAS_CONFIG)
    tensors = {n: value(SEEDS[case], n, sh) for n, sh in tapas_shapes(TAPAS_CONFIG, case).items()}
    print(save_tf1(d / "model.ckpt", tensors, global_step=3, write_checkpoint_file=True))


def trace_scalars(case: str, record: dict) -> dict:
    """make_golden's trace_sources reads only array variables; TAPAS's scalar biases (output_bias,
    column_output_bias) load as numpy scalars: found here the same way, by value."""
    import json

    import numpy as np
    import tensorflow as tf
    from safetensors.numpy import load_file

    prefix = str(ROOT / CASES[case]["checkpoint"])
    state = load_file(str(ROOT / "golden" / case / "model.safetensors"))
    arrays = {n: np.asarray(tf.train.load_variable(prefix, n)) for n, _ in tf.train.list_variables(prefix)}
    for key, source in record["sources"].items():
        if source == "-":
            found = [n for n, a in arrays.items() if a.dtype == np.float32 and a.shape == state[key].shape
                     and np.array_equal(a, state[key])]
            record["sources"][key] = " | ".join(found) or "-"
    used = {v.split(" ")[0] for v in record["sources"].values()}
    record["checkpoint_variables_not_in_state_dict"] = sorted(n for n in arrays if n not in used)
    (ROOT / "golden" / case / "oracle.json").write_text(json.dumps(record, indent=2) + "\n")
    return record


def make_golden_case(case: str) -> None:
    import numpy as np

    import make_golden as mg

    def tapas_config(spec: dict):
        config = mg.transformers.TapasConfig.from_json_file(str(ROOT / spec["config"]))
        config.reset_position_index_per_cell = False
        config.type_vocab_sizes = list(config.type_vocab_size)
        return config

    def funnel_config(spec: dict):
        return mg.transformers.FunnelConfig.from_json_file(str(ROOT / spec["config"]))

    plain_inputs = mg.inputs_for

    def inputs_for(spec: dict, config) -> dict:
        out = plain_inputs(spec, config)
        if spec["family"] == "funnel":
            batch, seq = out["input_ids"].shape
            out["token_type_ids"] = (np.arange(seq)[None, :] >= 4).repeat(batch, 0).astype(np.int64)
            return out
        rng = np.random.default_rng(20261124)
        batch, seq = out["input_ids"].shape
        out["token_type_ids"] = np.stack([rng.integers(0, n, size=(batch, seq)) for n in config.type_vocab_sizes],
                                         axis=-1).astype(np.int64)
        return out

    mg.CONFIGS["tapas"] = tapas_config
    mg.CONFIGS["funnel"] = funnel_config
    mg.inputs_for = inputs_for
    record = mg.make(case, CASES[case], ROOT / "golden", None)
    if "-" in record["sources"].values():
        record = trace_scalars(case, record)
    print(case, "untouched:", record["untouched"], "messages:", record["loader_messages"])


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
