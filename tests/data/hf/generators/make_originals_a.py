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
- ``albert_classifier``: google-research/albert's ``run_classifier.py`` output: its encoder (one shared layer group)
  and the same top-level ``output_weights`` / ``output_bias`` head (num_labels 4), ``global_step`` (no slots, to stay
  small); ``load_tf_weights_in_albert`` reads this head as it is (it renames the top-level names to
  ``classifier/``), so its golden case is made directly.
- ``bert_squad``: what ``run_squad.py`` leaves: the encoder (pooler included: modeling.BertModel always makes it,
  run_squad never uses it), ``cls/squad/output_weights`` [2, hidden], ``cls/squad/output_bias`` [2], the slots.

- ``bert_tf2_pretrainer``: a Model Garden (tensorflow/models, TF2 object-based) BERT with its masked-LM head, as
  ``tools/tf2_bert_encoder_checkpoint_converter.py --converted_model=pretrainer`` and Model Garden's pretraining
  task save it: ``tf.train.Checkpoint(**BertPretrainerV2(encoder).checkpoint_items).write("bert_model.ckpt")``,
  i.e. ``encoder/layer_with_weights-1..6/...`` (no ``-0``: the word embeddings are the masked-LM head's
  ``masked_lm/embedding_table``, the shorter path to the same variable), ``masked_lm/dense``,
  ``masked_lm/layer_norm``, ``masked_lm/output_bias.Sbias``. Made by tf-models-official 2.20's own
  ``BertEncoder`` and ``BertPretrainerV2`` (TF_USE_LEGACY_KERAS=1), so this step needs a venv with
  tf-models-official (``pip install --no-deps tf-models-official`` + scipy, gin-config, pyyaml over the oracle's
  packages); its values are set from the TF1 names' generators. transformers 4.x has no loader for this layout
  (its TF2 script reads encoders only, "does not handle MLM/NSP heads", and refuses ``encoder/``), so its golden
  case is made by ``load_tf_weights_in_bert`` on the same values saved under google-research/bert's names (no
  pooler: ``BertForMaskedLM`` has none), traced by value as the others.

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
CASES["bert_tf2_pretrainer"] = {"family": "bert", "layout": "tf2-model-garden-pretrainer",
                                "checkpoint": "bert_tf2_pretrainer/bert_model.ckpt",
                                "config": "bert_tf2_pretrainer/bert_config.json", "class": "BertForMaskedLM",
                                "loader": "load_tf_weights_in_bert", "golden_made_by": "make_originals_a.py"}
SEEDS = {"bert_classifier": 11, "bert_squad": 12, "bert_tf2_pretrainer": 13}
HEADS = {"bert_classifier": {"output_weights": [3, 16], "output_bias": [3]},
         "bert_squad": {"cls/squad/output_weights": [2, 16], "cls/squad/output_bias": [2]}}
HEADS["bert_tf2_pretrainer"] = {n: sh for n, sh in mc.bert_shapes(SMALL_BERT).items() if n.startswith("cls/predictions/")}
RENAMED = {"bert_tf2_pretrainer": {},
           "bert_classifier": {"output_weights": "classifier/output_weights", "output_bias": "classifier/output_bias"},
           "bert_squad": {"cls/squad/output_weights": "qa_outputs/output_weights",
                          "cls/squad/output_bias": "qa_outputs/output_bias"}}
"""The names load_tf_weights_in_bert reads into the class's head (no transpose: output_weights is [out, in])."""


SMALL_ALBERT = {"attention_probs_dropout_prob": 0, "down_scale_factor": 1, "embedding_size": 8, "gap_size": 0,
                "hidden_act": "gelu", "hidden_dropout_prob": 0, "hidden_size": 16, "initializer_range": 0.02,
                "inner_group_num": 1, "intermediate_size": 24, "max_position_embeddings": 32, "net_structure_type": 0,
                "num_attention_heads": 2, "num_hidden_groups": 1, "num_hidden_layers": 2, "num_memory_blocks": 0,
                "type_vocab_size": 2, "vocab_size": 50}
