"""Ask Keras itself: a Keras 2 whole model converted by ``ckpt convert full.h5 -o model.keras --to keras`` loads
in Keras 3 (``keras.models.load_model``) and predicts what Keras 2 predicted.

The tf-keras program builds every model once (the small ones of ``tests/data/corpus/generators/keras_legacy.py``
and ``keras.applications`` with ``weights=None``, small inputs and logits), puts distinct random values in every
weight (batch statistics included; scaled by fan-in so that deep networks stay finite), saves ``full.h5``
(``model.save``) and predicts a fixed input. ckpt converts each; one Keras 3 program loads every archive and
predicts the same input. A model with a custom layer class must fail with a one-line error naming the class.
Each framework runs once, in its own process (tf-keras with ``TF_USE_LEGACY_KERAS=1``).
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ..conftest import SHIPPED

pytestmark = pytest.mark.interop

for _module in ("tensorflow", "tf_keras", "keras"):
    if importlib.util.find_spec(_module) is None:
        pytest.skip(f"{_module} is not installed", allow_module_level=True)

GENERATOR = Path(__file__).resolve().parents[1] / "data" / "corpus" / "generators" / "keras_legacy.py"
SMALL = ("cnn", "rnn", "mha", "nested", "shared", "conv1d", "sequential", "names", "ops", "submodel", "constants")
APPLICATIONS = {"MobileNet": 32, "MobileNetV2": 32, "MobileNetV3Small": 32, "MobileNetV3Large": 32, "ResNet50": 32,
                "ResNet50V2": 32, "DenseNet121": 32, "EfficientNetB0": 32, "EfficientNetV2B0": 32, "InceptionV3": 75,
                "Xception": 71, "VGG16": 32, "NASNetMobile": 32, "ConvNeXtTiny": 32}
"""The 14 keras.applications architectures of the zoo (programs/keras_zoo.py), each at its smallest input."""
MODELS = (*SMALL, *APPLICATIONS)
TOLERANCE = 1e-5


def _build_source() -> str:
    spec = importlib.util.spec_from_file_location("keras_legacy_generator", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.BUILD)


KERAS2 = _build_source() + '''
import json, os, sys
import tf_keras as keras
out = sys.argv[1]
apps = json.loads(sys.argv[2])
rng = np.random.default_rng(7)

def value(name, shape, dtype):
    if "variance" in name or "gamma" in name:
        return rng.uniform(0.5, 1.5, shape).astype(dtype)
    if len(shape) >= 2:
        return rng.normal(0, 1 / np.sqrt(np.prod(shape[:-1])), shape).astype(dtype)
    return rng.normal(0, 0.1, shape).astype(dtype)

for name in sys.argv[3:]:
    if name in apps:
        size = apps[name]
        m = getattr(keras.applications, name)(weights=None, input_shape=(size, size, 3), classes=5,
                                              classifier_activation=None)
    else:
        m = build(keras, name, True)
    m.set_weights([value(v.name, w.shape, w.dtype) for v, w in zip(m.weights, m.get_weights())])
    shape = [2 if s is None else s for s in m.input_shape]
    x = (rng.integers(0, 10, shape) if m.inputs[0].dtype.is_integer else rng.normal(size=shape)).astype(
        m.inputs[0].dtype.as_numpy_dtype)
    d = os.path.join(out, name)
    os.makedirs(d)
    np.save(os.path.join(d, "x.npy"), x)
    np.save(os.path.join(d, "y.npy"), m.predict(x, verbose=0))
    m.save(os.path.join(d, "full.h5"), include_optimizer=False)
'''

KERAS3 = '''
import json, os, sys
import numpy as np
import keras
out = sys.argv[1]
found = {}
for name in sys.argv[2:]:
    d = os.path.join(out, name)
    try:
        m = keras.models.load_model(os.path.join(d, "model.keras"))
        np.save(os.path.join(d, "y3.npy"), m.predict(np.load(os.path.join(d, "x.npy")), verbose=0))
        found[name] = "ok"
    except Exception as exc:
        found[name] = f"{type(exc).__name__}: {exc}"[:2000]
print(json.dumps(found))
'''


def _env(legacy: bool) -> dict[str, str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    if legacy:
        env["TF_USE_LEGACY_KERAS"] = "1"
    return env


def _ckpt(*args: str) -> object:
    from click.testing import CliRunner

    return CliRunner().invoke(SHIPPED, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    """Every model saved by tf-keras, converted by ckpt, loaded and run by Keras 3: ``{"dir", "converted":
    {model: ckpt's result}, "keras3": {model: "ok" or Keras 3's error}}``. Its files (1.4 GB) are removed after
    the module's tests."""
    out = tmp_path_factory.mktemp("keras_legacy")
    subprocess.run([sys.executable, "-c", KERAS2, str(out), json.dumps(APPLICATIONS), *MODELS, "custom"], check=True,
                   env=_env(legacy=True), capture_output=True)
    converted = {name: _ckpt("convert", out / name / "full.h5", "-o", out / name / "model.keras", "--to", "keras")
                 for name in (*MODELS, "custom")}
    done = [name for name in MODELS if converted[name].exit_code == 0]  # type: ignore[attr-defined]
    run = subprocess.run([sys.executable, "-c", KERAS3, str(out), *done], check=True, env=_env(legacy=False),
                         capture_output=True, text=True)
    yield {"dir": out, "converted": converted, "keras3": json.loads(run.stdout.strip().splitlines()[-1])}
    shutil.rmtree(out, ignore_errors=True)


