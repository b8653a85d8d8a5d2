"""Write the TF Hub SavedModels of tests/data/tfhub (issue 37, item 3) with tensorflow/models' own exporter.

``official/nlp/tools/export_tfhub_lib.export_model`` (tf-models-official 2.20, the library behind
``export_tfhub.py``, which made TF Hub's and Kaggle's BERT encoders) restores a Model Garden encoder checkpoint
into the encoder it builds from a ``bert_config.json`` and saves the Keras model wrapping it
(``core_model.save(export_path, include_optimizer=False, save_format="tf")``). Its input here is the committed
``tests/data/hf/bert_tf2_encoder`` checkpoint (``tf.train.Checkpoint(encoder=BertEncoder)``), whose golden case
(``tests/data/hf/golden/bert_tf2_encoder``: transformers 4.x's ``BertModel`` of the same values) is the oracle of the
SavedModel: the exporter's ``assert_existing_objects_matched`` restore proves every variable came from it.

Needs tensorflow 2.21 + tf-keras + tf-models-official 2.20 (installed ``--no-deps``; it imports with scipy,
gin-config, tf-slim, sentencepiece)::

    TF_USE_LEGACY_KERAS=1 /work/savedhub-venv/bin/python tests/data/tfhub/generators/make_saved_models.py

Deterministic in its variables (copied values); ``saved_model.pb`` holds the traced functions.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

HERE = Path(__file__).resolve().parent.parent
HF = HERE.parent / "hf"

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"tok{n}" for n in range(94)]
"""99 entries: the golden case's vocab_size (the exporter ships the vocabulary as an asset)."""


def make_bert(out: Path) -> None:
    import tensorflow as tf
    from official.legacy.bert import configs
    from official.nlp.tools import export_tfhub_lib

    case = HF / "bert_tf2_encoder"
    bert_config = configs.BertConfig.from_json_file(str(case / "bert_config.json"))
    shutil.rmtree(out, ignore_errors=True)
    work = out.parent / (out.name + ".vocab")
    work.mkdir(parents=True, exist_ok=True)
    (work / "vocab.txt").write_text("".join(f"{t}\n" for t in VOCAB))
    # The committed checkpoint was written by Checkpoint.write (no save_counter, which the exporter's restore
    # asserts): read it into the real encoder, every variable matched, and save it again as a training run would.
    encoder = export_tfhub_lib.get_bert_encoder(bert_config)
    tf.train.Checkpoint(encoder=encoder).read(str(case / "bert_model.ckpt")).assert_existing_objects_matched()
    saved = tf.train.Checkpoint(encoder=encoder).save(str(work / "ckpt"))
    export_tfhub_lib.export_model(str(out), bert_config=bert_config, model_checkpoint_path=saved,
                                  with_mlm=False, vocab_file=str(work / "vocab.txt"), do_lower_case=True)
    shutil.rmtree(work)
    print("bert ->", out)


def make_albert(out: Path) -> None:
    """ALBERT as TF Hub's albert_en_* were made: google-research/albert's TF1 checkpoint converted by tensorflow/models'
    own ``tf2_albert_encoder_checkpoint_converter`` into an ``AlbertEncoder`` checkpoint, exported from an
    ``EncoderConfig`` of type albert (``--encoder_config_file``)."""
    import json

    from official.legacy.albert import configs
    from official.nlp.configs import encoders
    from official.nlp.tools import export_tfhub_lib
    from official.nlp.tools import tf2_albert_encoder_checkpoint_converter as converter

    case = HF / "albert"
    config_file = case / "albert_config.json"
    albert_config = configs.AlbertConfig.from_json_file(str(config_file))
    raw = json.loads(config_file.read_text())
    shutil.rmtree(out, ignore_errors=True)
    work = out.parent / (out.name + ".work")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "vocab.txt").write_text("".join(f"{t}\n" for t in VOCAB))
    (work / "v2" / "temp_v1").mkdir(parents=True)  # the converter writes its temporary checkpoint there
    converted = str(work / "v2" / "albert_encoder")
    converter.convert_checkpoint(albert_config, converted, str(case / "model.ckpt-best"), "encoder", "encoder")
    encoder_config = encoders.EncoderConfig(type="albert", albert=encoders.AlbertEncoderConfig(
        vocab_size=raw["vocab_size"], embedding_width=raw["embedding_size"], hidden_size=raw["hidden_size"],
        num_layers=raw["num_hidden_layers"], num_attention_heads=raw["num_attention_heads"],
        hidden_activation=raw["hidden_act"], intermediate_size=raw["intermediate_size"],
        dropout_rate=raw["hidden_dropout_prob"], attention_dropout_rate=raw["attention_probs_dropout_prob"],
        max_position_embeddings=raw["max_position_embeddings"], type_vocab_size=raw["type_vocab_size"],
        initializer_range=raw["initializer_range"]))
    export_tfhub_lib.export_model(str(out), encoder_config=encoder_config, model_checkpoint_path=converted + "-1",
                                  with_mlm=False, vocab_file=str(work / "vocab.txt"), do_lower_case=True)
    shutil.rmtree(work)
    print("albert ->", out)


ELECTRA_NAME_REPLACEMENTS = (("electra/", ""), ("embeddings_project", "embedding_projection"))
"""google-research/electra's discriminator names as the Model Garden BertEncoder's, before tensorflow/models'
own BERT replacements (``tf1_bert_checkpoint_converter_lib.BERT_V2_NAME_REPLACEMENTS``, its ``bert/`` one aside)."""


