"""Ask Keras itself (issue 24, items 1-3): a tf-keras ``tf.train.Checkpoint(model=, optimizer=)`` of
Dense 16 / BatchNormalization / Dense 1 trained 4 steps (Adam; SGD with momentum), converted by ckpt:

- onto a Keras 3 ``.weights.h5`` template written after the optimizer was built: Keras 3
  ``load_weights`` gives ``iterations == 4`` and every optimizer array bit for bit the source's;
- to ``-o resume.keras`` onto the ``.keras`` template: ``keras.models.load_model`` predicts as the
  source model, with the same optimizer state;
- to ``--to keras2-h5``: tf-keras ``load_weights`` works and predicts as the source model.

The programs run in subprocesses (tests/interop/programs/keras_state.py): tf-keras and Keras 3 cannot share one.
"""
from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from formats.ops.convert.cross import convert_file

pytest.importorskip("tensorflow")
pytest.importorskip("tf_keras")
pytestmark = pytest.mark.interop

PROGRAM = Path(__file__).parent / "programs" / "keras_state.py"
STEP = 4


def _keras3() -> bool:
    try:
        return importlib.metadata.version("keras").startswith("3")
    except importlib.metadata.PackageNotFoundError:
        return False


def _run(mode: str, directory: Path, optimizer: str, legacy: bool) -> None:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    if legacy:
        env["TF_USE_LEGACY_KERAS"] = "1"
    else:
        env.pop("TF_USE_LEGACY_KERAS", None)
    done = subprocess.run([sys.executable, str(PROGRAM), mode, str(directory), optimizer], capture_output=True,
                          text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_training_state_reaches_keras3_and_tf_keras(tmp_path: Path, optimizer: str) -> None:
    if not _keras3():
        pytest.skip("Keras 3 is not installed")
    _run("train", tmp_path, optimizer, legacy=True)
    _run("template", tmp_path, optimizer, legacy=False)
    src = tmp_path / "k2run" / "tf_ckpts" / "ckpt-4"
    for out, to, template in [(tmp_path / "k3.weights.h5", "keras3-h5", tmp_path / "k3" / "model.weights.h5"),
                              (tmp_path / "resume.keras", "keras3-h5", tmp_path / "k3" / "model.keras"),
                              (tmp_path / "k2.h5", "keras2-h5", None)]:
        result = convert_file(src, out, to, template=str(template) if template else None)
        assert result.ok, [p.message for p in result.plan.errors]
        assert all("load_weights" not in p.message for p in result.plan.warnings)
        kinds = {p.key for p in result.plan.warnings if p.kind == "unused"}
        assert kinds <= ({"object_graph", "save_counter"} if to == "keras3-h5" else
                         {"object_graph", "save_counter", "optimizer", "slot"}), kinds
    _run("load", tmp_path, optimizer, legacy=False)
    _run("load_h5", tmp_path, optimizer, legacy=True)
    source = np.load(tmp_path / "k2.npz", allow_pickle=True)
    keras3 = np.load(tmp_path / "k3.npz", allow_pickle=True)
    expected = list(source["opt"])  # tf-keras: iterations, slots; Keras 3: iteration, learning_rate, slots
    assert int(expected[0]) == STEP
    for which in ("opt", "opt_keras"):
        got = list(keras3[which])
        assert int(got[0]) == STEP and len(got) == len(expected) + 1
        for want, have in zip(expected[1:], got[2:]):
            assert have.dtype == want.dtype and have.shape == want.shape and have.tobytes() == want.tobytes()
    for which in ("pred", "pred_keras"):
        np.testing.assert_allclose(keras3[which], source["pred"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.load(tmp_path / "k2_h5.npz")["pred"], source["pred"], rtol=1e-6, atol=1e-7)
