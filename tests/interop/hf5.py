"""What the transformers-5 interop tests share: the modules they need (the calling test module skipped where
torch or transformers 5 is missing) and a model's outputs as numpy arrays."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest


def transformers5(need_torch: bool = True) -> tuple[Any, Any]:
    """``(torch, transformers)`` (torch None when not ``need_torch``); else the calling test module is skipped:
    these tests read ckpt's output with transformers 5."""
    torch = pytest.importorskip("torch") if need_torch else None
    transformers = pytest.importorskip("transformers")
    if int(transformers.__version__.split(".")[0]) < 5:
        pytest.skip("these tests read ckpt's output with transformers 5", allow_module_level=True)
    return torch, transformers


def model_outputs(model: Any, inputs: dict[str, np.ndarray], **options: Any) -> dict[str, np.ndarray]:
    """``model(**inputs, output_hidden_states=True, **options)`` without gradients: each tensor of the output by
    its name, each tensor of a tuple as ``name.i``."""
    import torch

    kwargs = {k: torch.from_numpy(v) for k, v in inputs.items()}
    with torch.no_grad():
        result = model(**kwargs, output_hidden_states=True, **options)
    out: dict[str, np.ndarray] = {}
    for key, val in result.items():
        if isinstance(val, torch.Tensor):
            out[key] = val.numpy()
        elif isinstance(val, tuple):
            out.update({f"{key}.{i}": t.numpy() for i, t in enumerate(val)})
    return out
