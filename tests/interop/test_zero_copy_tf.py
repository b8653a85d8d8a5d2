"""TensorFlow reads what zero-copy writes produce: data files copied by the kernel, hard-linked input data
files, and a linked file beside a second shard holding the new tensors."""
from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

import formats

from ..conftest import CORPUS

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

pytestmark = pytest.mark.interop
SOURCE = CORPUS / "tf1_adam" / "model.ckpt-200"


def _tf_values(prefix: str) -> dict[str, np.ndarray]:
    reader = tf.train.load_checkpoint(prefix)
    return {k: reader.get_tensor(k) for k in reader.get_variable_to_shape_map()}


@pytest.mark.parametrize("link", [False, True], ids=["copy", "link"])
def test_tensorflow_reads_a_renamed_checkpoint_whose_data_was_not_rewritten(tmp_path, run_cli, link):
    out = str(tmp_path / "renamed" / "model.ckpt-200")
    result = run_cli("rename", SOURCE, "-o", out, "--map", "dnn=net", *(["--link"] if link else []))
    assert result.exit_code == 0, result.stderr
    before = _tf_values(str(SOURCE))
    after = _tf_values(out)
    assert sorted(after) == sorted(k.replace("dnn/", "net/", 1) if k.startswith("dnn/") else k for k in before)
    for key, value in before.items():
        np.testing.assert_array_equal(after[key.replace("dnn/", "net/", 1) if key.startswith("dnn/") else key], value)


def test_tensorflow_restores_a_linked_object_based_conversion(tmp_path, run_cli):
    out = str(tmp_path / "tf2" / "ckpt-1")
    result = run_cli("convert", SOURCE, "-o", out, "--to", "tf-object", "--link")
    assert result.exit_code == 0, result.stderr
    assert os.path.exists(out + ".data-00001-of-00002")
    values = _tf_values(out)
    with formats.open_checkpoint(out) as ckpt:
        by_name = {e.name: k for k, e in ckpt.items()}
    for key, value in _tf_values(str(SOURCE)).items():
        np.testing.assert_array_equal(values[by_name[key]], value)
    assert "_CHECKPOINTABLE_OBJECT_GRAPH" in values


def test_tensorflow_restores_a_linked_rename_of_an_object_based_checkpoint(tmp_path, run_cli):
    """Issue 24 #5: the input's data file is linked whole (its object graph, last in it, left unreferenced),
    the new graph goes to a second shard, and tf.train.Checkpoint restores every value and slot."""
    pytest.importorskip("tf_keras")
    slots = CORPUS / "seed_slots" / "tf_ckpts" / "ckpt-5"
    src = tmp_path / "src" / "ckpt-5"
    src.parent.mkdir()
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copyfile(str(slots) + suffix, str(src) + suffix)
    out = tmp_path / "renamed" / "ckpt-5"
    result = run_cli("rename", src, "-o", out, "--map", "net/l1=net/dense", "--link")
    assert result.exit_code == 0, result.stderr
    assert os.path.samefile(str(out) + ".data-00000-of-00002", str(src) + ".data-00000-of-00001")
    assert run_cli("verify", out).exit_code == 0

    from .test_convert_tf import assert_restores_renamed_guide

    assert_restores_renamed_guide(out)
