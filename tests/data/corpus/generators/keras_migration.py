"""Generate ``tests/data/keras_migration/``: small models written by tf-keras (Keras 2) and Keras 3 themselves.

    python tests/data/corpus/generators/keras_migration.py [OUT_DIR]

For each model (``depthwise``: DepthwiseConv2D, SeparableConv2D, Conv2DTranspose, BatchNormalization without
``scale``, LayerNormalization; ``attention``: MultiHeadAttention and Bidirectional LSTM; ``unnamed``: Dense
layers whose automatic names differ between the two programs) the Keras 2 program sets distinct random
values in every weight and saves ``w.h5`` (``save_weights``), ``tf/ckpt`` (TF format) and ``full.h5``
(``model.save``), with ``x.npy``/``y.npy`` (an input and the model's output). The Keras 3 program builds the
same architecture and saves the templates ``t.weights.h5`` and ``t.keras``, then loads ``w.h5`` with Keras 3's
own legacy loader (it pairs layers by order) and, when that reproduces ``y.npy``, saves the result as
``oracle.weights.h5``: what a conversion onto ``t.weights.h5`` must hold, decided by Keras, not by ckpt.
Each framework runs in its own process (tf-keras with ``TF_USE_LEGACY_KERAS=1``).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

MODELS = ("depthwise", "attention", "unnamed")

BUILD = '''
import numpy as np

def build(keras, name):
    L = keras.layers
    if name == "depthwise":
        i = keras.Input((16, 16, 3))
        x = L.DepthwiseConv2D(3)(i)
        x = L.SeparableConv2D(4, 3)(x)
        x = L.Conv2DTranspose(3, 3)(x)
        x = L.BatchNormalization(scale=False)(x)
        x = L.GlobalAveragePooling2D()(x)
        x = L.LayerNormalization()(x)
        return keras.Model(i, L.Dense(2)(x))
    if name == "attention":
        i = keras.Input((5, 8))
        x = L.MultiHeadAttention(2, 4)(i, i)
        x = L.Bidirectional(L.LSTM(6))(x)
        return keras.Model(i, L.Dense(3)(x))
    i = keras.Input((8,))
    x = L.Dense(8)(i)
    x = L.Dense(8)(x)
    return keras.Model(i, L.Dense(2)(x))
'''

KERAS2 = BUILD + '''
import os, sys
import tf_keras as keras
out = sys.argv[1]
keras.utils.set_random_seed(0)
for _ in range(1):  # the Keras 2 program makes one Dense more: automatic names differ by one
    keras.layers.Dense(1)
rng = np.random.default_rng(0)
for name in sys.argv[2:]:
    m = build(keras, name)
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "tf"), exist_ok=True)
    m.set_weights([rng.uniform(0.5, 1.5, w.shape).astype(w.dtype) if "variance" in v.name
                   else rng.normal(0, 0.3, w.shape).astype(w.dtype) for v, w in zip(m.weights, m.get_weights())])
    x = rng.normal(size=(2, *m.input_shape[1:])).astype("float32")
    np.save(os.path.join(d, "x.npy"), x)
    np.save(os.path.join(d, "y.npy"), m.predict(x, verbose=0))
    m.save_weights(os.path.join(d, "w.h5"))
    m.save_weights(os.path.join(d, "tf", "ckpt"))
    m.save(os.path.join(d, "full.h5"))
'''

KERAS3 = BUILD + '''
import os, sys
import keras
out = sys.argv[1]
keras.utils.set_random_seed(1)
for name in sys.argv[2:]:
    d = os.path.join(out, name)
    m = build(keras, name)
    m.save_weights(os.path.join(d, "t.weights.h5"))
    m.save(os.path.join(d, "t.keras"))
    m.load_weights(os.path.join(d, "w.h5"))
    y = m.predict(np.load(os.path.join(d, "x.npy")), verbose=0)
    ref = np.load(os.path.join(d, "y.npy"))
    assert np.abs(y - ref).max() <= 1e-5 * np.abs(ref).max(), name
    m.save_weights(os.path.join(d, "oracle.weights.h5"))
'''


def main(out: Path) -> None:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    subprocess.run([sys.executable, "-c", KERAS2, str(out), *MODELS], check=True, env=dict(env, TF_USE_LEGACY_KERAS="1"))
    subprocess.run([sys.executable, "-c", KERAS3, str(out), *MODELS], check=True, env=env)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "keras_migration")
