"""``ckpt average``: means computed independently in float64 (one rounding to nearest even), the rest from the
newest input, every disagreement listed before anything is written."""
from __future__ import annotations

import json
import shutil

import ml_dtypes
import numpy as np
import pytest

from formats import average, open_checkpoint
from formats.tf_bundle.writer import write_checkpoint

from .conftest import CORPUS
from .test_edit_values import reference_round

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = {"dense/kernel": ((3, 4), np.float32), "dense/bias": ((4,), BF16), "emb": ((5, 2), np.float16),
          "w64": ((2,), np.float64)}


def expected_mean(arrays: list[np.ndarray]) -> np.ndarray:
    """numpy's mean in float64, rounded once to the arrays' dtype."""
    wide = np.mean(np.stack([a.astype(np.float64) for a in arrays]), axis=0)
    dtype = arrays[0].dtype
    if dtype == BF16:
        return reference_round(wide.reshape(-1), BF16).reshape(wide.shape)
    return wide.astype(dtype)


def synthetic(step: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {name: (rng.standard_normal(shape) * 4).astype(dtype) for name, (shape, dtype) in FLOATS.items()}
    out.update({"dense/kernel/Adam": rng.standard_normal((3, 4)).astype(np.float32),
                "dense/kernel/Adam_1": rng.random((3, 4)).astype(np.float32),
                "beta1_power": np.float32(0.9 ** step), "global_step": np.int64(step),
                "count": np.int32(step * 7), "vocab": np.array([b"a%d" % step, b"b"], dtype=object)})
    return out


@pytest.fixture
def run(tmp_path):
    """Three name-based checkpoints of one run, steps 10, 20, 30."""
    values = {step: synthetic(step, step) for step in (10, 20, 30)}
    for step, tensors in values.items():
        write_checkpoint(tmp_path / "run" / f"model.ckpt-{step}", tensors)
    return tmp_path / "run", values


def test_floats_are_the_mean_and_everything_else_the_newest(run, tmp_path, run_cli):
    folder, values = run
    out = tmp_path / "avg" / "model.ckpt-30"
    args = [folder / f"model.ckpt-{s}" for s in (30, 10, 20)]  # the newest is found by step
    result = run_cli("average", *args, "-o", out)
    assert result.exit_code == 0, result.output
    assert "mean of 3" in result.stdout and "4 mean, 6 newest" in result.stdout
    with open_checkpoint(out) as ckpt:
        assert sorted(ckpt) == sorted(values[30])
        for key in FLOATS:
            got, want = ckpt[key].read(), expected_mean([values[s][key] for s in (10, 20, 30)])
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8), err_msg=key)
        for key in ("dense/kernel/Adam", "dense/kernel/Adam_1", "beta1_power", "global_step", "count", "vocab"):
            np.testing.assert_array_equal(ckpt[key].read(), values[30][key], err_msg=key)


def test_drop_optimizer_leaves_out_slots_and_optimizer_state(run, tmp_path):
    folder, values = run
    out = tmp_path / "avg" / "model.ckpt"
    result = average([folder / f"model.ckpt-{s}" for s in (10, 20, 30)], out, drop_optimizer=True)
    assert result.ok and result.written.verified
    with open_checkpoint(out) as ckpt:
        assert sorted(ckpt) == sorted([*FLOATS, "count", "vocab"])
    assert {a.key: a.action for a in result.plan.actions} == {
        **{k: "mean" for k in FLOATS}, "count": "newest", "vocab": "newest", "dense/kernel/Adam": "drop",
        "dense/kernel/Adam_1": "drop", "beta1_power": "drop", "global_step": "drop"}


