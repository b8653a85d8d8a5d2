"""Original TensorFlow releases of issue 37, part C (RoFormer), and the oracle's answer for them.

    /work/oracle/bin/python tests/data/hf/generators/make_originals_c.py [checkpoints] [golden] [case ...]

(the oracle venv: tensorflow-cpu, torch==2.13.0 CPU, transformers 4.57.6; default: both steps, every case below).
Step ``checkpoints`` writes tests/data/hf/<case>/ with real TensorFlow (``tf.compat.v1.train.Saver``), step
``golden`` writes tests/data/hf/golden/<case>/ with make_golden.py's own functions (its golden files, their layout
and oracle.json).

- ``roformer``: ZhuiyiTechnology/roformer's released TF1 checkpoint (chinese_roformer_L-12_H-768_A-12.zip, saved
  by bert4keras under google-research/bert's names): ``bert_model.ckpt`` holding ``bert/embeddings/word_embeddings``,
  ``token_type_embeddings``, ``LayerNorm`` (**no position embeddings**: rotary positions are computed),
  ``bert/encoder/layer_N/...`` (BERT's), the masked-LM head ``cls/predictions/transform/dense``,
  ``cls/predictions/transform/LayerNorm``, ``cls/predictions/output_bias`` (no pooler, no NSP head: the released
  model was pretrained with MLM only); ``bert_config.json`` (the released JSON's fields, sizes tiny). The oracle is
  convert_roformer_original_tf_checkpoint_to_pytorch.py's: RoFormerConfig.from_json_file(bert_config.json),
  RoFormerForMaskedLM, load_tf_weights_in_roformer (which renames ``bert`` to ``roformer``); the sinusoidal table
  ``roformer.encoder.embed_positions.weight`` is computed by transformers, in no checkpoint variable.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import make_checkpoints as mc  # noqa: E402
from tfwrite import clean, save_tf1, value, write_json  # noqa: E402

ROOT = HERE.parent

ROFORMER_CONFIG = {"attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
                   "hidden_size": 16, "initializer_range": 0.02, "intermediate_size": 24,
                   "max_position_embeddings": 32, "num_attention_heads": 2, "num_hidden_layers": 2,
                   "type_vocab_size": 2, "vocab_size": 50}
"""chinese_roformer_L-12_H-768_A-12's bert_config.json fields, the sizes tiny."""
SEEDS = {"roformer": 31}
CASES: dict[str, dict] = {
    "roformer": {"family": "roformer", "layout": "tf1", "checkpoint": "roformer/bert_model.ckpt",
                 "config": "roformer/bert_config.json", "class": "RoFormerForMaskedLM",
                 "loader": "load_tf_weights_in_roformer", "golden_made_by": "make_originals_c.py"},
}


def roformer_shapes(c: dict) -> dict[str, list[int]]:
    """bert4keras's RoFormer (with_mlm) under google-research/bert's names: BERT's variables without the position
    embeddings, the pooler and the NSP head."""
    return {n: s for n, s in mc.bert_shapes(c).items()
            if n != "bert/embeddings/position_embeddings" and not n.startswith(("bert/pooler/", "cls/seq_relationship/"))}


def make_roformer() -> None:
    tensors = {n: value(SEEDS["roformer"], n, s) for n, s in roformer_shapes(ROFORMER_CONFIG).items()}
    d = ROOT / "roformer"
    clean(d)
    write_json(d / "bert_config.json", ROFORMER_CONFIG)
    print(save_tf1(d / "bert_model.ckpt", tensors))


MAKERS = {"roformer": make_roformer}


def golden(names: list[str]) -> None:
    """make_golden.make for each case, with the configs its conversion script builds; cases.json is not written
    here (its entries are CASES plus the ``untouched`` this prints)."""
    import make_golden as mg
    import transformers

    def roformer_config(case: dict) -> transformers.PretrainedConfig:
        return transformers.RoFormerConfig.from_json_file(str(mg.ROOT / case["config"]))

    _inputs = mg.inputs_for

    def inputs_for(case: dict, config: transformers.PretrainedConfig) -> dict:
        out = _inputs(case, config)
        if case["family"] == "roformer":  # two segments, as BERT's
            import numpy as np

            out["token_type_ids"] = (np.arange(8)[None, :] >= 4).repeat(2, 0).astype(np.int64)
        return out

    mg.CONFIGS.update({"roformer": roformer_config})
    mg.inputs_for = inputs_for
    _trace = mg.trace_sources

    def trace_sources(state: dict, prefix: str) -> tuple[dict[str, str], list[str]]:
        sources, unused = _trace(state, prefix)
        for key in sources:
            if sources[key] == "-" and key.endswith("embed_positions.weight"):
                sources[key] = "computed (sinusoidal, as transformers makes it)"
        return sources, unused

    mg.trace_sources = trace_sources
    for name in names:
        record = mg.make(name, CASES[name], mg.ROOT / "golden", None)
        print(name, json.dumps({"untouched": record["untouched"]}),
              "sources:", sum(v != "-" for v in record["sources"].values()), "/", len(record["sources"]),
              "not in state dict:", record["checkpoint_variables_not_in_state_dict"])


def main(argv: list[str]) -> None:
    steps = [a for a in argv if a in ("checkpoints", "golden")] or ["checkpoints", "golden"]
    names = [a for a in argv if a not in ("checkpoints", "golden")] or list(CASES)
    if "checkpoints" in steps:
        for name in names:
            MAKERS[name]()
    if "golden" in steps:
        golden(names)


if __name__ == "__main__":
    main(sys.argv[1:])
