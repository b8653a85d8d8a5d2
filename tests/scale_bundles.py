"""The per-tensor growth tests' inputs (issue 38): bundles of many tiny tensors, as ``benchmarks/generate.py``'s
scale inputs, written by ckpt's writer (what is counted is the command's reading, not this writing)."""
from __future__ import annotations

import numpy as np

from formats import write_checkpoint


def name_based(folder, n: int) -> str:
    """``n`` tensors of 4 float32 each, 100 per layer (``model/layer_<i>/unit_<j>/w``): the prefix."""
    prefix = str(folder / f"name-{n}" / "ckpt-1")
    write_checkpoint(prefix, ((f"model/layer_{i // 100}/unit_{i % 100}/w", np.full((4,), i, np.float32))
                              for i in range(n)), force=True, verify=False)
    return prefix


def object_based(prefix: str) -> str:
    """The name-based bundle ``prefix`` converted by ``ckpt convert --to tf-object`` beside it: the new prefix."""
    from click.testing import CliRunner

    from tests.conftest import SHIPPED

    out = prefix.replace("name-", "object-")
    result = CliRunner().invoke(SHIPPED, ["convert", prefix, "--to", "tf-object", "-o", out])
    assert result.exit_code == 0, result.output
    return out
