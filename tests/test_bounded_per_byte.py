"""Issue 38 keeps ckpt bounded per byte: the commands that read every value of a large tensor hold a fixed number
of chunks, whatever its size (``benchmarks/run.py --scale`` measures every command on a 2 GiB tensor against
60 MiB of peak RSS; these tests count what Python allocates, with :mod:`tracemalloc`, so that they can fail
here on any machine).

- ``stats``' pass over a tensor holds one chunk as float64 and one temporary of its size (before: the last
  chunk's float64 copy was kept through the histograms' pass, and each chunk's squares made two more).
- An ``.npz`` member streamed through the writing thread holds three pieces of
  :data:`~formats.npz.writer.MEMBER_CHUNK` (one read, one queued, one written), 4 MiB each.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from formats import write_checkpoint
from formats.api import open_checkpoint
from formats.npz.writer import MEMBER_CHUNK, write_npz
from formats.ops.inspect.stats import tensor_stats
from tests.memory import traced

CHUNK = 65_536
"""Elements per chunk of the stats pass here (512 KiB as float64)."""


def _peak(call: Callable[[], object]) -> int:
    """Bytes Python held at most while ``call`` ran, beyond what it held before."""
    return traced(call)[2]


def test_the_stats_pass_holds_one_chunk_as_float64_and_one_temporary(tmp_path: Path) -> None:
    values = np.random.default_rng(0).standard_normal((64, CHUNK), dtype=np.float32)  # 64 chunks
    write_checkpoint(str(tmp_path / "ckpt-1"), [("w", values)], verify=False)
    entry = open_checkpoint(str(tmp_path / "ckpt-1"))["w"]
    stats = tensor_stats(entry, CHUNK)
    wide = values.astype(np.float64)
    assert stats.mean == pytest.approx(wide.mean(), rel=1e-12)  # the same pass, whatever it holds
    assert stats.std == pytest.approx(wide.std(), rel=1e-12)
    peak = _peak(lambda: tensor_stats(entry, CHUNK))
    # the float64 chunk, its deviations (squared in place), the float32 chunk read and the finite mask:
    # 2.13 chunks of float64 here; 3.14 when each chunk's squares made two more temporaries
    assert peak < 2.5 * CHUNK * 8, peak


def test_an_npz_member_streams_through_three_pieces(tmp_path: Path) -> None:
    values = np.arange(16 * MEMBER_CHUNK // 4, dtype=np.float32).reshape(16, -1)  # 64 MiB, 16 pieces
    write_checkpoint(str(tmp_path / "ckpt-1"), [("w", values)], verify=False)
    entry = open_checkpoint(str(tmp_path / "ckpt-1"))["w"]
    out = tmp_path / "w.npz"
    peak = _peak(lambda: write_npz(out, [("w", entry)]))
    assert np.array_equal(np.load(out)["w"], values)
    assert MEMBER_CHUNK == 4 << 20
    assert peak < 3 * MEMBER_CHUNK + (2 << 20), peak  # 8 MiB pieces (before) would hold 24 MiB
