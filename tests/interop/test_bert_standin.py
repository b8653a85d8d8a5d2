"""Optional tier: a real client, unmodified. transformers' ``load_tf_weights_in_bert`` under ``ckpt run``.

TensorFlow writes a BERT-shaped TF1 checkpoint (google-research/bert's variable names, Adam slots,
``global_step``); the same script loads it into a PyTorch ``BertForPreTraining`` once under real
TensorFlow and once under ``ckpt run`` (formats.tf as ``tensorflow``); every parameter must be
equal. Needs tensorflow, torch and a transformers 4.x release (5.0 dropped the TF loaders), e.g.:

    python -m venv /tmp/bert && /tmp/bert/bin/pip install tensorflow-cpu torch 'transformers<5' '.[test]'
    /tmp/bert/bin/python -m pytest -m interop tests/interop/test_bert_standin.py

Skipped where any of them is missing.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.interop

pytest.importorskip("tensorflow")
pytest.importorskip("torch")
modeling_bert = pytest.importorskip("transformers.models.bert.modeling_bert")
if not hasattr(modeling_bert, "load_tf_weights_in_bert"):
    pytest.skip("this transformers release has no load_tf_weights_in_bert", allow_module_level=True)

CONFIG = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
              max_position_embeddings=64, type_vocab_size=2)

WRITE = """
import sys
import numpy as np
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
h, i, v, p, t, layers = {hidden_size}, {intermediate_size}, {vocab_size}, {max_position_embeddings}, \\
    {type_vocab_size}, {num_hidden_layers}
shapes = {{"bert/embeddings/word_embeddings": [v, h], "bert/embeddings/token_type_embeddings": [t, h],
          "bert/embeddings/position_embeddings": [p, h], "bert/embeddings/LayerNorm/gamma": [h],
          "bert/embeddings/LayerNorm/beta": [h], "bert/pooler/dense/kernel": [h, h], "bert/pooler/dense/bias": [h],
          "cls/predictions/transform/dense/kernel": [h, h], "cls/predictions/transform/dense/bias": [h],
          "cls/predictions/transform/LayerNorm/gamma": [h], "cls/predictions/transform/LayerNorm/beta": [h],
          "cls/predictions/output_bias": [v], "cls/seq_relationship/output_weights": [2, h],
          "cls/seq_relationship/output_bias": [2]}}
for n in range(layers):
    L = f"bert/encoder/layer_{{n}}/"
    for part in ("attention/self/query", "attention/self/key", "attention/self/value", "attention/output/dense"):
        shapes[L + part + "/kernel"], shapes[L + part + "/bias"] = [h, h], [h]
    shapes[L + "intermediate/dense/kernel"], shapes[L + "intermediate/dense/bias"] = [h, i], [i]
    shapes[L + "output/dense/kernel"], shapes[L + "output/dense/bias"] = [i, h], [h]
    for norm in ("attention/output/LayerNorm", "output/LayerNorm"):
        shapes[L + norm + "/gamma"], shapes[L + norm + "/beta"] = [h], [h]
rng = np.random.default_rng(7)
with tf.Graph().as_default():
    for name, shape in sorted(shapes.items()):
        for suffix in ("", "/adam_m", "/adam_v"):
            tf.Variable(rng.standard_normal(shape).astype(np.float32), name=name + suffix)
    tf.train.get_or_create_global_step()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        print(tf.train.Saver().save(sess, sys.argv[1], global_step=3))
"""

LOAD = """
import sys
import numpy as np
import torch
from transformers import BertConfig, BertForPreTraining
from transformers.models.bert.modeling_bert import load_tf_weights_in_bert
torch.manual_seed(0)
config = BertConfig(**{config})
model = BertForPreTraining(config)
load_tf_weights_in_bert(model, config, sys.argv[1])
np.savez(sys.argv[2], **{{k: v.detach().numpy() for k, v in model.state_dict().items()}})
print(sys.modules["tensorflow"].__name__ if "tensorflow" in sys.modules else "-")
"""


def _python(*args: str | Path) -> str:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_load_tf_weights_in_bert_gives_the_same_model_under_ckpt_run(tmp_path: Path) -> None:
    write = tmp_path / "write.py"
    write.write_text(textwrap.dedent(WRITE.format(**CONFIG)))
    prefix = _python(write, tmp_path / "model_dir" / "bert_model.ckpt").strip()
    assert prefix.endswith("bert_model.ckpt-3")
    load = tmp_path / "load.py"
    load.write_text(textwrap.dedent(LOAD.format(config=CONFIG)))
    assert _python(load, prefix, tmp_path / "real.npz") == "tensorflow\n"
    assert _python("-m", "ckpt_cli", "run", load, prefix, tmp_path / "standin.npz") == "formats.tf\n"
    real, standin = np.load(tmp_path / "real.npz"), np.load(tmp_path / "standin.npz")
    assert sorted(real.files) == sorted(standin.files) and len(real.files) > 40
    for key in real.files:
        assert real[key].dtype == standin[key].dtype and np.array_equal(real[key], standin[key]), key
    torch_init = tmp_path / "init.npz"
    _python("-c", LOAD.format(config=CONFIG).replace("load_tf_weights_in_bert(model, config, sys.argv[1])\n", "")
            .replace("sys.argv[2]", repr(str(torch_init))))
    init = np.load(torch_init)
    kept = sorted(k for k in real.files if np.array_equal(real[k], init[k]))
    assert kept == []  # every parameter comes from the checkpoint, none is PyTorch's initial value