"""albert_config.json of ``albert_classifier`` (the released v2 format), smaller than the ``albert`` case's."""
CASES["albert_classifier"] = {"family": "albert", "layout": "tf1-run-classifier",
                              "checkpoint": "albert_classifier/model.ckpt-3",
                              "config": "albert_classifier/albert_config.json",
                              "class": "AlbertForSequenceClassification", "loader": "load_tf_weights_in_albert",
                              "num_labels": 4, "golden_made_by": "make_originals_a.py"}
SEEDS["albert_classifier"] = 18
HEADS["albert_classifier"] = {"output_weights": [4, 16], "output_bias": [4]}


def model_tensors(case: str) -> dict:
    """The fine-tuned model's variables: the encoder of modeling.BertModel (no cls/ pretraining heads) + the head
    (ALBERT's run_classifier.py: its modeling.AlbertModel + the same top-level head)."""
    if case == "albert_classifier":
        shapes = {n: s for n, s in mc.albert_shapes(SMALL_ALBERT).items() if n.startswith("bert/")}
        shapes.update(HEADS[case])
        return {n: value(SEEDS[case], n, s) for n, s in shapes.items()}
    shapes = {n: s for n, s in mc.bert_shapes(SMALL_BERT).items() if n.startswith("bert/")}
    shapes.update(HEADS[case])
    return {n: value(SEEDS[case], n, s) for n, s in shapes.items()}


MODEL_GARDEN_NAMES = [  # tf-models-official variable names (v.name) -> google-research/bert's, in order
    (r"word_embeddings/embeddings", "bert/embeddings/word_embeddings"),
    (r"position_embedding/embeddings", "bert/embeddings/position_embeddings"),
    (r"type_embeddings/embeddings", "bert/embeddings/token_type_embeddings"),
    (r"embeddings/layer_norm/(gamma|beta)", r"bert/embeddings/LayerNorm/\1"),
    (r"transformer/layer_(\d+)/self_attention/(query|key|value)/(kernel|bias)", r"bert/encoder/layer_\1/attention/self/\2/\3"),
    (r"transformer/layer_(\d+)/self_attention/attention_output/(kernel|bias)", r"bert/encoder/layer_\1/attention/output/dense/\2"),
    (r"transformer/layer_(\d+)/self_attention_layer_norm/(gamma|beta)", r"bert/encoder/layer_\1/attention/output/LayerNorm/\2"),
    (r"transformer/layer_(\d+)/intermediate/(kernel|bias)", r"bert/encoder/layer_\1/intermediate/dense/\2"),
    (r"transformer/layer_(\d+)/output/(kernel|bias)", r"bert/encoder/layer_\1/output/dense/\2"),
    (r"transformer/layer_(\d+)/output_layer_norm/(gamma|beta)", r"bert/encoder/layer_\1/output/LayerNorm/\2"),
    (r"pooler_transform/(kernel|bias)", r"bert/pooler/dense/\1"),
    (r"bert/cls/predictions/transform/dense/(kernel|bias)", r"cls/predictions/transform/dense/\1"),
    (r"bert/cls/predictions/transform/LayerNorm/(gamma|beta)", r"cls/predictions/transform/LayerNorm/\1"),
    (r"bert/cls/predictions/output_bias/bias", "cls/predictions/output_bias"),
]


def make_model_garden_pretrainer(case: str) -> None:
    """tf-models-official's BertPretrainerV2 (no classification heads), values from the TF1 names' generators."""
    import os
    import re

    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import tensorflow as tf
    from official.nlp.modeling import models, networks

    c = SMALL_BERT
    encoder = networks.BertEncoder(vocab_size=c["vocab_size"], hidden_size=c["hidden_size"],
                                   num_layers=c["num_hidden_layers"], num_attention_heads=c["num_attention_heads"],
                                   inner_dim=c["intermediate_size"], max_sequence_length=c["max_position_embeddings"],
                                   type_vocab_size=c["type_vocab_size"])
    pretrainer = models.BertPretrainerV2(encoder_network=encoder)
    ones = tf.ones((1, 8), tf.int32)
    pretrainer(dict(input_word_ids=ones, input_mask=ones, input_type_ids=tf.zeros_like(ones),
                    masked_lm_positions=tf.zeros((1, 2), tf.int32)))
    tensors = {**{n: value(SEEDS[case], n, s) for n, s in mc.bert_shapes(c).items() if n.startswith("bert/")},
               **{n: value(SEEDS[case], n, s) for n, s in HEADS[case].items()}}
    for variable in pretrainer.variables:
        name = variable.name.rsplit(":", 1)[0]
        tf1 = next(re.sub(f"^{a}$", b, name) for a, b in MODEL_GARDEN_NAMES if re.fullmatch(a, name))
        variable.assign(tensors[tf1].reshape(variable.shape))
    d = ROOT / case
    clean(d)
    write_json(d / "bert_config.json", c)
    print(tf.train.Checkpoint(**pretrainer.checkpoint_items).write(str(d / "bert_model.ckpt")))


