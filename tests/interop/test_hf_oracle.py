"""Opt-in tier: the golden files of tests/data/hf/golden are what transformers 4.x's own loaders make.

Regenerates the oracle side (tests/data/hf/generators/make_golden.py: transformers' load_tf_weights_in_<family>
under real TensorFlow, on the committed TF checkpoint) for one case, ``bert`` (more with
CKPT_HF_ORACLE_CASES=bert,gpt2,...), into a temporary directory and checks it equals the committed golden files:
the state dict bitwise, config.json (transformers_version aside), the inputs exactly, the outputs within 1e-5
relative. Needs tensorflow, torch and a transformers 4.x release (5.0 dropped the TF loaders), e.g. the oracle venv:

    python -m venv /work/venvs/hf-oracle && /work/venvs/hf-oracle/bin/pip install tensorflow-cpu \\
        torch==2.13.0 'transformers<5' pytest -e .
    /work/venvs/hf-oracle/bin/python -m pytest -m interop tests/interop/test_hf_oracle.py

Skipped where any of them is missing or transformers is 5 or newer.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.interop

pytest.importorskip("tensorflow")
pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
if int(transformers.__version__.split(".")[0]) >= 5:
    pytest.skip("transformers 5 has no TensorFlow loaders (the oracle needs 4.x)", allow_module_level=True)
safetensors_numpy = pytest.importorskip("safetensors.numpy")

DATA = Path(__file__).resolve().parents[1] / "data" / "hf"
CASES = os.environ.get("CKPT_HF_ORACLE_CASES", "bert").split(",")


def _config(path: Path) -> dict:
    config = json.loads(path.read_text())
    config.pop("transformers_version", None)
    return config


@pytest.mark.parametrize("case", CASES)
def test_oracle_regenerates_the_committed_golden_files(case: str, tmp_path: Path) -> None:
    if "bert_tf2" in case:
        pytest.skip("the TF2 loader lives in a transformers 4.46 wheel; run make_golden.py --tf2-script by hand")
    family = json.loads((DATA / "cases.json").read_text())[case]["family"]
    if "pegasus" in family:
        pytest.skip("the Pegasus scripts live in a transformers 4.46 wheel; run make_golden_b.py --wheel by hand")
    generator = "make_golden_b.py" if family in ("xlnet", "gpt_neo") else "make_golden.py"  # issue 37's part B
    generator = "make_originals_c.py golden" if family in ("roformer", "canine") else generator  # part C
    made_by = json.loads((DATA / "cases.json").read_text())[case].get("golden_made_by")
    generator = "make_originals_e.py golden" if made_by == "make_originals_e.py" else generator  # TAPAS WTQ, GPT-1
    generator = "make_originals_f.py golden" if made_by == "make_originals_f.py" else generator  # BERT-generation
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    script, *step = generator.split()
    done = subprocess.run([sys.executable, str(DATA / "generators" / script), *step, case, "--out", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    new, old = tmp_path / case, DATA / "golden" / case
    a, b = safetensors_numpy.load_file(new / "model.safetensors"), safetensors_numpy.load_file(old / "model.safetensors")
    assert sorted(a) == sorted(b) and len(a) > 10
    for key in a:
        assert a[key].dtype == b[key].dtype and np.array_equal(a[key], b[key]), key
    assert _config(new / "config.json") == _config(old / "config.json")
    ins_new, ins_old = np.load(new / "inputs.npz"), np.load(old / "inputs.npz")
    assert sorted(ins_new.files) == sorted(ins_old.files)
    for key in ins_old.files:
        assert np.array_equal(ins_new[key], ins_old[key]), key
    out_new, out_old = np.load(new / "outputs.npz"), np.load(old / "outputs.npz")
    assert sorted(out_new.files) == sorted(out_old.files)
    for key in out_old.files:
        np.testing.assert_allclose(out_new[key], out_old[key], rtol=1e-5, atol=1e-6, err_msg=key)
    record, committed = json.loads((new / "oracle.json").read_text()), json.loads((old / "oracle.json").read_text())
    assert record["untouched"] == committed["untouched"]
    assert record["loader_messages"] == committed["loader_messages"]