def test_a_directorys_last_n_by_step(tmp_path, run_cli, corpus_copy):
    folder = corpus_copy("seed_slots") / "tf_ckpts"
    out = tmp_path / "avg" / "ckpt-5"
    result = run_cli("average", folder, "--last", "2", "-o", out, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["inputs"] == [str(folder / "ckpt-4"), str(folder / "ckpt-5")]
    with open_checkpoint(folder / "ckpt-4") as a, open_checkpoint(folder / "ckpt-5") as b, \
            open_checkpoint(out) as avg:
        for key in avg:
            entry = b[key]
            if entry.role == "variable" and entry.dtype == "float32":
                want = ((a[key].read().astype(np.float64) + entry.read()) / 2).astype(np.float32)
            else:
                want = entry.read()
            got = avg[key].read()
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes() if want.dtype != object else \
                list(got.reshape(-1)) == list(want.reshape(-1)), key
    assert {k["action"] for k in report["keys"] if "net/l1" in k["key"] and "SLOT" not in k["key"]} == {"mean"}


def test_keras_weight_files(tmp_path):
    h5py = pytest.importorskip("h5py")
    paths = []
    for i, scale in enumerate((1.0, 2.0, -0.5)):
        path = tmp_path / f"weights-{i}.h5"
        shutil.copy(CORPUS / "keras2_tagger/tagger_weights.h5", path)
        with h5py.File(path, "r+") as f:
            f.visititems(lambda name, obj, s=scale: obj.__setitem__((), obj[()] * s)
                         if isinstance(obj, h5py.Dataset) and obj.dtype.kind == "f" else None)
        paths.append(path)
    out = tmp_path / "avg.h5"
    result = average(paths, out, order="given")
    assert result.ok and result.written.format == "keras2-h5"
    with open_checkpoint(paths[0]) as first, open_checkpoint(out) as avg:
        assert sorted(avg) == sorted(first)
        for key in avg:
            base = first[key].read()
            want = (base.astype(np.float64) * (1.0 + 2.0 - 0.5) / 3).astype(base.dtype)
            np.testing.assert_array_equal(avg[key].read(), want, err_msg=key)


def test_v1_checkpoints(tmp_path):
    paths = [CORPUS / "tf1_v1_adam/model.ckpt-1", CORPUS / "tf1_v1_adam/model.ckpt-30"]
    out = tmp_path / "avg" / "model.ckpt"
    result = average(paths, out)
    assert result.ok and result.written.format == "tf-name"
    with open_checkpoint(paths[0]) as a, open_checkpoint(paths[1]) as b, open_checkpoint(out) as avg:
        assert sorted(avg) == sorted(b)
        means = 0
        for key in avg:
            entry = b[key]
            if entry.role == "variable" and entry.dtype in ("float32", "float64"):
                want = ((a[key].read().astype(np.float64) + entry.read()) / 2).astype(entry.read().dtype)
                means += 1
            else:
                want = entry.read()
            np.testing.assert_array_equal(avg[key].read(), want, err_msg=key)
        assert means == sum(1 for act in result.plan.actions if act.action == "mean") > 0


# -- refusals --------------------------------------------------------------------------------------
def test_every_disagreement_is_listed_and_nothing_written(tmp_path, run_cli):
    base = synthetic(1, 1)
    lacking = {k: v for k, v in base.items() if k != "emb"}
    reshaped = dict(base, w64=np.zeros(3))
    retyped = dict(base, count=np.int64(3))
    for name, tensors in (("a", base), ("b", lacking), ("c", reshaped), ("d", retyped)):
        write_checkpoint(tmp_path / name / "ckpt", tensors)
    out = tmp_path / "out" / "ckpt"
    result = run_cli("average", *(tmp_path / n / "ckpt" for n in "abcd"), "-o", out, "--json")
    assert result.exit_code == 1 and not out.parent.exists()
    problems = [(p["kind"], p["key"], p["message"]) for p in json.loads(result.stdout)["problems"]]
    a, b, c, d = (str(tmp_path / n / "ckpt") for n in "abcd")
    assert problems == [
        ("dtype", "count", f"dtypes differ: int32 in {a}, int32 in {b}, int32 in {c}, int64 in {d}"),
        ("missing", "emb", f"not in {b}"),
        ("shape", "w64", f"shapes differ: [2] in {a}, [2] in {b}, [3] in {c}, [2] in {d}"),
    ]


def test_state_taken_from_the_newest_may_change_its_shape(tmp_path, run_cli):
    """An iterator's serialized state (TensorFlow 2.21's grows from 5 to 6 items between saves) and a growing
    vocabulary come from the newest input whatever their shapes; a variable averaged must keep its shape."""
    steps = {}
    for step, n in ((1, 5), (2, 6), (3, 6)):
        steps[step] = dict(synthetic(step, step), **{"input/ITERATOR_STATE": np.arange(n, dtype=np.int64) * step,
                                                     "vocab": np.array([b"w%d" % i for i in range(n)], dtype=object)})
        write_checkpoint(tmp_path / "run" / f"ckpt-{step}", steps[step])
    out = tmp_path / "avg" / "ckpt-3"
    result = run_cli("average", *(tmp_path / "run" / f"ckpt-{s}" for s in (1, 2, 3)), "-o", out)
    assert result.exit_code == 0, result.output
    with open_checkpoint(out) as ckpt:
        assert ckpt["input/ITERATOR_STATE"].role == "iterator"
        assert ckpt["input/ITERATOR_STATE"].read().tolist() == [0, 3, 6, 9, 12, 15]
        assert ckpt["vocab"].read().tolist() == [b"w0", b"w1", b"w2", b"w3", b"w4", b"w5"]
        np.testing.assert_array_equal(ckpt["w64"].read(), expected_mean([steps[s]["w64"] for s in (1, 2, 3)]))
    write_checkpoint(tmp_path / "run" / "ckpt-4", dict(steps[3], w64=np.zeros(3)))
    refused = run_cli("average", *(tmp_path / "run" / f"ckpt-{s}" for s in (2, 3, 4)), "-o", tmp_path / "no" / "c")
    assert refused.exit_code == 1 and "w64" in refused.output and "ITERATOR_STATE" not in refused.output


def test_inputs_of_different_formats(tmp_path, run_cli):
    result = run_cli("average", CORPUS / "seed_slots/tf_ckpts/ckpt-5", CORPUS / "tf1_adam/model.ckpt-200",
                     "-o", tmp_path / "o")
    assert result.exit_code == 1 and "the inputs are of different formats: ckpt-5 tf-object, model.ckpt-200 " \
                                     "tf-name" in result.stderr


@pytest.mark.parametrize("args, message", [
    ([CORPUS / "tf1_adam/model.ckpt-200"], "at least 2 checkpoints"),
    ([CORPUS / "tf1_adam"], "is a directory: give --last N"),
    ([CORPUS / "tf1_adam", "--last", "3"], "2 checkpoints with a step found, 3 wanted"),
    ([CORPUS / "tf1_adam", CORPUS / "tf1_estimator", "--last", "2"], "--last N takes one directory"),
    ([CORPUS / "tf1_adam", "--last", "1"], "1 is not in the range"),
])
def test_usage_errors(tmp_path, run_cli, args, message):
    result = run_cli("average", *args, "-o", tmp_path / "o")
    assert result.exit_code == 2 and message in result.output
    assert not list(tmp_path.iterdir())


def test_a_corrupt_input_stops_the_write_and_leaves_nothing(tmp_path, run_cli, corpus_copy):
    folder = corpus_copy("seed_slots") / "tf_ckpts"
    with open_checkpoint(folder / "ckpt-4") as ckpt:
        raw = ckpt.reader.entries[b"net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE"]
        data = ckpt.reader.data_paths[raw.shard_id]
    with open(data, "r+b") as f:  # flip one byte of the kernel: its CRC32C no longer matches
        f.seek(raw.offset)
        byte = f.read(1)
        f.seek(raw.offset)
        f.write(bytes([byte[0] ^ 0xFF]))
    out = tmp_path / "out" / "ckpt-5"
    result = run_cli("average", folder, "--last", "3", "-o", out)
    assert result.exit_code == 3 and "checksum mismatch" in result.stderr and "ckpt-4" in result.stderr
    assert not out.parent.exists()