# --- MobileBERT (google-research/google-research mobilebert/, TF1) -------------------------------------------
MOBILEBERT_CONFIG = {"attention_probs_dropout_prob": 0.1, "embedding_size": 8, "hidden_act": "relu",
                     "hidden_dropout_prob": 0.0, "hidden_size": 16, "initializer_range": 0.02,
                     "intermediate_size": 16, "intra_bottleneck_size": 8, "key_query_shared_bottleneck": True,
                     "max_position_embeddings": 16, "normalization_type": "no_norm", "num_attention_heads": 2,
                     "num_feedforward_networks": 2, "num_hidden_layers": 2, "trigram_input": True,
                     "type_vocab_size": 2, "use_bottleneck": True, "use_bottleneck_attention": False,
                     "vocab_size": 40}
"""The released uncased_L-24_H-128_B-512_A-4_F-4_OPT.json's fields and switches, every size made tiny."""


def mobilebert_shapes(c: dict) -> dict[str, list[int]]:
    """run_pretraining.py's variables, by mobilebert/modeling.py: embedding_lookup [vocab, embedding_size],
    embedding_transformation (dense_layer_2d of the trigram concat: [3 * embedding, hidden]), embedding_postprocessor,
    layer_norm's "FakeLayerNorm" (no_norm: beta, gamma); per layer bottleneck/input and bottleneck/attention
    (key_query_shared_bottleneck) [hidden, bottleneck], attention/self query, key [bottleneck, bottleneck] and value
    [hidden, bottleneck] (value_tensor is the layer input), attention/output/dense, ffn_layer_N (num_feedforward_networks
    - 1 of them), intermediate, output, output/bottleneck [bottleneck, hidden]; pooler (classifier_activation);
    get_masked_lm_output's cls/predictions (transform/dense, transform/LayerNorm: contrib layer_norm,
    output_bias, extra_output_weights [vocab, hidden - embedding]) and cls/seq_relationship."""
    h, e, b, i, v = c["hidden_size"], c["embedding_size"], c["intra_bottleneck_size"], c["intermediate_size"], c["vocab_size"]
    norm = "FakeLayerNorm"
    s = {"bert/embeddings/word_embeddings": [v, e], "bert/embeddings/embedding_transformation/kernel": [3 * e, h],
         "bert/embeddings/embedding_transformation/bias": [h],
         "bert/embeddings/token_type_embeddings": [c["type_vocab_size"], h],
         "bert/embeddings/position_embeddings": [c["max_position_embeddings"], h],
         f"bert/embeddings/{norm}/beta": [h], f"bert/embeddings/{norm}/gamma": [h]}

    def dense(scope: str, n_in: int, n_out: int) -> None:
        s[scope + "/kernel"], s[scope + "/bias"] = [n_in, n_out], [n_out]

    def fake_norm(scope: str, n: int) -> None:
        s[f"{scope}/{norm}/beta"], s[f"{scope}/{norm}/gamma"] = [n], [n]

    for n in range(c["num_hidden_layers"]):
        p = f"bert/encoder/layer_{n}/"
        for part in ("input", "attention"):
            dense(p + f"bottleneck/{part}/dense", h, b)
            fake_norm(p + f"bottleneck/{part}", b)
        dense(p + "attention/self/query", b, b)
        dense(p + "attention/self/key", b, b)
        dense(p + "attention/self/value", h, b)
        dense(p + "attention/output/dense", b, b)
        fake_norm(p + "attention/output", b)
        for f in range(c["num_feedforward_networks"] - 1):
            dense(p + f"ffn_layer_{f}/intermediate/dense", b, i)
            dense(p + f"ffn_layer_{f}/output/dense", i, b)
            fake_norm(p + f"ffn_layer_{f}/output", b)
        dense(p + "intermediate/dense", b, i)
        dense(p + "output/dense", i, b)
        fake_norm(p + "output", b)
        dense(p + "output/bottleneck/dense", b, h)
        fake_norm(p + "output/bottleneck", h)
    dense("bert/pooler/dense", h, h)
    dense("cls/predictions/transform/dense", h, h)
    s["cls/predictions/transform/LayerNorm/beta"], s["cls/predictions/transform/LayerNorm/gamma"] = [h], [h]
    s["cls/predictions/output_bias"] = [v]
    s["cls/predictions/extra_output_weights"] = [v, h - e]
    s["cls/seq_relationship/output_weights"], s["cls/seq_relationship/output_bias"] = [2, h], [2]
    return s


