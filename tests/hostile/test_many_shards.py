"""Issue 36 #5: a bundle with more data files than the process may hold descriptors is written, read,
verified and rewritten (``edit``, ``convert``) correctly: readers and writers hold a bounded number of data
files open (BundleReader's least recently used maps, BundleFiles' background flushes). Every command runs in
a child process whose RLIMIT_NOFILE is 256, on a bundle of 600 shards."""
from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

SHARDS = 600
LIMIT = 256


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, LIMIT))


def _env() -> dict[str, str]:
    import ckpt_cli

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(ckpt_cli.__file__).resolve().parents[1]),
                                         *filter(None, [env.get("PYTHONPATH")])])
    return env


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=_env(), preexec_fn=_limited,
                          timeout=600)


def _values() -> dict[str, np.ndarray]:
    return {f"layer_{i:04d}/kernel": np.arange(i, i + 6, dtype=np.float32).reshape(2, 3) for i in range(SHARDS)}


WRITE = f"""
import sys, numpy as np
from formats.tf_bundle.writer import write_checkpoint
values = {{f"layer_{{i:04d}}/kernel": np.arange(i, i + 6, dtype=np.float32).reshape(2, 3) for i in range({SHARDS})}}
write_checkpoint(sys.argv[1], values, shards=range({SHARDS}))
"""


@pytest.fixture(scope="module")
def sharded(tmp_path_factory) -> str:
    prefix = str(tmp_path_factory.mktemp("many_shards") / "ckpt-1")
    result = _run("-c", WRITE, prefix)
    assert result.returncode == 0, result.stderr
    return prefix


def _assert_values(prefix: str, shards: int) -> None:
    from formats import open_checkpoint

    assert len([p for p in os.listdir(os.path.dirname(prefix)) if p.startswith(os.path.basename(prefix) + ".data-")]) \
        == shards
    with open_checkpoint(prefix) as ckpt:
        got = {k: ckpt[k].read() for k in ckpt.keys()}
    want = _values()
    assert sorted(got) == sorted(want)
    for key, value in want.items():
        np.testing.assert_array_equal(got[key], value)


def test_written_under_the_limit(sharded: str) -> None:
    _assert_values(sharded, SHARDS)


@pytest.mark.parametrize("argv", [["verify", "{p}"], ["ls", "{p}"], ["stats", "{p}"], ["diff", "-q", "{p}", "{p}"],
                                  ["show", "{p}", "layer_0599/kernel"]], ids=lambda a: a[0])
def test_read_and_verified_under_the_limit(sharded: str, argv: list[str]) -> None:
    result = _run("-m", "ckpt_cli", *(a.format(p=sharded) for a in argv))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    if argv[0] == "show":
        assert result.stdout.splitlines()[0] == "layer_0599/kernel: float32 [2, 3]"


def test_edit_and_convert_under_the_limit(sharded: str, tmp_path) -> None:
    edited = str(tmp_path / "edited" / "ckpt-1")
    result = _run("-m", "ckpt_cli", "edit", sharded, "-o", edited, "--shards", str(SHARDS))
    assert result.returncode == 0, result.stderr
    _assert_values(edited, SHARDS)
    converted = str(tmp_path / "converted" / "ckpt-1")
    result = _run("-m", "ckpt_cli", "convert", sharded, "-o", converted, "--to", "tf-name")
    assert result.returncode == 0 or "already name-based" in result.stderr + result.stdout, result.stderr
    result = _run("-m", "ckpt_cli", "convert", sharded, "-o", converted, "--to", "safetensors")
    assert result.returncode == 0, result.stderr
    result = _run("-m", "ckpt_cli", "verify", edited)
    assert result.returncode == 0, result.stderr
