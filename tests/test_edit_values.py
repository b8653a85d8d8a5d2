"""Values computed while written: one rounding to nearest even, the streamed mean, casts, shard assignment.

Expected values come from an independent rounding: every finite value of the target dtype listed
by bit pattern, the nearest one taken, ties to the even pattern.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from formats.core.model import TensorEntry
from formats.tf_bundle.sharding import assign_shards
from formats.ops.edit.values import (STEP_ELEMENTS, CastStats, CastTensor, MeanTensor, aligned_chunks, is_lossless,
                                     round_float64)

BF16, F16 = np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16)


def reference_round(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Nearest finite value of a 16-bit float dtype, ties to the even bit pattern (values within range)."""
    patterns = np.arange(1 << 16, dtype=np.uint16).view(dtype)
    with np.errstate(invalid="ignore"):
        finite = patterns[np.isfinite(patterns.astype(np.float64))]
    values = finite.astype(np.float64)
    order = np.argsort(values, kind="stable")
    values, finite = values[order], finite[order]
    keep = np.r_[True, values[1:] != values[:-1]]  # +0 and -0: keep the first
    values, finite = values[keep], finite[keep]
    out = np.empty(x.shape, dtype=dtype)
    for i, v in enumerate(x):
        hi = int(np.searchsorted(values, v))
        lo = max(hi - 1, 0)
        hi = min(hi, len(values) - 1)
        d_lo, d_hi = abs(v - values[lo]), abs(values[hi] - v)
        if d_lo < d_hi:
            pick = lo
        elif d_hi < d_lo:
            pick = hi
        else:
            pick = lo if int(finite[lo:lo + 1].view(np.uint16)[0]) % 2 == 0 else hi
        out[i] = finite[pick]
        if values[pick] == 0:
            out[i] = np.array(np.copysign(0.0, v)).astype(dtype)  # a zero keeps the value's sign
    return out


def _trap_values() -> np.ndarray:
    """Ties, and values a hair off a tie (where rounding through float32 first goes wrong)."""
    one_bf16 = 2.0 ** -8  # half a bfloat16 ulp at 1
    one_f16 = 2.0 ** -11  # half a float16 ulp at 1
    base = [1 + one_bf16, 1 + 3 * one_bf16, 1 + one_bf16 + 2.0 ** -40, 1 + one_bf16 - 2.0 ** -40,
            -(1 + one_bf16 + 2.0 ** -40), 1 + one_f16 + 2.0 ** -40, 3 * 2.0 ** -130, 1e-40, 0.0, -0.0]
    rng = np.random.default_rng(0)
    spread = rng.standard_normal(2000) * 10.0 ** rng.integers(-6, 4, 2000)
    return np.array(base + list(spread), dtype=np.float64)


@pytest.mark.parametrize("dtype", [BF16, F16])
def test_round_float64_is_one_rounding_to_nearest_even(dtype):
    x = _trap_values()
    if dtype == F16:
        x = x[np.abs(x) < 60000]
    got = round_float64(x, dtype)
    expected = reference_round(x, dtype)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.view(np.uint16), expected.view(np.uint16))


def test_ml_dtypes_own_cast_from_float64_rounds_twice():
    """Why round_float64 exists: this value is just above a tie, so it rounds up; through float32 it is a tie."""
    x = np.array([1 + 2.0 ** -8 + 2.0 ** -40])
    assert float(round_float64(x, BF16).astype(np.float64)[0]) == 1 + 2.0 ** -7
    assert float(x.astype(BF16).astype(np.float64)[0]) == 1.0


def test_round_float64_keeps_nan_and_inf_and_overflows_to_inf():
    x = np.array([np.nan, np.inf, -np.inf, 1e300, -1e39])
    got = round_float64(x, BF16).astype(np.float64)
    assert np.isnan(got[0]) and list(got[1:]) == [np.inf, -np.inf, np.inf, -np.inf]


@pytest.mark.parametrize("source, target, lossless", [
    ("float16", "float32", True), ("bfloat16", "float32", True), ("float32", "float64", True),
    ("float32", "bfloat16", False), ("float32", "float16", False), ("bfloat16", "float16", False),
    ("float16", "bfloat16", False), ("float64", "float32", False), ("float8_e4m3fn", "bfloat16", True),
])
def test_is_lossless(source, target, lossless):
    assert is_lossless(source, target) is lossless


