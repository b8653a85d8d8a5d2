"""Keras conversions keep training state or say why not (issue 24, items 1-3).

A tf-keras ``tf.train.Checkpoint(model=, optimizer=)`` of Dense 16 / BatchNormalization / Dense 1 with Adam
(built without TensorFlow, :mod:`tests.keras_templates`) converted onto a Keras 3 ``.weights.h5`` template
whose optimizer was built: the template's optimizer variables are filled (Keras 3 numbers them iteration,
learning_rate, then per trainable variable in model order its momentum and velocity,
keras/src/optimizers/adam.py), or the conversion is refused naming what would settle it.
"""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

import h5py
import numpy as np

from formats.api import open_checkpoint
from formats.keras_h5.writer import Keras3Group, write_keras3_h5

from .conftest import CORPUS
from .keras_templates import tf_keras_checkpoint

TAGGER = CORPUS / "keras3_tagger" / "tagger.keras"

LAYERS = {"dense": {"kernel": (8, 16), "bias": (16,)},
          "batch_normalization": {"gamma": (16,), "beta": (16,), "moving_mean": (16,), "moving_variance": (16,)},
          "dense_1": {"kernel": (16, 1), "bias": (1,)}}
STATISTICS = ("batch_normalization/moving_mean", "batch_normalization/moving_variance")
TRAINABLE = ["dense/kernel", "dense/bias", "batch_normalization/gamma", "batch_normalization/beta",
             "dense_1/kernel", "dense_1/bias"]
"""model.trainable_variables of the Sequential model, in Keras order (layer by layer, creation order)."""
STEP = 4


def _text(v: object) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _shape(name: str) -> tuple[int, ...]:
    layer, weight = name.split("/")
    return LAYERS[layer][weight]


def _source(tmp_path: Path) -> tuple[Path, dict[str, np.ndarray]]:
    """The tf-keras training checkpoint (every tensor distinct), and its values by label."""
    rng = np.random.default_rng(24)
    values: dict[str, np.ndarray] = {}
    for layer, weights in LAYERS.items():
        for weight, shape in weights.items():
            name = f"{layer}/{weight}"
            values[name] = rng.normal(size=shape).astype(np.float32)
            if name not in STATISTICS:
                values[f"{name}:m"] = rng.normal(size=shape).astype(np.float32)
                values[f"{name}:v"] = rng.random(size=shape).astype(np.float32)
    values["step"] = np.asarray(STEP, np.int64)
    prefix = tmp_path / "k2run" / "tf_ckpts" / "ckpt-4"
    prefix.parent.mkdir(parents=True)
    tf_keras_checkpoint(prefix, LAYERS, "Adam", ["m", "v"], values=values, untrained=STATISTICS,
                        hypers={"learning_rate": 0.01})
    return prefix, values


def _template(path: Path, trainable: list[str] | None = TRAINABLE, optimizer: str = "adam",
              per_variable: int = 2) -> Path:
    """A Keras 3 ``.weights.h5`` as ``save_weights`` writes it after ``optimizer.build``: ``trainable``
    gives the order of the optimizer's slots (None: no optimizer variables)."""
    groups = [Keras3Group("", "sequential")]
    for layer, weights in sorted(LAYERS.items()):
        groups.append(Keras3Group(f"layers/{layer}", layer, [np.zeros(s, np.float32) for s in weights.values()]))
    if trainable is not None:
        slots = [np.zeros(_shape(name), np.float32) for name in trainable for _ in range(per_variable)]
        groups.append(Keras3Group("optimizer", optimizer, [np.zeros((), np.int64), np.zeros((), np.float32)] + slots))
    write_keras3_h5(path, groups)
    return path


def test_a_weights_template_s_optimizer_is_filled_in_keras_order(tmp_path: Path, run_cli) -> None:
    """No config.json: the source's slots tell which variables are trainable; the template's optimizer
    variables take the step, the learning rate and every slot (they were left out, exit 0)."""
    src, values = _source(tmp_path)
    out = tmp_path / "k3.weights.h5"
    res = run_cli("convert", src, "-o", out, "--to", "keras3-h5", "--template", _template(tmp_path / "t.weights.h5"),
                  "--json")
    assert res.exit_code == 0, res.output
    unused = {p["key"] for p in json.loads(res.stdout)["problems"] if p["kind"] == "unused"}
    assert unused <= {"object_graph", "save_counter"}
    expected = [np.asarray(STEP, np.int64), np.asarray(0.01, np.float32)]
    for name in TRAINABLE:
        expected += [values[f"{name}:m"], values[f"{name}:v"]]
    with open_checkpoint(str(out)) as back:
        assert len([k for k in back if k.startswith("optimizer/vars/")]) == len(expected) == 14
        for i, want in enumerate(expected):
            got = back[f"optimizer/vars/{i}"].read()
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), i
        for layer, weights in LAYERS.items():
            for j, weight in enumerate(weights):
                assert back[f"layers/{layer}/vars/{j}"].read().tobytes() == values[f"{layer}/{weight}"].tobytes()


