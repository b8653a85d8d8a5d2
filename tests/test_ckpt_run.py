"""``ckpt run SCRIPT`` and ``python -m formats.tf SCRIPT``: scripts see formats.tf as ``tensorflow``.

Scripts run in child processes (the stand-in must never replace a real TensorFlow in the test
process); one in-process test checks the CLI wiring and restores ``sys.modules`` afterwards.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .conftest import CORPUS, MANIFEST

RUN = CORPUS / "seed_keras2/tf_ckpts"
ESTIMATOR = CORPUS / "tf1_estimator"

READER_SCRIPT = """
import sys
import numpy as np
import tensorflow as tf
import tensorflow.compat.v1 as tf1
from tensorflow.python import pywrap_tensorflow

model_dir = sys.argv[1]
path = tf.train.latest_checkpoint(model_dir)
print("latest", path)
print("state", tf.train.get_checkpoint_state(model_dir).model_checkpoint_path)
total = 0
for name, shape in tf.train.list_variables(model_dir):
    value = tf.train.load_variable(model_dir, name + ":0")
    total += int(np.prod(shape))
reader = tf1.train.NewCheckpointReader(path)
dtypes = reader.get_variable_to_dtype_map()
print("floats", sum(d.is_floating for d in dtypes.values()), "params", total)
print("dtype", dtypes["global_step"].name, dtypes["global_step"] == tf.int64, dtypes["global_step"].as_numpy_dtype)
try:
    pywrap_tensorflow.NewCheckpointReader(path + "-missing")
except tf.errors.NotFoundError as exc:
    print("NotFoundError", type(exc).__mro__[1].__name__)
print("exists", tf1.train.checkpoint_exists(path), tf.io.gfile.exists(model_dir + "/checkpoint"))
print("argv", sys.argv[2:])
"""


def _script(tmp_path: Path, body: str, name: str = "script.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def _run(*args: str | Path, module: str = "ckpt_cli") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", module, *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def _expected_reader_output(model_dir: Path) -> str:
    tensors = MANIFEST["tf1_estimator/model.ckpt-200"]["tensors"]
    params = sum(int(__import__("math").prod(t["shape"])) for t in tensors.values())
    floats = sum(t["dtype"] in ("float32", "float64", "float16", "bfloat16") for t in tensors.values())
    return (f"latest {model_dir}/model.ckpt-200\n"
            f"state {model_dir}/model.ckpt-200\n"
            f"floats {floats} params {params}\n"
            "dtype int64 True <class 'numpy.int64'>\n"
            "NotFoundError OpError\n"
            "exists True True\n"
            "argv ['--flag', 'x']\n")


@pytest.mark.parametrize("module, command", [("ckpt_cli", ["run"]), ("formats.tf", [])])
def test_a_tf1_reading_script_runs_unmodified(tmp_path: Path, module: str, command: list[str]):
    model_dir = tmp_path / "model_dir"
    import shutil

    shutil.copytree(ESTIMATOR, model_dir)
    (model_dir / "checkpoint").write_text(f'model_checkpoint_path: "{model_dir}/model.ckpt-200"\n')
    script = _script(tmp_path, READER_SCRIPT)
    result = _run(*command, script, model_dir, "--flag", "x", module=module)
    assert result.stderr == "" and result.returncode == 0
    assert result.stdout == _expected_reader_output(model_dir)


def test_the_script_sees_its_own_directory_and_name(tmp_path: Path):
    (tmp_path / "helper_mod.py").write_text("VALUE = 41\n")
    script = _script(tmp_path, """
        import sys, helper_mod
        print(__name__, sys.argv[0].endswith("main.py"), helper_mod.VALUE + 1, sys.argv[1:])
    """, "main.py")
    result = _run("run", script, "--help", "-q", "x")  # options after SCRIPT are the script's
    assert result.stdout == "__main__ True 42 ['--help', '-q', 'x']\n" and result.returncode == 0


@pytest.mark.parametrize("body, status", [("import sys; sys.exit(7)", 7), ("raise SystemExit('bye')", 1),
                                          ("pass", 0), ("import sys; sys.exit(None)", 0)])
def test_exit_status_is_the_scripts(tmp_path: Path, body: str, status: int):
    assert _run("run", _script(tmp_path, body)).returncode == status


def test_an_uncaught_exception_prints_the_scripts_traceback(tmp_path: Path):
    result = _run("run", _script(tmp_path, "def f():\n    raise ValueError('boom')\nf()\n"))
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0] == "Traceback (most recent call last):" and lines[-1] == "ValueError: boom"
    assert "runpy" not in result.stderr and "standin.py" not in result.stderr


NEEDS = ("is not part of ckpt's TensorFlow stand-in (formats.tf), which only reads checkpoints: "
         "this needs TensorFlow itself (pip install tensorflow)")


@pytest.mark.parametrize("body, what", [
    ("import tensorflow as tf\ntf.keras.Model()", "tf.keras"),
    ("import tensorflow as tf\ntf.train.Saver()", "tf.train.Saver"),
    ("import tensorflow.compat.v1 as tf\ntf.placeholder(tf.float32)", "tf.compat.v1.placeholder"),
    ("import tensorflow.keras", "module tensorflow.keras"),
    ("from tensorflow.keras import layers", "module tensorflow.keras"),
    ("from tensorflow import keras", "tensorflow.keras"),
])
def test_what_the_stand_in_lacks_is_named(tmp_path: Path, body: str, what: str):
    result = _run("run", _script(tmp_path, body))
    assert result.returncode == 1
    assert f"{what} {NEEDS}" in result.stderr.splitlines()[-1]


def test_libraries_checking_the_installed_version_still_see_no_tensorflow(tmp_path: Path):
    script = _script(tmp_path, """
        import importlib.metadata, tensorflow
        try:
            importlib.metadata.version("tensorflow")
        except importlib.metadata.PackageNotFoundError:
            print("no tensorflow distribution")
    """)
    result = _run(script, module="formats.tf")
    if "no tensorflow distribution" not in result.stdout:
        pytest.skip("TensorFlow is installed here")
    assert result.returncode == 0


def test_missing_script_and_usage(tmp_path: Path):
    for result in (_run(tmp_path / "nope.py", module="formats.tf"), _run("run", tmp_path / "nope.py")):
        assert result.returncode == 2 and result.stderr == f"can't open file {str(tmp_path / 'nope.py')!r}: no such file\n"
    assert _run(module="formats.tf").returncode == 2
    assert _run("run", "--help").stdout.startswith("Usage: ckpt run [OPTIONS] SCRIPT [ARGS]...")


def test_in_process_run_restores_nothing_it_should_not_touch(run_cli, tmp_path: Path):
    saved = {k: v for k, v in sys.modules.items() if k == "tensorflow" or k.startswith("tensorflow.")}
    saved_path = list(sys.meta_path)
    try:
        script = _script(tmp_path, f"""
            import tensorflow as tf
            print(tf.train.latest_checkpoint({str(RUN)!r}))
            raise SystemExit(3)
        """)
        result = run_cli("run", script, "-x")
        assert result.exit_code == 3 and result.stdout == f"{RUN}/ckpt-10\n"
    finally:
        from formats.tf.standin import uninstall

        uninstall()
        sys.modules.update(saved)
        sys.meta_path[:] = saved_path
