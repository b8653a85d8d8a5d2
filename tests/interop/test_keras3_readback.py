"""Ask Keras 3 itself about the Keras 3 files ckpt writes that ckpt also reads back (issue 36, section 4).

- ``convert full.h5 --to keras`` of every Keras 2 whole model of ``tests/data/keras_legacy``: Keras 3 loads the
  archive (``keras.models.load_model``) and predicts exactly (bit for bit) what it predicts with ``oracle.keras``,
  the same architecture saved by Keras 3 with the same weights, and what Keras 2 predicted (``y.npy``) within
  float32 rounding; the models with a ``Bidirectional`` LSTM and a ``MultiHeadAttention`` too, whose configs now
  carry ``backward_layer`` and ``build_config``.
- ``convert full.h5 --to keras3-h5 --template t.keras`` of the Adam-trained models of ``tests/data/keras3_readback``
  (the template compiled with ``Adam(0.01)``): Keras 3 loads the weights into the template's model with its optimizer
  without skipping any, predicts what Keras 2 predicted, and holds in each optimizer variable the Keras 2 slot Keras'
  own records tie it to.

One Keras 3 process runs every check (TensorFlow's start-up costs seconds).
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

from ..conftest import SHIPPED
from ..test_keras3_readback import LEGACY, MODELS, READBACK, _expected_optimizer

pytestmark = pytest.mark.interop

if importlib.util.find_spec("keras") is None or importlib.util.find_spec("tensorflow") is None:
    pytest.skip("keras 3 / tensorflow is not installed", allow_module_level=True)

TOLERANCE = 1e-5
"""Keras 2 and Keras 3 order their float32 operations differently: relative to the largest output."""

KERAS3 = '''
import json, sys, warnings
import numpy as np
import keras
jobs = json.loads(sys.argv[1])
found = {}
for job in jobs:
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if job["kind"] == "model":
                m = keras.models.load_model(job["path"])
                oracle = keras.models.load_model(job["oracle"])
                x = np.load(job["x"])
                np.save(job["y"], m.predict(x, verbose=0))
                np.save(job["y_oracle"], oracle.predict(x, verbose=0))
                result = {}
            else:
                m = keras.models.load_model(job["template"])
                m.load_weights(job["path"])
                np.save(job["y"], m.predict(np.load(job["x"]), verbose=0))
                variables = m.optimizer.variables
                np.savez(job["optimizer"], **{f"optimizer/vars/{i}": np.asarray(v) for i, v in enumerate(variables)})
                result = {"paths": [v.path for v in variables]}
        result["warnings"] = [str(w.message)[:300] for w in caught if "Skipping" in str(w.message)]
        found[job["id"]] = result
    except Exception as exc:
        found[job["id"]] = {"error": f"{type(exc).__name__}: {exc}"[:2000]}
print(json.dumps(found))
'''


def _ckpt(*args: object) -> object:
    from click.testing import CliRunner

    return CliRunner().invoke(SHIPPED, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """ckpt's outputs, and what Keras 3 made of them: ``{"dir", "converted": {id: ckpt's result}, "keras3": {id:
    {"error"} or {"warnings", "paths"}}}``."""
    out = tmp_path_factory.mktemp("keras3_readback")
    jobs, converted = [], {}
    for model in MODELS:
        path = out / f"{model}.keras"
        converted[model] = _ckpt("convert", LEGACY / model / "full.h5", "-o", path, "--to", "keras")
        jobs.append({"id": model, "kind": "model", "path": str(path), "oracle": str(LEGACY / model / "oracle.keras"),
                     "x": str(LEGACY / model / "x.npy"), "y": str(out / f"{model}.y.npy"),
                     "y_oracle": str(out / f"{model}.oracle.npy")})
    for model in ("rnn", "mha"):
        job = f"adam-{model}"
        path = out / f"{job}.weights.h5"
        converted[job] = _ckpt("convert", READBACK / model / "full.h5", "--to", "keras3-h5", "--template",
                               READBACK / model / "t.keras", "-o", path)
        jobs.append({"id": job, "kind": "weights", "path": str(path), "template": str(READBACK / model / "t.keras"),
                     "x": str(READBACK / model / "x.npy"), "y": str(out / f"{job}.y.npy"),
                     "optimizer": str(out / f"{job}.optimizer.npz")})
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    env.pop("TF_USE_LEGACY_KERAS", None)
    done = [j for j in jobs if converted[j["id"]].exit_code == 0]  # type: ignore[attr-defined]
    run = subprocess.run([sys.executable, "-c", KERAS3, json.dumps(done)], check=True, env=env, capture_output=True,
                         text=True)
    return {"dir": out, "converted": converted, "keras3": json.loads(run.stdout.strip().splitlines()[-1])}


def _relative(got: np.ndarray, want: np.ndarray) -> float:
    assert got.shape == want.shape
    return float(np.abs(got - want).max() / np.abs(want).max())


@pytest.mark.parametrize("model", MODELS)
def test_keras3_loads_the_archive_and_predicts_as_its_own_model(work: dict[str, object], model: str) -> None:
    result = work["converted"][model]  # type: ignore[index]
    assert result.exit_code == 0, result.output
    keras3 = work["keras3"][model]  # type: ignore[index]
    assert "error" not in keras3, keras3
    assert keras3["warnings"] == []
    out = Path(work["dir"])  # type: ignore[arg-type]
    got, oracle = np.load(out / f"{model}.y.npy"), np.load(out / f"{model}.oracle.npy")
    assert got.dtype == oracle.dtype and got.shape == oracle.shape
    assert got.tobytes() == oracle.tobytes()  # the same model as Keras 3's own, to the bit
    assert _relative(got, np.load(LEGACY / model / "y.npy")) <= TOLERANCE


@pytest.mark.parametrize("model", ["rnn", "mha"])
def test_keras3_resumes_the_template_s_optimizer_with_the_source_s_state(work: dict[str, object], model: str) -> None:
    job = f"adam-{model}"
    result = work["converted"][job]  # type: ignore[index]
    assert result.exit_code == 0, result.output
    assert "warning" not in result.output
    keras3 = work["keras3"][job]  # type: ignore[index]
    assert "error" not in keras3, keras3
    assert keras3["warnings"] == []  # Keras 3 skipped no optimizer variable
    # as many variables as the template's optimizer, in its order (a loaded model's variable paths drop the
    # wrapper's name that the model the template was saved from had: compare by place, not by path)
    assert len(keras3["paths"]) == len(json.loads((READBACK / model / "t.json").read_text())["optimizer"])
    out = Path(work["dir"])  # type: ignore[arg-type]
    assert _relative(np.load(out / f"{job}.y.npy"), np.load(READBACK / model / "y.npy")) <= TOLERANCE
    loaded = np.load(out / f"{job}.optimizer.npz")
    expected = _expected_optimizer(model)
    assert sorted(loaded.files) == sorted(expected)
    for key, value in expected.items():
        assert loaded[key].tobytes() == value.tobytes(), key