def test_optimizer_state_with_no_certain_place_is_refused(tmp_path: Path, run_cli) -> None:
    """The template's slots are in another order than the source's trainable variables (their shapes do
    not fit): exit 1 naming the arrays and what settles it; nothing written."""
    src, _ = _source(tmp_path)
    out = tmp_path / "k3.weights.h5"
    template = _template(tmp_path / "t.weights.h5", sorted(TRAINABLE))
    res = run_cli("convert", src, "-o", out, "--to", "keras3-h5", "--template", template)
    assert res.exit_code == 1, res.output
    text = " ".join(res.output.split())
    assert "the template's 14 optimizer variables cannot be tied to the source's 14 optimizer tensors" in text
    assert "use a .keras template" in text and "--drop-optimizer" in text
    assert "optimizer/vars/0" not in text and "--verbose (or --json) lists every problem" in text
    res = run_cli("convert", src, "-o", out, "--to", "keras3-h5", "--template", template, "--verbose")
    assert res.exit_code == 1 and "    optimizer/vars/0\n" in res.output  # the arrays, one per line
    assert not out.exists()


def test_another_optimizer_s_template_is_refused(tmp_path: Path, run_cli) -> None:
    """An SGD-with-momentum template (one slot per variable) for Adam state: refused, not emptied."""
    src, _ = _source(tmp_path)
    template = _template(tmp_path / "t.weights.h5", TRAINABLE, "sgd", per_variable=1)
    res = run_cli("convert", src, "-o", tmp_path / "k3.weights.h5", "--to", "keras3-h5", "--template", template)
    assert res.exit_code == 1 and "the template's 8 optimizer variables cannot be tied" in " ".join(res.output.split())


def test_drop_optimizer_leaves_optimizer_state_out(tmp_path: Path, run_cli) -> None:
    src, values = _source(tmp_path)
    out = tmp_path / "k3.weights.h5"
    res = run_cli("convert", src, "-o", out, "--to", "keras3-h5", "--drop-optimizer", "--template",
                  _template(tmp_path / "t.weights.h5", sorted(TRAINABLE)))
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "14 optimizer tensor(s) of the template left out (--drop-optimizer)" in text
    assert "12 slot tensor(s) of the source left out (--drop-optimizer)" in text
    with open_checkpoint(str(out)) as back:
        assert sorted(back) == sorted(f"layers/{layer}/vars/{j}" for layer, ws in LAYERS.items() for j in range(len(ws)))
        assert back["layers/dense/vars/0"].read().tobytes() == values["dense/kernel"].tobytes()


def test_drop_optimizer_is_for_keras3_only(tmp_path: Path, run_cli) -> None:
    src, _ = _source(tmp_path)
    res = run_cli("convert", src, "-o", tmp_path / "x.npz", "--to", "npz", "--drop-optimizer")
    assert res.exit_code == 2
    assert "--drop-optimizer applies to --to keras3-h5 only" in res.output


def test_a_template_without_optimizer_variables_refuses_the_sources_state(tmp_path: Path, run_cli) -> None:
    """The template holds no optimizer state: training state is refused, never dropped (exit 1, the arrays
    named); --drop-optimizer says to leave it out."""
    src, _ = _source(tmp_path)
    tpl = _template(tmp_path / "t.weights.h5", None)
    out = tmp_path / "k3.weights.h5"
    res = run_cli("convert", src, "-o", out, "--to", "keras3-h5", "--template", tpl, "--json")
    assert res.exit_code == 1 and not out.exists()
    errors = [p for p in json.loads(res.stdout)["problems"] if p["severity"] == "error"]
    assert [p["kind"] for p in errors] == ["optimizer"]
    assert errors[0]["message"] == ("14 optimizer tensor(s) of the source have no place: the template has no "
                                    "optimizer variables: save it after model.optimizer.build("
                                    "model.trainable_variables), or use --drop-optimizer to leave them out")
    with open_checkpoint(str(src)) as source:  # 12 slots, the step counter and the learning rate, by name
        held = sorted(k for k in source if source[k].role in ("slot", "optimizer"))
    assert len(held) == 14 and sorted(errors[0]["candidates"]) == held
    dropped = run_cli("convert", src, "-o", out, "--to", "keras3-h5", "--template", tpl, "--drop-optimizer")
    assert dropped.exit_code == 0, dropped.output
    assert "model weights only" not in dropped.output


