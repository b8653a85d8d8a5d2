"""Shared by the ``--to hf`` refusal tests: a test-data checkpoint re-written with a change, and the error lines of a
conversion that must refuse it."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np

import formats


def variables(src: Path) -> dict[str, np.ndarray]:
    """Every tensor of the checkpoint at ``src``, read by ckpt."""
    with formats.open_checkpoint(str(src)) as ckpt:
        return {k: ckpt[k].read() for k in ckpt}


def saved(tensors: dict[str, np.ndarray], folder: Path) -> Path:
    """``tensors`` written by ckpt as ``folder/model.ckpt`` (``folder`` made here); the prefix."""
    folder.mkdir()
    formats.write_checkpoint(str(folder / "model.ckpt"), tensors)
    return folder / "model.ckpt"


def rewritten(src: Path, folder: Path, change: dict[str, np.ndarray | None], configs: list[str],
              config: dict[str, Any] | None = None) -> Path:
    """``src`` re-written by ckpt into ``folder`` (made here) with ``change`` (None removes a tensor), the files
    named in ``configs`` copied beside it, the first with ``config``'s fields over it; the new checkpoint's path."""
    tensors = variables(src)
    for key, value in change.items():
        if value is None:
            tensors.pop(key)
        else:
            tensors[key] = value
    folder.mkdir()
    for name in configs:
        shutil.copy(src.parent / name, folder / name)
    if config:
        first = folder / configs[0]
        first.write_text(json.dumps({**json.loads(first.read_text()), **config}))
    formats.write_checkpoint(str(folder / src.name), tensors)
    return folder / src.name


def refused(run_cli: Any, src: Path, tmp_path: Path, *options: str) -> list[str]:
    """The ``error`` lines of ``ckpt convert SRC --to hf`` (with ``options``), which must exit 1 and write nothing."""
    out = tmp_path / "out"
    result = run_cli("convert", src, "-o", out, "--to", "hf", *options)
    assert result.exit_code == 1, result.output
    assert not out.exists() and not list(tmp_path.glob(".out*"))
    return [line for line in result.output.splitlines() if line.startswith("error")]


def written_equal(out: Path, golden: dict[str, np.ndarray]) -> dict[str, Any]:
    """Assert the ``model.safetensors`` ckpt wrote into ``out`` holds exactly ``golden``'s tensors (keys, dtypes,
    shapes and bytes); the ``config.json`` written beside it."""
    from safetensors.numpy import load_file

    written = load_file(str(out / "model.safetensors"))
    assert sorted(written) == sorted(golden)
    for key, value in golden.items():
        assert written[key].dtype == value.dtype and written[key].shape == value.shape, key
        assert written[key].tobytes() == value.tobytes(), key
    return json.loads((out / "config.json").read_text())  # type: ignore[no-any-return]
