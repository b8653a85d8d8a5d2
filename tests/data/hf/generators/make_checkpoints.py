"""Write the tiny TensorFlow checkpoints of tests/data/hf/<case>/ with real TensorFlow.

    /work/venvs/hf-data/bin/python tests/data/hf/generators/make_checkpoints.py [family ...]

(any venv with tensorflow-cpu >= 2.16 and tf-keras; families: bert bert_tf2 albert electra gpt2 t5; default all).
Each case directory gets the checkpoint under the file names the original release uses and the original
configuration file beside it. Variable names, shapes and layouts are the original repositories':
google-research/bert, tensorflow/models v2.3.0 (official/nlp/bert, TF2), google-research/albert,
google-research/electra, openai/gpt-2, mesh-tensorflow/T5. See ../README.md for the table of cases.
"""
from __future__ import annotations

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


FAMILIES = {"bert": make_bert, "bert_tf2": make_bert_tf2}


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
