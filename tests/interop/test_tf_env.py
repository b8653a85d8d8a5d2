"""Opt-in: ckpt installs beside TensorFlow 2.17.1 (protobuf 4.x, numpy 1.x) without moving either.

Builds a virtual environment with ``tensorflow-cpu==2.17.1``, installs this project into it, and
checks that no package TensorFlow pins changed, ``pip check`` is clean, TensorFlow imports without
errors, and ``ckpt ls``/``verify``/``convert`` work there (TensorFlow 2.17 reads the conversion).
It downloads about 300 MB and takes a few minutes, so it runs only when asked:

    CKPT_TEST_TF_ENV=1 python -m pytest -m interop tests/interop/test_tf_env.py

``CKPT_TF_ENV_DIR=/some/dir`` keeps the environment there between runs.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import CORPUS

pytestmark = [pytest.mark.interop,
              pytest.mark.skipif(not os.environ.get("CKPT_TEST_TF_ENV"), reason="opt-in: set CKPT_TEST_TF_ENV=1")]

ROOT = Path(__file__).resolve().parents[2]
TENSORFLOW = "tensorflow-cpu==2.17.1"
PINNED = ("protobuf", "numpy", "ml-dtypes", "h5py", "keras", "tensorboard")


def _run(*args: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PIP_DISABLE_PIP_VERSION_CHECK="1")
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, check=check, env=env, timeout=1800)


def _versions(python: Path) -> dict[str, str]:
    lines = _run(python, "-m", "pip", "freeze", "--all").stdout.splitlines()
    pairs = (line.split("==", 1) for line in lines if "==" in line)
    return {name.lower().replace("_", "-"): version for name, version in pairs}


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = Path(os.environ.get("CKPT_TF_ENV_DIR") or tmp_path_factory.mktemp("tfenv"))
    home = base / "tf217"
    python = home / "bin" / "python"
    if not python.exists():
        _run(sys.executable, "-m", "venv", home)
        _run(python, "-m", "pip", "install", "-q", TENSORFLOW)
    _run(python, "-m", "pip", "uninstall", "-q", "-y", "tfckpt", check=False)
    return python


def test_installing_ckpt_keeps_tensorflows_pins_and_tensorflow_imports(venv: Path, tmp_path: Path) -> None:
    before = _versions(venv)
    assert before["protobuf"].startswith("4.") and before["numpy"].startswith("1.")
    _run(venv, "-m", "pip", "install", "-q", ROOT)
    after = _versions(venv)
    assert {p: after.get(p) for p in PINNED} == {p: before.get(p) for p in PINNED}
    assert set(after) - set(before) <= {"tfckpt", "click", "crc32c", "rich", "markdown-it-py", "mdurl", "pygments"}
    assert _run(venv, "-m", "pip", "check").returncode == 0
    imported = _run(venv, "-c", "import tensorflow as tf; print(tf.__version__)")
    assert imported.stdout == "2.17.1\n" and "Error" not in imported.stderr and "GetPrototype" not in imported.stderr

    ckpt = venv.parent / "ckpt"
    assert "ckpt-5" in _run(ckpt, "ls", CORPUS / "seed_slots/tf_ckpts").stdout
    assert _run(ckpt, "verify", CORPUS / "tf1_estimator").stdout.startswith("ok ")
    _run(ckpt, "convert", CORPUS / "tf1_estimator", "-o", tmp_path / "obj", "--to", "tf-object")
    read_back = _run(venv, "-c", "import sys, tensorflow as tf, formats.tf as ftf\n"
                     "p = sys.argv[1]\n"
                     "print(len(tf.train.list_variables(p)), tf.train.list_variables(p) == ftf.train.list_variables(p))",
                     tmp_path / "obj")
    assert read_back.stdout == "14 True\n"
