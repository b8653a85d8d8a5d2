"""`ckpt stats` and formats.ops.inspect.stats: numbers checked against numpy on the corpus, --check-finite on a checkpoint
written with a NaN, filters, chunking, a golden table."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from formats import write_checkpoint
from formats.api import open_checkpoint
from formats.ops.inspect.stats import tensor_stats

from .conftest import CORPUS, MANIFEST
from .test_diff import GOLDEN, memory_checkpoint, read_all


def as_float64(value: np.ndarray) -> np.ndarray:
    """A value as the docs say the statistics see it: float64, flat (complex: magnitudes; bfloat16 and other
    numpy extension types through float32)."""
    x = value
    if x.dtype.kind == "c":
        x = np.abs(x.astype(np.complex128))
    elif x.dtype.kind not in "fiub":
        x = x.astype(np.float32)
    return x.astype(np.float64).ravel()


def expected(value: np.ndarray) -> dict[str, Any]:
    """Statistics straight from numpy, the way the docs define them."""
    x = as_float64(value)
    finite = x[np.isfinite(x)]
    integral = value.dtype.kind in "iub"
    out: dict[str, Any] = {"size": value.size, "zeros": int((x == 0).sum()), "nan": int(np.isnan(x).sum()),
                           "inf": int(np.isinf(x).sum())}
    if finite.size:
        lo, hi = (int(value.min()), int(value.max())) if integral else (finite.min(), finite.max())
        out.update(min=lo, max=hi, mean=finite.mean(), std=finite.std(), l2=np.linalg.norm(finite))
    else:
        out.update(min=None, max=None, mean=None, std=None, l2=None)
    return out


def close(got: dict[str, Any], want: dict[str, Any]) -> None:
    for k, v in want.items():
        if isinstance(v, float):
            assert got[k] == pytest.approx(v, rel=1e-9, abs=1e-9), k
        else:
            assert got[k] == v, k


@pytest.mark.parametrize("rel", ["tf1_estimator/model.ckpt-200", "tf2_mixed/all_dtypes/ckpt-1",
                                 "tf1_partitioned/model.ckpt-200", "seed_slots/tf_ckpts/ckpt-5"])
def test_stats_json_matches_numpy(run_cli, rel):
    values = read_all(rel)
    result = run_cli("stats", "--json", CORPUS / rel)
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["path"], doc["nonfinite"]) == (str(CORPUS / rel), [])
    assert [t["key"] for t in doc["tensors"]] == sorted(MANIFEST[rel]["tensors"])
    for t in doc["tensors"]:
        meta = MANIFEST[rel]["tensors"][t["key"]]
        assert (t["shape"], t["dtype"]) == (meta["shape"], meta["dtype"])
        if meta["dtype"] in ("string", "variant"):
            assert {k: t[k] for k in ("min", "max", "mean", "std", "l2", "zeros", "nan", "inf")} == \
                dict.fromkeys(("min", "max", "mean", "std", "l2", "zeros", "nan", "inf"))
            assert t["size"] == int(np.prod(meta["shape"]))
        else:
            close(t, expected(values[t["key"]]))


def test_int64_extremes_are_exact():
    rel = "tf2_mixed/all_dtypes/ckpt-1"
    key = "typed/int64/.ATTRIBUTES/VARIABLE_VALUE"
    value = read_all(rel)[key]
    with open_checkpoint(CORPUS / rel) as ckpt:
        s = tensor_stats(ckpt[key])
    assert (s.min, s.max) == (int(value.min()), int(value.max()))
    assert isinstance(s.min, int)


def _write_with(tmp_path: Path, key: str, index: int, bad: float) -> Path:
    values = read_all("tf1_estimator/model.ckpt-200")
    values[key] = values[key].copy()
    values[key].reshape(-1)[index] = bad
    prefix = tmp_path / "run" / "model.ckpt-300"
    write_checkpoint(prefix, values)
    return prefix


def test_check_finite_names_the_tensor_with_a_nan(run_cli, tmp_path):
    prefix = _write_with(tmp_path, "dnn/hiddenlayer_1/kernel", 37, np.nan)
    result = run_cli("stats", "--check-finite", prefix)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[-2:] == [f"{prefix}: 13 tensors, 1 with NaN or Inf",
                          "not finite dnn/hiddenlayer_1/kernel: 1 NaN, 0 Inf"]
    doc = json.loads(run_cli("stats", "--json", prefix).stdout)
    assert doc["nonfinite"] == ["dnn/hiddenlayer_1/kernel"]
    row = next(t for t in doc["tensors"] if t["key"] == "dnn/hiddenlayer_1/kernel")
    assert (row["nan"], row["inf"], row["size"]) == (1, 0, 100)
    # without --check-finite the NaN is reported but the exit status stays 0
    assert run_cli("stats", prefix).exit_code == 0
    assert run_cli("stats", "--check-finite", CORPUS / "tf1_estimator/model.ckpt-200").exit_code == 0


def test_check_finite_counts_inf_and_stats_skip_it(run_cli, tmp_path):
    prefix = _write_with(tmp_path, "dnn/logits/bias", 1, -np.inf)
    result = run_cli("stats", "--check-finite", "--json", prefix, "dnn/logits/bias")
    assert result.exit_code == 1
    (row,) = json.loads(result.stdout)["tensors"]
    original = read_all("tf1_estimator/model.ckpt-200")["dnn/logits/bias"].astype(np.float64)
    kept = original[[0, 2]]
    assert (row["inf"], row["nan"]) == (1, 0)
    close(row, {"min": kept.min(), "max": kept.max(), "mean": kept.mean(), "l2": float(np.linalg.norm(kept))})


def test_filters_keys_and_globs(run_cli):
    path = CORPUS / "tf1_estimator/model.ckpt-200"
    doc = json.loads(run_cli("stats", "--json", path, "dnn/*/kernel", "global_step").stdout)
    assert [t["key"] for t in doc["tensors"]] == ["dnn/hiddenlayer_0/kernel", "dnn/hiddenlayer_1/kernel",
                                                   "dnn/logits/kernel", "global_step"]
    assert doc["tensors"][-1]["min"] == doc["tensors"][-1]["max"] == 200
    result = run_cli("stats", path, "no/such/key")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == f"ckpt: error: {path}: no key matches 'no/such/key'"
    result = run_cli("stats", "--json", path, "zzz*")
    assert result.exit_code == 1
    assert json.loads(result.stdout) == {"ok": False, "exit_code": 1, "error": f"{path}: no key matches 'zzz*'",
                                         "hint": "patterns are exact keys or globs on the whole key"}


def test_chunked_stats_equal_whole(tmp_path):
    with open_checkpoint(CORPUS / "tf2_mixed/all_dtypes/ckpt-1") as ckpt:
        for entry in ckpt.values():
            if entry.dtype in ("string", "variant"):
                continue
            small, whole = tensor_stats(entry, chunk_elements=5).to_json(), tensor_stats(entry).to_json()
            close(small, {k: v for k, v in whole.items()})


def test_memory_checkpoint_nan_and_complex_nan():
    ckpt = memory_checkpoint("m", {"c": np.array([1 + 1j, np.nan + 0j, 0j]),
                                   "f": np.array([np.nan, np.nan], np.float16)})
    c, f = tensor_stats(ckpt["c"]), tensor_stats(ckpt["f"])
    assert (c.nan, c.inf, c.zeros, c.max) == (1, 0, 1, pytest.approx(2 ** 0.5))
    assert (f.nan, f.min, f.mean, f.l2) == (2, None, None, None)


def test_corrupt_tensor_is_an_error(run_cli, corpus_copy):
    folder = corpus_copy("tf1_estimator")
    data = folder / "model.ckpt-1.data-00000-of-00001"
    blob = bytearray(data.read_bytes())
    blob[5] ^= 1
    data.write_bytes(bytes(blob))
    result = run_cli("stats", folder / "model.ckpt-1")
    assert result.exit_code == 3 and "checksum mismatch" in result.stderr


def test_golden_table(run_cli, monkeypatch):
    monkeypatch.chdir(CORPUS)
    result = run_cli("stats", "tf1_estimator/model.ckpt-200")
    assert result.stdout == (GOLDEN / "stats_estimator.txt").read_text()


def test_partitioned_variables_stream_slice_by_slice():
    import numpy as np

    import formats
    from formats.core.values import iter_chunks
    from formats.tf_bundle.checkpoint import _row_partitions

    from .conftest import CORPUS

    with formats.open_checkpoint(CORPUS / "tf1_partitioned/model.ckpt-200") as ckpt:
        entry = ckpt["input_layer/embedding/weights"]
        reader, dt, parts = _row_partitions(entry)
        assert [p.shape for p in parts] == [(33, 8), (32, 8), (32, 8)]
        streamed = np.concatenate(list(iter_chunks(entry, chunk_elements=50)))
        assert np.array_equal(streamed, entry.read().reshape(-1))
    with formats.open_checkpoint(CORPUS / "tf2_mixed/sharded/ckpt") as ckpt:  # split along both axes
        entry = ckpt["w/1/.ATTRIBUTES/VARIABLE_VALUE"]
        assert _row_partitions(entry) is None
        assert np.array_equal(np.concatenate(list(iter_chunks(entry))), entry.read().reshape(-1))


KERAS2_RUN = CORPUS / "seed_keras2" / "tf_ckpts"
# tf-keras' Adam keeps its slots in optimizer._variables: [iterations, m(kernel), v(kernel), m(bias), v(bias)]
KERAS2_SLOTS = {"optimizer/_variables/1/.ATTRIBUTES/VARIABLE_VALUE": ("Adam/m/net/dense/kernel", "slot"),
                "optimizer/_variables/2/.ATTRIBUTES/VARIABLE_VALUE": ("Adam/v/net/dense/kernel", "slot"),
                "optimizer/_variables/3/.ATTRIBUTES/VARIABLE_VALUE": ("Adam/m/net/dense/bias", "slot"),
                "optimizer/_variables/4/.ATTRIBUTES/VARIABLE_VALUE": ("Adam/v/net/dense/bias", "slot")}


def test_names_as_ls_shows_them(run_cli):
    """Issue 24, item 12: stats showed only optimizer/_variables/N keys; --names says what each one is."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "ckpt_cli", "--no-color", "stats", "--names",
                           str(KERAS2_RUN / "ckpt-10"), "optimizer/_variables/*"], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "250"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:5] == ["key", "name", "role", "dtype", "shape"]
    assert {line.split()[0]: tuple(line.split()[1:3]) for line in lines[1:-1]} == KERAS2_SLOTS
    doc = json.loads(run_cli("stats", "--names", "--json", KERAS2_RUN / "ckpt-10", "optimizer/_variables/*").stdout)
    assert {t["key"]: (t["name"], t["role"]) for t in doc["tensors"]} == KERAS2_SLOTS
    plain = json.loads(run_cli("stats", "--json", KERAS2_RUN / "ckpt-10", "optimizer/_variables/*").stdout)
    assert "name" not in plain["tensors"][0]


@pytest.mark.parametrize("values", [[1e300, -1e300, 3e300], [1e200] * 3, [1e200] * 100_000, [1.5e154, 1e-300, -2.0]],
                         ids=["spread", "equal", "equal-chunked", "squares-overflow"])
def test_std_of_values_whose_squares_overflow_is_numpys(tmp_path, values):
    """Chan's correction is not applied to a first chunk: it was ``inf * 0``, a NaN std where numpy's is inf (or 0
    for equal values). One chunk or many (a 1,000-element chunk below), the per-tensor and the batched path."""
    array = np.array(values)
    write_checkpoint(str(tmp_path / "c"), {"t": array})
    with open_checkpoint(str(tmp_path / "c")) as ckpt:
        whole, chunked = tensor_stats(ckpt["t"]), tensor_stats(ckpt["t"], chunk_elements=1000)
    with np.errstate(over="ignore"):
        want = float(np.std(array))
    assert whole.std == want  # one chunk: numpy's own computation, inf where a deviation's square overflows
    # in chunks of 1,000 equal values every chunk's mean is exact: the true std, 0 (numpy's mean of 100,000 is off
    # by an ulp, and the deviations' squares overflow)
    assert chunked.std == (0.0 if len(set(values)) == 1 else want)