def make_mobilebert(case: str) -> None:
    """mobilebert: run_pretraining.py's output (model.ckpt-3 + checkpoint) with LAMB's adam_m / adam_v slots."""
    d = ROOT / case
    clean(d)
    write_json(d / "bert_config.json", MOBILEBERT_CONFIG)
    tensors = {n: value(SEEDS[case], n, sh) for n, sh in mobilebert_shapes(MOBILEBERT_CONFIG).items()}
    print(save_tf1(d / "model.ckpt", mc.with_adam_slots(SEEDS[case], tensors), global_step=3,
                   write_checkpoint_file=True))


def _mobilebert_config(case: dict):
    """convert_mobilebert_original_tf_checkpoint_to_pytorch.py: MobileBertConfig.from_json_file(config)."""
    return mg.transformers.MobileBertConfig.from_json_file(str(ROOT / case["config"]))


CASES["mobilebert"] = {"family": "mobilebert", "layout": "tf1", "checkpoint": "mobilebert/model.ckpt-3",
                       "config": "mobilebert/bert_config.json", "class": "MobileBertForPreTraining",
                       "loader": "load_tf_weights_in_mobilebert"}
SEEDS["mobilebert"] = 14
# --- BigBird (google-research/bigbird, TF1 graph code of bigbird/core + bigbird/pretrain) -------------------------
BIGBIRD_CONFIG = {"attention_probs_dropout_prob": 0.1, "attention_type": "original_full", "block_size": 4,
                  "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 16, "initializer_range": 0.02,
                  "intermediate_size": 24, "max_encoder_length": 64, "max_position_embeddings": 64,
                  "norm_type": "postnorm", "num_attention_heads": 2, "num_hidden_layers": 2, "num_rand_blocks": 3,
                  "rescale_embedding": False, "scope": "bert", "type_vocab_size": 2, "use_bias": True,
                  "use_gradient_checkpointing": False, "vocab_size": 72}
"""pretrain.config as bigbird/core/flags.py's save() writes it (JSON), the model's fields, every size made tiny;
original_full attention, as BigBird itself switches to for max_encoder_length <= 512. vocab_size 72 holds
transformers' default sep_token_id 66."""


def bigbird_shapes(c: dict) -> dict[str, list[int]]:
    """run_pretraining.py's variables: those bigbird/core's BertModel, MaskedLMLayer and NSPLayer create (listed
    from the code itself, run under tf.compat.v1 graph mode), the masked-LM head's Dense2dLayer and NormLayer
    (both named "transform") under cls/predictions, where load_tf_weights_in_big_bird reads them."""
    h, v = c["hidden_size"], c["vocab_size"]
    s = {"bert/embeddings/word_embeddings": [v, h], "bert/embeddings/token_type_embeddings": [c["type_vocab_size"], h],
         "bert/embeddings/position_embeddings": [c["max_position_embeddings"], h]}
    for n in range(c["num_hidden_layers"]):
        s.update({k: sh for k, sh in mc.bert_layer_shapes(f"bert/encoder/layer_{n}/", h, c["intermediate_size"]).items()})
    s.update({"bert/encoder/LayerNorm/beta": [h], "bert/encoder/LayerNorm/gamma": [h],
              "bert/pooler/dense/kernel": [h, h], "bert/pooler/dense/bias": [h],
              "cls/predictions/transform/kernel": [h, h], "cls/predictions/transform/bias": [h],
              "cls/predictions/transform/beta": [h], "cls/predictions/transform/gamma": [h],
              "cls/predictions/output_bias": [v], "cls/seq_relationship/output_weights": [2, h],
              "cls/seq_relationship/output_bias": [2]})
    return s


