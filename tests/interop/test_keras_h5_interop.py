"""Ask Keras itself: files it writes read back with the values, dtypes and names Keras reports.

Keras runs in a subprocess (Keras 3, or tf-keras with TF_USE_LEGACY_KERAS=1) that saves a model and prints
each variable's name and value digest as JSON; the reader must agree.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import formats

pytest.importorskip("tensorflow")
pytestmark = pytest.mark.interop

_DIGEST = """
import hashlib, json, numpy as np
def digest(v):
    a = np.asarray(v)
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()
"""

_KERAS3 = _DIGEST + """
import keras, sys
inp = keras.Input((6, 6, 3))
x = keras.layers.Conv2D(4, 3, name="conv", dtype="bfloat16")(inp)
x = keras.layers.SeparableConv2D(4, 1, name="sep")(x)
x = keras.layers.LayerNormalization(name="ln", center=False, dtype="bfloat16")(x)
x = keras.layers.Reshape((16, 4))(x)
x = keras.layers.GRU(5, name="gru")(x)
x = keras.layers.BatchNormalization(name="bn", scale=False)(x)
out = keras.layers.Dense(3, name="logits", use_bias=False)(x)
m = keras.Model(inp, out)
rng = np.random.default_rng(1)
for v in m.weights:
    v.assign(rng.normal(size=v.shape).astype(v.dtype))
m.save_weights(sys.argv[1] + "/m.weights.h5")
m.save(sys.argv[1] + "/m.keras")
print(json.dumps([[v.name, str(v.dtype), digest(v.numpy())] for v in m.weights]))
"""

_KERAS2 = _DIGEST + """
import tf_keras as keras, sys
inp = keras.Input((7,), dtype="int32")
x = keras.layers.Embedding(20, 4, name="emb")(inp)
x = keras.layers.LSTM(3, name="lstm")(x)
x = keras.layers.Dropout(0.1)(x)
out = keras.layers.Dense(2, name="out")(x)
m = keras.Model(inp, out)
rng = np.random.default_rng(2)
for v in m.weights:
    v.assign(rng.normal(size=v.shape).astype("float32"))
m.save_weights(sys.argv[1] + "/w.h5")
print(json.dumps([[v.name, str(v.dtype.name), digest(v.numpy())] for v in m.weights]))
"""


def _run(script: str, folder: str, legacy: bool) -> list[list[str]]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", KERAS_BACKEND="tensorflow")
    env.pop("TF_USE_LEGACY_KERAS", None)
    if legacy:
        env["TF_USE_LEGACY_KERAS"] = "1"
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(script), folder], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _digest(value: np.ndarray) -> str:
    import hashlib

    return hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()


_K3_NAMES = ["bn/beta", "bn/moving_mean", "bn/moving_variance", "conv/bias", "conv/kernel", "gru/gru_cell/bias",
             "gru/gru_cell/kernel", "gru/gru_cell/recurrent_kernel", "ln/gamma", "logits/kernel", "sep/bias",
             "sep/depthwise_kernel", "sep/pointwise_kernel"]


def test_keras3_archive_values_dtypes_and_roles(tmp_path):
    pytest.importorskip("keras")
    keras_vars = _run(_KERAS3, str(tmp_path), legacy=False)
    with formats.open_checkpoint(tmp_path / "m.keras") as ckpt:
        ours = sorted((e.name.rsplit("/", 1)[-1], e.dtype, _digest(e.read()))
                      for e in ckpt.values() if e.role == "variable")
        names = sorted(e.name for e in ckpt.values() if e.role == "variable")
    assert ours == sorted(tuple(v) for v in keras_vars)  # config.json settles scale/center/use_bias
    assert names == _K3_NAMES
    with formats.open_checkpoint(tmp_path / "m.weights.h5") as loose:
        # without a config, a 3-variable BatchNormalization or 1-variable LayerNormalization is ambiguous
        assert sorted(e.name for e in loose.values() if e.role == "variable") == sorted(
            ["bn/0", "bn/1", "bn/2", "ln/0"] + [n for n in _K3_NAMES if not n.startswith(("bn/", "ln/"))])
        assert sorted(_digest(e.read()) for e in loose.values()) == sorted(v[2] for v in keras_vars)


def test_keras2_names_values(tmp_path):
    pytest.importorskip("tf_keras")
    keras_vars = _run(_KERAS2, str(tmp_path), legacy=True)
    with formats.open_checkpoint(tmp_path / "w.h5") as ckpt:
        ours = [[e.name + ":0", e.dtype, _digest(e.read())] for e in ckpt.values()]
        assert ckpt.format == "keras2-h5"
    assert sorted(ours) == sorted(keras_vars)
