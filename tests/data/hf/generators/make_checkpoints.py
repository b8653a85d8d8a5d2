"""Write the tiny TensorFlow checkpoints of tests/data/hf/<case>/ with real TensorFlow.

    /work/venvs/hf-data/bin/python tests/data/hf/generators/make_checkpoints.py [family ...]

(any venv with tensorflow-cpu >= 2.16 and tf-keras; families: bert bert_tf2 albert electra gpt2 t5 t5_mixed;
default all).
Each case directory gets the checkpoint under the file names the original release uses and the original
configuration file beside it. Variable names, shapes and layouts are the original repositories':
google-research/bert, tensorflow/models v2.3.0 (official/nlp/bert, TF2), google-research/albert,
google-research/electra, openai/gpt-2, mesh-tensorflow/T5. See ../README.md for the table of cases.
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

# --- BERT (google-research/bert, TF1) ---------------------------------------------------------------------

BERT_CONFIG = {"attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
               "hidden_size": 32, "initializer_range": 0.02, "intermediate_size": 37,
               "max_position_embeddings": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
               "type_vocab_size": 2, "vocab_size": 99}
BERT_SEED = 1


def bert_layer_shapes(prefix: str, h: int, i: int) -> dict[str, list[int]]:
    """google-research/bert modeling.py transformer_model: one encoder layer's variables under ``prefix``."""
    shapes: dict[str, list[int]] = {}
    for part in ("attention/self/query", "attention/self/key", "attention/self/value", "attention/output/dense"):
        shapes[prefix + part + "/kernel"], shapes[prefix + part + "/bias"] = [h, h], [h]
    shapes[prefix + "attention/output/LayerNorm/beta"] = [h]
    shapes[prefix + "attention/output/LayerNorm/gamma"] = [h]
    shapes[prefix + "intermediate/dense/kernel"], shapes[prefix + "intermediate/dense/bias"] = [h, i], [i]
    shapes[prefix + "output/dense/kernel"], shapes[prefix + "output/dense/bias"] = [i, h], [h]
    shapes[prefix + "output/LayerNorm/beta"], shapes[prefix + "output/LayerNorm/gamma"] = [h], [h]
    return shapes


def bert_shapes(c: dict) -> dict[str, list[int]]:
    """Every variable of run_pretraining.py's model (BertModel + cls/ pretraining heads), google-research/bert."""
    h, v = c["hidden_size"], c["vocab_size"]
    shapes = {"bert/embeddings/word_embeddings": [v, h],
              "bert/embeddings/token_type_embeddings": [c["type_vocab_size"], h],
              "bert/embeddings/position_embeddings": [c["max_position_embeddings"], h],
              "bert/embeddings/LayerNorm/beta": [h], "bert/embeddings/LayerNorm/gamma": [h]}
    for n in range(c["num_hidden_layers"]):
        shapes.update(bert_layer_shapes(f"bert/encoder/layer_{n}/", h, c["intermediate_size"]))
    shapes.update({"bert/pooler/dense/kernel": [h, h], "bert/pooler/dense/bias": [h],
                   "cls/predictions/transform/dense/kernel": [h, h], "cls/predictions/transform/dense/bias": [h],
                   "cls/predictions/transform/LayerNorm/beta": [h], "cls/predictions/transform/LayerNorm/gamma": [h],
                   "cls/predictions/output_bias": [v],
                   "cls/seq_relationship/output_weights": [2, h], "cls/seq_relationship/output_bias": [2]})
    return shapes