def make_bigbird(case: str) -> None:
    """bigbird: a run_pretraining.py output (model.ckpt-3 + checkpoint) with bigbird/core/optimization.py's
    AdamWeightDecayOptimizer slots (a tf.compat.v1.train.Optimizer: <var>/AdamWeightDecayOptimizer for m, _1 for v)."""
    d = ROOT / case
    clean(d)
    write_json(d / "pretrain.config", BIGBIRD_CONFIG)
    tensors = {n: value(SEEDS[case], n, sh) for n, sh in bigbird_shapes(BIGBIRD_CONFIG).items()}
    slots = dict(tensors)
    for name, array in tensors.items():
        slots[name + "/AdamWeightDecayOptimizer"] = value(SEEDS[case], name + "/m", list(array.shape), "m")
        slots[name + "/AdamWeightDecayOptimizer_1"] = value(SEEDS[case], name + "/v", list(array.shape), "v")
    print(save_tf1(d / "model.ckpt", slots, global_step=3, write_checkpoint_file=True))


def _bigbird_config(case: dict):
    """BigBirdConfig of cases.json's "hf_config": pretrain.config's values by hand (the transformers 4.x script took
    a BigBirdConfig JSON): num_rand_blocks is num_random_blocks, rescale_embedding rescale_embeddings."""
    return mg.transformers.BigBirdConfig(**case["hf_config"])


CASES["bigbird"] = {"family": "bigbird", "layout": "tf1", "checkpoint": "bigbird/model.ckpt-3",
                    "config": "bigbird/pretrain.config", "class": "BigBirdForPreTraining",
                    "loader": "load_tf_weights_in_big_bird",
                    "hf_config": {"vocab_size": 72, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
                                  "intermediate_size": 24, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
                                  "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 64,
                                  "type_vocab_size": 2, "initializer_range": 0.02, "attention_type": "original_full",
                                  "block_size": 4, "num_random_blocks": 3, "use_bias": True,
                                  "rescale_embeddings": False}}
SEEDS["bigbird"] = 15
# --- ConvBERT (yitu-opensource/ConvBert: ELECTRA's run_pretraining.py with conv attention, TF1) -------------------
CONVBERT_CONFIG = {"attention_probs_dropout_prob": 0.1, "conv_kernel_size": 3, "embedding_size": 8, "head_ratio": 2,
                   "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 16, "initializer_range": 0.02,
                   "intermediate_size": 24, "layer_norm_eps": 1e-12, "max_position_embeddings": 32,
                   "num_attention_heads": 4, "num_groups": 1, "num_hidden_layers": 2, "type_vocab_size": 2,
                   "vocab_size": 50}
"""The ConvBertConfig JSON convert_convbert_original_tf1_checkpoint_to_pytorch_and_tf2.py takes, every size tiny."""


def convbert_layer_shapes(p: str, h: int, heads: int, ratio: int, k: int, inter: int) -> dict[str, list[int]]:
    """One ConvBERT layer's variables under ``p``; the shapes are those load_tf_weights_in_convbert reads (its
    transposes and permutes undone): all_head = hidden / head_ratio, heads / head_ratio convolution heads."""
    a, conv_heads = h // ratio, heads // ratio
    s: dict[str, list[int]] = {}
    for part in ("query", "key", "value"):
        s[f"{p}attention/self/{part}/kernel"], s[f"{p}attention/self/{part}/bias"] = [h, a], [a]
    s[p + "attention/self/conv_attn_key/depthwise_kernel"] = [k, h, 1]
    s[p + "attention/self/conv_attn_key/pointwise_kernel"] = [1, h, a]
    s[p + "attention/self/conv_attn_key/bias"] = [a]
    s[p + "attention/self/conv_attn_kernel/kernel"], s[p + "attention/self/conv_attn_kernel/bias"] = [a, conv_heads * k], [conv_heads * k]
    s[p + "attention/self/conv_attn_point/kernel"], s[p + "attention/self/conv_attn_point/bias"] = [h, a], [a]
    s[p + "attention/output/dense/kernel"], s[p + "attention/output/dense/bias"] = [h, h], [h]
    s[p + "attention/output/LayerNorm/beta"], s[p + "attention/output/LayerNorm/gamma"] = [h], [h]
    s[p + "intermediate/dense/kernel"], s[p + "intermediate/dense/bias"] = [h, inter], [inter]
    s[p + "output/dense/kernel"], s[p + "output/dense/bias"] = [inter, h], [h]
    s[p + "output/LayerNorm/beta"], s[p + "output/LayerNorm/gamma"] = [h], [h]
    return s


