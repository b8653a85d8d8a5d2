"""Issue 38, cost per tensor: ``stats``, ``diff`` and ``verify`` read small tensors a span at a time and compute
over a whole group of them at once (formats/io/spans.py, formats/ops/inspect/row_stats.py,
formats/ops/compare/same_small.py). The contract is that nothing changes but the cost: every result is the very
bits the per-tensor path gives (``tensor_stats``, ``compare_entries``, ``TensorEntry.check``), and a damaged
tensor inside a span is named as before, with the same exit code."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import formats.ops.inspect.stats as stats_module
from formats.api import open_checkpoint
from formats.core.model import TensorEntry
from formats.io.spans import SPAN_BYTES, read_checked, small_pieces
from formats.ops.compare.diff import Tolerance, compare_entries, diff_checkpoints
from formats.ops.compare.verify import _entry_problem, verify_checkpoint
from formats.ops.inspect.row_stats import row_stats, small_stats
from formats.ops.inspect.stats import checkpoint_stats, tensor_stats
from formats.tf_bundle.writer import write_checkpoint

from .conftest import CORPUS, entries_of

DTYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32, "float64": np.float64,
          "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64, "uint8": np.uint8,
          "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64, "bool": np.bool_,
          "complex64": np.complex64, "complex128": np.complex128}
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e308, -1e308, 5e-324, 65504.0, 1e38]


class ArrayEntry(TensorEntry):
    """An in-memory tensor: what the per-tensor path reads in one chunk."""

    __slots__ = ("value",)

    def __init__(self, key: str, dtype: str, value: np.ndarray) -> None:
        super().__init__(key, value.shape, dtype, value.nbytes)
        self.value = value

    def read(self) -> np.ndarray:
        return self.value


def _values(dtype: str, n: int, seed: int, scale: float, specials: list[tuple[int, int]]) -> np.ndarray:
    """``n`` values of ``dtype`` from ``seed``, spread by ``scale``, with ``SPECIAL[j]`` put at position ``i`` for
    each ``(i, j)`` of ``specials`` (a float or complex tensor), or extreme integers (an integer one)."""
    rng = np.random.default_rng(seed)
    np_dtype = np.dtype(DTYPES[dtype])
    if np_dtype.kind in "iu":
        info = np.iinfo(np_dtype)
        out = rng.integers(info.min, info.max, n, dtype=np_dtype, endpoint=True)
        for i, j in specials:
            out[i % n] = (info.min, info.max, 0)[j % 3]
        return out
    if np_dtype.kind == "b":
        return rng.random(n) < (scale % 1)
    base = rng.standard_normal(n) * scale
    if np_dtype.kind == "c":
        base = base + 1j * rng.standard_normal(n) * scale
    for i, j in specials:
        base[i % n] = SPECIAL[j % len(SPECIAL)]
    with np.errstate(over="ignore", invalid="ignore"):
        return base.astype(np_dtype)


def _fields(stats: stats_module.TensorStats) -> str:
    """The statistics the batched path computes, as text that tells every bit (``-0.0``, ``nan``) apart."""
    return repr((stats.min, stats.max, stats.mean, stats.std, stats.l2, stats.zeros, stats.nan, stats.inf))


GROUP = st.tuples(st.sampled_from(sorted(DTYPES)), st.sampled_from([1, 2, 3, 7, 8, 9, 16, 17, 31, 100, 128, 129, 257]),
                  st.integers(1, 6), st.integers(0, 2**32 - 1),
                  st.sampled_from([1e-30, 1e-3, 0.7, 1.0, 3.5, 1e4, 1e20, 1e300]),
                  st.lists(st.tuples(st.integers(0, 300), st.integers(0, 40)), max_size=3))


@settings(max_examples=300, deadline=None)
@given(GROUP)
def test_row_stats_are_the_bits_of_the_per_tensor_path(group: tuple) -> None:
    """k tensors of one dtype and n elements: each row's statistics, bit for bit those of ``tensor_stats``; a row
    with a NaN or an Inf is left to the per-tensor path (None)."""
    dtype, n, k, seed, scale, specials = group
    values = [_values(dtype, n, seed + r, scale, specials if r % 2 else specials[:1]) for r in range(k)]
    rows = row_stats(np.stack(values), dtype in ("bool",) or np.dtype(DTYPES[dtype]).kind in "iu")
    for r, value in enumerate(values):
        one = tensor_stats(ArrayEntry(f"t{r}", dtype, value))
        if not one.finite:
            assert rows[r] is None
            continue
        assert rows[r] is not None
        assert repr((*rows[r], 0, 0)) == _fields(one)


def test_numpy_sums_rows_as_it_sums_a_flat_array_but_reduceat_does_not() -> None:
    """What the batched path rests on: ``x.sum(axis=1)[i]`` is ``x[i].sum()`` to the last bit (both pairwise),
    while ``numpy.add.reduceat`` sums sequentially and differs in the last bit for some rows."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((400, 1000)) * 10.0 ** rng.integers(-5, 5, (400, 1))
    rows = np.array([row.sum() for row in x])
    assert x.sum(axis=1).tobytes() == rows.tobytes()
    assert np.add.reduceat(x.reshape(-1), np.arange(0, x.size, 1000)).tobytes() != rows.tobytes()