def test_a_training_checkpoint_becomes_one_h5_group_per_layer(tmp_path: Path, run_cli) -> None:
    """``tf.train.Checkpoint(model=...)`` hangs the layers from ``model``: the ``.h5`` has one group per
    layer in model order, as tf-keras ``save_weights`` writes it (it had one group ``model`` and a warning
    promising that load_weights would work; tf-keras refused it: "expected 3 layers, found 1")."""
    src, values = _source(tmp_path)
    out = tmp_path / "k2.h5"
    res = run_cli("convert", src, "-o", out, "--to", "keras2-h5", "--json")
    assert res.exit_code == 0, res.output
    problems = json.loads(res.stdout)["problems"]
    assert [p["kind"] for p in problems if p["kind"] != "unused"] == []
    assert all("load_weights" not in p["message"] for p in problems)
    with h5py.File(out, "r") as h5:
        assert [_text(n) for n in h5.attrs["layer_names"]] == list(LAYERS)
        for layer, weights in LAYERS.items():
            names = [_text(n) for n in h5[layer].attrs["weight_names"]]
            assert names == [f"{layer}/{w}:0" for w in weights]
            for w in weights:
                assert h5[layer][f"{layer}/{w}:0"][()].tobytes() == values[f"{layer}/{w}"].tobytes()


def test_a_keras_output_is_a_keras_archive(tmp_path: Path, run_cli) -> None:
    """``-o x.keras`` writes a zip of metadata.json, config.json (the template's bytes) and
    model.weights.h5, as Keras 3 saves a model (it wrote an HDF5 file under the .keras name)."""
    out = tmp_path / "resume.keras"
    res = run_cli("convert", TAGGER, "-o", out, "--to", "keras3-h5")
    assert res.exit_code == 0, res.output
    with zipfile.ZipFile(out) as written, zipfile.ZipFile(TAGGER) as original:
        assert written.namelist() == ["metadata.json", "config.json", "model.weights.h5"]
        assert all(info.compress_type == zipfile.ZIP_STORED for info in written.infolist())
        for name in ("metadata.json", "config.json"):
            assert written.read(name) == original.read(name)
    res = run_cli("diff", TAGGER, out)
    assert res.exit_code == 0 and "identical" in res.stdout, res.stdout
    with open_checkpoint(str(out)) as back:
        assert back.format == "keras-zip" and back.problems() == []


def test_a_keras_output_from_a_training_checkpoint_takes_the_template_s_config(tmp_path: Path, run_cli) -> None:
    out = tmp_path / "resume.keras"
    with zipfile.ZipFile(TAGGER) as original:
        config = original.read("config.json")
    template = tmp_path / "model.keras"
    with zipfile.ZipFile(template, "w") as zf:
        zf.writestr("metadata.json", b'{"keras_version": "3.15.0"}')
        zf.writestr("config.json", config)
        zf.write(_template(tmp_path / "t.weights.h5"), "model.weights.h5")
    src, values = _source(tmp_path)
    res = run_cli("convert", src, "-o", out, "--to", "keras3-h5", "--template", template)
    assert res.exit_code == 0, res.output
    with zipfile.ZipFile(out) as written:
        assert written.read("config.json") == config
        assert written.read("metadata.json") == b'{"keras_version": "3.15.0"}'
    with open_checkpoint(str(out)) as back:
        assert back["optimizer/vars/0"].read().tobytes() == np.asarray(STEP, np.int64).tobytes()
        assert back["layers/dense/vars/0"].read().tobytes() == values["dense/kernel"].tobytes()


def test_a_keras_output_without_a_config_is_a_usage_error(tmp_path: Path, run_cli) -> None:
    src, _ = _source(tmp_path)
    out = tmp_path / "resume.keras"
    template = _template(tmp_path / "t.weights.h5")
    for extra in ([], ["--dry-run"]):
        res = run_cli("convert", src, "-o", out, "--to", "keras3-h5", "--template", template, *extra)
        assert res.exit_code == 2, res.output
        assert "a .keras file is a whole model (config.json and weights); with no .keras template there is no " \
               "config to put in it: name the output *.weights.h5, or convert onto a .keras template" in \
               " ".join(res.output.split())
    res = run_cli("convert", src, "-o", out, "--to", "keras2-h5")
    assert res.exit_code == 2 and "name the output *.h5" in res.output
    assert not out.exists() and [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