def convbert_shapes(c: dict) -> dict[str, list[int]]:
    """run_pretraining.py's variables: the shared embeddings, the discriminator (electra/...), a generator of a
    quarter of the size (generator/..., 1 layer here), discriminator_predictions and generator_predictions."""
    e, h, v = c["embedding_size"], c["hidden_size"], c["vocab_size"]
    s = {"electra/embeddings/word_embeddings": [v, e], "electra/embeddings/position_embeddings": [c["max_position_embeddings"], e],
         "electra/embeddings/token_type_embeddings": [c["type_vocab_size"], e],
         "electra/embeddings/LayerNorm/beta": [e], "electra/embeddings/LayerNorm/gamma": [e],
         "electra/embeddings_project/kernel": [e, h], "electra/embeddings_project/bias": [h]}
    for n in range(c["num_hidden_layers"]):
        s.update(convbert_layer_shapes(f"electra/encoder/layer_{n}/", h, c["num_attention_heads"], c["head_ratio"],
                                       c["conv_kernel_size"], c["intermediate_size"]))
    g = h // 2
    s.update({"generator/embeddings_project/kernel": [e, g], "generator/embeddings_project/bias": [g]})
    s.update(convbert_layer_shapes("generator/encoder/layer_0/", g, 2, 2, c["conv_kernel_size"], 2 * g))
    s.update({"generator_predictions/dense/kernel": [g, e], "generator_predictions/dense/bias": [e],
              "generator_predictions/LayerNorm/beta": [e], "generator_predictions/LayerNorm/gamma": [e],
              "generator_predictions/output_bias": [v],
              "discriminator_predictions/dense/kernel": [h, h], "discriminator_predictions/dense/bias": [h],
              "discriminator_predictions/dense_1/kernel": [h, 1], "discriminator_predictions/dense_1/bias": [1]})
    return s


def make_convbert(case: str) -> None:
    """convbert: model.ckpt-3 + checkpoint (no optimizer slots, to stay small), config.json beside it."""
    d = ROOT / case
    clean(d)
    write_json(d / "config.json", CONVBERT_CONFIG)
    tensors = {n: value(SEEDS[case], n, sh) for n, sh in convbert_shapes(CONVBERT_CONFIG).items()}
    print(save_tf1(d / "model.ckpt", tensors, global_step=3, write_checkpoint_file=True))


def _convbert_config(case: dict):
    return mg.transformers.ConvBertConfig.from_json_file(str(ROOT / case["config"]))


CASES["convbert"] = {"family": "convbert", "layout": "tf1", "checkpoint": "convbert/model.ckpt-3",
                     "config": "convbert/config.json", "class": "ConvBertModel", "loader": "load_tf_weights_in_convbert"}
SEEDS["convbert"] = 16
# --- RemBERT (Google's TF1 RemBERT checkpoint) ---------------------------------------------------------------------
REMBERT_CONFIG = {"attention_probs_dropout_prob": 0.0, "bos_token_id": 312, "eos_token_id": 313,
                  "hidden_act": "gelu", "hidden_dropout_prob": 0.0, "hidden_size": 16, "initializer_range": 0.02,
                  "input_embedding_size": 8, "intermediate_size": 24, "layer_norm_eps": 1e-12,
                  "max_position_embeddings": 32, "num_attention_heads": 2, "num_hidden_layers": 2,
                  "output_embedding_size": 12, "pad_token_id": 0, "type_vocab_size": 2, "vocab_size": 320}
"""The RemBertConfig JSON convert_rembert_tf_checkpoint_to_pytorch.py takes (the released one's fields), tiny;
vocab_size 320 holds RemBERT's bos / eos ids 312 / 313."""


