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


def main() -> None:
    cases = {"bert": make_bert}
    for name in sys.argv[1:] or cases:
        cases[name](HERE / name)


if __name__ == "__main__":
    main()
