"""One comparison engine (issue 25 item 4): ``diff`` and round-trip verification agree on equal/different.

Both callers go through :func:`formats.core.comparison.compare_values`; these pairs check that a bytewise
``diff`` (no tolerance) and ``roundtrip.compare_tensor`` give the same answer, the same kind, for tensors
held in memory (compared from element chunks) and for the same tensors written to bundles (streamed as
CRC-checked bytes, or compared with ``pread`` through diff's stored-range hook).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from formats.api import open_checkpoint
from formats.core.comparison import Comparison, Digest, compare_values, tensor_digest
from formats.core.roundtrip import compare_tensor
from formats.core.sources import TensorValue
from formats.ops.compare.diff import compare_entries
from formats.tf_bundle.writer import write_checkpoint

from .test_diff import ArrayEntry

BF16 = ml_dtypes.bfloat16

# name: (a, b, what differs or None)
PAIRS: dict[str, tuple[object, object, str | None]] = {
    "exact": (np.arange(12, dtype=np.float32).reshape(3, 4), np.arange(12, dtype=np.float32).reshape(3, 4), None),
    "one value": (np.arange(6, dtype=np.int64), np.array([0, 1, 2, 3, 9, 5], dtype=np.int64), "value"),
    "nan is nan": (np.array([1.0, np.nan], dtype=np.float32), np.array([1.0, np.nan], dtype=np.float32), None),
    "nan vs number": (np.array([1.0, np.nan], dtype=np.float32), np.array([1.0, 2.0], dtype=np.float32), "value"),
    "-0.0 vs 0.0": (np.array([0.0, -0.0], dtype=np.float64), np.array([0.0, 0.0], dtype=np.float64), "value"),
    "bfloat16 same": (np.array([1.5, -2.0, 3.0], dtype=BF16), np.array([1.5, -2.0, 3.0], dtype=BF16), None),
    "bfloat16 differ": (np.array([1.5, -2.0, 3.0], dtype=BF16), np.array([1.5, -2.0, 3.5], dtype=BF16), "value"),
    "strings same": (np.array([b"a", b"bc", b""], dtype=object), np.array([b"a", b"bc", b""], dtype=object), None),
    "strings differ": (np.array([b"a", b"bc", b""], dtype=object), np.array([b"a", b"bd", b""], dtype=object),
                       "value"),
    "shape": (np.zeros((2, 3), dtype=np.float32), np.zeros((3, 2), dtype=np.float32), "shape"),
    "dtype": (np.zeros(4, dtype=np.float32), np.zeros(4, dtype=np.float64), "dtype"),
    "dtype, strings": (np.array([b"1"], dtype=object), np.array([1], dtype=np.int32), "dtype"),
    "empty": (np.zeros((0, 3), dtype=np.float32), np.zeros((0, 3), dtype=np.float32), None),
    "bool": (np.array([True, False]), np.array([True, True]), "value"),
}


def _source(value: object) -> object:
    arr = np.asarray(value)
    return TensorValue(arr, "string") if arr.dtype == object else arr


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("engine")
    a, b = root / "a" / "ckpt", root / "b" / "ckpt"
    write_checkpoint(a, {name: _source(pair[0]) for name, pair in PAIRS.items()})
    write_checkpoint(b, {name: _source(pair[1]) for name, pair in PAIRS.items()})
    return a, b


def _assert_agree(name: str, ea: Any, eb: Any, differs: str | None) -> None:
    """diff's comparison and the read-back's find the same: equal, or the same kind of difference."""
    change = compare_entries(name, ea, eb)
    problem = compare_tensor(ea, eb)
    assert (change is None) == (problem is None) == (differs is None)
    if differs is not None:
        assert change is not None and problem is not None
        assert change.kind == problem[0] == differs


@pytest.mark.parametrize("name", list(PAIRS))
def test_diff_and_roundtrip_agree_in_memory(name: str) -> None:
    a, b, differs = PAIRS[name]
    ea, eb = ArrayEntry(name, a), ArrayEntry(name, b)
    _assert_agree(name, ea, eb, differs)
    assert compare_values(ea, eb).kind == differs
    assert compare_values(ea, eb, strict=False, shape_first=True).same == (differs is None)


@pytest.mark.parametrize("name", list(PAIRS))
def test_diff_and_roundtrip_agree_on_bundles(name: str, bundles: tuple[Path, Path]) -> None:
    _, _, differs = PAIRS[name]
    with open_checkpoint(str(bundles[0])) as ca, open_checkpoint(str(bundles[1])) as cb:
        ea, eb = ca[name], cb[name]
        _assert_agree(name, ea, eb, differs)
        # a checkpoint against its own sources, and against a digest of them
        a = _source(PAIRS[name][0])
        assert compare_tensor(ea, a) is None
        assert compare_tensor(ea, Digest(*_header(a), tensor_digest(a))) is None
        assert (compare_tensor(eb, Digest(*_header(a), tensor_digest(a))) is None) == (differs is None)


def _header(source: object) -> tuple[str, tuple[int, ...]]:
    from formats.core.sources import describe

    dt, shape = describe(source)
    return dt.name, shape


def test_a_value_difference_says_where_it_is() -> None:
    a, b = np.arange(10, dtype=np.int32), np.arange(10, dtype=np.int32)
    b[7] = -1
    found = compare_values(ArrayEntry("x", a), b)
    assert found == Comparison("value", ("int32", "int32"), ((10,), (10,)), 7, 10)
    assert compare_tensor(ArrayEntry("x", a), b) == ("value", "values differ, first at element 7 of 10")


def test_an_unreadable_side_is_a_result_and_diff_raises_it() -> None:
    class Broken(ArrayEntry):
        def read(self) -> np.ndarray:
            raise ValueError("cannot read")

    a = np.zeros(3, dtype=np.float32)
    found = compare_values(Broken("x", a), a)
    assert found.kind == "unreadable" and found.message == "cannot read" and isinstance(found.error, ValueError)
    assert compare_tensor(Broken("x", a), a) == ("unreadable", "cannot read")
    with pytest.raises(ValueError, match="cannot read"):
        compare_entries("x", Broken("x", a), ArrayEntry("x", a))
