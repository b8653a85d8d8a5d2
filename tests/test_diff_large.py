"""``diff`` of two large tensors that differ (issue 38: bounded per byte, at the speed of the data).

Which elements differ bytewise is found on unsigned integers of the element's width; the statistics of a chunk
pair are folded in with one chunk-sized temporary. Each is checked here against a plain numpy reference written
out in full (``any`` over each element's bytes, numpy's own ``abs``/``max``/``sum``), and the memory a chunk
pair costs is counted with :mod:`tracemalloc`.
"""
from __future__ import annotations

import tracemalloc
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from formats import write_checkpoint
from formats.api import open_checkpoint
from formats.ops.compare import diff as diff_module
from formats.ops.compare.diff import Tolerance

CHUNK = 65_536


def _by_bytes(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The reference: an element differs when any of its bytes does."""
    n = x.dtype.itemsize
    return (x.reshape(-1).view(np.uint8).reshape(-1, n) != y.reshape(-1).view(np.uint8).reshape(-1, n)).any(axis=1)


@pytest.mark.parametrize("dtype", [np.int8, np.float16, ml_dtypes.bfloat16, np.float32, np.int32, np.float64,
                                   np.complex64, np.complex128, np.dtype("V3")])
def test_which_elements_differ_is_what_their_bytes_say(dtype: object) -> None:
    rng = np.random.default_rng(1)
    width = np.dtype(dtype).itemsize
    raw = rng.integers(0, 256, size=(60, 7, width), dtype=np.uint8)
    other = raw.copy()
    other[rng.random((60, 7)) < 0.3, rng.integers(0, width)] ^= 0x40  # one byte of some elements flipped
    x, y = raw.view(dtype).reshape(60, 7), other.view(dtype).reshape(60, 7)
    got = diff_module._bytes_differ(x, y)
    assert got.shape == (420,) and got.dtype == bool
    assert np.array_equal(got, _by_bytes(x, y)) and 0 < got.sum() < 420


def test_nan_payloads_and_signed_zeros_differ_bytewise() -> None:
    x = np.array([np.nan, 0.0, 1.0, np.inf], dtype=np.float32)
    y = x.copy()
    y.view(np.uint32)[0] |= 1  # another NaN
    y[1] = -0.0
    assert diff_module._bytes_differ(x, y).tolist() == [True, True, False, False]


def _pair(tmp_path: Path, a: np.ndarray, b: np.ndarray) -> tuple[object, object]:
    write_checkpoint(str(tmp_path / "a" / "ckpt-1"), [("w", a)], verify=False)
    write_checkpoint(str(tmp_path / "b" / "ckpt-1"), [("w", b)], verify=False)
    return (open_checkpoint(str(tmp_path / "a" / "ckpt-1"))["w"], open_checkpoint(str(tmp_path / "b" / "ckpt-1"))["w"])


def test_the_statistics_of_a_changed_pair_are_numpys(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    a = rng.standard_normal((8, CHUNK), dtype=np.float32)
    b = a.copy()
    b[::3, ::5] += 0.25
    b[1, 7], a[2, 9], a[3, 3], b[3, 3] = np.nan, np.inf, -np.inf, np.nan
    ea, eb = _pair(tmp_path, a, b)
    got = diff_module._value_stats(ea, eb, Tolerance(), True, False, CHUNK)
    fa, fb = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    ok = np.isfinite(fa) & np.isfinite(fb)
    d = np.abs(fa[ok] - fb[ok])
    assert got["size"] == a.size and got["differ"] == int(_by_bytes(a, b).sum())
    assert (got["nan_a"], got["nan_b"], got["inf_a"], got["inf_b"]) == (0, 2, 2, 0)
    assert got["max_abs_diff"] == float(d.max())
    assert got["mean_abs_diff"] == pytest.approx(d.mean(), rel=1e-12)
    assert got["rel_l2"] == pytest.approx(np.sqrt((d * d).sum()) / np.sqrt((fa[ok] ** 2).sum()), rel=1e-12)
    cosine = (fa[ok] * fb[ok]).sum() / np.sqrt((fa[ok] ** 2).sum() * (fb[ok] ** 2).sum())
    assert got["cosine"] == pytest.approx(cosine, rel=1e-12)


def test_a_chunk_pair_costs_its_two_float64_copies_and_one_temporary(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    a = rng.standard_normal((32, CHUNK), dtype=np.float32)
    ea, eb = _pair(tmp_path, a, a + np.float32(1e-3))
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        diff_module._value_stats(ea, eb, Tolerance(), True, False, CHUNK)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    # a and b as float64, their difference (then each product written over it), the differ mask, the finite
    # masks: 3.1 chunks of float64; 6.8 when the finite values were copied and each product made its own
    assert peak < 4 * CHUNK * 8, peak / (CHUNK * 8)
