"""Optional tier: transformers 5 loads ``ckpt convert --to hf`` of the T5X sample, and its logits on fixed inputs
equal those of the oracle's model (transformers 4.x's T5X conversion script; ``tests/data/orbax/t5x_golden``)
within 1e-5 relative. Needs torch, transformers 5 and tensorstore; skipped where any is missing."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.interop

pytest.importorskip("tensorstore")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
if int(transformers.__version__.split(".")[0]) < 5:
    pytest.skip("this checks transformers 5 (the oracle side is 4.x)", allow_module_level=True)

DATA = Path(__file__).resolve().parents[1] / "data" / "orbax"


def test_transformers5_loads_the_t5x_conversion_and_agrees_with_the_oracle(run_cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "hf"
    assert run_cli("convert", DATA / "t5x/checkpoint_3", "--to", "hf", "-o", out).exit_code == 0
    model = transformers.T5ForConditionalGeneration.from_pretrained(str(out)).eval()
    io = np.load(DATA / "t5x_golden" / "io.npz")
    with torch.no_grad():
        logits = model(input_ids=torch.from_numpy(io["input_ids"]),
                       decoder_input_ids=torch.from_numpy(io["decoder_input_ids"])).logits.numpy()
    np.testing.assert_allclose(logits, io["logits"], rtol=1e-5, atol=1e-6)