def rembert_shapes(c: dict) -> dict[str, list[int]]:
    """BERT's variables with input embeddings of input_embedding_size, bert/encoder/embedding_hidden_mapping_in
    [input_embedding_size, hidden], the pooler, and the pretraining head with its decoupled output embedding
    (cls/predictions/transform/dense [hidden, output_embedding_size], its LayerNorm, output_bias, and
    cls/predictions/output_embedding [vocab, output_embedding_size]): the names load_tf_weights_in_rembert reads,
    and names it denies for the rest."""
    e, h, o, v = c["input_embedding_size"], c["hidden_size"], c["output_embedding_size"], c["vocab_size"]
    s = {"bert/embeddings/word_embeddings": [v, e], "bert/embeddings/token_type_embeddings": [c["type_vocab_size"], e],
         "bert/embeddings/position_embeddings": [c["max_position_embeddings"], e],
         "bert/embeddings/LayerNorm/beta": [e], "bert/embeddings/LayerNorm/gamma": [e],
         "bert/encoder/embedding_hidden_mapping_in/kernel": [e, h], "bert/encoder/embedding_hidden_mapping_in/bias": [h]}
    for n in range(c["num_hidden_layers"]):
        s.update(mc.bert_layer_shapes(f"bert/encoder/layer_{n}/", h, c["intermediate_size"]))
    s.update({"bert/pooler/dense/kernel": [h, h], "bert/pooler/dense/bias": [h],
              "cls/predictions/transform/dense/kernel": [h, o], "cls/predictions/transform/dense/bias": [o],
              "cls/predictions/transform/LayerNorm/beta": [o], "cls/predictions/transform/LayerNorm/gamma": [o],
              "cls/predictions/output_bias": [v], "cls/predictions/output_embedding": [v, o]})
    return s


def make_rembert(case: str) -> None:
    """rembert: model.ckpt (no optimizer slots, to stay small), config.json beside it."""
    d = ROOT / case
    clean(d)
    write_json(d / "config.json", REMBERT_CONFIG)
    tensors = {n: value(SEEDS[case], n, sh) for n, sh in rembert_shapes(REMBERT_CONFIG).items()}
    print(save_tf1(d / "model.ckpt", tensors, write_checkpoint_file=True))


def _rembert_config(case: dict):
    return mg.transformers.RemBertConfig.from_json_file(str(ROOT / case["config"]))


CASES["rembert"] = {"family": "rembert", "layout": "tf1", "checkpoint": "rembert/model.ckpt",
                    "config": "rembert/config.json", "class": "RemBertModel", "loader": "load_tf_weights_in_rembert"}
SEEDS["rembert"] = 17
def make_albert_classifier(case: str) -> None:
    """albert_classifier: run_classifier.py's output dir (model.ckpt-3 + checkpoint), without optimizer slots (to
    stay small). load_tf_weights_in_albert reads its head as it is (it renames a top-level output_weights and
    output_bias to classifier/...), so this golden case is the loader on the checkpoint itself."""
    d = ROOT / case
    clean(d)
    write_json(d / "albert_config.json", SMALL_ALBERT)
    print(save_tf1(d / "model.ckpt", model_tensors(case), global_step=3, write_checkpoint_file=True))


def _albert_config_with_labels(case: dict):
    """convert_albert_original_tf_checkpoint_to_pytorch.py's AlbertConfig.from_json_file, with cases.json's
    num_labels (run_classifier.py's label count, which albert_config.json does not hold)."""
    config = _ORIGINAL_CONFIGS["albert"](case)
    config.num_labels = case["num_labels"]
    return config


DIRECT = {"mobilebert": (make_mobilebert, _mobilebert_config), "bigbird": (make_bigbird, _bigbird_config),
          "convbert": (make_convbert, _convbert_config), "rembert": (make_rembert, _rembert_config),
          "albert_classifier": (make_albert_classifier, _albert_config_with_labels)}
"""Cases transformers 4.x's own loader reads as they are: checkpoint maker, oracle config."""


def make_checkpoint(case: str) -> None:
    if case in DIRECT:
        DIRECT[case][0](case)
        return
    if case == "bert_tf2_pretrainer":
        make_model_garden_pretrainer(case)
        return
    d = ROOT / case
    clean(d)
    write_json(d / "bert_config.json", SMALL_BERT)
    print(save_tf1(d / "model.ckpt", mc.with_adam_slots(SEEDS[case], model_tensors(case)), global_step=3,
                   write_checkpoint_file=True))