class ArrayEntry(TensorEntry):
    """An in-memory entry that yields chunks of its own size and records what was asked."""

    def __init__(self, key: str, value: np.ndarray, piece: int = 7, role: str = "variable") -> None:
        super().__init__(key, value.shape, {BF16: "bfloat16"}.get(value.dtype, value.dtype.name), value.nbytes,
                         role=role)
        self.value, self.piece, self.asked = value, piece, []

    def read(self) -> np.ndarray:
        return self.value

    def iter_chunks(self, chunk_elements=1 << 20, pool=None):
        self.asked.append(chunk_elements)
        flat = self.value.reshape(-1)
        step = min(self.piece, chunk_elements)
        for start in range(0, flat.size, step):
            yield flat[start:start + step]


def test_aligned_chunks_pairs_any_chunking_and_runs_every_stream_to_its_end():
    a, b, c = np.arange(20), np.arange(20) * 2, np.arange(20) * 3
    streams = [iter(np.split(a, [3, 4, 11])), iter(np.split(b, [10])), iter([c[i:i + 6] for i in range(0, 20, 6)])]
    pieces = list(aligned_chunks(streams))
    assert all(len({p.size for p in group}) == 1 for group in pieces)
    for i, whole in enumerate((a, b, c)):
        np.testing.assert_array_equal(np.concatenate([g[i] for g in pieces]), whole)
    assert all(next(s, None) is None for s in streams)


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float64), BF16, F16])
def test_mean_is_accumulated_in_float64_and_rounded_once(dtype):
    rng = np.random.default_rng(1)
    values = [(rng.standard_normal((5, 9)) * 3).astype(dtype) for _ in range(3)]
    entries = [ArrayEntry("w", v, piece=p) for v, p in zip(values, (4, 7, 45))]
    mean = MeanTensor(entries)
    expected64 = np.mean(np.stack([v.astype(np.float64) for v in values]), axis=0)
    if dtype in (BF16, F16):
        expected = reference_round(expected64.reshape(-1), dtype).reshape(expected64.shape)
    else:
        expected = expected64.astype(dtype)
    got = mean.read()
    assert got.dtype == dtype and got.shape == (5, 9)
    np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))
    assert b"".join(bytes(p) for p in mean.byte_chunks(10)) == expected.tobytes()
    assert mean.key == "w" and mean.dtype == entries[-1].dtype and mean.nbytes == expected.nbytes


def test_mean_reads_a_bounded_number_of_elements_at_a_time():
    entries = [ArrayEntry("w", np.zeros(STEP_ELEMENTS * 3, np.float32), piece=1 << 30) for _ in range(3)]
    for _ in MeanTensor(entries).byte_chunks(1 << 30):
        pass
    assert all(e.asked == [STEP_ELEMENTS] for e in entries)


def test_cast_records_the_largest_error_and_overflows_of_one_pass():
    value = np.array([1.0, 1 / 3, 70000.0, -1e6, np.nan, 2.5], dtype=np.float32)
    stats = CastStats("w", "float32", "float16", lossless=False)
    cast = CastTensor(ArrayEntry("w", value), ArrayEntry("w", value), "float16", stats)
    got = cast.read()
    with np.errstate(over="ignore"):
        expected = value.astype(np.float16)
    np.testing.assert_array_equal(got.view(np.uint16), expected.view(np.uint16))
    finite = np.isfinite(expected) & np.isfinite(value)
    assert stats.done and stats.overflow == 2
    assert stats.max_error == float(np.max(np.abs(expected[finite].astype(np.float64) - value[finite])))
    cast.read()  # a second pass (the writer's read-back) changes nothing
    assert stats.overflow == 2


def test_cast_float32_to_bfloat16_is_ml_dtypes_rounding():
    value = np.random.default_rng(2).standard_normal(1000).astype(np.float32)
    got = CastTensor(ArrayEntry("w", value), ArrayEntry("w", value), "bfloat16").read()
    np.testing.assert_array_equal(got.view(np.uint16), value.astype(BF16).view(np.uint16))


@pytest.mark.parametrize("sizes, count, max_size, expected", [
    ([1, 1, 1, 1], 4, None, [0, 1, 2, 3]),
    ([100, 1, 1, 1], 2, None, [0, 1, 1, 1]),
    ([1, 1, 1, 100], 2, None, [0, 0, 0, 1]),
    ([10] * 10, 3, None, [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]),
    ([5, 5], 4, None, [0, 1]),
    ([0, 0, 0], 2, None, [0, 0, 1]),
    ([4, 4, 4, 9, 1], None, 8, [0, 0, 1, 2, 3]),
    ([4, 4, 4], None, 100, [0, 0, 0]),
    ([], 3, None, []),
])
def test_assign_shards(sizes, count, max_size, expected):
    assert assign_shards(sizes, count, max_size) == expected
