"""Replacing a bundle (issue 14 #24, issue 24 item 18): a write killed at any step leaves the old checkpoint or
the new one - never none, never the old index beside new data - and the next write cleans what it left."""
from __future__ import annotations

import os
import signal

import numpy as np
import pytest

import formats
from formats.core.errors import CheckpointError
from formats.ops.compare.verify import verify_checkpoint
from formats.tf_bundle.writer import write_checkpoint

OLD = {"w": np.arange(6, dtype=np.float32), "b": np.ones(3, np.float32)}
NEW = {"w": np.arange(6, dtype=np.float32) * 2, "b": np.zeros(3, np.float32)}


def _state(prefix: str) -> str:
    """``old``, ``new`` or ``none`` - and the bundle verifies when there is one."""
    try:
        with formats.open_checkpoint(prefix) as ckpt:
            assert verify_checkpoint(ckpt).ok, "a mix of old and new files"
            w = ckpt["w"].read()
    except CheckpointError:
        return "none"
    return "new" if np.array_equal(w, NEW["w"]) else "old"


def _killed_at(prefix: str, step: int, shards: list[int] | None = None) -> None:
    """Write NEW over ``prefix`` in a child that is SIGKILLed at its ``step``-th rename or unlink."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        calls = {"n": 0}
        real_replace, real_unlink = os.replace, os.unlink

        def counted(real):
            def call(*args, **kwargs):
                calls["n"] += 1
                if calls["n"] == step:
                    os.kill(os.getpid(), signal.SIGKILL)
                return real(*args, **kwargs)
            return call

        os.replace, os.unlink = counted(real_replace), counted(real_unlink)
        try:
            write_checkpoint(prefix, NEW, force=True, shards=shards)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.parametrize("step", range(1, 6))
def test_a_killed_replacement_leaves_old_new_or_none(tmp_path, step):
    prefix = str(tmp_path / "ckpt")
    write_checkpoint(prefix, OLD, shards=[0, 1])  # two data files: the old bundle's must not survive as a mix
    _killed_at(prefix, step)
    assert _state(prefix) in ("old", "new")
    report = write_checkpoint(prefix, NEW, force=_state(prefix) != "none")  # the next run cleans up
    assert report.verified and _state(prefix) == "new"
    names = sorted(os.listdir(tmp_path))
    assert names == ["ckpt.data-00000-of-00001", "ckpt.index"], names


def test_data_files_without_an_index_do_not_block_the_next_write(tmp_path):
    prefix = str(tmp_path / "ckpt")
    (tmp_path / "ckpt.data-00000-of-00002").write_bytes(b"left by a killed write")
    (tmp_path / "ckpt.data-00000-of-00001").write_bytes(b"left by a killed write")
    report = write_checkpoint(prefix, NEW)  # no force needed: no index, no checkpoint
    assert report.verified and _state(prefix) == "new"
    assert sorted(os.listdir(tmp_path)) == ["ckpt.data-00000-of-00001", "ckpt.index"]
