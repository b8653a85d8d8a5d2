"""Shared fixtures: the reference corpus (written by real TensorFlow/Keras) and its manifest."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

CORPUS = Path(__file__).parent / "data" / "corpus"
MANIFEST: dict[str, Any] = json.loads((CORPUS / "manifest.json").read_text())["entries"]


def entries_of(fmt: str) -> list[str]:
    """Manifest paths (relative to the corpus) of one format."""
    return sorted(k for k, v in MANIFEST.items() if v["format"] == fmt)


def digest(arr: Any) -> str:
    """The manifest's sha256 of a value (see tests/data/corpus/README.md)."""
    h = hashlib.sha256()
    a = np.asarray(arr)
    if a.dtype == object or a.dtype.kind in "SU":
        for x in a.reshape(-1):
            b = x if isinstance(x, bytes) else str(x).encode()
            h.update(len(b).to_bytes(8, "little"))
            h.update(b)
    else:
        h.update(np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<"), copy=False).tobytes())
    return h.hexdigest()


@pytest.fixture
def corpus_copy(tmp_path: Path):
    """Copy one corpus folder into a writable temp dir: ``corpus_copy("tf1_adam")`` -> its path."""

    def copy(rel: str) -> Path:
        dst = tmp_path / rel
        shutil.copytree(CORPUS / rel, dst)
        for root, _, files in os.walk(dst):
            for f in files:
                os.chmod(os.path.join(root, f), 0o644)
        return dst

    return copy


@pytest.fixture
def run_cli():
    """Invoke ``ckpt`` in-process: ``run_cli("ls", path)`` -> click Result (stdout, stderr, exit_code)."""
    from click.testing import CliRunner

    from ckpt_cli.main import cli

    def run(*args: str) -> Any:
        return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)

    return run
