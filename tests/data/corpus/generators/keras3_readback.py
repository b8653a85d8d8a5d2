"""Generate ``tests/data/keras3_readback/``: Keras 2 whole models trained with Adam and Keras 3 templates of the
same architectures compiled with ``Adam(learning_rate=0.01)``.

    python tests/data/corpus/generators/keras3_readback.py [OUT_DIR] [MODEL...]

For each model (``rnn``: a Bidirectional LSTM; ``mha``: MultiHeadAttention; the architectures of
``keras_legacy.py``) the Keras 2 program (``TF_USE_LEGACY_KERAS=1``) compiles it with ``Adam(0.01)``, trains two
steps and writes ``full.h5`` (``model.save``, optimizer included), ``x.npy``/``y.npy`` (an input and the model's
prediction) and ``slots.npz``: the Adam slots of every trainable weight in ``model.trainable_weights`` order
(``m/<i>``, ``v/<i>``, read from the optimizer's ``_momentums``/``_velocities`` by variable) and ``iterations``. The Keras 3 program builds the same
architecture, compiles it with ``Adam(0.01)``, builds the optimizer and writes ``t.keras`` (``model.save``: its
``config.json`` names the optimizer) and ``t.json``: ``trainable`` (``model.trainable_variables``' paths in
order) and ``optimizer`` (``model.optimizer.variables``' paths in order), from which a test ties each Keras 3
optimizer variable to its Keras 2 slot without ckpt's tables.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

MODELS = ("rnn", "mha")
_LEGACY = Path(__file__).with_name("keras_legacy.py")


def _build_source() -> str:
    spec = importlib.util.spec_from_file_location("keras_legacy_generator", _LEGACY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.BUILD)


KERAS2 = '''
import os, sys
import tf_keras as keras
out = sys.argv[1]
keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
for name in sys.argv[2:]:
    m = build(keras, name, True)
    m.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    shape = [4 if s is None else s for s in m.input_shape]
    dtype = m.inputs[0].dtype.as_numpy_dtype
    x = (rng.integers(0, 10, shape) if m.inputs[0].dtype.is_integer else rng.normal(size=shape)).astype(dtype)
    y = rng.normal(size=[4 if s is None else s for s in m.output_shape]).astype("float32")
    m.fit(x, y, batch_size=4, epochs=2, verbose=0)
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "x.npy"), x)
    np.save(os.path.join(d, "y.npy"), m.predict(x, verbose=0))
    slots = {"iterations": np.asarray(m.optimizer.iterations.numpy())}
    for i, v in enumerate(m.trainable_weights):  # tf-keras' Adam keeps its slots by variable (_index_dict)
        at = m.optimizer._index_dict[m.optimizer._var_key(v)]
        slots[f"m/{i}"] = m.optimizer._momentums[at].numpy()
        slots[f"v/{i}"] = m.optimizer._velocities[at].numpy()
    np.savez(os.path.join(d, "slots.npz"), **slots)
    m.save(os.path.join(d, "full.h5"))
'''

KERAS3 = '''
import json, os, sys
import keras
out = sys.argv[1]
for name in sys.argv[2:]:
    d = os.path.join(out, name)
    m = build(keras, name, False)
    m.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    m.optimizer.build(m.trainable_variables)
    m.save(os.path.join(d, "t.keras"))
    with open(os.path.join(d, "t.json"), "w") as f:
        json.dump({"trainable": [v.path for v in m.trainable_variables],
                   "optimizer": [v.path for v in m.optimizer.variables]}, f, indent=1)
'''


def main(out: Path, models: tuple[str, ...] = MODELS) -> None:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    build = _build_source()
    subprocess.run([sys.executable, "-c", build + KERAS2, str(out), *models], check=True,
                   env=dict(env, TF_USE_LEGACY_KERAS="1"))
    subprocess.run([sys.executable, "-c", build + KERAS3, str(out), *models], check=True, env=env)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "keras3_readback",
         tuple(sys.argv[2:]) or MODELS)