def renamed_copy(case: str, directory: str) -> str:
    """The case's model variables re-saved under the names transformers' loader reads (see the docstring)."""
    out = {}
    for name, array in model_tensors(case).items():
        if case in ("bert_squad", "bert_tf2_pretrainer") and name.startswith("bert/pooler/"):
            continue  # BertForQuestionAnswering and BertForMaskedLM have no pooler; the loader would fail in it
        out[RENAMED[case].get(name, name)] = array
    return save_tf1(Path(directory) / "model.ckpt", out)


def _config_with_labels(case: dict):
    config = _ORIGINAL_CONFIGS[case["family"]](case)
    if "num_labels" in case:
        config.num_labels = case["num_labels"]
    return config


_MAKE_GOLDEN_LOAD = mg.load
_ORIGINAL_CONFIGS = dict(mg.CONFIGS)  # make_golden.py's own, before this script wraps any


def _load(case: dict, model, config, prefix: str, tf2_script) -> None:
    """make_golden's load, but load_tf_weights_in_big_bird(model, tf_checkpoint_path, is_trivia_qa=False) as
    convert_bigbird_original_tf_checkpoint_to_pytorch.py calls it (no config argument)."""
    if case["loader"] == "load_tf_weights_in_big_bird":
        from transformers.models.big_bird.modeling_big_bird import load_tf_weights_in_big_bird

        load_tf_weights_in_big_bird(model, prefix, is_trivia_qa=False)
        return
    _MAKE_GOLDEN_LOAD(case, model, config, prefix, tf2_script)


def trace_permutes(case: str, record: dict) -> dict:
    """make_golden's trace_sources knows reshapes and 2-D transposes; ConvBERT's convolution kernels are 3-D
    permutes (load_tf_weights_in_convbert's permute(1, 2, 0) and (2, 1, 0)): found here the same way, by value."""
    import itertools

    import numpy as np
    import tensorflow as tf
    from safetensors.numpy import load_file

    prefix = str(ROOT / CASES[case]["checkpoint"])
    state = load_file(str(ROOT / "golden" / case / "model.safetensors"))
    arrays = {n: tf.train.load_variable(prefix, n) for n, _ in tf.train.list_variables(prefix)}
    for key, source in record["sources"].items():
        if source != "-":
            continue
        found = [f"{n} (permute {', '.join(map(str, perm))})" for n, a in arrays.items()
                 if isinstance(a, np.ndarray) and a.size == state[key].size and a.ndim == state[key].ndim
                 for perm in itertools.permutations(range(a.ndim))
                 if np.transpose(a, perm).shape == state[key].shape and np.array_equal(np.transpose(a, perm), state[key])]
        record["sources"][key] = " | ".join(found) or "-"
    used = {v.split(" ")[0] for v in record["sources"].values()}
    record["checkpoint_variables_not_in_state_dict"] = sorted(n for n in arrays if n not in used)
    (ROOT / "golden" / case / "oracle.json").write_text(json.dumps(record, indent=2) + "\n")
    return record


def make_golden_case(case: str) -> None:
    if case in DIRECT:
        mg.CONFIGS[CASES[case]["family"]] = DIRECT[case][1]
        mg.load = _load
        record = mg.make(case, CASES[case], ROOT / "golden", None)
        if "-" in record["sources"].values():
            record = trace_permutes(case, record)
        print(case, "untouched:", record["untouched"], "messages:", record["loader_messages"])
        return
    spec = {**CASES[case], "loader_refuses_layout_use": "renamed copy"}  # make_golden's twin: the copy below
    family = spec["family"]
    mg.CONFIGS[family] = _config_with_labels
    with tempfile.TemporaryDirectory() as tmp:
        twin = {"family": family, "loader": spec["loader"], "checkpoint": renamed_copy(case, tmp)}
        mg.CASES["renamed copy"] = twin
        record = mg.make(case, spec, ROOT / "golden", None)
    names = ", ".join(f"{a} -> {b}" for a, b in RENAMED[case].items()) or "google-research/bert's names"
    record["made_from"] = (f"a copy of {spec['checkpoint']}'s model variables re-saved by TensorFlow under the names "
                           f"the loader reads ({names}{'; bert/pooler left out' if case in ('bert_squad', 'bert_tf2_pretrainer') else ''}),"
                           " by the same loader; 'sources' traces every tensor to this checkpoint by value")
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