def make_electra(out: Path) -> None:
    """ELECTRA as TF Hub's electra_* encoders hold it: the discriminator in a Model Garden ``BertEncoder`` with an
    embedding projection (``embedding_size`` < ``hidden_size``). google-research/electra's TF1 checkpoint is
    renamed by tensorflow/models' ``tf1_bert_checkpoint_converter_lib.convert`` (which also splits the attention
    kernels per head), read into the encoder by name (every variable but the pooler, which ELECTRA lacks: given
    seeded values) and exported as BERT is."""
    import numpy as np
    import tensorflow as tf
    from official.legacy.bert import configs
    from official.nlp.tools import export_tfhub_lib
    from official.nlp.tools import tf1_bert_checkpoint_converter_lib as lib

    case = HF / "electra"
    bert_config = configs.BertConfig.from_json_file(str(case / "discriminator_config.json"))
    shutil.rmtree(out, ignore_errors=True)
    work = out.parent / (out.name + ".work")
    shutil.rmtree(work, ignore_errors=True)
    (work / "v1").mkdir(parents=True)
    (work / "vocab.txt").write_text("".join(f"{t}\n" for t in VOCAB))
    lib.convert(str(case / "model.ckpt"), str(work / "v1" / "ckpt"), bert_config.num_attention_heads,
                ELECTRA_NAME_REPLACEMENTS + lib.BERT_V2_NAME_REPLACEMENTS[1:], lib.BERT_V2_PERMUTATIONS,
                exclude_patterns=["adam", "Adam", "generator", "discriminator_predictions", "global_step"])
    encoder = export_tfhub_lib.get_bert_encoder(bert_config)
    reader = tf.train.load_checkpoint(str(work / "v1" / "ckpt"))
    stored = reader.get_variable_to_shape_map()
    for variable in encoder.weights:  # what Keras's name-based load_weights does, the pooler aside
        name = variable.name.split(":")[0]
        if name.startswith("pooler_transform/"):
            rng = np.random.default_rng(len(name))
            variable.assign(rng.standard_normal(variable.shape).astype(np.float32) * 0.1)
            continue
        assert name in stored, f"{name} was not in the converted checkpoint"
        variable.assign(reader.get_tensor(name))
    assert len(stored) == len(encoder.weights) - 2, sorted(stored)
    saved = tf.train.Checkpoint(encoder=encoder).save(str(work / "ckpt"))
    export_tfhub_lib.export_model(str(out), bert_config=bert_config, model_checkpoint_path=saved, with_mlm=False,
                                  vocab_file=str(work / "vocab.txt"), do_lower_case=True)
    shutil.rmtree(work)
    print("electra ->", out)


def make_bert_v2(out: Path) -> None:
    """BERT as newer Model Garden exports hold it: ``export_model(encoder_config=EncoderConfig(type="bert_v2"))``
    (``--encoder_config_file``) builds ``BertEncoderV2``, a Keras layer (not a functional model) whose variables
    sit under ``_embedding_layer``, ``_transformer_layers/N``, ``_pooler_layer``. Its values are the ``bert_tf2_encoder``
    case's, read into the legacy encoder as ``make_bert`` does and copied variable by variable (names checked)."""
    import tensorflow as tf
    from official.legacy.bert import configs
    from official.nlp.configs import encoders
    from official.nlp.tools import export_tfhub_lib

    case = HF / "bert_tf2_encoder"
    bert_config = configs.BertConfig.from_json_file(str(case / "bert_config.json"))
    shutil.rmtree(out, ignore_errors=True)
    work = out.parent / (out.name + ".work")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "vocab.txt").write_text("".join(f"{t}\n" for t in VOCAB))
    legacy = export_tfhub_lib.get_bert_encoder(bert_config)
    tf.train.Checkpoint(encoder=legacy).read(str(case / "bert_model.ckpt")).assert_existing_objects_matched()
    encoder_config = encoders.EncoderConfig(type="bert_v2", bert_v2=encoders.BertEncoderConfig(
        vocab_size=bert_config.vocab_size, hidden_size=bert_config.hidden_size,
        num_layers=bert_config.num_hidden_layers, num_attention_heads=bert_config.num_attention_heads,
        hidden_activation=bert_config.hidden_act, intermediate_size=bert_config.intermediate_size,
        dropout_rate=bert_config.hidden_dropout_prob, attention_dropout_rate=bert_config.attention_probs_dropout_prob,
        max_position_embeddings=bert_config.max_position_embeddings, type_vocab_size=bert_config.type_vocab_size,
        initializer_range=bert_config.initializer_range))
    encoder = encoders.build_encoder(encoder_config)
    encoder(encoder.inputs)
    assert type(encoder).__name__ == "BertEncoderV2", type(encoder)
    names = [w.name.split(":")[0].removeprefix(f"{encoder.name}/") for w in encoder.weights]
    assert names == [w.name.split(":")[0] for w in legacy.weights], names
    for target, source in zip(encoder.weights, legacy.weights):
        target.assign(source)
    saved = tf.train.Checkpoint(encoder=encoder).save(str(work / "ckpt"))
    export_tfhub_lib.export_model(str(out), encoder_config=encoder_config, model_checkpoint_path=saved,
                                  with_mlm=False, vocab_file=str(work / "vocab.txt"), do_lower_case=True)
    # The training checkpoint the export was made from, as Model Garden's trainer writes it, beside its config.
    training = out.parent / "bert_v2_checkpoint"
    shutil.rmtree(training, ignore_errors=True)
    training.mkdir()
    tf.train.Checkpoint(encoder=encoder).write(str(training / "bert_model.ckpt"))
    shutil.copy(case / "bert_config.json", training / "bert_config.json")
    shutil.rmtree(work)
    print("bert_v2 ->", out, "and", training)


def main() -> None:
    cases = {"bert": make_bert, "albert": make_albert, "electra": make_electra, "bert_v2": make_bert_v2}
    for name in sys.argv[1:] or cases:
        cases[name](HERE / name)


if __name__ == "__main__":
    main()
