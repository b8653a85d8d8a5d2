"""Write the tiny TensorFlow checkpoints of XLNet and GPT-Neo (issue 37, original releases, part B) with real
TensorFlow, under the original repositories' variable names, shapes and layouts.

    /work/oracle/bin/python tests/data/hf/generators/make_originals_b.py [xlnet] [xlnet_stsb] [gpt_neo] [pegasus] [bigbird_pegasus]
        [imagegpt]

(any venv with tensorflow-cpu >= 2.16; default all). Values as make_checkpoints.py makes them (tfwrite.value:
one generator per variable name). The golden files are then made by make_golden_b.py (the oracle venv).

- xlnet, xlnet_slots: zihangdai/xlnet modeling.py with untie_r (as every released model): `model/transformer/...`,
  the per-layer relative-attention biases stacked in one [n_layer, ...] variable each (`r_w_bias`, `r_r_bias`,
  `r_s_bias`, `seg_embed`), `model/lm_loss/bias`; `xlnet_model.ckpt` + `xlnet_config.json` as the released
  tarballs; the `_slots` twin adds a real tf.compat.v1.train.AdamOptimizer's state (train_gpu.py with weight_decay
  0, the default), `model.ckpt-3`.
- xlnet_stsb: run_classifier.py's STS-B fine-tuning (the regression head `model/regression_sts-b/logit`, the summary
  `model/sequnece_summary/summary`, sic; no mask_emb, no lm_loss), `model.ckpt-100`.
- gpt_neo, gpt_neo_slots: EleutherAI/gpt-neo's mesh-tensorflow model (models/gpt2/gpt2.py), bfloat16 variables as
  a run with "precision": "bfloat16" keeps them (mesh-tf's master dtype): `gpt2/wte`, `gpt2/wpe`,
  `gpt2/hN/norm_1`, `attn/q|k|v|o` [n_embd, n_embd] (mesh-tf's combined heads), `attn/compute_output_bias/o_b`,
  `norm_2`, `mlp/conv1d_main/c_fc|c_proj/kernel|bias`, `gpt2/ln_f`; the mesh-tf run's `config.json`; the `_slots`
  twin adds mesh-tf AdamWeightDecayOptimizer's `<name>/adam_m`, `<name>/adam_v`; both hold `global_step`.
- pegasus: google-research/pegasus's TF1 Transformer: `embeddings/weights`, `encoder|decoder/layer_N/self_attention`
  (decoder also `memory_attention`) `/q_proj|k_proj|v_proj|output_proj/kernel` (no biases), `.../LayerNorm`,
  `ffn/dense`, `ffn/dense_1`, `ffn/LayerNorm`, `encoder|decoder/LayerNorm`; Adafactor's slots and global_step, as a
  training run's `model.ckpt-N`. pegasus keeps its configuration in code (a registered param set), so the case
  holds `params.json`: that param set's model fields.
- bigbird_pegasus: google-research/bigbird's summarization encoder-decoder under `pegasus/`: `embeddings/
  word_embeddings`, `embeddings/position_embeddings` (learned, shared by both stacks), `encoder|decoder/layer_N/
  attention/self/query|key|value` (2-D kernels, biases), `attention/output/dense`, decoder `attention/encdec...`,
  `intermediate/dense`, `output/dense`, pre-norm `LayerNorm`s, the stacks' final `LayerNorm`; `params.json` holds the
  bigbird flags (core/flags.py) that shape it.
- imagegpt: openai/image-gpt's TF1 model: `model/wte`, `sos`, `wtet`, `wpe`, `hN/ln_1/g`, `attn/q_proj|k_proj|v_proj|
  c_proj` (no biases), `ln_2/g`, `mlp/c_fc|c_proj/w,b`, `ln_f/g`; hparams.json with the run's sizes.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import tfwrite
from tfwrite import clean, save_tf1, tf, value, write_json

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent  # tests/data/hf

# --- XLNet (zihangdai/xlnet) ----------------------------------------------------------------------------------

XLNET_CONFIG = {"d_head": 8, "d_inner": 24, "d_model": 16, "ff_activation": "gelu", "n_head": 2, "n_layer": 2,
                "n_token": 40, "untie_r": True}
XLNET_SEED = 11


def xlnet_shapes(c: dict) -> dict[str, list[int]]:
    """zihangdai/xlnet modeling.py transformer_xl (untie_r) and lm_loss, under the `model` scope."""
    d, h, k, n, i = c["d_model"], c["n_head"], c["d_head"], c["n_layer"], c["d_inner"]
    t = "model/transformer/"
    shapes = {t + "word_embedding/lookup_table": [c["n_token"], d], t + "mask_emb/mask_emb": [1, 1, d],
              t + "r_w_bias": [n, h, k], t + "r_r_bias": [n, h, k], t + "r_s_bias": [n, h, k],
              t + "seg_embed": [n, 2, h, k]}
    for layer in range(n):
        p = f"{t}layer_{layer}/"
        for part in ("q", "k", "v", "r", "o"):
            shapes[f"{p}rel_attn/{part}/kernel"] = [d, h, k]
        shapes.update({p + "rel_attn/LayerNorm/beta": [d], p + "rel_attn/LayerNorm/gamma": [d],
                       p + "ff/layer_1/kernel": [d, i], p + "ff/layer_1/bias": [i],
                       p + "ff/layer_2/kernel": [i, d], p + "ff/layer_2/bias": [d],
                       p + "ff/LayerNorm/beta": [d], p + "ff/LayerNorm/gamma": [d]})
    shapes["model/lm_loss/bias"] = [c["n_token"]]
    return shapes


def xlnet_value(name: str, shape: list[int]) -> np.ndarray:
    """Embeddings (the lookup table, mask_emb, seg_embed) ~ N(0, 1); the rest as tfwrite.value."""
    kind = "embedding" if name.endswith(("lookup_table", "mask_emb", "seg_embed")) else "auto"
    return value(XLNET_SEED, name, shape, kind)


def save_with_adam(prefix: Path, tensors: dict[str, np.ndarray], seed: int) -> str:
    """The model plus a real tf.compat.v1.train.AdamOptimizer's state after 3 steps (<name>/Adam, <name>/Adam_1,
    beta1_power, beta2_power, global_step); the model variables are put back to their values afterwards."""
    v1 = tfwrite.v1
    with tf.Graph().as_default():
        variables = [v1.Variable(a, name=n) for n, a in tensors.items()]
        rng = np.random.default_rng(seed)
        loss = tf.add_n([tf.reduce_sum(v * rng.standard_normal(v.shape).astype(np.float32)) for v in variables])
        step = v1.train.get_or_create_global_step()
        train = v1.train.AdamOptimizer(learning_rate=1e-3).minimize(loss, global_step=step)
        restore = [v.assign(a) for v, a in zip(variables, tensors.values())]
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            for _ in range(3):
                sess.run(train)
            sess.run(restore)
            return v1.train.Saver(save_relative_paths=True).save(sess, str(prefix), global_step=step,
                                                                 write_meta_graph=False)


def make_xlnet() -> None:
    """xlnet: as a released tarball (xlnet_model.ckpt + xlnet_config.json); xlnet_slots: + Adam, model.ckpt-3."""
    tensors = {n: xlnet_value(n, s) for n, s in xlnet_shapes(XLNET_CONFIG).items()}
    for case, slots in (("xlnet", False), ("xlnet_slots", True)):
        d = ROOT / case
        clean(d)
        write_json(d / "xlnet_config.json", XLNET_CONFIG)
        if slots:
            print(save_with_adam(d / "model.ckpt", tensors, XLNET_SEED))
        else:
            print(save_tf1(d / "xlnet_model.ckpt", tensors))


def make_xlnet_stsb() -> None:
    """xlnet_stsb: a run_classifier.py fine-tuning on STS-B (regression, --task_name=sts-b), model.ckpt-100: the
    transformer without mask_emb (the fine-tuning graph has no two-stream query) and lm_loss, the sequence summary
    under its misspelt scope `model/sequnece_summary/summary`, the head `model/regression_sts-b/logit` [d_model, 1],
    global_step."""
    shapes = {n: s for n, s in xlnet_shapes(XLNET_CONFIG).items() if not n.endswith(("mask_emb", "lm_loss/bias"))}
    d = XLNET_CONFIG["d_model"]
    shapes.update({"model/sequnece_summary/summary/kernel": [d, d], "model/sequnece_summary/summary/bias": [d],
                   "model/regression_sts-b/logit/kernel": [d, 1], "model/regression_sts-b/logit/bias": [1]})
    tensors = {n: value(XLNET_SEED + 100, n, s, "embedding" if n.endswith(("lookup_table", "seg_embed")) else "auto")
               for n, s in shapes.items()}
    folder = ROOT / "xlnet_stsb"
    clean(folder)
    write_json(folder / "xlnet_config.json", XLNET_CONFIG)
    print(save_tf1(folder / "model.ckpt", tensors, global_step=100, write_checkpoint_file=True))


# --- GPT-Neo (EleutherAI/gpt-neo, mesh-tensorflow) ------------------------------------------------------------

GPT_NEO_CONFIG = {"n_head": 2, "n_vocab": 50, "embed_dropout": 0, "n_ctx": 32, "n_positions": 32, "n_embd": 16,
                  "n_layer": 2, "attention_types": [[["global", "local"], 1]], "res_dropout": 0, "attn_dropout": 0,
                  "activation_function": "gelu", "precision": "bfloat16", "model": "GPT", "tokens_per_mb_per_replica": 2048,
                  "scale_by_depth": True, "scale_by_in": False, "mesh_shape": "x:1", "layout": "batch:x"}
GPT_NEO_SEED = 12


def gpt_neo_shapes(c: dict) -> dict[str, list[int]]:
    """EleutherAI/gpt-neo models/gpt2/gpt2.py: mesh-tf variables (attention weights with the heads combined)."""
    e = c["n_embd"]
    shapes = {"gpt2/wte": [c["n_vocab"], e], "gpt2/wpe": [c["n_ctx"], e]}
    for n in range(c["n_layer"]):
        p = f"gpt2/h{n}/"
        shapes.update({p + "norm_1/g": [e], p + "norm_1/b": [e],
                       p + "attn/q": [e, e], p + "attn/k": [e, e], p + "attn/v": [e, e], p + "attn/o": [e, e],
                       p + "attn/compute_output_bias/o_b": [e], p + "norm_2/g": [e], p + "norm_2/b": [e],
                       p + "mlp/conv1d_main/c_fc/kernel": [e, 4 * e], p + "mlp/conv1d_main/c_fc/bias": [4 * e],
                       p + "mlp/conv1d_main/c_proj/kernel": [4 * e, e], p + "mlp/conv1d_main/c_proj/bias": [e]})
    shapes.update({"gpt2/ln_f/g": [e], "gpt2/ln_f/b": [e]})
    return shapes


def make_gpt_neo() -> None:
    """gpt_neo: model.ckpt-1000 (+ global_step) + checkpoint + config.json; gpt_neo_slots: model.ckpt-1003, + the
    adam_m/adam_v slots."""
    bf16 = tf.bfloat16.as_numpy_dtype  # "precision": "bfloat16": mesh-tf keeps the master weights in bfloat16
    tensors = {n: value(GPT_NEO_SEED, n, s, "embedding" if n in ("gpt2/wte", "gpt2/wpe") else "auto").astype(bf16)
               for n, s in gpt_neo_shapes(GPT_NEO_CONFIG).items()}
    for case, slots in (("gpt_neo", False), ("gpt_neo_slots", True)):
        d = ROOT / case
        clean(d)
        (d / "config.json").write_text(json.dumps(GPT_NEO_CONFIG, indent=2) + "\n")
        model = dict(tensors)
        if slots:
            for name, array in tensors.items():
                model[name + "/adam_m"] = value(GPT_NEO_SEED, name + "/adam_m", list(array.shape), "m").astype(bf16)
                model[name + "/adam_v"] = value(GPT_NEO_SEED, name + "/adam_v", list(array.shape), "v").astype(bf16)
        print(save_tf1(d / "model.ckpt", model, global_step=1003 if slots else 1000, write_checkpoint_file=True))


# --- Pegasus (google-research/pegasus, TF1) ---------------------------------------------------------------------

PEGASUS_PARAMS = {"vocab_size": 40, "hidden_size": 16, "filter_size": 24, "num_heads": 2, "num_encoder_layers": 2,
                  "num_decoder_layers": 2, "max_input_len": 32, "max_output_len": 16}
PEGASUS_SEED = 13


def pegasus_shapes(p: dict) -> dict[str, list[int]]:
    """google-research/pegasus models/transformer.py (layers/embedding.py, attention.py, transformer_block.py): the
    shared `embeddings/weights`, attention projections without biases, `ffn/dense` and `ffn/dense_1` with biases,
    pre-norm LayerNorms and the stacks' final `LayerNorm`."""
    h, f = p["hidden_size"], p["filter_size"]
    shapes = {"embeddings/weights": [p["vocab_size"], h]}
    for stack, count, attentions in (("encoder", p["num_encoder_layers"], ("self_attention",)),
                                     ("decoder", p["num_decoder_layers"], ("self_attention", "memory_attention"))):
        for n in range(count):
            layer = f"{stack}/layer_{n}/"
            for attention in attentions:
                for proj in ("q_proj", "k_proj", "v_proj", "output_proj"):
                    shapes[f"{layer}{attention}/{proj}/kernel"] = [h, h]
                shapes[f"{layer}{attention}/LayerNorm/gamma"] = [h]
                shapes[f"{layer}{attention}/LayerNorm/beta"] = [h]
            shapes.update({layer + "ffn/dense/kernel": [h, f], layer + "ffn/dense/bias": [f],
                           layer + "ffn/dense_1/kernel": [f, h], layer + "ffn/dense_1/bias": [h],
                           layer + "ffn/LayerNorm/gamma": [h], layer + "ffn/LayerNorm/beta": [h]})
        shapes[f"{stack}/LayerNorm/gamma"] = [h]
        shapes[f"{stack}/LayerNorm/beta"] = [h]
    return shapes


