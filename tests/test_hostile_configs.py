"""Hostile model configurations (issue 36, section 5): each is refused with one error naming the field, file and
line, the documented exit code, nothing written, in bounded time and memory."""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

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
