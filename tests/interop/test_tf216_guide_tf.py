"""The guide's program on TensorFlow >= 2.16 (tests/data/corpus/tf216_guide), checked by TensorFlow and Keras 3
themselves (issue 36, section 3): ``extract -o dir/`` equals TensorFlow's reader, ``convert --to keras3-h5
--template`` loads into Keras 3 with its Adam state, and ``doctor`` answers what ``tf.train.Checkpoint.restore``
binds. TensorFlow runs in a subprocess (tests/interop/programs/tf216_guide.py), Keras 3 as ``tf.keras``."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tensorflow")
pytestmark = pytest.mark.interop

from tests.conftest import CORPUS  # noqa: E402

PROGRAM = Path(__file__).parent / "programs" / "tf216_guide.py"
TWO = CORPUS / "tf216_guide" / "two_dense"
VV = "/.ATTRIBUTES/VARIABLE_VALUE"


def tf_job(**job: object) -> dict:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    env.pop("TF_USE_LEGACY_KERAS", None)
    done = subprocess.run([sys.executable, str(PROGRAM), json.dumps(job)], check=True, env=env, capture_output=True,
                          text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def tf_values() -> dict:
    return tf_job(kind="read", path=str(TWO / "tf_ckpts" / "ckpt-10"))


def test_extract_to_a_directory_equals_tensorflows_reader(run_cli, tmp_path, tf_values):
    out = tmp_path / "arrays"
    assert run_cli("extract", TWO / "tf_ckpts", "-o", f"{out}/").exit_code == 0
    assert len(tf_values) == 16  # all but the object graph and the iterator's variant
    for key, value in tf_values.items():
        rel = (key[:-len(VV)] if key.endswith(VV) else key) + ".npy"
        np.testing.assert_array_equal(np.load(out / rel), np.asarray(value, dtype=np.load(out / rel).dtype), key)


def test_keras3_loads_the_converted_weights_and_adam_state(run_cli, tmp_path, tf_values):
    out = tmp_path / "net.weights.h5"
    result = run_cli("convert", TWO / "tf_ckpts", "--to", "keras3-h5", "--template", TWO / "template.weights.h5",
                     "-o", out)
    assert result.exit_code == 0, result.output
    loaded = tf_job(kind="keras3", path=str(out), layers=2)
    want = [tf_values[f"net/{layer}/{v}" + VV] for layer in ("l1", "l2") for v in ("_kernel", "bias")]
    for got, expected in zip(loaded["weights"], want, strict=True):
        np.testing.assert_array_equal(np.float32(got), np.float32(expected))
    want_opt = [tf_values["optimizer/_iterations" + VV], tf_values["optimizer/_learning_rate" + VV],
                *(tf_values[f"optimizer/_variables/{i}" + VV] for i in range(2, 10))]
    assert len(loaded["optimizer"]) == len(want_opt) == 10
    for got, expected in zip(loaded["optimizer"], want_opt, strict=True):
        np.testing.assert_array_equal(np.asarray(got, np.float64), np.asarray(expected, np.float64))


@pytest.mark.parametrize("how", ["moved", "add-prefix", "map-net", "map-everything", "original"])
def test_doctor_agrees_with_what_tensorflow_restore_binds(run_cli, tmp_path, how):
    original = TWO / "tf_ckpts" / "ckpt-10"
    ckpt = tmp_path / "r" / "ckpt-10"
    if how == "moved":
        ckpt = TWO / "moved" / "tf_ckpts" / "ckpt-10"
    elif how == "original":
        ckpt = original
    else:
        rules = {"add-prefix": ["--add-prefix", "model"], "map-net": ["--map", "net=model"],
                 "map-everything": ["--map", "net=model", "--map", "optimizer=opt"]}[how]
        assert run_cli("rename", original, *rules, "-o", ckpt).exit_code == 0
    doctor = run_cli("doctor", ckpt, "--against", original, "--json")
    report = json.loads(doctor.stdout)
    restored = tf_job(kind="restore", path=str(ckpt), layers=2)
    assert report["would_load"] is restored["matched"], (report, restored)
    assert doctor.exit_code == (0 if restored["matched"] else 1)
    if how == "add-prefix":
        assert restored == {"matched": False, "changed": [False] * 4}  # binds nothing


def test_a_name_based_checkpoint_converted_to_object_based_passes_assert_existing_objects_matched(run_cli, tmp_path):
    out = tmp_path / "obj" / "ckpt-1"
    assert run_cli("convert", CORPUS / "tf1_adam" / "model.ckpt-200", "--to", "tf-object", "-o", out).exit_code == 0
    assert tf_job(kind="structure", path=str(out)) == {"matched": True}  # restore creates a save_counter
