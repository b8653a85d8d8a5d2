"""formats.ops.inspect.histogram, the one streaming histogram: bin counts equal numpy.histogram's exactly on the
corpus and on hostile values (NaN, Inf, constants, integers, complex), whatever the chunk size, and the histograms
stats computes (in its own pass or one more) are the same ones."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from formats.api import open_checkpoint
from formats.ops.inspect.histogram import (LINEAR, LOG, Histogram, histogram_bins, tensor_histogram,
                                           tensor_histograms)
from formats.ops.inspect.stats import tensor_stats

from .conftest import CORPUS
from .test_diff import memory_checkpoint, read_all

CORPUS_BUNDLES = ["tf1_estimator/model.ckpt-200", "tf2_mixed/all_dtypes/ckpt-1", "tf1_partitioned/model.ckpt-200",
                  "seed_slots/tf_ckpts/ckpt-5", "tf1_adam/model.ckpt-200"]


def as_f64(value: np.ndarray) -> np.ndarray:
    """The values as the histogram bins them, converted straight with numpy."""
    x = value
    if x.dtype.kind == "c":
        return np.abs(x.astype(np.complex128)).ravel()
    if x.dtype.kind not in "fiub":
        x = x.astype(np.float32)
    return x.astype(np.float64).ravel()


def numpy_linear(value: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """numpy.histogram over the finite values, bins chosen as the module documents, by hand."""
    x = as_f64(value)
    finite = x[np.isfinite(x)]
    small = {"bool": (0, 1), "int8": (-128, 127), "uint8": (0, 255)}.get(value.dtype.name)
    if value.dtype.kind in "iub" and (small or max(abs(int(value.min())), abs(int(value.max()))) < 2 ** 53):
        lo, hi = small or (int(value.min()), int(value.max()))
        width = -(-(hi - lo + 1) // bins)
        n = -(-(hi - lo + 1) // width)
        return np.histogram(finite, bins=n, range=(lo - 0.5, lo - 0.5 + n * width))
    if not finite.size:
        return np.histogram(finite, bins=1, range=(-0.5, 0.5))
    return np.histogram(finite, bins=bins, range=(finite.min(), finite.max()) if finite.min() < finite.max()
                        else None)


def numpy_log(value: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray]:
    x = as_f64(value)
    x = x[np.isfinite(x) & (x != 0)]
    if not x.size:
        return np.histogram(x, bins=1, range=(-0.5, 0.5))
    # The range's ends are the C library's log10 (math.log10) of the smallest and largest magnitude, the same bits
    # on every numpy and CPU. numpy's own log10 of those values may differ in the last bit (numpy 2.4's SIMD log10:
    # -1.246239097887682 against -1.2462390978876818), so the values are clipped into the range, as documented.
    lo, hi = math.log10(np.abs(x).min()), math.log10(np.abs(x).max())
    m = np.clip(np.log10(np.abs(x)), lo, hi)
    return np.histogram(m, bins=bins, range=(lo, hi) if lo < hi else None)


def check(h: Histogram, want: tuple[np.ndarray, np.ndarray], value: np.ndarray) -> None:
    counts, edges = want
    assert h.counts == counts.tolist()
    assert h.edges == edges.tolist()
    x = as_f64(value)
    assert (h.size, h.nan, h.posinf, h.neginf) == (x.size, int(np.isnan(x).sum()), int((x == np.inf).sum()),
                                                   int((x == -np.inf).sum()))
    assert h.zeros == int((x == 0).sum())
    assert h.negative == int((x[np.isfinite(x)] < 0).sum())
    # the same counts from numpy's general (searchsorted) path with the edges as an array
    finite = x[np.isfinite(x)]
    if h.scale == LOG:
        finite = np.clip(np.log10(np.abs(finite[finite != 0])), h.edges[0], h.edges[-1])
    assert np.histogram(finite, bins=np.asarray(h.edges))[0].tolist() == h.counts


@pytest.mark.parametrize("rel", CORPUS_BUNDLES)
@pytest.mark.parametrize("chunk", [7, 1 << 20])
def test_corpus_counts_equal_numpy(rel: str, chunk: int) -> None:
    values = read_all(rel)
    seen = 0
    with open_checkpoint(CORPUS / rel) as ckpt:
        for key, value in values.items():
            found = tensor_histograms(ckpt[key], (LINEAR, LOG), bins=16, chunk_elements=chunk)
            if value.dtype.kind in "OSU" or found is None:
                assert found is None and ckpt[key].dtype in ("string", "variant"), key
                continue
            check(found[LINEAR], numpy_linear(value, 16), value)
            check(found[LOG], numpy_log(value, 16), value)
            seen += 1
    assert seen


HOSTILE: dict[str, Any] = {
    "nan_inf": np.array([1.0, np.nan, -np.inf, 0.0, 2.5, np.inf, -3.0, np.nan, 0.0], dtype=np.float32),
    "all_nan": np.full((3, 2), np.nan, dtype=np.float64),
    "constant": np.full(10, 0.25, dtype=np.float32),
    "zeros": np.zeros(5, dtype=np.float32),
    "empty": np.zeros((0, 4), dtype=np.float32),
    "int8": np.array([-128, -1, 0, 0, 5, 127], dtype=np.int8),
    "uint8": np.arange(256, dtype=np.uint8),
    "bool": np.array([True, False, True, True]),
    "int32": np.array([-7, 3, 3, 100000, 42], dtype=np.int32),
    "int64": np.array([-(2 ** 62), 2 ** 62, 0, 1], dtype=np.int64),
    "small_int32": np.array([3, 4, 5, 5, 9], dtype=np.int32),
    "complex": np.array([1 + 1j, 0, 3 - 4j, complex(np.nan, 0)], dtype=np.complex64),
    "float16": np.array([1e-4, 6e4, -2.0, 0.5], dtype=np.float16),
    "random": np.random.default_rng(0).standard_normal(1_001).astype(np.float32),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
@pytest.mark.parametrize("chunk", [1, 3, 1 << 20])
def test_hostile_values_equal_numpy(name: str, chunk: int) -> None:
    value = HOSTILE[name]
    ckpt = memory_checkpoint("mem", {name: value})
    found = tensor_histograms(ckpt[name], (LINEAR, LOG), bins=8, chunk_elements=chunk)
    assert found is not None
    with np.errstate(invalid="ignore"):
        check(found[LINEAR], numpy_linear(value, 8), value)
        check(found[LOG], numpy_log(value, 8), value)
    lin = found[LINEAR]
    assert lin.size == lin.binned + lin.nan + lin.posinf + lin.neginf
    assert found[LOG].size == found[LOG].binned + found[LOG].zeros + lin.nan + lin.posinf + lin.neginf


def test_integer_bins_hold_whole_numbers() -> None:
    assert histogram_bins(-128, 127, 32, integral=True) == (32, -128.5, 127.5)
    assert histogram_bins(0, 1, 32, integral=True) == (2, -0.5, 1.5)
    assert histogram_bins(-128, 127, 100, integral=True) == (86, -128.5, 129.5)  # 3 values a bin
    h = tensor_histogram(memory_checkpoint("m", {"b": HOSTILE["bool"]})["b"])
    assert h is not None and (h.edges, h.counts, h.integral) == ([-0.5, 0.5, 1.5], [1, 3], True)


def test_merge_is_numpy_of_the_whole() -> None:
    x = HOSTILE["random"]
    ckpt = memory_checkpoint("m", {"a": x[:500], "b": x[500:]})
    bins, first, last = histogram_bins(float(x.min()), float(x.max()), 20)
    from formats.ops.inspect.histogram import HistogramCounter

    parts = []
    for key in ("a", "b"):
        counter = HistogramCounter(LINEAR, bins, first, last)
        counter.add(ckpt[key].read().astype(np.float64))
        parts.append(counter.result())
    merged = parts[0].merge(parts[1])
    assert merged.counts == np.histogram(x.astype(np.float64), bins=20)[0].tolist()
    with pytest.raises(ValueError):
        parts[0].merge(Histogram(LINEAR, [0.0, 1.0], [0]))


@pytest.mark.parametrize("name", ["nan_inf", "int8", "int32", "complex", "random", "all_nan"])
def test_stats_histograms_are_the_same(name: str) -> None:
    """stats counts dtype-range bins in its own pass and the others in one more: the same histograms."""
    entry = memory_checkpoint("m", {name: HOSTILE[name]})[name]
    s = tensor_stats(entry, chunk_elements=4, histograms=(LINEAR, LOG), bins=8)
    assert s.histograms == tensor_histograms(entry, (LINEAR, LOG), bins=8, chunk_elements=5)
    assert s.to_json()["histograms"][LINEAR] == s.histograms[LINEAR].to_json()  # type: ignore[index]
    assert "histograms" not in tensor_stats(entry).to_json()


def test_strings_have_no_histogram() -> None:
    rel = "tf2_mixed/all_dtypes/ckpt-1"
    with open_checkpoint(CORPUS / rel) as ckpt:
        key = next(k for k, e in ckpt.items() if e.dtype == "string")
        assert tensor_histogram(ckpt[key]) is None
        assert tensor_stats(ckpt[key], histograms=(LINEAR,)).to_json()["histograms"] == {}