def _write(prefix: Path, tensors: dict[str, np.ndarray]) -> str:
    write_checkpoint(prefix, {k: v for k, v in tensors.items()})
    return str(prefix)


def _per_tensor_json(ckpt) -> str:
    return json.dumps([tensor_stats(ckpt[key]).to_json() for key in sorted(ckpt)])


def _batched_json(ckpt, jobs: int = 1) -> str:
    return json.dumps([t.to_json() for t in checkpoint_stats(ckpt, jobs=jobs).tensors])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(GROUP, min_size=1, max_size=5), st.sampled_from([(-1,), (1, -1), (-1, 1), (1, 1, -1)]))
def test_stats_of_a_generated_bundle_are_those_of_the_per_tensor_path(groups: list, shape: tuple) -> None:
    """Mixed dtypes, element counts and shapes (with NaN, Inf, zeros, extremes) in one bundle: ``stats`` (batched)
    gives the JSON of ``tensor_stats`` over every tensor, byte for byte."""
    tensors: dict[str, np.ndarray] = {}
    for g, (dtype, n, k, seed, scale, specials) in enumerate(groups):
        for r in range(k):
            tensors[f"g{g}/t{r}"] = _values(dtype, n, seed + r, scale, specials[r % 2:]).reshape(shape)
    tensors["empty"] = np.zeros((0, 3), np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        with open_checkpoint(_write(Path(tmp) / "ckpt-1", tensors)) as ckpt:
            assert _batched_json(ckpt) == _per_tensor_json(ckpt)


@pytest.mark.parametrize("path", entries_of("tf-bundle"))
def test_stats_of_the_corpus_are_those_of_the_per_tensor_path(path: str) -> None:
    with open_checkpoint(str(CORPUS / path)) as ckpt:
        assert _batched_json(ckpt, jobs=2) == _per_tensor_json(ckpt)


@pytest.mark.parametrize("path", entries_of("tf-bundle"))
def test_diff_and_verify_of_the_corpus_are_those_of_the_per_tensor_path(path: str) -> None:
    with open_checkpoint(str(CORPUS / path)) as ca, open_checkpoint(str(CORPUS / path)) as cb:
        result = diff_checkpoints(ca, cb)
        assert (result.changed, result.same) == ([], len(ca))
        assert all(compare_entries(k, ca[k], cb[k]) is None for k in ca)
        report = verify_checkpoint(ca)
        assert [(p.where, p.message) for p in report.problems] == [
            (k, problem) for k in ca if (problem := _entry_problem(ca[k])) is not None]


def _small_bundle(tmp_path: Path, name: str = "a", count: int = 64, bump: tuple[str, ...] = ()) -> tuple[str, dict]:
    """``count`` small float32 tensors ``w_000``...; those in ``bump`` get 1 added to their first element."""
    rng = np.random.default_rng(11)
    tensors = {f"w_{i:03d}": rng.standard_normal((4, 4)).astype(np.float32) for i in range(count)}
    tensors["ints"] = np.arange(12, dtype=np.int32).reshape(3, 4)
    tensors["big"] = rng.standard_normal((200, 200)).astype(np.float32)  # 160 KB: the per-tensor path
    for key in bump:
        tensors[key] = tensors[key].copy()
        tensors[key][0, 0] += 1
    return _write(tmp_path / name / "ckpt-1", tensors), tensors


def test_the_batched_paths_are_the_ones_taken(tmp_path: Path, monkeypatch) -> None:
    """Small sound tensors never reach the per-tensor path; the big one does; the spans are few."""
    path, tensors = _small_bundle(tmp_path)
    per_tensor: list[str] = []
    engine = stats_module.tensor_stats
    monkeypatch.setattr(stats_module, "tensor_stats", lambda entry, *a: per_tensor.append(entry.key) or engine(entry, *a))
    with open_checkpoint(path) as ckpt:
        found = {t.key: t for t in checkpoint_stats(ckpt).tensors}
        assert per_tensor == ["big"]
        assert found["w_007"].mean == float(tensors["w_007"].astype(np.float64).sum() / 16)
        assert (found["ints"].min, found["ints"].max, found["ints"].zeros) == (0, 11, 1)
        batches = list(small_pieces(list(ckpt.values())))
        assert [sorted(i for i, _ in b) for b in batches] == [sorted(i for i, k in enumerate(ckpt) if k != "big")]


def test_spans_hold_a_bounded_number_of_bytes(tmp_path: Path) -> None:
    path, _ = _small_bundle(tmp_path, count=300)
    with open_checkpoint(path) as ckpt:
        entries = list(ckpt.values())
        batches = list(small_pieces(entries, budget=1024))
        assert len(batches) > 4
        assert all(sum(len(piece) for _, piece in b) <= 1024 for b in batches)
        assert sorted(i for b in batches for i, _ in b) == [i for i, e in enumerate(entries) if e.nbytes <= 64 << 10]
        fields = small_stats(entries, 1 << 20, budget=1024)
        assert fields == small_stats(entries, 1 << 20, budget=SPAN_BYTES)
        assert small_stats(entries, 8) == [None] * len(entries)  # more elements than a chunk: per tensor


def _corrupt(path: str, key: str) -> None:
    with open_checkpoint(path) as ckpt:
        stored = ckpt[key].stored_range()
        assert stored is not None
        at = stored[1] + 5
    data = Path(path + ".data-00000-of-00001")
    raw = bytearray(data.read_bytes())
    raw[at] ^= 0x40
    data.write_bytes(bytes(raw))


def test_a_damaged_small_tensor_in_a_span_is_named_through_the_cli(run_cli, tmp_path: Path) -> None:
    a, _ = _small_bundle(tmp_path, "a")
    b, _ = _small_bundle(tmp_path, "b")
    _corrupt(b, "w_020")
    with open_checkpoint(b) as cb:
        assert read_checked([cb[k].stored_range() for k in ("w_019", "w_020", "w_021")])[1] is None
    for argv in (("stats", b, "--json"), ("stats", b), ("diff", a, b), ("diff", b, a)):
        result = run_cli(*argv)
        assert result.exit_code == 3, argv
        assert "tensor 'w_020': checksum mismatch" in result.stderr, argv
        assert "w_019" not in result.stderr and "w_021" not in result.stderr
    result = run_cli("verify", b, "--json")
    assert result.exit_code == 1
    problems = json.loads(result.stdout)["problems"]
    assert [p["where"] for p in problems] == ["w_020"]
    assert "checksum mismatch" in problems[0]["message"]
    assert run_cli("verify", a).exit_code == 0


def test_diff_of_small_pairs_is_that_of_the_per_pair_path(tmp_path: Path) -> None:
    """Equal pairs found in spans, changed ones compared as before: the same changes with the same statistics."""
    a, _ = _small_bundle(tmp_path, "a")
    b, _ = _small_bundle(tmp_path, "b", bump=("w_003", "w_040"))
    with open_checkpoint(a) as ca, open_checkpoint(b) as cb:
        result = diff_checkpoints(ca, cb)
        expected = [c for k in sorted(ca) if (c := compare_entries(k, ca[k], cb[k])) is not None]
        assert [c.to_json() for c in result.changed] == [c.to_json() for c in expected]
        assert [c.key for c in result.changed] == ["w_003", "w_040"]
        assert result.same == len(ca) - 2
        close = diff_checkpoints(ca, cb, tolerance=Tolerance.of(atol=2.0))  # a tolerance: per pair, as before
        assert (close.changed, close.same) == ([], len(ca))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(GROUP, min_size=1, max_size=5), st.integers(0, 2**32 - 1))
