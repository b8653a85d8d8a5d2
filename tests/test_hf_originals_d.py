"""``ckpt convert --to hf`` of google-research/tapas's TF1 checkpoints (issue 37, part D): the plan and the written
files, numpy only (the transformers 5 side is tests/interop/test_hf_transformers5.py, driven by cases.json).

The checkpoints are ``tests/data/hf/{tapas,tapas_sqa}`` (real TensorFlow, the original names: seven token-type
tables, the SQA head's scalar biases); the keys and shapes expected are the oracle's (``golden/<case>/
model.safetensors``: transformers 4.57.6's ``load_tf_weights_in_tapas``). Bad inputs are rebuilt from those
checkpoints with ckpt's own writer.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import formats
from formats.ops.convert.hf.family import evaluate

HF_DATA = Path(__file__).parent / "data" / "hf"
CASES = {"tapas": ("tapas/model.ckpt-3", "TapasModel"),
         "tapas_sqa": ("tapas_sqa/model.ckpt-3", "TapasForQuestionAnswering")}


def _plan(run_cli, src: Path, tmp_path: Path, *extra: str) -> dict:
    out = tmp_path / "out"
    result = run_cli("convert", src, "-o", out, "--to", "hf", "--dry-run", "--json", *extra)
    assert result.exit_code == 0, result.output
    assert not out.exists()
    return json.loads(result.stdout)


def _golden(case: str) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    return load_file(str(HF_DATA / "golden" / case / "model.safetensors"))


@pytest.mark.parametrize("case", sorted(CASES))
def test_plan_has_exactly_the_oracles_parameters_and_shapes(run_cli, tmp_path: Path, case: str) -> None:
    plan = _plan(run_cli, HF_DATA / CASES[case][0], tmp_path)
    assert {r["key"]: r["shape"] for r in plan["rows"]} == {k: list(v.shape) for k, v in _golden(case).items()}
    assert all(r["dtype"] == "float32" for r in plan["rows"])
    assert plan["details"]["family"] == "tapas" and plan["details"]["class"] == CASES[case][1]
    assert [p for p in plan["problems"] if p["severity"] == "error"] == []
    assert [(p["kind"], p["candidates"]) for p in plan["problems"]] == [("dropped", ["global_step"])]


@pytest.mark.parametrize("case", sorted(CASES))
def test_written_tensors_and_config_are_the_oracles(run_cli, tmp_path: Path, case: str) -> None:
    from safetensors.numpy import load_file

    out = tmp_path / "hf"
    result = run_cli("convert", HF_DATA / CASES[case][0], "-o", out, "--to", "hf")
    assert result.exit_code == 0, result.output
    written, golden = load_file(str(out / "model.safetensors")), _golden(case)
    assert sorted(written) == sorted(golden)
    for key, value in golden.items():
        assert written[key].shape == value.shape and written[key].tobytes() == value.tobytes(), key
    config = json.loads((out / "config.json").read_text())
    oracle = json.loads((HF_DATA / "golden" / case / "config.json").read_text())
    for name in ("type_vocab_sizes", "reset_position_index_per_cell", "hidden_size", "num_hidden_layers",
                 "num_attention_heads", "intermediate_size", "max_position_embeddings", "vocab_size", "architectures"):
        assert config[name] == oracle[name], name
    assert config["type_vocab_sizes"] == [3, 8, 8, 2, 8, 8, 10]


def test_sqa_head_keeps_its_scalar_biases_as_scalars(run_cli, tmp_path: Path) -> None:
    from safetensors.numpy import load_file

    src, out = HF_DATA / "tapas_sqa/model.ckpt-3", tmp_path / "hf"
    assert run_cli("convert", src, "-o", out, "--to", "hf").exit_code == 0
    written = load_file(str(out / "model.safetensors"))
    with formats.open_checkpoint(src) as ckpt:
        for name in ("output_bias", "column_output_bias", "output_weights", "column_output_weights"):
            stored = np.asarray(ckpt[name].read())
            assert written[name].shape == stored.shape and written[name].tobytes() == stored.tobytes(), name
    assert written["output_bias"].shape == () and written["output_weights"].shape == (16,)


def test_list_items_in_shape_expressions() -> None:
    values = {"type_vocab_sizes": [3, 8, 10], "hidden_size": 16}
    assert evaluate("type_vocab_sizes[2]", values) == 10
    assert evaluate("2*type_vocab_sizes[0]+hidden_size", values) == 22
    with pytest.raises(ValueError, match=r"type_vocab_sizes is \[3, 8, 10\], not a list with an item 6"):
        evaluate("type_vocab_sizes[6]", values)
    with pytest.raises(ValueError, match="not a list"):
        evaluate("hidden_size[0]", values)
    with pytest.raises(KeyError):
        evaluate("token_type_sizes[0]", values)


def _copy(case: str, tmp_path: Path, change: dict[str, np.ndarray | None], config: dict | None = None) -> Path:
    """The case's checkpoint re-written by ckpt with ``change`` (None removes a tensor), its bert_config.json beside
    it (with ``config``'s fields over it)."""
    src = HF_DATA / CASES[case][0]
    with formats.open_checkpoint(src) as ckpt:
        tensors = {k: ckpt[k].read() for k in ckpt}
    for key, value in change.items():
        if value is None:
            tensors.pop(key)
        else:
            tensors[key] = value
    folder = tmp_path / case
    folder.mkdir()
    shutil.copy(src.parent / "bert_config.json", folder / "bert_config.json")
    if config:
        original = json.loads((folder / "bert_config.json").read_text())
        (folder / "bert_config.json").write_text(json.dumps({**original, **config}))
    formats.write_checkpoint(str(folder / src.name), tensors)
    return folder / src.name


def _errors(run_cli, src: Path, tmp_path: Path) -> list[str]:
    out = tmp_path / "out"
    result = run_cli("convert", src, "-o", out, "--to", "hf")
    assert result.exit_code == 1, result.output
    assert not out.exists() and not list(tmp_path.glob(".out*"))
    return [line for line in result.output.splitlines() if line.startswith("error")]


def test_a_token_type_table_the_config_contradicts_names_the_field(run_cli, tmp_path: Path) -> None:
    src = _copy("tapas", tmp_path, {"bert/embeddings/token_type_embeddings_6": np.zeros((9, 16), np.float32)})
    assert _errors(run_cli, src, tmp_path) == [
        "error: config: hidden_size=16, type_vocab_sizes[6]=10: the configuration contradicts the shapes: "
        "'bert/embeddings/token_type_embeddings_6' [9, 16] does not fit 'embeddings.token_type_embeddings_6.weight' "
        "[10, 16] (candidates: bert/embeddings/token_type_embeddings_6)"]


def test_a_config_with_too_few_token_types_is_one_error(run_cli, tmp_path: Path) -> None:
    src = _copy("tapas", tmp_path, {}, {"type_vocab_size": [3, 8, 8]})
    assert _errors(run_cli, src, tmp_path) == [
        "error: config: config: model configuration: type_vocab_sizes is [3, 8, 8], not a list with an item 3"]


def test_a_missing_scalar_bias_or_an_unmapped_head_is_one_error_naming_it(run_cli, tmp_path: Path) -> None:
    src = _copy("tapas_sqa", tmp_path, {"column_output_bias": None})
    assert _errors(run_cli, src, tmp_path) == [
        "error: missing: column_output_bias: parameter 'column_output_bias' [] of TapasForQuestionAnswering has no "
        "source tensor"]
    (tmp_path / "tapas_sqa").rename(tmp_path / "first")
    agg = _copy("tapas_sqa", tmp_path, {"output_weights_agg": np.zeros((4, 16), np.float32)})
    assert _errors(run_cli, agg, tmp_path) == [
        "error: unmapped: output_weights_agg: unmapped tensor 'output_weights_agg' [4, 16]: no rule of the tapas map "
        "(tf1 layout) maps or drops it"]
