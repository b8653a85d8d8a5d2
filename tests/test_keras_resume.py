"""Keras 2 training state reaches Keras 3 whole, with BatchNormalization in the model (issue 26, item 3).

``tests/data/keras_resume`` (made by ``tests/data/corpus/generators/keras_resume.py``) holds a CNN with two
BatchNormalization layers trained 5 steps by tf-keras (Adam; SGD with momentum), saved as
``tf.train.Checkpoint(model=, optimizer=)`` (``ckpt/ckpt``) and TF-format ``save_weights`` (``tf/ckpt``), the
Keras 3 templates ``t.weights.h5`` and ``t.keras``, and ``oracle.weights.h5``: the Keras 3 model and optimizer
with every value assigned by hand from tf-keras', saved by Keras 3. Keras 3 numbers its optimizer's variables
over ``model.trainable_variables`` only (the batch statistics have no slots), so the oracle fixes the
numbering; every conversion must give its datasets exactly (read here with h5py, not ckpt).
"""
from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import h5py
import numpy as np
import pytest

from formats.ops.convert.cross import keras_targets

DATA = Path(__file__).parent / "data" / "keras_resume"
SOURCES = ("ckpt/ckpt", "tf/ckpt")
OUTPUTS = [("t.weights.h5", "out.weights.h5"), ("t.keras", "out.weights.h5"), ("t.keras", "out.keras")]
TRAINABLE = 10
"""Conv2D kernel and bias, BatchNormalization gamma and beta, twice; Dense kernel and bias."""
SLOTS = {"adam": 2, "sgd": 1}


def _datasets(h5: h5py.File) -> dict[str, tuple[str, bytes]]:
    out: dict[str, tuple[str, bytes]] = {}
    h5.visititems(lambda name, obj: out.__setitem__(name, (obj.dtype.str, np.asarray(obj).tobytes()))
                  if isinstance(obj, h5py.Dataset) else None)
    return out


def _weights(path: Path) -> dict[str, tuple[str, bytes]]:
    """Every dataset of a Keras 3 ``.weights.h5``, or of a ``.keras`` archive's ``model.weights.h5``."""
    if path.suffix == ".keras":
        with zipfile.ZipFile(path) as zf, h5py.File(io.BytesIO(zf.read("model.weights.h5")), "r") as h5:
            return _datasets(h5)
    with h5py.File(path, "r") as h5:
        return _datasets(h5)


@pytest.mark.parametrize("template,output", OUTPUTS)
@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("opt", ["adam", "sgd"])
def test_training_state_is_written_as_keras_3_holds_it(run_cli, tmp_path: Path, opt: str, source: str,
                                                       template: str, output: str) -> None:
    out = tmp_path / output
    res = run_cli("convert", DATA / opt / source, "-o", out, "--to", "keras3-h5", "--template",
                  DATA / opt / template, "--json")
    assert res.exit_code == 0, res.output
    problems = json.loads(res.stdout)["problems"]
    assert {p["key"] for p in problems if p["kind"] == "unused"} == {"object_graph"}, problems
    expected = _weights(DATA / opt / "oracle.weights.h5")
    optimizer = [k for k in expected if k.startswith("optimizer/vars/")]
    assert len(optimizer) == 2 + SLOTS[opt] * TRAINABLE  # iteration, learning_rate, slots: no batch statistics
    assert _weights(out) == expected
    if output.endswith(".keras"):
        with zipfile.ZipFile(out) as written, zipfile.ZipFile(DATA / opt / template) as original:
            assert written.namelist() == ["metadata.json", "config.json", "model.weights.h5"]
            for name in ("metadata.json", "config.json"):
                assert written.read(name) == original.read(name)


def test_slots_of_a_variable_the_template_does_not_train_are_refused(run_cli, tmp_path: Path) -> None:
    """``frozen.keras``: Keras 3 wrote it with the first Conv2D not trainable, so its optimizer has no slots for
    that layer's kernel and bias; the source's 4 arrays (m and v of each) have no place: exit 1 naming them
    (they were left out with a warning blaming the template for having no optimizer variables, exit 0)."""
    out = tmp_path / "out.keras"
    src = DATA / "adam" / "ckpt" / "ckpt"
    res = run_cli("convert", src, "-o", out, "--to", "keras3-h5", "--template", DATA / "adam" / "frozen.keras",
                  "--json")
    assert res.exit_code == 1, res.output
    errors = [p for p in json.loads(res.stdout)["problems"] if p["severity"] == "error"]
    assert len(errors) == 1 and "4 optimizer array(s) of the source (of conv2d/bias, conv2d/kernel) have no " \
        "place in the template's optimizer" in errors[0]["message"]
    assert "--drop-optimizer" in errors[0]["message"]
    assert errors[0]["candidates"] == [f"optimizer/_variables/{i}/.ATTRIBUTES/VARIABLE_VALUE" for i in range(1, 5)]
    assert not out.exists()
    res = run_cli("convert", src, "-o", out, "--to", "keras3-h5", "--template", DATA / "adam" / "frozen.keras",
                  "--drop-optimizer")
    assert res.exit_code == 0, res.output
    assert not any(k.startswith("optimizer/") for k in _weights(out))


def test_an_optimizer_group_keras_would_skip_is_never_written(run_cli, tmp_path: Path, monkeypatch) -> None:
    """Keras 3 loads an optimizer's variables only when the file holds as many as the optimizer has: an
    optimizer group missing some (here the filling stops after the step counter) is an error, nothing written."""
    fill = keras_targets.fill_keras3_optimizer

    def partial(plan, source, template, pairings, options):  # type: ignore[no-untyped-def]
        used = fill(plan, source, template, pairings, options)
        plan.rows = [r for r in plan.rows if not r.key.startswith("optimizer/") or r.key == "optimizer/vars/0"]
        return used

    monkeypatch.setattr(keras_targets, "fill_keras3_optimizer", partial)
    out = tmp_path / "out.weights.h5"
    res = run_cli("convert", DATA / "sgd" / "ckpt" / "ckpt", "-o", out, "--to", "keras3-h5", "--template",
                  DATA / "sgd" / "t.weights.h5")
    assert res.exit_code == 1, res.output
    assert "the output's optimizer would hold 1 of the template's 12 variables, and Keras 3 skips an optimizer " \
           "whose variable count differs from its own" in " ".join(res.output.split())
    assert not out.exists()
