"""Hostile model configurations (issue 36, section 5): each is refused with one error naming the field, file and
line, the documented exit code, nothing written, in bounded time and memory."""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from collections.abc import Callable
from typing import Any

import pytest

from .conftest import edited_model_config

HF_DATA = Path(__file__).parent / "data" / "hf"


def _errors(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error")]


# -- --to hf: counts in the configuration are checked against the checkpoint before anything is expanded -------
@pytest.mark.parametrize("layers", [10 ** 9, 10 ** 5, 47])
def test_a_layer_count_beyond_the_checkpoint_is_one_error_naming_the_field(run_cli, tmp_path: Path,
                                                                            layers: int) -> None:
    folder = tmp_path / "bert"
    shutil.copytree(HF_DATA / "bert", folder)
    config = json.loads((folder / "bert_config.json").read_text())
    config["num_hidden_layers"] = layers
    (folder / "bert_config.json").write_text(json.dumps(config))
    out = tmp_path / "out"
    started = time.monotonic()
    result = run_cli("convert", folder / "bert_model.ckpt", "-o", out, "--to", "hf")
    assert time.monotonic() - started < 5
    assert result.exit_code == 1, result.output
    assert _errors(result.output) == [
        f"error: config: num_hidden_layers: num_hidden_layers={layers} in {folder / 'bert_config.json'} makes "
        f"{3 * layers:,} parameters 'bert.encoder.layer.{{i}}.attention.self.{{p:query|key|value}}.weight', more "
        "than the 46 tensors the checkpoint holds: the configuration does not describe this checkpoint"]
    assert not out.exists()


def test_a_layer_count_given_with_hparam_is_bounded_too(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "out"
    started = time.monotonic()
    result = run_cli("convert", HF_DATA / "bert" / "bert_model.ckpt", "-o", out, "--to", "hf",
                     "--hparam", "num_hidden_layers=100000000")
    assert time.monotonic() - started < 5
    assert result.exit_code == 1 and not out.exists()
    assert [e.split(": ", 3)[:3] for e in _errors(result.output)] == [["error", "config", "num_hidden_layers"]]


# -- gin: an unbalanced bracket is refused, naming the file and the line -------------------------------------
def _t5_with(tmp_path: Path, edit) -> tuple[Path, Path]:
    folder = tmp_path / "t5"
    shutil.copytree(HF_DATA / "t5", folder)
    gin = folder / "operative_config.gin"
    gin.write_text(edit(gin.read_text()))
    return folder, gin


@pytest.mark.parametrize("how", ["unclosed", "unclosed-long", "wrong-kind"])
def test_a_gin_bracket_never_closed_is_refused_naming_file_and_line(run_cli, tmp_path: Path, how: str) -> None:
    if how == "unclosed":
        folder, gin = _t5_with(tmp_path, lambda text: text.replace("d_model = 32", "d_model = [32", 1)
                               if "d_model = 32" in text else pytest.fail("no d_model line"))
    elif how == "unclosed-long":
        folder, gin = _t5_with(tmp_path, lambda text: "x = [1,\n" + text + "y = 2\n" * 200_000)
    else:
        folder, gin = _t5_with(tmp_path, lambda text: text + "z = (1, 2]\n")
    lines = gin.read_text().splitlines()
    line = 1 if how == "unclosed-long" else len(lines) if how == "wrong-kind" else \
        next(i for i, t in enumerate(lines, 1) if t.startswith("d_model = ["))
    out = tmp_path / "out"
    started = time.monotonic()
    result = run_cli("convert", folder, "-o", out, "--to", "hf")
    assert time.monotonic() - started < 5
    assert result.exit_code == 3, result.output
    what = "']' closes no '['" if how == "wrong-kind" else \
        "'[' is never closed (everything after it would be one binding)"
    assert result.stderr.splitlines() == [f"ckpt: error: {gin}: line {line}: not a gin configuration: {what}"]
    assert result.stdout == "" and not out.exists()


# -- --to keras: a model config Keras 3 cannot build is refused, never written and "verified" -----------------
TAGGER = Path(__file__).parent / "data" / "corpus" / "keras2_tagger" / "tagger_model.h5"


def _layer(config: dict[str, Any], name: str) -> dict[str, Any]:
    return next(e for e in config["config"]["layers"] if e["config"].get("name") == name)


def _set(name: str, key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(config: dict[str, Any]) -> None:
        _layer(config, name)["config"][key] = value
    return edit


def _calls(name: str, nodes: Any) -> Callable[[dict[str, Any]], None]:
    def edit(config: dict[str, Any]) -> None:
        _layer(config, name)["inbound_nodes"] = nodes
    return edit


def _outputs(value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(config: dict[str, Any]) -> None:
        config["config"]["output_layers"] = value
    return edit


def _config_of(name: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(config: dict[str, Any]) -> None:
        _layer(config, name)["config"] = value
    return edit


KERAS_CASES: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "cycle": (_calls("embed", [[["lstm", 0, 0, {}]]]),
              "layer 'embed': its input depends on its own output (embed -> lstm -> embed), which Keras cannot build"),
    "missing-node": (_calls("lstm", [[["embed", 5, 0, {}]]]),
                     "layer 'lstm': names call 5 of layer 'embed', which has 1 call(s)"),
    "missing-output": (_calls("lstm", [[["embed", 0, 3, {}]]]),
                       "layer 'lstm': names output 3 of layer 'embed', which has 1 output(s)"),
    "units-contradict-kernel": (_set("lstm", "units", 20),
                                "layer 'lstm': its config (units=20) makes kernel [8, 80], the file holds [8, 64] "
                                "(model_weights/lstm/lstm/lstm_cell/kernel:0)"),
    "dense-units": (lambda c: _layer(c, "head")["config"]["layers"][1]["config"].update(units=3),
                    "layer 'head': its config (units=3) makes kernel [16, 3], the file holds [16, 16] "
                    "(model_weights/head/dense/kernel:0)"),
    "negative-units": (_set("lstm", "units", -16), "layer 'lstm': LSTM's units=-16 is not a positive integer "
                                                   "(Keras 3 refuses it)"),
    "string-units": (_set("lstm", "units", "16"), "layer 'lstm': LSTM's units='16' is not a positive integer "
                                                  "(Keras 3 refuses it)"),
    "negative-input-dim": (_set("embed", "input_dim", -50), "layer 'embed': Embedding's input_dim=-50 is not a "
                                                            "positive integer (Keras 3 refuses it)"),
    "trainable-no": (_set("lstm", "trainable", "no"), "layer 'lstm': LSTM's trainable='no' is not true or false "
                                                      "(Keras 3 refuses it)"),
    "model-trainable-no": (lambda c: c["config"].update(trainable="no"),
                           "layer 'tagger': the model's trainable='no' is not true or false (Keras 3 refuses it)"),
    "layer-config-list": (_config_of("bn", [1, 2]),
                          "layer 'bn': the config of a BatchNormalization layer is a list, not an object"),
    "call-of-a-bare-name": (_calls("lstm", [[["embed"]]]),
                            "layer 'lstm': a call [['embed']] is not in a form ckpt reads"),
    "call-empty": (_calls("lstm", [[]]), "layer 'lstm': a call [] is not in a form ckpt reads"),
    "call-a-number": (_calls("lstm", [5]), "layer 'lstm': a call 5 is not in a form ckpt reads"),
    "no-outputs": (_outputs([]), "model 'tagger': it has no outputs, so Keras 3 would keep none of its layers"),
}


@pytest.mark.parametrize("case", sorted(KERAS_CASES))
def test_a_model_config_keras_cannot_build_is_refused_in_one_line(run_cli, tmp_path: Path, case: str) -> None:
    edit, why = KERAS_CASES[case]
    src = edited_model_config(TAGGER, tmp_path / "tagger_model.h5", edit)
    out = tmp_path / "model.keras"
    started = time.monotonic()
    result = run_cli("convert", src, "-o", out, "--to", "keras")
    assert time.monotonic() - started < 10
    assert result.stderr.splitlines() == [f"ckpt: error: {src}: cannot rebuild the model in Keras 3: {why}"]
    assert result.exit_code == 3 and result.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tagger_model.h5"]


def test_the_unedited_model_still_converts(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "model.keras"
    result = run_cli("convert", TAGGER, "-o", out, "--to", "keras")
    assert result.exit_code == 0, result.output
    assert "wrote" in result.stdout and "12 tensors" in result.stdout