def with_adafactor_slots(seed: int, tensors: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """TF1 Adafactor's slots as slot_creator names them: `<name>/Adafactor` (the row factor vr of a matrix, or v of a
    vector) and `<name>/Adafactor_1` (the column factor vc of a matrix)."""
    out = dict(tensors)
    for name, array in tensors.items():
        if array.ndim == 2:
            out[name + "/Adafactor"] = value(seed, name + "/Adafactor", [array.shape[0]], "v")
            out[name + "/Adafactor_1"] = value(seed, name + "/Adafactor_1", [array.shape[1]], "v")
        else:
            out[name + "/Adafactor"] = value(seed, name + "/Adafactor", list(array.shape), "v")
    return out


def make_pegasus() -> None:
    """pegasus: model.ckpt-1000 + checkpoint as a pegasus training run leaves it (with Adafactor's slots and
    global_step), and params.json: the model fields of its param set (pegasus/params/public_params.py)."""
    tensors = {n: value(PEGASUS_SEED, n, s, "embedding" if n == "embeddings/weights" else "auto")
               for n, s in pegasus_shapes(PEGASUS_PARAMS).items()}
    d = ROOT / "pegasus"
    clean(d)
    write_json(d / "params.json", PEGASUS_PARAMS)
    print(save_tf1(d / "model.ckpt", with_adafactor_slots(PEGASUS_SEED, tensors), global_step=1000,
                   write_checkpoint_file=True))


# --- BigBird-Pegasus (google-research/bigbird, summarization) ---------------------------------------------------

BIGBIRD_PEGASUS_PARAMS = {"vocab_size": 40, "hidden_size": 16, "intermediate_size": 24, "num_attention_heads": 2,
                          "num_hidden_layers": 2, "max_position_embeddings": 32, "attention_type": "block_sparse",
                          "block_size": 4, "num_rand_blocks": 1, "use_bias": False}
BIGBIRD_PEGASUS_SEED = 14


def bigbird_pegasus_shapes(p: dict) -> dict[str, list[int]]:
    """google-research/bigbird's Pegasus-style encoder-decoder (core/encoder.py, core/decoder.py, core/attention.py:
    2-D attention kernels [hidden, heads x head size] with biases, pre-norm LayerNorms) under `pegasus/`."""
    h, i = p["hidden_size"], p["intermediate_size"]
    shapes = {"pegasus/embeddings/word_embeddings": [p["vocab_size"], h],
              "pegasus/embeddings/position_embeddings": [p["max_position_embeddings"], h]}
    for stack in ("encoder", "decoder"):
        for n in range(p["num_hidden_layers"]):
            layer = f"pegasus/{stack}/layer_{n}/"
            attentions = [("attention/self/", "attention/output/dense/")]
            if stack == "decoder":
                attentions.append(("attention/encdec/", "attention/encdec_output/dense/"))
            for qkv, out in attentions:
                for part in ("query", "key", "value"):
                    shapes[f"{layer}{qkv}{part}/kernel"], shapes[f"{layer}{qkv}{part}/bias"] = [h, h], [h]
                shapes[f"{layer}{qkv}LayerNorm/beta"], shapes[f"{layer}{qkv}LayerNorm/gamma"] = [h], [h]
                shapes[f"{layer}{out}kernel"], shapes[f"{layer}{out}bias"] = [h, h], [h]
            shapes.update({layer + "intermediate/LayerNorm/beta": [h], layer + "intermediate/LayerNorm/gamma": [h],
                           layer + "intermediate/dense/kernel": [h, i], layer + "intermediate/dense/bias": [i],
                           layer + "output/dense/kernel": [i, h], layer + "output/dense/bias": [h]})
        shapes[f"pegasus/{stack}/LayerNorm/beta"], shapes[f"pegasus/{stack}/LayerNorm/gamma"] = [h], [h]
    return shapes


def make_bigbird_pegasus() -> None:
    """bigbird_pegasus: model.ckpt-1000 + checkpoint (with global_step), and params.json: the bigbird flags that shape
    the model (core/flags.py; the released summarization checkpoints come without a configuration file)."""
    tensors = {n: value(BIGBIRD_PEGASUS_SEED, n, s, "embedding" if "embeddings/" in n else "auto")
               for n, s in bigbird_pegasus_shapes(BIGBIRD_PEGASUS_PARAMS).items()}
    d = ROOT / "bigbird_pegasus"
    clean(d)
    write_json(d / "params.json", BIGBIRD_PEGASUS_PARAMS)
    print(save_tf1(d / "model.ckpt", tensors, global_step=1000, write_checkpoint_file=True))


# --- ImageGPT (openai/image-gpt) --------------------------------------------------------------------------------

IMAGEGPT_HPARAMS = {"n_ctx": 16, "n_embd": 16, "n_head": 2, "n_layer": 2, "n_vocab": 40}
IMAGEGPT_SEED = 15


def imagegpt_shapes(h: dict) -> dict[str, list[int]]:
    """openai/image-gpt src/model.py: `wte` [n_vocab, n_embd] (the colour clusters), `sos` [n_embd] (the
    start-of-image embedding), `wtet` [n_vocab, n_embd] (the untied output), `wpe`; per block `ln_1/g` and `ln_2/g`
    (its norm has a scale only), `attn/q_proj|k_proj|v_proj|c_proj` [n_embd, n_embd] (no biases), `mlp/c_fc|c_proj`
    as GPT-2's conv1d ([1, nx, nf] and a bias); `ln_f/g`."""
    e = h["n_embd"]
    shapes = {"model/wte": [h["n_vocab"], e], "model/wpe": [h["n_ctx"], e], "model/sos": [e],
              "model/wtet": [h["n_vocab"], e]}
    for n in range(h["n_layer"]):
        p = f"model/h{n}/"
        shapes.update({p + "ln_1/g": [e], p + "attn/q_proj": [e, e], p + "attn/k_proj": [e, e],
                       p + "attn/v_proj": [e, e], p + "attn/c_proj": [e, e], p + "ln_2/g": [e],
                       p + "mlp/c_fc/w": [1, e, 4 * e], p + "mlp/c_fc/b": [4 * e],
                       p + "mlp/c_proj/w": [1, 4 * e, e], p + "mlp/c_proj/b": [e]})
    shapes["model/ln_f/g"] = [e]
    return shapes


def make_imagegpt() -> None:
    """imagegpt: model.ckpt-1000 + checkpoint (global_step) and hparams.json (the run's n_ctx, n_embd, n_head,
    n_layer, n_vocab)."""
    tensors = {n: value(IMAGEGPT_SEED, n, s, "embedding" if n in ("model/wte", "model/wpe", "model/sos", "model/wtet")
                        else "auto") for n, s in imagegpt_shapes(IMAGEGPT_HPARAMS).items()}
    d = ROOT / "imagegpt"
    clean(d)
    write_json(d / "hparams.json", IMAGEGPT_HPARAMS)
    print(save_tf1(d / "model.ckpt", tensors, global_step=1000, write_checkpoint_file=True))


def main(argv: list[str]) -> None:
    makers = {"xlnet": make_xlnet, "xlnet_stsb": make_xlnet_stsb, "gpt_neo": make_gpt_neo, "pegasus": make_pegasus,
              "bigbird_pegasus": make_bigbird_pegasus, "imagegpt": make_imagegpt}
    for name in argv or list(makers):
        makers[name]()


if __name__ == "__main__":
    main(sys.argv[1:])
