"""``ckpt convert DIR --to hf`` of a TF CvT whose class token is not on stage 2 (``tests/data/hf_h5/cvt``: two
stages, ``cls_token = [false, true]``). transformers 4.57's ``TFCvtStage`` names its class token
``cvt.encoder.stages.2.cls_token`` whatever its stage (modeling_tf_cvt.py), so 4.57's own loader (the oracle of
``tests/data/hf_h5``) left the 2-stage model's class token at init; PyTorch's ``CvtStage`` holds it on the stage
``cls_token`` marks. ckpt writes the h5's value there: compared here with the h5 dataset itself (h5py), and the
interop tier compares the outputs with the TF model's own. A configuration that gives the class token no stage,
or another width, is one error naming the tensor, nothing written.
"""
from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

DATA = Path(__file__).resolve().parent / "data" / "hf_h5"
TF_NAME = "cvt/cvt.encoder.stages.2.cls_token:0"
"""The class token's h5 dataset (layer ``cvt``, the weight's name as TFCvtStage gives it)."""


def _read_safetensors(path: Path) -> dict[str, np.ndarray]:
    raw = path.read_bytes()
    size = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + size])
    header.pop("__metadata__", None)
    assert all(info["dtype"] == "F32" for info in header.values())
    return {k: np.frombuffer(raw[8 + size + i["data_offsets"][0]:8 + size + i["data_offsets"][1]],
                             np.float32).reshape(i["shape"]) for k, i in header.items()}


def _h5_class_token() -> np.ndarray:
    import h5py

    with h5py.File(DATA / "cvt" / "tf_model.h5", "r") as f:
        return np.asarray(f[TF_NAME])


def _copy(tmp_path: Path, **changes: object) -> Path:
    src = tmp_path / "src"
    shutil.copytree(DATA / "cvt", src)
    config = json.loads((src / "config.json").read_text())
    config.update(changes)
    (src / "config.json").write_text(json.dumps(config))
    return src


def test_the_class_token_is_written_on_the_stage_cls_token_marks(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "hf"
    result = run_cli("convert", DATA / "cvt", "-o", out, "--to", "hf")
    assert result.exit_code == 0, result.output
    got = _read_safetensors(out / "model.safetensors")
    assert sorted(k for k in got if "cls_token" in k) == ["cvt.encoder.stages.1.cls_token"]
    want = _h5_class_token()
    assert want.shape == (1, 1, 16)
    assert got["cvt.encoder.stages.1.cls_token"].tobytes() == want.tobytes()


def test_three_stages_keep_stage_2(run_cli, tmp_path: Path) -> None:
    """transformers' own 3-stage CvTs (cls_token on the last stage): the name TF gave is PyTorch's."""
    src = _copy(tmp_path, cls_token=[False, False, True], embed_dim=[8, 12, 16])
    result = run_cli("convert", src, "-o", tmp_path / "hf", "--to", "hf", "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    rows = {r["source"]: r for r in json.loads(result.stdout)["rows"]}
    assert rows[TF_NAME]["key"] == "cvt.encoder.stages.2.cls_token"
    assert rows[TF_NAME]["shape"] == [1, 1, 16]


BAD = {
    "no stage holds it": ({"cls_token": [False, False]}, "cls_token is [False, False]: no stage holds it"),
    "no cls_token list": ({"cls_token": None}, "cls_token is None, not a list of booleans"),
    "another width": ({"embed_dim": [8, 12]}, "the configuration makes it [1, 1, 12]"),
}


@pytest.mark.parametrize("how", sorted(BAD))
def test_a_configuration_contradicting_the_class_token_is_an_error_naming_it(run_cli, tmp_path: Path,
                                                                             how: str) -> None:
    changes, words = BAD[how]
    src = _copy(tmp_path, **changes)
    out = tmp_path / "hf"
    result = run_cli("convert", src, "-o", out, "--to", "hf")
    assert result.exit_code == 1, result.output
    errors = [line for line in result.output.splitlines() if line.startswith(("error", "ckpt: error"))]
    assert len(errors) == 1 and TF_NAME in errors[0] and words in errors[0], result.output
    assert not out.exists()