@pytest.mark.parametrize("model", MODELS)
def test_keras3_loads_the_converted_model_and_predicts_as_keras2(work: dict[str, object], model: str) -> None:
    result = work["converted"][model]  # type: ignore[index]
    assert result.exit_code == 0, result.output
    assert work["keras3"][model] == "ok"  # type: ignore[index]
    directory = Path(work["dir"]) / model  # type: ignore[arg-type]
    want, got = np.load(directory / "y.npy"), np.load(directory / "y3.npy")
    assert got.shape == want.shape
    error = float(np.abs(got - want).max() / np.abs(want).max())
    print(f"{model}: max relative error {error:.2e}")
    assert error <= TOLERANCE, error


def test_a_custom_layer_is_named_in_a_one_line_error(work: dict[str, object]) -> None:
    result = work["converted"]["custom"]  # type: ignore[index]
    assert result.exit_code == 3, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "class Scale is not built into Keras" in lines[0] and "layer 'scale'" in lines[0]
    assert not (Path(work["dir"]) / "custom" / "model.keras").exists()  # type: ignore[arg-type]


@pytest.mark.parametrize("model", MODELS)
def test_ckpt_reads_its_output_back(work: dict[str, object], model: str, tmp_path: Path) -> None:
    """Every archive Keras 3 loaded above is also one ckpt reads back (issue 36): ``diff --match converted`` finds
    it identical to its source, and ``--to keras3-h5`` takes it as a template, every weight where it keeps it."""
    import h5py

    directory = Path(work["dir"]) / model  # type: ignore[arg-type]
    diff = _ckpt("diff", "--match", "converted", directory / "full.h5", directory / "model.keras")
    assert diff.exit_code == 0, diff.output  # type: ignore[attr-defined]
    assert "identical (" in diff.stdout and "cannot be planned" not in diff.output  # type: ignore[attr-defined]
    out = tmp_path / "w.weights.h5"
    converted = _ckpt("convert", directory / "full.h5", "--to", "keras3-h5", "--template", directory / "model.keras",
                      "-o", out)
    assert converted.exit_code == 0, converted.output  # type: ignore[attr-defined]

    def datasets(source: object) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        with h5py.File(source, "r") as h5:
            h5.visititems(lambda n, o: found.__setitem__(n, np.asarray(o).tobytes()) if isinstance(o, h5py.Dataset)
                          else None)
        return found

    import io
    import zipfile

    with zipfile.ZipFile(directory / "model.keras") as zf:
        assert datasets(out) == datasets(io.BytesIO(zf.read("model.weights.h5")))
