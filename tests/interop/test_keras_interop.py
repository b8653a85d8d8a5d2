"""Ask Keras itself: weights converted by ckpt load into the same architecture and reproduce the
corpus models' outputs.

- ``keras2_tagger/tagger_tf/ckpt`` (a tf-keras TF-format ``save_weights``) -> ``--to keras2-h5``:
  tf-keras ``load_weights`` reproduces ``probe_outputs.npy``.
- ``keras2_tagger/tagger_weights.h5`` -> ``--to keras3-h5 --template keras3_tagger/tagger.weights.h5``:
  Keras 3 ``load_weights`` reproduces the Keras 2 model's ``probe_outputs.npy``.
- A file ckpt writes from Keras' own Keras 3 file with bfloat16 loads back into Keras 3.

Each framework runs in a subprocess (tf-keras with TF_USE_LEGACY_KERAS=1, Keras 3 without), building the
architecture of ``tests/data/corpus/generators/keras_h5.py`` exactly.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from formats.ops.convert.cross import convert_file

from ..conftest import CORPUS

pytest.importorskip("tensorflow")
pytestmark = pytest.mark.interop

_TAGGER = """
import json, os, sys
import numpy as np
which, weights, inputs, out = sys.argv[1:5]
if which == "keras2":
    import tf_keras as keras
else:
    import keras
inp = keras.Input((12,), name="tokens", dtype="int32")
x = keras.layers.Embedding(50, 8, name="embed")(inp)
x = keras.layers.LSTM(16, name="lstm")(x)
x = keras.layers.BatchNormalization(name="bn")(x)
sub = keras.Sequential([keras.layers.Dense(16, activation="relu"), keras.layers.Dense(4)], name="head")
m = keras.Model(inp, sub(x), name="tagger")
m.load_weights(weights)
np.save(out, m.predict(np.load(inputs), verbose=0))
print(json.dumps([w.name for w in m.weights]))
"""


def _need(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")


def _run_tagger(which: str, weights: Path, tmp_path: Path) -> np.ndarray:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    if which == "keras2":
        env["TF_USE_LEGACY_KERAS"] = "1"
    else:
        env.pop("TF_USE_LEGACY_KERAS", None)
    out = tmp_path / f"{which}_outputs.npy"
    done = subprocess.run([sys.executable, "-c", _TAGGER, which, str(weights),
                           str(CORPUS / "keras2_tagger" / "probe_inputs.npy"), str(out)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return np.load(out)


def _expected() -> np.ndarray:
    return np.load(CORPUS / "keras2_tagger" / "probe_outputs.npy")


def test_bundle_to_keras2_h5_loads_in_tf_keras(tmp_path: Path) -> None:
    _need("tf_keras")
    out = tmp_path / "tagger.h5"
    result = convert_file(CORPUS / "keras2_tagger" / "tagger_tf" / "ckpt", out, "keras2-h5")
    assert result.ok and result.written.roundtrip.ok
    got = _run_tagger("keras2", out, tmp_path)
    assert got.shape == (8, 4)
    np.testing.assert_allclose(got, _expected(), rtol=0, atol=1e-5)


def test_keras2_h5_to_keras3_loads_in_keras3(tmp_path: Path) -> None:
    _need("keras")
    out = tmp_path / "tagger.weights.h5"
    result = convert_file(CORPUS / "keras2_tagger" / "tagger_weights.h5", out, "keras3-h5",
                          template=str(CORPUS / "keras3_tagger" / "tagger.weights.h5"))
    assert result.ok and [p.kind for p in result.plan.errors] == []
    got = _run_tagger("keras3", out, tmp_path)
    assert got.shape == (8, 4)
    np.testing.assert_allclose(got, _expected(), rtol=0, atol=1e-5)


def test_bundle_to_keras3_loads_in_keras3(tmp_path: Path) -> None:
    """The TF-format bundle straight to Keras 3 (full_names meet the Keras 3 names)."""
    _need("keras")
    out = tmp_path / "tagger.weights.h5"
    result = convert_file(CORPUS / "keras2_tagger" / "tagger_tf" / "ckpt", out, "keras3-h5",
                          template=str(CORPUS / "keras3_tagger" / "tagger.weights.h5"))
    assert result.ok
    np.testing.assert_allclose(_run_tagger("keras3", out, tmp_path), _expected(), rtol=0, atol=1e-5)


def test_keras3_h5_back_to_keras2_loads_in_tf_keras(tmp_path: Path) -> None:
    """Keras 2 -> Keras 3 -> Keras 2 (onto the Keras 2 file as template) still loads into tf-keras."""
    _need("tf_keras")
    k3, k2 = tmp_path / "tagger.weights.h5", tmp_path / "back.h5"
    assert convert_file(CORPUS / "keras2_tagger" / "tagger_weights.h5", k3, "keras3-h5",
                        template=str(CORPUS / "keras3_tagger" / "tagger.weights.h5")).ok
    assert convert_file(k3, k2, "keras2-h5", template=str(CORPUS / "keras2_tagger" / "tagger_weights.h5")).ok
    np.testing.assert_allclose(_run_tagger("keras2", k2, tmp_path), _expected(), rtol=0, atol=1e-5)


_BF16 = """
import sys, json, numpy as np, keras
m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, dtype="bfloat16", name="d"),
                      keras.layers.BatchNormalization(name="bn")])
if sys.argv[1] == "save":
    rng = np.random.default_rng(5)
    for v in m.weights:
        v.assign(rng.normal(size=v.shape).astype("float32"))
    m.save_weights(sys.argv[2])
else:
    m.load_weights(sys.argv[2])
print(json.dumps([[v.name, str(v.dtype), np.asarray(v.numpy(), dtype="float32").tolist()] for v in m.weights]))
"""


def test_keras3_bfloat16_written_by_ckpt_loads_in_keras3(tmp_path: Path) -> None:
    _need("keras")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    env.pop("TF_USE_LEGACY_KERAS", None)
    original, copy = tmp_path / "k.weights.h5", tmp_path / "copy.weights.h5"

    def run(*args: str) -> list[list[object]]:
        done = subprocess.run([sys.executable, "-c", _BF16, *args], capture_output=True, text=True, env=env,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    saved = run("save", str(original))
    result = convert_file(original, copy, "keras3-h5")
    assert result.ok
    dtypes = {r.key: r.dtype for r in result.plan.rows}
    assert dtypes["layers/dense/vars/0"] == dtypes["layers/dense/vars/1"] == "bfloat16"
    assert dtypes["layers/batch_normalization/vars/0"] == "float32"
    assert run("load", str(copy)) == saved