def with_adam_slots(seed: int, tensors: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Add AdamWeightDecayOptimizer's (BERT, ELECTRA) / LAMBOptimizer's (ALBERT) slots: ``<name>/adam_m``,
    ``<name>/adam_v`` (tf.get_variable(name=param_name + "/adam_m"), trainable=False) for every trainable variable."""
    out = dict(tensors)
    for name, array in tensors.items():
        out[name + "/adam_m"] = value(seed, name + "/adam_m", list(array.shape), "m")
        out[name + "/adam_v"] = value(seed, name + "/adam_v", list(array.shape), "v")
    return out


def make_bert() -> None:
    """bert: a released-style model (bert_model.ckpt); bert_slots: a run_pretraining.py output (model.ckpt-3)."""
    tensors = {n: value(BERT_SEED, n, s) for n, s in bert_shapes(BERT_CONFIG).items()}
    for case, slots in (("bert", False), ("bert_slots", True)):
        d = ROOT / case
        clean(d)
        write_json(d / "bert_config.json", BERT_CONFIG)
        if slots:
            print(save_tf1(d / "model.ckpt", with_adam_slots(BERT_SEED, tensors), global_step=3,
                           write_checkpoint_file=True))
        else:
            print(save_tf1(d / "bert_model.ckpt", tensors))


# --- BERT, TF2 Model Garden v2.3 object-based layout --------------------------------------------------------
# tensorflow/models v2.3.0 official/nlp/bert checkpoints (the "TF 2.x" BERT checkpoints on the Model Garden
# page) are tf.train.Checkpoint(model=bert_encoder) of a Keras functional model: its layers with weights are
# tracked as layer_with_weights-N in this order: word embeddings (OnDeviceEmbedding), position embeddings,
# type embeddings, the embedding LayerNorm, the num_hidden_layers Transformer layers, the pooler Dense.
# A Transformer layer holds _attention_layer (MultiHeadAttention: _query_dense, _key_dense, _value_dense
# [h, heads, head_size] EinsumDense kernels, and _output_dense) and keeps _attention_output_dense =
# _attention_layer._output_dense (one object, two references; the saver names its variables by the shorter
# path), _attention_layer_norm, _intermediate_dense, _output_dense, _output_layer_norm.
# Built here from tf.Module objects with exactly those attribute names (tf-models-official 2.3 needs TF 2.3
# and Python <= 3.8), which gives the same object paths and checkpoint keys.


def _module(**attrs: object) -> tf.Module:
    m = tf.Module()
    for k, a in attrs.items():
        setattr(m, k, a)
    return m


def _dense(kernel: np.ndarray, bias: np.ndarray) -> tf.Module:
    return _module(kernel=tf.Variable(kernel), bias=tf.Variable(bias))


def _norm(gamma: np.ndarray, beta: np.ndarray) -> tf.Module:
    return _module(gamma=tf.Variable(gamma), beta=tf.Variable(beta))


def bert_tf2_encoder(c: dict, t: dict[str, np.ndarray]) -> tf.Module:
    """The v2.3 encoder object graph holding the TF1 ``bert`` case's values (reshaped where v2.3 is 3-D)."""
    h, heads = c["hidden_size"], c["num_attention_heads"]
    hs = h // heads
    e = "bert/embeddings/"
    layers = [_module(embeddings=tf.Variable(t[e + "word_embeddings"])),
              _module(embeddings=tf.Variable(t[e + "position_embeddings"])),
              _module(embeddings=tf.Variable(t[e + "token_type_embeddings"])),
              _norm(t[e + "LayerNorm/gamma"], t[e + "LayerNorm/beta"])]
    for n in range(c["num_hidden_layers"]):
        p = f"bert/encoder/layer_{n}/"

        def qkv(part: str, p: str = p) -> tf.Module:
            return _dense(t[p + f"attention/self/{part}/kernel"].reshape(h, heads, hs),
                          t[p + f"attention/self/{part}/bias"].reshape(heads, hs))

        out = _dense(t[p + "attention/output/dense/kernel"].reshape(heads, hs, h), t[p + "attention/output/dense/bias"])
        attention = _module(_query_dense=qkv("query"), _key_dense=qkv("key"), _value_dense=qkv("value"),
                            _output_dense=out)
        layers.append(_module(
            _attention_layer=attention, _attention_output_dense=out,
            _attention_layer_norm=_norm(t[p + "attention/output/LayerNorm/gamma"],
                                        t[p + "attention/output/LayerNorm/beta"]),
            _intermediate_dense=_dense(t[p + "intermediate/dense/kernel"], t[p + "intermediate/dense/bias"]),
            _output_dense=_dense(t[p + "output/dense/kernel"], t[p + "output/dense/bias"]),
            _output_layer_norm=_norm(t[p + "output/LayerNorm/gamma"], t[p + "output/LayerNorm/beta"])))
    layers.append(_dense(t["bert/pooler/dense/kernel"], t["bert/pooler/dense/bias"]))
    return _module(**{f"layer_with_weights-{k}": layer for k, layer in enumerate(layers)})


def make_bert_tf2() -> None:
    """bert_tf2: tf.train.Checkpoint(model=encoder); bert_tf2_slots: + a Keras (OptimizerV2) Adam's m/v slots."""
    import tf_keras

    tensors = {n: value(BERT_SEED, n, s) for n, s in bert_shapes(BERT_CONFIG).items()}
    for case, slots in (("bert_tf2", False), ("bert_tf2_slots", True)):
        d = ROOT / case
        clean(d)
        write_json(d / "bert_config.json", BERT_CONFIG)
        encoder = bert_tf2_encoder(BERT_CONFIG, tensors)
        if not slots:
            print(tf.train.Checkpoint(model=encoder).write(str(d / "bert_model.ckpt")))
            continue
        variables = list(encoder.trainable_variables)
        saved = [v.numpy() for v in variables]
        optimizer = tf_keras.optimizers.legacy.Adam(learning_rate=1e-3)
        rng = np.random.default_rng(BERT_SEED)
        optimizer.apply_gradients([(tf.constant(rng.standard_normal(v.shape).astype(np.float32)), v)
                                   for v in variables])
        for v, s in zip(variables, saved):  # the model keeps the bert_tf2 values; the slots hold one step's m, v
            v.assign(s)
        checkpoint = tf.train.Checkpoint(model=encoder, optimizer=optimizer)
        print(checkpoint.save(str(d / "ckpt")))  # ckpt-1, with a `checkpoint` file, as Model Garden training


# --- ALBERT (google-research/albert, TF1) ---------------------------------------------------------------------

ALBERT_CONFIG = {"attention_probs_dropout_prob": 0, "hidden_act": "gelu", "hidden_dropout_prob": 0,
                 "embedding_size": 16, "hidden_size": 32, "initializer_range": 0.02, "intermediate_size": 37,
                 "max_position_embeddings": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
                 "num_hidden_groups": 1, "net_structure_type": 0, "gap_size": 0, "num_memory_blocks": 0,
                 "inner_group_num": 1, "down_scale_factor": 1, "type_vocab_size": 2, "vocab_size": 99}
ALBERT_SEED = 2


def albert_shapes(c: dict) -> dict[str, list[int]]:
    """ALBERT's modeling.py + run_pretraining.py (MLM and sentence-order heads): one shared layer group
    (num_hidden_groups 1, inner_group_num 1) used by all num_hidden_layers layers; attention kernels are 2-D
    [h, heads * head_size] (dense_layer_3d) and [heads * head_size, h] (dense_layer_3d_proj)."""
    e, h, i, v = c["embedding_size"], c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    shapes = {"bert/embeddings/word_embeddings": [v, e],
              "bert/embeddings/token_type_embeddings": [c["type_vocab_size"], e],
              "bert/embeddings/position_embeddings": [c["max_position_embeddings"], e],
              "bert/embeddings/LayerNorm/beta": [e], "bert/embeddings/LayerNorm/gamma": [e],
              "bert/encoder/embedding_hidden_mapping_in/kernel": [e, h],
              "bert/encoder/embedding_hidden_mapping_in/bias": [h]}
    for g in range(c["num_hidden_groups"]):
        for n in range(c["inner_group_num"]):
            p = f"bert/encoder/transformer/group_{g}/inner_group_{n}/"
            for part in ("query", "key", "value"):
                shapes[p + f"attention_1/self/{part}/kernel"] = [h, h]
                shapes[p + f"attention_1/self/{part}/bias"] = [h]
            shapes[p + "attention_1/output/dense/kernel"], shapes[p + "attention_1/output/dense/bias"] = [h, h], [h]
            shapes[p + "LayerNorm/beta"], shapes[p + "LayerNorm/gamma"] = [h], [h]
            shapes[p + "ffn_1/intermediate/dense/kernel"], shapes[p + "ffn_1/intermediate/dense/bias"] = [h, i], [i]
            shapes[p + "ffn_1/intermediate/output/dense/kernel"] = [i, h]
            shapes[p + "ffn_1/intermediate/output/dense/bias"] = [h]
            shapes[p + "LayerNorm_1/beta"], shapes[p + "LayerNorm_1/gamma"] = [h], [h]
    shapes.update({"bert/pooler/dense/kernel": [h, h], "bert/pooler/dense/bias": [h],
                   "cls/predictions/transform/dense/kernel": [h, e], "cls/predictions/transform/dense/bias": [e],
                   "cls/predictions/transform/LayerNorm/beta": [e], "cls/predictions/transform/LayerNorm/gamma": [e],
                   "cls/predictions/output_bias": [v],
                   "cls/seq_relationship/output_weights": [2, h], "cls/seq_relationship/output_bias": [2]})
    return shapes


def make_albert() -> None:
    """albert: model.ckpt-best-style model only; albert_slots: + LAMBOptimizer's adam_m / adam_v, global_step."""
    tensors = {n: value(ALBERT_SEED, n, s) for n, s in albert_shapes(ALBERT_CONFIG).items()}
    for case, slots in (("albert", False), ("albert_slots", True)):
        d = ROOT / case
        clean(d)
        write_json(d / "albert_config.json", ALBERT_CONFIG)
        if slots:
            print(save_tf1(d / "model.ckpt", with_adam_slots(ALBERT_SEED, tensors), global_step=3,
                           write_checkpoint_file=True))
        else:
            print(save_tf1(d / "model.ckpt-best", tensors))


# --- ELECTRA (google-research/electra, TF1) -------------------------------------------------------------------
# run_pretraining.py with the defaults (untied_generator True, untied_generator_embeddings False): one checkpoint
# holds the discriminator (electra/..., discriminator_predictions/...) and the generator (generator/...,
# generator_predictions/...), which shares electra/embeddings/ (no generator/embeddings/ variables); a
# generator smaller than embedding_size has its own generator/embeddings_project. No pooler.

ELECTRA_HPARAMS = {"model_size": "small", "vocab_size": 99, "embedding_size": 16, "generator_hidden_size": 0.25,
                   "max_seq_length": 64,
                   "model_hparam_overrides": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
                                              "intermediate_size": 37, "max_position_embeddings": 64}}
