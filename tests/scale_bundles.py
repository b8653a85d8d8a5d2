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


def name_based_slots(folder, n: int) -> str:
    """``n // 3`` variables laid out as :func:`name_based`'s, each with its Adam slots (``<var>/Adam``,
    ``<var>/Adam_1``), and TF1's ``global_step``, ``beta1_power``, ``beta2_power`` (``benchmarks/generate.py``'s
    ``scale_slots_*`` before conversion): the prefix."""
    def pairs():
        for i in range(n // 3):
            name = f"model/layer_{i // 100}/unit_{i % 100}/w"
            yield from ((name + suffix, np.full((4,), i, np.float32)) for suffix in ("", "/Adam", "/Adam_1"))
        yield "global_step", np.array(1000, np.int64)
        yield from ((f"beta{b}_power", np.array(0.5, np.float32)) for b in (1, 2))

    prefix = str(folder / f"name-slots-{n}" / "ckpt-1")
    write_checkpoint(prefix, pairs(), force=True, verify=False)
    return prefix


def object_based(prefix: str) -> str:
    """The name-based bundle ``prefix`` converted by ``ckpt convert --to tf-object`` beside it: the new prefix."""
    from click.testing import CliRunner

    from tests.conftest import SHIPPED

    out = prefix.replace("name-", "object-")
    result = CliRunner().invoke(SHIPPED, ["convert", prefix, "--to", "tf-object", "-o", out])
    assert result.exit_code == 0, result.output
    return out
