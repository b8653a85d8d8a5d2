"""Original TensorFlow releases of issue 37, part C (RoFormer, CANINE), and the oracle's answer for them.

    /work/oracle/bin/python tests/data/hf/generators/make_originals_c.py [checkpoints] [golden]
        [case ...] [--out DIR]

(the oracle venv: tensorflow-cpu, torch==2.13.0 CPU, transformers 4.57.6; default: both steps, every case
below; --out: the golden files' directory, default tests/data/hf/golden).
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
- ``canine``: google-research/language's CANINE (canine-c.zip / canine-s.zip: ``canine_model.ckpt`` +
  ``model_config.json``, a CanineModelConfig JSON), names as canine/modeling.py creates them (listed by running it
  under tf.compat.v1 with a tiny config): ``char_embeddings/embeddings/HashBucketCodepointEmbedder_N``,
  ``char_embeddings/segment_embeddings`` [16, hidden], ``char_position_embeddings`` [max_positions, hidden],
  ``initial_char_encoder/layer_0/...`` (a one-layer local transformer: BERT's layer names),
  ``initial_char_encoder/initial_char_encoder/chars_to_molecules/conv`` (conv1d kernel [rate, hidden, hidden]) and
  its ``LayerNorm``, ``bert/layer_N/...`` (the deep stack, BERT's layer names, no ``encoder`` scope),
  ``final_char_encoder/conv`` ([upsampling_kernel, 2 hidden, hidden]), ``final_char_encoder/LayerNorm``,
  ``final_char_encoder/layer_0/...``, ``pooler/dense``. The oracle is convert_canine_original_tf_checkpoint_to_pytorch.py's
  (CanineModel, load_tf_weights_in_canine) with the CanineConfig of model_config.json's sizes (the script uses
  CanineConfig(), the released sizes); max_positions = num_hash_buckets, as released (transformers' position
  table has num_hash_buckets rows).
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


CANINE_CONFIG = {"attention_probs_dropout_prob": 0.1, "downsampling_rate": 4, "hidden_act": "gelu",
                 "hidden_dropout_prob": 0.1, "hidden_size": 16, "initializer_range": 0.02, "intermediate_size": 24,
                 "local_transformer_stride": 8, "max_positions": 32, "num_attention_heads": 2, "num_hash_buckets": 32,
                 "num_hash_functions": 4, "num_hidden_layers": 2, "type_vocab_size": 16, "upsampling_kernel_size": 4}
"""CanineModelConfig's fields (canine/modeling.py), the sizes tiny."""
SEEDS["canine"] = 32
CASES["canine"] = {"family": "canine", "layout": "tf1", "checkpoint": "canine/canine_model.ckpt",
                   "config": "canine/model_config.json", "class": "CanineModel", "loader": "load_tf_weights_in_canine",
                   "golden_made_by": "make_originals_c.py"}