ELECTRA_SEED = 3


def electra_configs(hp: dict) -> tuple[dict, dict]:
    """(discriminator, generator) transformers ElectraConfig dicts for the hparams, as ELECTRA derives them
    (util/training_utils.get_bert_config, run_pretraining.get_generator_config)."""
    o = hp["model_hparam_overrides"]
    common = {"attention_probs_dropout_prob": 0.1, "embedding_size": hp["embedding_size"], "hidden_act": "gelu",
              "hidden_dropout_prob": 0.1, "initializer_range": 0.02, "layer_norm_eps": 1e-12,
              "max_position_embeddings": o["max_position_embeddings"], "model_type": "electra", "pad_token_id": 0,
              "type_vocab_size": 2, "vocab_size": hp["vocab_size"]}
    disc = dict(common, architectures=["ElectraForPreTraining"], hidden_size=o["hidden_size"],
                intermediate_size=o["intermediate_size"], num_attention_heads=o["num_attention_heads"],
                num_hidden_layers=o["num_hidden_layers"])
    gh = int(round(o["hidden_size"] * hp["generator_hidden_size"]))
    gen = dict(common, architectures=["ElectraForMaskedLM"], hidden_size=gh, intermediate_size=4 * gh,
               num_attention_heads=max(1, gh // 64), num_hidden_layers=o["num_hidden_layers"])
    return disc, gen


def electra_shapes(disc: dict, gen: dict) -> dict[str, list[int]]:
    """Every variable of ELECTRA's PretrainingModel (generator + discriminator)."""
    e, v = disc["embedding_size"], disc["vocab_size"]
    shapes = {"electra/embeddings/word_embeddings": [v, e],
              "electra/embeddings/token_type_embeddings": [disc["type_vocab_size"], e],
              "electra/embeddings/position_embeddings": [disc["max_position_embeddings"], e],
              "electra/embeddings/LayerNorm/beta": [e], "electra/embeddings/LayerNorm/gamma": [e]}
    for scope, c in (("electra", disc), ("generator", gen)):
        h = c["hidden_size"]
        if h != e:
            shapes[f"{scope}/embeddings_project/kernel"], shapes[f"{scope}/embeddings_project/bias"] = [e, h], [h]
        for n in range(c["num_hidden_layers"]):
            shapes.update(bert_layer_shapes(f"{scope}/encoder/layer_{n}/", h, c["intermediate_size"]))
    h, gh = disc["hidden_size"], gen["hidden_size"]
    shapes.update({"discriminator_predictions/dense/kernel": [h, h], "discriminator_predictions/dense/bias": [h],
                   "discriminator_predictions/dense_1/kernel": [h, 1], "discriminator_predictions/dense_1/bias": [1],
                   "generator_predictions/dense/kernel": [gh, e], "generator_predictions/dense/bias": [e],
                   "generator_predictions/LayerNorm/beta": [e], "generator_predictions/LayerNorm/gamma": [e],
                   "generator_predictions/output_bias": [v]})
    return shapes


def make_electra() -> None:
    """electra: the released layout (model.ckpt); electra_slots: + adam_m / adam_v, global_step (model.ckpt-3)."""
    disc, gen = electra_configs(ELECTRA_HPARAMS)
    tensors = {n: value(ELECTRA_SEED, n, s) for n, s in electra_shapes(disc, gen).items()}
    for case, slots in (("electra", False), ("electra_slots", True)):
        d = ROOT / case
        clean(d)
        write_json(d / "hparams.json", ELECTRA_HPARAMS)
        write_json(d / "discriminator_config.json", disc)
        write_json(d / "generator_config.json", gen)
        if slots:
            print(save_tf1(d / "model.ckpt", with_adam_slots(ELECTRA_SEED, tensors), global_step=3,
                           write_checkpoint_file=True))
        else:
            print(save_tf1(d / "model.ckpt", tensors, write_checkpoint_file=True))


# --- GPT-2 (openai/gpt-2, TF1) ----------------------------------------------------------------------------------

GPT2_HPARAMS = {"n_vocab": 99, "n_ctx": 64, "n_embd": 32, "n_head": 4, "n_layer": 2}
GPT2_SEED = 4


def gpt2_shapes(hp: dict) -> dict[str, list[int]]:
    """openai/gpt-2 src/model.py: conv1d weights are [1, nx, nf]."""
    e = hp["n_embd"]
    shapes = {"model/wte": [hp["n_vocab"], e], "model/wpe": [hp["n_ctx"], e]}
    for n in range(hp["n_layer"]):
        p = f"model/h{n}/"
        shapes.update({p + "ln_1/g": [e], p + "ln_1/b": [e],
                       p + "attn/c_attn/w": [1, e, 3 * e], p + "attn/c_attn/b": [3 * e],
                       p + "attn/c_proj/w": [1, e, e], p + "attn/c_proj/b": [e],
                       p + "ln_2/g": [e], p + "ln_2/b": [e],
                       p + "mlp/c_fc/w": [1, e, 4 * e], p + "mlp/c_fc/b": [4 * e],
                       p + "mlp/c_proj/w": [1, 4 * e, e], p + "mlp/c_proj/b": [e]})
    shapes.update({"model/ln_f/g": [e], "model/ln_f/b": [e]})
    return shapes


def save_gpt2_with_adam(prefix: Path, tensors: dict[str, np.ndarray]) -> str:
    """The model plus a real tf.compat.v1.train.AdamOptimizer's state after one step (as openai/gpt-2-style
    fine-tuning scripts save it): <name>/Adam, <name>/Adam_1, beta1_power, beta2_power, global_step. The model
    variables are put back to their values afterwards, so the model equals the gpt2 case's."""
    v1 = tfwrite.v1
    with tf.Graph().as_default():
        variables = [v1.Variable(a, name=n) for n, a in tensors.items()]
        rng = np.random.default_rng(GPT2_SEED)
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


def make_gpt2() -> None:
    """gpt2: as the released 124M directory (model.ckpt + checkpoint + hparams.json); gpt2_slots: + Adam."""
    tensors = {n: value(GPT2_SEED, n, s) for n, s in gpt2_shapes(GPT2_HPARAMS).items()}
    for case, slots in (("gpt2", False), ("gpt2_slots", True)):
        d = ROOT / case
        clean(d)
        (d / "hparams.json").write_text(json.dumps(GPT2_HPARAMS, indent=2) + "\n")
        if slots:
            print(save_gpt2_with_adam(d / "model.ckpt", tensors))
        else:
            print(save_tf1(d / "model.ckpt", tensors, write_checkpoint_file=True))


# --- T5 (mesh-tensorflow, as google-research/text-to-text-transfer-transformer ships it) -----------------------

T5_SEED = 5
T5_GIN = {
    "1.0": {"d_model": 32, "d_ff": 37, "d_kv": 8, "num_heads": 4, "num_layers": 2, "vocab": 99,
            "activation": "'relu'", "shared_embedding_and_softmax_weights": True},
    "1.1": {"d_model": 32, "d_ff": 48, "d_kv": 6, "num_heads": 4, "num_layers": 2, "vocab": 99,
            "activation": "['gelu', 'linear']", "shared_embedding_and_softmax_weights": False},
}
# The two other pairings of feed-forward and output embedding (issue 37): a ReLU T5 with its own decoder/logits and
# a gated one tied to the shared embedding. Model only, no slots.
T5_MIXED = {
    "t5_relu_untied": {"d_model": 32, "d_ff": 37, "d_kv": 8, "num_heads": 4, "num_layers": 2, "vocab": 99,
                       "activation": "'relu'", "shared_embedding_and_softmax_weights": False, "gated": False,
                       "dropout": 0.1, "seed": T5_SEED + 20},
    "t5_gated_tied": {"d_model": 32, "d_ff": 48, "d_kv": 6, "num_heads": 4, "num_layers": 2, "vocab": 99,
                      "activation": "['gelu', 'linear']", "shared_embedding_and_softmax_weights": True, "gated": True,
                      "dropout": 0.0, "seed": T5_SEED + 30},
}


def t5_shapes(g: dict) -> dict[str, list[int]]:
    """mesh-tensorflow Bitransformer variables (block_scope, combine_dims: q/k/v [d_model, heads * d_kv],
    o [heads * d_kv, d_model]; relative_attention_bias [heads, buckets] in block_000 only, "bias_shared";
    no EncDecAttention bias; the final rms_norm per stack; v1.1: wi_0 / wi_1 and decoder/logits/kernel)."""
    d, inner, ff = g["d_model"], g["num_heads"] * g["d_kv"], g["d_ff"]
    shapes = {"shared/embedding": [g["vocab"], d]}
    gated = g.get("gated", not g["shared_embedding_and_softmax_weights"])
    for stack in ("encoder", "decoder"):
        for b in range(g["num_layers"]):
            p = f"{stack}/block_{b:03d}/"
            attns = ["SelfAttention"] + (["EncDecAttention"] if stack == "decoder" else [])
            for k, attn in enumerate(attns):
                q = p + f"layer_{k:03d}/{attn}/"
                shapes.update({q + "q": [d, inner], q + "k": [d, inner], q + "v": [d, inner], q + "o": [inner, d]})
                if b == 0 and attn == "SelfAttention":
                    shapes[q + "relative_attention_bias"] = [g["num_heads"], 32]
                shapes[p + f"layer_{k:03d}/rms_norm/scale"] = [d]
            f = p + f"layer_{len(attns):03d}/"
            if gated:
                shapes[f + "DenseReluDense/wi_0/kernel"], shapes[f + "DenseReluDense/wi_1/kernel"] = [d, ff], [d, ff]
            else:
                shapes[f + "DenseReluDense/wi/kernel"] = [d, ff]
            shapes[f + "DenseReluDense/wo/kernel"] = [ff, d]
            shapes[f + "rms_norm/scale"] = [d]
        shapes[f"{stack}/rms_norm/scale"] = [d]
    if not g["shared_embedding_and_softmax_weights"]:
        shapes["decoder/logits/kernel"] = [d, g["vocab"]]
    return shapes


def adafactor_slots(seed: int, tensors: dict[str, np.ndarray], min_dim_size_to_factor: int) -> dict[str, np.ndarray]:
    """mesh_tensorflow.optimize.AdafactorOptimizer (beta1 0, factored): a variable whose second-largest dim is
    >= min_dim_size_to_factor gets <name>_slot_vr (its shape without the largest dim d0) and <name>_slot_vc
    (without d1); any other gets <name>_slot_v of its own shape."""
    out = dict(tensors)
    for name, a in tensors.items():
        dims = sorted(range(a.ndim), key=lambda k: -a.shape[k])
        if a.ndim >= 2 and a.shape[dims[1]] >= min_dim_size_to_factor:
            vr = [s for k, s in enumerate(a.shape) if k != dims[0]]
            vc = [s for k, s in enumerate(a.shape) if k != dims[1]]
            out[name + "_slot_vr"] = value(seed, name + "_slot_vr", vr, "v")
            out[name + "_slot_vc"] = value(seed, name + "_slot_vc", vc, "v")
        else:
            out[name + "_slot_v"] = value(seed, name + "_slot_v", list(a.shape), "v")
    return out


def t5_gin(version: str, g: dict) -> str:
    """An operative_config.gin as t5_mesh_transformer writes it (the parts a converter reads, in its format)."""
    activation = g["activation"]
    dropout = g.get("dropout", 0.1 if version == "1.0" else 0.0)
    lines = [
        "import mesh_tensorflow.optimize", "import mesh_tensorflow.transformer.transformer",
        "import mesh_tensorflow.transformer.transformer_layers", "import t5.models.mesh_transformer", "",
        "# Macros:", "# " + "=" * 78,
        f"d_ff = {g['d_ff']}", f"d_kv = {g['d_kv']}", f"d_model = {g['d_model']}",
        f"dropout_rate = {dropout}", "inputs_length = 512",
        f"num_heads = {g['num_heads']}", f"num_layers = {g['num_layers']}", "",
        "# Parameters for AdafactorOptimizer:", "# " + "=" * 78,
        "AdafactorOptimizer.beta1 = 0.0", "AdafactorOptimizer.clipping_threshold = 1.0",
        "AdafactorOptimizer.decay_rate = None", "AdafactorOptimizer.epsilon1 = 1e-30",
        "AdafactorOptimizer.epsilon2 = 0.001", "AdafactorOptimizer.factored = True",
        "AdafactorOptimizer.min_dim_size_to_factor = 16",
        "AdafactorOptimizer.multiply_by_parameter_scale = True", "",
        "# Parameters for Bitransformer:", "# " + "=" * 78, "Bitransformer.shared_embedding = True", ""]
    for stack in ("decoder", "encoder"):
        lines += [f"# Parameters for {stack}/DenseReluDense:", "# " + "=" * 78,
                  f"{stack}/DenseReluDense.activation = {activation}",
                  f"{stack}/DenseReluDense.dropout_rate = %dropout_rate",
                  f"{stack}/DenseReluDense.hidden_size = %d_ff", f"{stack}/DenseReluDense.use_bias = False", ""]
    lines += ["# Parameters for decoder/EncDecAttention:", "# " + "=" * 78,
              "decoder/EncDecAttention.relative_attention_type = None", "",
              "# Parameters for get_variable_dtype:", "# " + "=" * 78,
              "get_variable_dtype.activation_dtype = 'bfloat16'", ""]
    for stack in ("decoder", "encoder"):
        layers = ["SelfAttention"] + (["EncDecAttention"] if stack == "decoder" else []) + ["DenseReluDense"]
        lines += [f"# Parameters for {stack}/LayerStack:", "# " + "=" * 78,
                  f"{stack}/LayerStack.dropout_rate = %dropout_rate", f"{stack}/LayerStack.norm_epsilon = 1e-06", "",
                  f"# Parameters for {stack}/make_layer_stack:", "# " + "=" * 78,
                  f"{stack}/make_layer_stack.block_scope = True",
                  f"{stack}/make_layer_stack.layers = \\",
                  "    [" + ",\n     ".join(f"@mesh_tensorflow.transformer.transformer_layers.{x}" for x in layers) + "]",
                  f"{stack}/make_layer_stack.num_layers = %num_layers", ""]
    lines += ["# Parameters for make_bitransformer:", "# " + "=" * 78,
              "make_bitransformer.decoder_name = 'decoder'", "make_bitransformer.encoder_name = 'encoder'", ""]
    for stack in ("decoder", "encoder"):
        lines += [f"# Parameters for {stack}/SelfAttention:", "# " + "=" * 78,
                  f"{stack}/SelfAttention.attention_kwargs = None", f"{stack}/SelfAttention.combine_dims = True",
                  f"{stack}/SelfAttention.dropout_rate = %dropout_rate",
                  f"{stack}/SelfAttention.key_value_size = %d_kv", f"{stack}/SelfAttention.num_heads = %num_heads",
                  f"{stack}/SelfAttention.num_memory_heads = 0",
                  f"{stack}/SelfAttention.relative_attention_num_buckets = 32",
                  f"{stack}/SelfAttention.relative_attention_type = 'bias_shared'",
                  f"{stack}/SelfAttention.shared_kv = False", ""]
    lines += ["# Parameters for decoder/Unitransformer:", "# " + "=" * 78,
              "decoder/Unitransformer.d_model = %d_model",
              f"decoder/Unitransformer.shared_embedding_and_softmax_weights = {g['shared_embedding_and_softmax_weights']}",
              "", "# Parameters for encoder/Unitransformer:", "# " + "=" * 78,
              "encoder/Unitransformer.d_model = %d_model", "", "# Parameters for run:", "# " + "=" * 78,
              "run.model_type = 'bitransformer'", "run.optimizer = @optimize.AdafactorOptimizer",
              "run.sequence_length = {'inputs': 512, 'targets': 114}", "",
              "# Parameters for get_vocabulary / vocab_size (padded to the model's vocab):", "# " + "=" * 78,
              f"VocabEmbedding.vocab_size = {g['vocab']}", ""]
    return "\n".join(lines)


def make_t5() -> None:
    """t5 (v1.0) / t5_v1_1, each model only (model.ckpt-1000000 + checkpoint + operative_config.gin) and
    _slots (+ Adafactor's _slot_vr / _slot_vc / _slot_v, global_step)."""
    for version, base in (("1.0", "t5"), ("1.1", "t5_v1_1")):
        g = T5_GIN[version]
        seed = T5_SEED + (10 if version == "1.1" else 0)
        tensors = {n: value(seed, n, s) for n, s in t5_shapes(g).items()}
        for case, slots in ((base, False), (base + "_slots", True)):
            d = ROOT / case
            clean(d)
            (d / "operative_config.gin").write_text(t5_gin(version, g))
            if slots:
                print(save_tf1(d / "model.ckpt", adafactor_slots(seed, tensors, 16), global_step=1000003,
                               write_checkpoint_file=True))
            else:
                print(save_tf1(d / "model.ckpt", tensors, global_step=1000000, write_checkpoint_file=True))


# --- BERT, TF2 Model Garden BertEncoder layout (tensorflow/models >= 2.4, official/nlp/modeling) -------------------
# tf.train.Checkpoint(encoder=BertEncoder) (tools/tf2_bert_encoder_checkpoint_converter.py, checkpoint_model_name
# "encoder"): a functional Keras model, so its weighted layers are again layer_with_weights-N (same order), and the
# model also keeps them as attributes (_embedding_layer, _position_embedding_layer, _type_embedding_layer,
# _embedding_norm_layer, _transformer_layers (a list), _pooler_layer): a second path to every layer object, which
# the saver does not use for names (layer_with_weights-N comes first). TransformerEncoderBlock keeps Keras
# MultiHeadAttention's own _output_dense (no _attention_output_dense alias): _attention_layer/_output_dense.
# transformers' TF2 script does not read this layout (it expects "model/" and _attention_output_dense).


def bert_tf2_encoder_v2(c: dict, t: dict[str, np.ndarray]) -> tf.Module:
    """The BertEncoder object graph holding the TF1 ``bert`` case's values."""
    old = bert_tf2_encoder(c, t)
    n_layers = c["num_hidden_layers"]
    layers = [getattr(old, f"layer_with_weights-{k}") for k in range(4 + n_layers + 1)]
    for layer in layers[4:4 + n_layers]:
        del layer._attention_output_dense  # only _attention_layer/_output_dense remains
    encoder = _module(**{f"layer_with_weights-{k}": layer for k, layer in enumerate(layers)})
    encoder._embedding_layer, encoder._position_embedding_layer = layers[0], layers[1]
    encoder._type_embedding_layer, encoder._embedding_norm_layer = layers[2], layers[3]
    encoder._transformer_layers = layers[4:4 + n_layers]
    encoder._pooler_layer = layers[-1]
    return encoder


def make_bert_tf2_encoder() -> None:
    """bert_tf2_encoder: tf.train.Checkpoint(encoder=encoder).write("bert_model.ckpt"), the bert values."""
    tensors = {n: value(BERT_SEED, n, s) for n, s in bert_shapes(BERT_CONFIG).items()}
    d = ROOT / "bert_tf2_encoder"
    clean(d)
    write_json(d / "bert_config.json", BERT_CONFIG)
    print(tf.train.Checkpoint(encoder=bert_tf2_encoder_v2(BERT_CONFIG, tensors)).write(str(d / "bert_model.ckpt")))


def make_t5_mixed() -> None:
    """t5_relu_untied / t5_gated_tied: model only (model.ckpt-1000000 + checkpoint + operative_config.gin)."""
    for case, g in T5_MIXED.items():
        tensors = {n: value(g["seed"], n, s) for n, s in t5_shapes(g).items()}
        d = ROOT / case
        clean(d)
        (d / "operative_config.gin").write_text(t5_gin(case, g))
        print(save_tf1(d / "model.ckpt", tensors, global_step=1000000, write_checkpoint_file=True))


FAMILIES = {"bert": make_bert, "bert_tf2": make_bert_tf2, "bert_tf2_encoder": make_bert_tf2_encoder, "albert": make_albert, "electra": make_electra,
            "gpt2": make_gpt2, "t5": make_t5, "t5_mixed": make_t5_mixed}


def main(argv: list[str]) -> None:
    for family in argv or list(FAMILIES):
        FAMILIES[family]()
    for d in sorted(p for p in ROOT.iterdir() if p.is_dir() and p.name not in ("generators", "golden")):
        names = [f.name for f in d.iterdir()]
        prefix = next((str(d / n[: -len(".index")]) for n in names if n.endswith(".index")), None)
        if prefix:
            print(d.name, len(tfwrite.listing(prefix)), "variables")


if __name__ == "__main__":
    main(sys.argv[1:])