def test_diff_of_generated_bundles_is_that_of_the_per_pair_path(groups: list, seed: int) -> None:
    """Mixed dtypes and sizes, some pairs equal, some changed in a few elements or all, some with NaN or Inf:
    ``diff`` (equal and changed small pairs found in spans) gives the per-pair path's changes, statistics
    and all, byte for byte as JSON."""
    rng = np.random.default_rng(seed)
    a: dict[str, np.ndarray] = {}
    b: dict[str, np.ndarray] = {}
    for g, (dtype, n, k, base, scale, specials) in enumerate(groups):
        for r in range(k):
            key = f"g{g}/t{r}"
            a[key] = _values(dtype, n, base + r, scale, specials[r % 2:])
            how = rng.integers(0, 3)
            b[key] = a[key] if how == 0 else _values(dtype, n, base + r + 1000 * how, scale, specials[:how - 1])
            if how == 1:  # a few elements changed
                b[key] = a[key].copy()
                b[key][: max(1, n // 5)] = _values(dtype, n, base + 7, scale, [])[: max(1, n // 5)]
    with tempfile.TemporaryDirectory() as tmp:
        with open_checkpoint(_write(Path(tmp) / "a" / "ckpt-1", a)) as ca, \
                open_checkpoint(_write(Path(tmp) / "b" / "ckpt-1", b)) as cb:
            result = diff_checkpoints(ca, cb)
            expected = [c for k in sorted(ca) if (c := compare_entries(k, ca[k], cb[k])) is not None]
            assert json.dumps([c.to_json() for c in result.changed]) == json.dumps([c.to_json() for c in expected])
            assert result.same == len(ca) - len(expected)


@pytest.mark.parametrize("path", sorted(str(p) for p in CORPUS.glob("*/*.index"))[:12] + ["generated"])
def test_ranges_found_together_are_those_found_one_by_one(path: str, tmp_path: Path) -> None:
    """:func:`~formats.io.spans.small_ranges` (a bundle's rows located a data layout at a time) gives what
    :func:`~formats.io.spans.small_range` gives each entry on its own, for every key, with any size bound."""
    from formats.io.spans import small_range, small_ranges

    if path == "generated":  # tensors of several layouts, interleaved, a partitioned one and an empty one among them
        values = {f"t{i:03d}": np.full((i % 3 + 1,) * (i % 2 + 1), i, [np.float32, np.int64, np.float16][i % 3])
                  for i in range(60)}
        values["empty"] = np.zeros((0, 4), np.float32)
        write_checkpoint(tmp_path / "ckpt", values)
        path = str(tmp_path / "ckpt.index")
    with open_checkpoint(path[:-len(".index")]) as ckpt:
        entries = ckpt.entries_of(list(ckpt))
        for most in (0, 8, 40, 1 << 16):
            assert small_ranges(entries, most) == [small_range(e, most) for e in entries]
        assert small_ranges(entries[::-1] + entries[:3], 64) == [small_range(e, 64) for e in entries[::-1] + entries[:3]]


def test_a_layout_is_checked_once_per_unit_not_once_per_tensor(tmp_path: Path, monkeypatch) -> None:
    """``verify`` and ``stats`` of 3,000 tiny tensors of one layout ask the reader whether that layout's bytes
    lie as stored a few times (once per unit and chunk), not once per tensor (3,000 times before)."""
    from formats.tf_bundle.reader import BundleReader

    write_checkpoint(tmp_path / "ckpt", ((f"v/{i}", np.full((4,), i, np.float32)) for i in range(3000)))
    asked: list[int] = []
    located = BundleReader._range
    monkeypatch.setattr(BundleReader, "_range", lambda self, *a: asked.append(1) or located(self, *a))
    with open_checkpoint(tmp_path / "ckpt") as ckpt:
        assert verify_checkpoint(ckpt, jobs=1).ok
        assert 0 < len(asked) <= 8, len(asked)
        asked.clear()
        found = checkpoint_stats(ckpt, jobs=1)
        assert 0 < len(asked) <= 8, len(asked)
        assert [(t.key, t.min, t.max, t.mean) for t in found.tensors[:2]] == [("v/0", 0.0, 0.0, 0.0),
                                                                              ("v/1", 1.0, 1.0, 1.0)]


def test_stats_of_small_tensors_make_no_tensor_object(tmp_path: Path, monkeypatch) -> None:
    """``stats`` finds a bundle's small tensors from its index's columns (:func:`formats.io.spans.small_groups`): no
    tensor object is made for one summarised a span at a time (one each before: 3,000 here), only for those the
    per-tensor path reads (a NaN, a big one), and the statistics are those of the per-tensor path."""
    from formats.tf_bundle.checkpoint import BundleTensor

    values = {f"v/{i}": np.full((4,), i, np.float32) for i in range(3000)}
    values["v/nan"] = np.array([1.0, np.nan], np.float32)
    values["v/big"] = np.arange(40_000, dtype=np.float32)
    write_checkpoint(tmp_path / "ckpt", values)
    made: list[str] = []
    init = BundleTensor.__init__
    monkeypatch.setattr(BundleTensor, "__init__", lambda self, *a: made.append(a[1]) or init(self, *a))
    with open_checkpoint(tmp_path / "ckpt") as ckpt:
        found = checkpoint_stats(ckpt, jobs=1).tensors
        assert len(made) == 2, len(made)
        monkeypatch.setattr(BundleTensor, "__init__", init)
        expected = [tensor_stats(ckpt[t.key]) for t in found]
    assert [t.key for t in found] == sorted(values) and found == expected
    assert (found[-1].key, found[-1].nan, found[-1].max) == ("v/nan", 1, 1.0)


def test_small_groups_from_columns_are_those_from_entries(tmp_path: Path) -> None:
    """A bundle's :meth:`small_groups` (from its columns) gives the tensors, bytes and order that the generic path
    (its entries read with :func:`~formats.io.spans.small_pieces`) gives, for every budget; unknown keys raise."""
    from formats.core.errors import TensorNotFoundError
    from formats.io.spans import small_groups

    path, _ = _small_bundle(tmp_path, count=300)

    class Entries:  # what small_groups sees of a checkpoint without a small_groups of its own
        def __init__(self, ckpt) -> None:
            self.entries_of = ckpt.entries_of

    def flat(batches) -> list:
        return sorted((i, dtype, shape, bytes(piece)) for batch in batches
                      for dtype, shape, positions, pieces in batch for i, piece in zip(positions, pieces))

    with open_checkpoint(path) as ckpt:
        keys = list(ckpt)[::-1]
        for budget in (64, 1024, SPAN_BYTES):
            def want(dtype: str, shape: tuple) -> bool:
                return dtype != "int32"
            ours = flat(small_groups(ckpt, keys, want, budget))
            assert ours == flat(small_groups(Entries(ckpt), keys, want, budget))  # type: ignore[arg-type]
            assert len(ours) == sum(1 for e in ckpt.entries_of(keys) if e.dtype != "int32" and e.nbytes <= 64 << 10)
        with pytest.raises(TensorNotFoundError):
            list(small_groups(ckpt, ["nope"], want))


def test_stats_hold_columns_not_an_object_per_tensor(tmp_path: Path, monkeypatch) -> None:
    """The result of ``stats`` keeps the statistics of the tensors summarised a span at a time as columns: no
    ``TensorStats`` is made until a row is read (3,000 of them held before), only for those the per-tensor path
    read (a NaN, a big one); read back, the rows are those of the per-tensor path, by index, slice and iteration."""
    made: list[str] = []
    init = stats_module.TensorStats.__init__
    monkeypatch.setattr(stats_module.TensorStats, "__init__", lambda self, *a: made.append(a[0]) or init(self, *a))
    values = {f"v/{i:04d}": np.full((3,), i - 1500, np.int64) for i in range(3000)}
    values["w/nan"] = np.array([1.0, np.nan], np.float32)
    values["w/big"] = np.arange(40_000, dtype=np.float32)
    write_checkpoint(tmp_path / "ckpt", values)
    with open_checkpoint(tmp_path / "ckpt") as ckpt:
        result = checkpoint_stats(ckpt, jobs=2)
        assert sorted(made) == ["w/big", "w/nan"]
        expected = [tensor_stats(ckpt[key]) for key in sorted(values)]
    rows = result.tensors
    assert len(rows) == 3002 and rows == expected and list(rows) == expected
    assert rows[0] == expected[0] and rows[-1] == expected[-1] and rows[1499] == expected[1499]
    assert rows[510:1030] == expected[510:1030] and rows[2990:] == expected[2990:] and rows[5:2] == []
    assert rows[::700] == expected[::700]
    assert [t.key for t in result.nonfinite] == ["w/nan"]
    assert (rows[0].min, rows[0].max, type(rows[0].min)) == (-1500, -1500, int)
    with pytest.raises(IndexError):
        rows[3002]


@pytest.mark.parametrize("dtype", ["int64", "uint64", "float64", "float32", "bfloat16", "complex64", "bool", "int8"])
def test_stats_columns_keep_every_extreme_exact(tmp_path: Path, dtype: str) -> None:
    """min and max held as 8 bytes of their kind: int64 and uint64 extremes past float64's 2**53, a float's sign of
    zero and its subnormals come back as the per-tensor path gives them, as the same Python type; a unit's part
    pickles (a cluster's worker sends it) to the same rows."""
    import pickle

    from formats.discover import units
    from formats.ops.inspect.stats import stats_unit

    np_dtype = np.dtype(DTYPES[dtype]) if dtype in DTYPES else np.dtype(dtype)
    if np_dtype.kind in "iu":
        info = np.iinfo(np_dtype)
        rows = [[info.min, info.max], [info.max - 1, info.max], [info.min + 1, 0], [7, 9]]
    elif np_dtype.kind == "b":
        rows = [[True, False], [False, False], [True, True], [True, False]]
    else:
        rows = [[-0.0, 5e-324 if dtype == "float64" else 1.5], [1e30, -1e30], [0.0, 0.0], [3.25, -2.5]]
    values = {f"t/{i}": np.array(row, dtype=np_dtype if np_dtype.kind in "iub" else None).astype(np_dtype)
              for i, row in enumerate(rows)}
    if np_dtype.kind in "iu":
        assert values["t/0"].tolist() == rows[0]  # the extremes themselves, through no float
    write_checkpoint(tmp_path / "ckpt", values)
    with open_checkpoint(tmp_path / "ckpt") as ckpt:
        found = checkpoint_stats(ckpt, jobs=1).tensors
        expected = [tensor_stats(ckpt[key]) for key in sorted(values)]
        ref = units.source_ref(ckpt, "test-columns")
        shipped = pickle.loads(pickle.dumps(stats_unit(ref, tuple(sorted(values)))))
        units._opened.pop(ref).close()
    assert [_fields(t) for t in found] == [_fields(t) for t in expected]
    assert [(type(t.min), type(t.max)) for t in found] == [(type(t.min), type(t.max)) for t in expected]
    assert list(shipped) == expected
