"""Generate ``tests/data/keras_legacy/``: small whole models saved by tf-keras (Keras 2) with ``model.save``.

    python tests/data/corpus/generators/keras_legacy.py [OUT_DIR]

For each model the Keras 2 program (``TF_USE_LEGACY_KERAS=1``) sets distinct random values in every weight
(batch statistics included) and writes ``<model>/full.h5`` (``model.save``), ``w.h5`` (``save_weights``, for
the oracle only, not committed) and ``x.npy``/``y.npy`` (an input and the model's output). The Keras 3 program
builds the same architecture natively, loads ``w.h5`` with Keras 3's own legacy weights loader and, when the
result reproduces ``y.npy``, saves it as ``oracle.keras``: the config Keras 3 writes for that architecture and the
weights where Keras 3 keeps them - what ``ckpt convert full.h5 --to keras`` must give, decided by Keras, not by
ckpt. ``custom`` (a layer class Keras does not have) gets no oracle: converting it must fail. ``submodel`` calls two
Functional models (Keras 2 and Keras 3 number their calls differently). ``constants`` computes with numbers
(tf-keras ``TFOpLambda`` layers, Keras 3 operations), as MobileNetV3's hard-swish does.

    python tests/data/corpus/generators/keras_legacy.py [OUT_DIR] [MODEL...]   # only these models
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

MODELS = ("cnn", "rnn", "mha", "nested", "shared", "conv1d", "sequential", "names", "ops", "custom", "submodel",
          "constants")
NO_ORACLE = ("custom",)

BUILD = '''
import numpy as np

def build(keras, name, keras2):
    L = keras.layers
    if name == "cnn":
        i = keras.Input((8, 8, 3))
        x = L.DepthwiseConv2D(3)(i)
        x = L.SeparableConv2D(4, 3, padding="same")(x)
        x = L.Conv2DTranspose(3, 3)(x)
        x = L.BatchNormalization(scale=False)(x)
        x = L.GlobalAveragePooling2D()(x)
        x = L.LayerNormalization()(x)
        return keras.Model(i, L.Dense(2)(x))
    if name == "rnn":
        i = keras.Input((5,), dtype="int32")
        x = L.Embedding(10, 4)(i)
        x = L.Bidirectional(L.LSTM(3, return_sequences=True))(x)
        x = L.GRU(3)(x)
        return keras.Model(i, L.Dense(2)(x))
    if name == "mha":
        i = keras.Input((4, 6))
        x = L.MultiHeadAttention(2, 3)(i, i)
        x = L.LayerNormalization()(x)
        return keras.Model(i, L.Dense(2)(L.Flatten()(x)))
    if name == "nested":
        inner = keras.Sequential([keras.Input((4,)), L.Dense(5), L.BatchNormalization(), L.Dense(3, activation="relu")],
                                 name="inner")
        inner.layers[0].trainable = False
        outer = keras.Sequential([keras.Input((3,)), L.Dense(4), inner], name="outer")
        i = keras.Input((3,))
        return keras.Model(i, L.Dense(2)(outer(i)))
    if name == "shared":
        i = keras.Input((4,))
        d = L.Dense(4, activation="tanh")
        return keras.Model(i, L.Dense(2)(d(d(d(i)))))
    if name == "conv1d":
        i = keras.Input((6, 3))
        x = L.Conv1D(4, 3, activation="relu")(i)
        x = L.GlobalMaxPooling1D()(x)
        return keras.Model(i, L.Dense(2)(x))
    if name == "sequential":
        return keras.Sequential([keras.Input((4,)), L.Dense(3, activation="relu"), L.Dropout(0.5), L.Dense(2)])
    if name == "names":  # tf-keras allows "/" in layer names (DenseNet's conv1/conv), Keras 3 does not
        sep = "/" if keras2 else "_"
        i = keras.Input((4,))
        x = L.Dense(3, name=f"block1{sep}dense")(i)
        x = L.BatchNormalization(name=f"block1{sep}bn")(x)
        return keras.Model(i, L.Dense(2, name=f"head{sep}dense")(x))
    if name == "ops":  # x + y between layer outputs: a TFOpLambda in tf-keras (ConvNeXt's residuals)
        i = keras.Input((4,))
        x = L.Dense(3)(i)
        y = L.Dense(3)(i)
        return keras.Model(i, L.Dense(2)(x + y))
    if name == "constants":  # a layer output and a number: MobileNetV3's hard-swish, a number first, x / 4.0, x - 1.0
        i = keras.Input((4,))
        x = L.Dense(3)(i)
        x = L.Multiply()([x, L.ReLU(6.0)(x + 3.0) * (1.0 / 6.0)])
        x = (2.0 * x - 1.0) / 4.0
        return keras.Model(i, L.Dense(2)(x))
    if name == "submodel":  # Functional models called in a Functional model, the last one giving its output
        j = keras.Input((4,))
        inner = keras.Model(j, L.BatchNormalization()(L.Dense(3)(j)), name="inner")
        h = keras.Input((3,))
        head = keras.Model(h, L.Dense(2)(h), name="head")
        i = keras.Input((4,))
        return keras.Model(i, head(L.Dense(3, activation="relu")(inner(i))))
    if name == "custom":
        class Scale(L.Layer):
            def build(self, shape):
                self.w = self.add_weight(name="w", shape=shape[-1:])
            def call(self, x):
                return x * self.w
        i = keras.Input((3,))
        return keras.Model(i, L.Dense(2)(Scale()(i)))
    raise KeyError(name)
'''

KERAS2 = BUILD + '''
import os, sys
import tf_keras as keras
out = sys.argv[1]
keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
for name in sys.argv[2:]:
    m = build(keras, name, True)
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    m.set_weights([rng.uniform(0.5, 1.5, w.shape).astype(w.dtype) if "variance" in v.name
                   else rng.normal(0, 0.4, w.shape).astype(w.dtype) for v, w in zip(m.weights, m.get_weights())])
    shape = [2 if s is None else s for s in m.input_shape]
    x = (rng.integers(0, 10, shape) if m.inputs[0].dtype.is_integer else rng.normal(size=shape)).astype(
        m.inputs[0].dtype.as_numpy_dtype)
    np.save(os.path.join(d, "x.npy"), x)
    np.save(os.path.join(d, "y.npy"), m.predict(x, verbose=0))
    m.save_weights(os.path.join(d, "w.h5"))
    m.save(os.path.join(d, "full.h5"), include_optimizer=False)
'''

KERAS3 = BUILD + '''
import os, sys
import keras
out = sys.argv[1]
for name in sys.argv[2:]:
    d = os.path.join(out, name)
    m = build(keras, name, False)
    m.load_weights(os.path.join(d, "w.h5"))
    y = m.predict(np.load(os.path.join(d, "x.npy")), verbose=0)
    ref = np.load(os.path.join(d, "y.npy"))
    assert np.abs(y - ref).max() <= 1e-5 * np.abs(ref).max(), name
    m.save(os.path.join(d, "oracle.keras"))
'''


def main(out: Path, models: tuple[str, ...] = MODELS) -> None:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    subprocess.run([sys.executable, "-c", KERAS2, str(out), *models], check=True, env=dict(env, TF_USE_LEGACY_KERAS="1"))
    subprocess.run([sys.executable, "-c", KERAS3, str(out), *(m for m in models if m not in NO_ORACLE)], check=True,
                   env=env)
    for model in models:
        (out / model / "w.h5").unlink()


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "keras_legacy",
         tuple(sys.argv[2:]) or MODELS)