def canine_shapes(c: dict) -> dict[str, list[int]]:
    """canine/modeling.py's CanineModel variables, in its order."""
    h, i = c["hidden_size"], c["intermediate_size"]
    s = {f"char_embeddings/embeddings/HashBucketCodepointEmbedder_{n}": [c["num_hash_buckets"],
                                                                         h // c["num_hash_functions"]]
         for n in range(c["num_hash_functions"])}
    s.update({"char_embeddings/segment_embeddings": [c["type_vocab_size"], h],
              "char_embeddings/char_position_embeddings": [c["max_positions"], h],
              "char_embeddings/LayerNorm/beta": [h], "char_embeddings/LayerNorm/gamma": [h]})
    s.update(mc.bert_layer_shapes("initial_char_encoder/layer_0/", h, i))
    conv = "initial_char_encoder/initial_char_encoder/chars_to_molecules/"
    s.update({conv + "conv/kernel": [c["downsampling_rate"], h, h], conv + "conv/bias": [h],
              conv + "LayerNorm/beta": [h], conv + "LayerNorm/gamma": [h]})
    for n in range(c["num_hidden_layers"]):
        s.update(mc.bert_layer_shapes(f"bert/layer_{n}/", h, i))
    s.update({"final_char_encoder/conv/kernel": [c["upsampling_kernel_size"], 2 * h, h],
              "final_char_encoder/conv/bias": [h], "final_char_encoder/LayerNorm/beta": [h],
              "final_char_encoder/LayerNorm/gamma": [h]})
    s.update(mc.bert_layer_shapes("final_char_encoder/layer_0/", h, i))
    s.update({"pooler/dense/kernel": [h, h], "pooler/dense/bias": [h]})
    return s


def make_canine() -> None:
    tensors = {n: value(SEEDS["canine"], n, s, "embedding" if "Embedder" in n else "auto")
               for n, s in canine_shapes(CANINE_CONFIG).items()}
    d = ROOT / "canine"
    clean(d)
    write_json(d / "model_config.json", CANINE_CONFIG)
    print(save_tf1(d / "canine_model.ckpt", tensors))


MAKERS = {"roformer": make_roformer, "canine": make_canine}


def golden(names: list[str], out: Path | None = None) -> None:
    """make_golden.make for each case, with the configs its conversion script builds; cases.json is not written
    here (its entries are CASES plus the ``untouched`` this prints)."""
    import make_golden as mg
    import transformers

    def roformer_config(case: dict) -> transformers.PretrainedConfig:
        return transformers.RoFormerConfig.from_json_file(str(mg.ROOT / case["config"]))

    _inputs = mg.inputs_for

    def inputs_for(case: dict, config: transformers.PretrainedConfig) -> dict:
        if case["family"] == "canine":  # Unicode codepoints (CanineConfig has no vocab_size), two segments
            import numpy as np

            ids = np.random.default_rng(20261123).integers(32, 0x3000, size=(2, 8)).astype(np.int64)
            mask = np.ones((2, 8), np.int64)
            mask[1, 5:] = 0
            return {"input_ids": ids, "attention_mask": mask,
                    "token_type_ids": (np.arange(8)[None, :] >= 4).repeat(2, 0).astype(np.int64)}
        out = _inputs(case, config)
        if case["family"] == "roformer":  # two segments, as BERT's
            import numpy as np

            out["token_type_ids"] = (np.arange(8)[None, :] >= 4).repeat(2, 0).astype(np.int64)
        return out

    def canine_config(case: dict) -> transformers.PretrainedConfig:
        c = json.loads((mg.ROOT / case["config"]).read_text())
        return transformers.CanineConfig(
            hidden_size=c["hidden_size"], num_hidden_layers=c["num_hidden_layers"],
            num_attention_heads=c["num_attention_heads"], intermediate_size=c["intermediate_size"],
            hidden_act=c["hidden_act"], hidden_dropout_prob=c["hidden_dropout_prob"],
            attention_probs_dropout_prob=c["attention_probs_dropout_prob"], max_position_embeddings=c["max_positions"],
            type_vocab_size=c["type_vocab_size"], initializer_range=c["initializer_range"],
            downsampling_rate=c["downsampling_rate"], upsampling_kernel_size=c["upsampling_kernel_size"],
            num_hash_functions=c["num_hash_functions"], num_hash_buckets=c["num_hash_buckets"],
            local_transformer_stride=c["local_transformer_stride"])

    mg.CONFIGS.update({"roformer": roformer_config, "canine": canine_config})
    mg.inputs_for = inputs_for
    _trace = mg.trace_sources

    def trace_sources(state: dict, prefix: str) -> tuple[dict[str, str], list[str]]:
        import numpy as np
        import tensorflow as tf

        sources, unused = _trace(state, prefix)
        convs = {n: tf.train.load_variable(prefix, n) for n in unused}
        for key in sources:
            if sources[key] == "-" and key.endswith("embed_positions.weight"):
                sources[key] = "computed (sinusoidal, as transformers makes it)"
            elif sources[key] == "-":  # CANINE's conv1d kernels: every axis reversed (np.transpose)
                g = state[key].detach().numpy()
                hits = [n for n, a in convs.items() if a.ndim == 3 and np.array_equal(np.transpose(a), g)]
                if hits:
                    sources[key] = " | ".join(f"{n} (transpose)" for n in hits)
        used = {v.split(" ")[0] for v in sources.values()}
        return sources, [n for n in unused if n not in used]

    mg.trace_sources = trace_sources
    for name in names:
        record = mg.make(name, CASES[name], out or mg.ROOT / "golden", None)
        print(name, json.dumps({"untouched": record["untouched"]}),
              "sources:", sum(v != "-" for v in record["sources"].values()), "/", len(record["sources"]),
              "not in state dict:", record["checkpoint_variables_not_in_state_dict"])


def main(argv: list[str]) -> None:
    out = None
    if "--out" in argv:  # golden files elsewhere (tests/interop/test_hf_oracle.py compares them to the committed)
        at = argv.index("--out")
        out, argv = Path(argv[at + 1]), argv[:at] + argv[at + 2:]
    steps = [a for a in argv if a in ("checkpoints", "golden")] or ["checkpoints", "golden"]
    names = [a for a in argv if a not in ("checkpoints", "golden")] or list(CASES)
    if "checkpoints" in steps:
        for name in names:
            MAKERS[name]()
    if "golden" in steps:
        golden(names, out)


if __name__ == "__main__":
    main(sys.argv[1:])
