"""``ckpt diff`` of values whose squares pass float64's range (about 1e154 and up): the relative L2 and the cosine
are what they are - ratios, computed here independently (exact fractions, or numpy's norm of values scaled down
by a power of two) - not NaN from ``inf / inf``; no numpy warning reaches the terminal and ``--json`` stays JSON
(it wrote ``NaN``; a difference past float64's range is ``Infinity``, as ``stats --json`` writes an infinite
std). Values of ordinary size keep the same bits (tests/test_diff.py's golden numbers)."""
from __future__ import annotations

import json
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest

from formats.api import open_checkpoint
from formats.ops.compare.diff import compare_entries


def _exact(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """(relative L2, cosine) of two small float64 arrays, in exact rational arithmetic but for the square roots,
    taken of values scaled into range."""
    fa, fb = [Fraction(float(x)) for x in a.ravel()], [Fraction(float(x)) for x in b.ravel()]
    sq_d = sum((x - y) ** 2 for x, y in zip(fa, fb))
    sq_a, sq_b, dot = sum(x * x for x in fa), sum(y * y for y in fb), sum(x * y for x, y in zip(fa, fb))
    unit = Fraction(2) ** 1400  # a power of two, so the square roots are of values float64 holds
    root = lambda q: math.sqrt(float(q / unit))  # noqa: E731
    return root(sq_d) / root(sq_a), float(dot / unit) / (root(sq_a) * root(sq_b))


def _no_nan(name: str) -> float:
    """``Infinity`` stands for a difference past float64's range, as ``stats --json`` writes an infinite std; ``NaN``
    (an ``inf / inf``) is what must not be written."""
    if name == "NaN":
        raise AssertionError("--json wrote NaN")
    return float(name)


@pytest.mark.parametrize("a,b", [([1e200, -1e200, 3.0], [1.5e200, -1e200, 3.0]),
                                 ([1e300, 2e300, -1e-300], [1e300, -2e300, 0.0]),
                                 ([1e308, 1.0], [-1e308, 1.0]),
                                 ([np.inf, 1e200, 5.0], [1.0, 2e200, 5.0])],
                         ids=["1e200", "1e300", "past-the-range", "an-inf"])
def test_a_small_pair_of_huge_values(tmp_path, run_cli, a, b) -> None:
    np.savez(tmp_path / "a.npz", w=np.array(a))
    np.savez(tmp_path / "b.npz", w=np.array(b))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run_cli("diff", tmp_path / "a.npz", tmp_path / "b.npz", "--json")
    assert [str(w.message) for w in caught] == [] and result.exit_code == 1 and result.stderr == ""
    stats = json.loads(result.stdout, parse_constant=_no_nan)["changed"][0]
    finite = np.isfinite(a) & np.isfinite(b)
    rel, cos = _exact(np.array(a)[finite], np.array(b)[finite])
    assert stats["rel_l2"] == pytest.approx(rel, rel=1e-12) and stats["cosine"] == pytest.approx(cos, rel=1e-12)
    diffs = [abs(Fraction(x) - Fraction(y)) for x, y, ok in zip(a, b, finite) if ok]
    assert stats["max_abs_diff"] == (math.inf if max(diffs) > Fraction(np.finfo(float).max) else float(max(diffs)))


@pytest.mark.parametrize("chunk", [1000, 1 << 20])
def test_a_large_pair_whose_later_chunks_overflow(tmp_path, chunk) -> None:
    """300,000 values of ordinary size, then 1,000 of 1e250 in the last chunks: the sums so far are brought to the
    scale the later chunks need (or the one chunk is scaled whole)."""
    rng = np.random.default_rng(38)
    a = rng.standard_normal(301_000)
    a[-1000:] *= 1e250
    b = a + rng.standard_normal(a.size) * np.abs(a) * 1e-3
    np.savez(tmp_path / "a.npz", w=a)
    np.savez(tmp_path / "b.npz", w=b)
    with open_checkpoint(str(tmp_path / "a.npz")) as ca, open_checkpoint(str(tmp_path / "b.npz")) as cb, \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        change = compare_entries("w", ca["w"], cb["w"], chunk_elements=chunk)
    assert caught == [] and change is not None
    unit = 2.0 ** -900  # exact: the oracle's values scaled into range, normed by numpy
    sa, sb = a * unit, b * unit
    rel = np.linalg.norm(sa - sb) / np.linalg.norm(sa)
    cos = float(np.dot(sa, sb)) / (np.linalg.norm(sa) * np.linalg.norm(sb))
    assert change.stats["rel_l2"] == pytest.approx(rel, rel=1e-9)
    assert change.stats["cosine"] == pytest.approx(cos, rel=1e-9)


def test_ordinary_values_keep_their_bits(tmp_path) -> None:
    """No scale where nothing overflows: the statistics are numpy's sums as they were (compared exactly)."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal(5000)
    b = a + 1e-3
    np.savez(tmp_path / "a.npz", w=a)
    np.savez(tmp_path / "b.npz", w=b)
    with open_checkpoint(str(tmp_path / "a.npz")) as ca, open_checkpoint(str(tmp_path / "b.npz")) as cb:
        change = compare_entries("w", ca["w"], cb["w"], chunk_elements=1000)
    assert change is not None
    d = np.abs(a - b)
    chunks = range(0, a.size, 1000)
    sq_d = sum(float((d[i:i + 1000] * d[i:i + 1000]).sum()) for i in chunks)
    sq_a = sum(float((a[i:i + 1000] * a[i:i + 1000]).sum()) for i in chunks)
    assert change.stats["rel_l2"] == math.sqrt(sq_d) / math.sqrt(sq_a)
