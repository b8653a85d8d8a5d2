"""Tensors ckpt cannot read (issue 24, item 22) are kept as entries: ``ls`` and ``stats`` list them, ``verify``
reports each, and ``convert``/``rename`` plan each as left out with a warning; none is dropped silently."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import h5py
import numpy as np
import pytest

import formats
from formats.core.errors import UnsupportedError


def _safetensors(path: Path) -> Path:
    header = {"w": {"dtype": "F8_E8M0", "shape": [2], "data_offsets": [0, 2]},
              "c": {"dtype": "C64", "shape": [1], "data_offsets": [2, 10]},
              "b": {"dtype": "U8", "shape": [2], "data_offsets": [10, 12]}}
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(range(12)))
    return path


def _npz(path: Path) -> Path:
    np.savez(path, ok=np.arange(3), bad=np.array([b"x", 1], dtype=object),
             t=np.array(["2020-01-01"], dtype="datetime64[s]"))
    return path


F8 = "safetensors dtype F8_E8M0 has no TensorFlow counterpart"
C64 = "safetensors dtype C64 has no TensorFlow counterpart"
PICKLED = "holds pickled Python objects (dtype object): not read; ckpt never unpickles"
DATETIME = "numpy dtype datetime64[s] has no TensorFlow counterpart"


def test_safetensors_entries_ckpt_cannot_read_are_listed(tmp_path):
    with formats.open_checkpoint(_safetensors(tmp_path / "u.safetensors")) as ckpt:
        assert [(k, e.dtype, e.shape, e.nbytes, e.unreadable) for k, e in ckpt.items()] == [
            ("w", "F8_E8M0", (2,), 2, F8), ("c", "C64", (1,), 8, C64), ("b", "uint8", (2,), 2, None)]
        with pytest.raises(UnsupportedError) as err:
            ckpt["c"].read()
        assert err.value.message == f"tensor 'c': {C64}"


def test_npz_members_ckpt_cannot_read_are_listed(tmp_path):
    with formats.open_checkpoint(_npz(tmp_path / "m.npz")) as ckpt:
        assert [(k, e.dtype, e.shape, e.unreadable) for k, e in ckpt.items()] == [
            ("ok", "int64", (3,), None), ("bad", "object", (2,), PICKLED), ("t", "datetime64[s]", (1,), DATETIME)]


@pytest.mark.parametrize(("make", "expected"), [
    (_safetensors, [("w", F8), ("c", C64)]),
    (_npz, [("bad", PICKLED), ("t", DATETIME)]),
])
def test_verify_reports_every_tensor_it_cannot_read(tmp_path, run_cli, make, expected):
    path = make(tmp_path / ("x.safetensors" if make is _safetensors else "x.npz"))
    res = run_cli("verify", path, "--json")
    assert res.exit_code == 1
    assert [(p["where"], p["message"]) for p in json.loads(res.stdout)["problems"]] == expected
    assert json.loads(res.stdout)["tensors"] == 3


def test_ls_and_stats_name_the_tensors_ckpt_cannot_read(tmp_path, run_cli):
    path = _safetensors(tmp_path / "u.safetensors")
    listed = run_cli("ls", path, "--json")
    assert listed.exit_code == 0
    assert [(t["key"], t["dtype"]) for t in json.loads(listed.stdout)["tensors"]] == [
        ("b", "uint8"), ("c", "C64"), ("w", "F8_E8M0")]
    stats = run_cli("stats", path, "--json")
    assert stats.exit_code == 0
    assert [(t["key"], t["dtype"], t["min"]) for t in json.loads(stats.stdout)["tensors"]] == [
        ("b", "uint8", 10), ("c", "C64", None), ("w", "F8_E8M0", None)]


HINT = "the output would lack it (--skip-unreadable writes the rest without it)"


@pytest.mark.parametrize("to", ["npz", "safetensors", "tf-object"])
def test_convert_refuses_to_leave_out_an_unreadable_tensor_unless_asked(tmp_path, run_cli, to):
    """Nothing lost in silence: a tensor ckpt cannot read is an error naming it (exit 1, nothing written);
    ``--skip-unreadable`` writes the rest, each left out named in a warning (exit 0)."""
    out = tmp_path / ("out" if to == "tf-object" else f"out.{to}")
    refused = run_cli("convert", _npz(tmp_path / "m.npz"), "-o", out, "--to", to, "--json")
    assert refused.exit_code == 1, refused.output
    doc = json.loads(refused.stdout)
    problems = doc["plan"]["problems"] if "plan" in doc else doc["problems"]
    assert [(p["kind"], p["key"], p["severity"], p["message"]) for p in problems] == [
        ("unsupported", "bad", "error", f"{PICKLED}; {HINT}"), ("unsupported", "t", "error", f"{DATETIME}; {HINT}")]
    assert not list(tmp_path.glob("out*"))
    res = run_cli("convert", _npz(tmp_path / "m.npz"), "-o", out, "--to", to, "--json", "--skip-unreadable")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    problems = doc["plan"]["problems"] if "plan" in doc else doc["problems"]
    assert [(p["kind"], p["key"], p["severity"], p["message"]) for p in problems] == [
        ("unsupported", "bad", "warning", f"{PICKLED}; left out"),
        ("unsupported", "t", "warning", f"{DATETIME}; left out")]
    with formats.open_checkpoint(out) as written:
        assert [k for k in written if k != "_CHECKPOINTABLE_OBJECT_GRAPH"] == (
            ["ok/.ATTRIBUTES/VARIABLE_VALUE", "save_counter/.ATTRIBUTES/VARIABLE_VALUE"] if to == "tf-object" else ["ok"])


def test_rename_and_edit_refuse_to_leave_out_an_unreadable_tensor_unless_asked(tmp_path, run_cli):
    src = _safetensors(tmp_path / "u.safetensors")
    for argv in (["rename", src, "-o", tmp_path / "out", "--add-prefix", "x/"],
                 ["edit", src, "-o", tmp_path / "out.safetensors"]):
        refused = run_cli(*argv)
        assert refused.exit_code == 1, refused.output
        assert refused.output.splitlines() == [f"error: unsupported: c: {C64}; {HINT}",
                                               f"error: unsupported: w: {F8}; {HINT}",
                                               "2 errors, 0 warnings; nothing written"]
        assert not list(tmp_path.glob("out*"))
        res = run_cli(*argv, "--skip-unreadable")
        assert res.exit_code == 0, res.output
        assert f"warning: unsupported: w: {F8}; left out\n" in res.output
        assert f"warning: unsupported: c: {C64}; left out\n" in res.output
        with formats.open_checkpoint(argv[3]) as written:
            assert sorted(written) == (["x/b"] if argv[0] == "rename" else ["b"])
        for leftover in tmp_path.glob("out*"):
            leftover.unlink()


def test_the_library_refuses_too_unless_asked(tmp_path):
    src = _npz(tmp_path / "m.npz")
    refused = formats.convert(src, tmp_path / "a.safetensors", "safetensors")
    assert not refused.ok and [p.key for p in refused.plan.errors] == ["bad", "t"]
    assert not (tmp_path / "a.safetensors").exists()
    done = formats.convert(src, tmp_path / "b.safetensors", "safetensors", skip_unreadable=True)
    assert done.ok and [p.key for p in done.plan.warnings] == ["bad", "t"]


def test_hdf5_dataset_without_a_tensorflow_dtype_is_listed(tmp_path):
    path = tmp_path / "d.h5"
    with h5py.File(path, "w") as f:
        f["x"] = np.arange(2, dtype=np.int16)
        f["pairs"] = np.zeros(2, dtype=[("p", "i4"), ("q", "f4")])
    with formats.open_checkpoint(path) as ckpt:
        assert sorted(ckpt) == ["pairs", "x"]
        assert ckpt["pairs"].problem() == "HDF5 type [('p', '<i4'), ('q', '<f4')] has no TensorFlow dtype"


def test_report_flags_each_unreadable_tensor(tmp_path):
    doc = formats.report(_npz(tmp_path / "m.npz")).to_json()["checkpoint"]
    found = {v["key"]: (v["flags"], v["unreadable"], v["histograms"]) for v in doc["variables"]}
    assert found == {"ok": ([], None, found["ok"][2]), "bad": (["unreadable"], PICKLED, {}),
                     "t": (["unreadable"], DATETIME, {})}
    assert found["ok"][2]["linear"]["counts"][0] == 1
