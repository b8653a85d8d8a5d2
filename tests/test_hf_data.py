"""tests/data/hf (issue 27's test data) is complete and consistent: every case of cases.json has its checkpoint,
its original config and its five golden files; a checkpoint and its ``_slots`` twin hold the same model, so their
golden state dicts are byte-identical; the whole stays small. (The golden files' contents are checked against
transformers 4.x itself by tests/interop/test_hf_oracle.py.)"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

HF = Path(__file__).resolve().parent / "data" / "hf"
CASES = json.loads((HF / "cases.json").read_text())
GOLDEN_FILES = ("model.safetensors", "config.json", "inputs.npz", "outputs.npz", "oracle.json")


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_has_checkpoint_config_and_golden_files(name: str) -> None:
    case = CASES[name]
    prefix = HF / case["checkpoint"]
    if case["layout"] == "openai-npy":  # GPT-1's release: a directory of shards
        assert (prefix / "params_shapes.json").is_file() and (prefix / "params_9.npy").is_file()
    else:
        assert prefix.with_name(prefix.name + ".index").is_file()
        assert prefix.with_name(prefix.name + ".data-00000-of-00001").is_file()
    assert (HF / case["config"]).is_file()
    for f in GOLDEN_FILES:
        assert (HF / "golden" / name / f).is_file(), f
    oracle = json.loads((HF / "golden" / name / "oracle.json").read_text())
    assert oracle["class"] == case["class"] and oracle["untouched"] == case.get("untouched", [])  # Pegasus: zeros
    assert "-" not in oracle["sources"].values()  # every golden tensor equals a variable of the checkpoint
    config = json.loads((HF / "golden" / name / "config.json").read_text())
    assert config["architectures"] == [case["class"]]


@pytest.mark.parametrize("name", sorted(n for n in CASES if "_slots" in n))
def test_slots_twin_has_the_same_golden_model_and_outputs(name: str) -> None:
    twin = name.replace("_slots", "")
    a, b = HF / "golden" / name, HF / "golden" / twin
    assert (a / "model.safetensors").read_bytes() == (b / "model.safetensors").read_bytes()
    out_a, out_b = np.load(a / "outputs.npz"), np.load(b / "outputs.npz")
    assert sorted(out_a.files) == sorted(out_b.files)
    for key in out_a.files:
        assert np.array_equal(out_a[key], out_b[key]), key


def test_the_data_stays_small() -> None:
    total = sum(p.stat().st_size for p in HF.rglob("*") if p.is_file())
    assert total < 10 * 1024 * 1024  # the five original families, their fine-tuned heads and the issue 37 originals
