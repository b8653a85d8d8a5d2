"""One way to write: every writer returns the same WriteReport (exact JSON here), the CLI renders it in
one place ("verified" for npz and safetensors too), and extract and convert --to npz share one dtype policy."""
from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import formats
from formats.core.sources import TensorValue
from formats.io.writing import WriteReport
from formats.keras_h5.writer import Keras2Layer, Keras3Group, write_keras2_h5, write_keras3_h5
from formats.ops.convert.cross import convert_file
from formats.ops.inspect.extract import extract

from .conftest import CORPUS, MANIFEST

DTYPES = "tf2_mixed/all_dtypes/ckpt-1"
BF16 = np.array([1.5, -2.0, 3.0], np.float32).astype(ml_dtypes.bfloat16)
WEIGHTS = np.arange(6, dtype=np.float32).reshape(2, 3)
NOTE = "b: bfloat16 stored as uint16 bits (the record keeps bfloat16)"


def _item(key: str, stored_as: str, dtype: str, stored: str, shape: list[int]) -> dict[str, object]:
    return {"key": key, "stored_as": stored_as, "dtype": dtype, "stored_dtype": stored, "shape": shape}


def _report(path: Path | str, fmt: str, files: list[str], tensors: int, nbytes: int, contents: list[dict],
            warnings: list[str] = ()) -> dict[str, object]:
    return {"path": str(path), "format": fmt, "files": files, "tensors": tensors, "bytes": nbytes, "verified": True,
            "warnings": list(warnings), "contents": contents}


@pytest.fixture
def small(tmp_path: Path) -> Path:
    """A name-based bundle: a bfloat16, a float32 matrix and a string tensor (read back in key order)."""
    prefix = tmp_path / "src" / "ckpt-1"
    formats.write_checkpoint(prefix, {"b": BF16, "w": WEIGHTS, "s": TensorValue([b"ab", b"c"], "string")})
    return prefix


# -- the report of each writer ----------------------------------------------------------------------------
def test_bundle_writer_report(tmp_path: Path) -> None:
    prefix = str(tmp_path / "o" / "ckpt")
    report = formats.write_checkpoint(prefix, {"w": WEIGHTS}, object_graph=b"g")
    assert isinstance(report, WriteReport) and report.roundtrip is not None and report.roundtrip.tensors == 2
    # a scalar string in a bundle: one length varint, the 4-byte checksum of the lengths, then the bytes
    assert report.to_json() == _report(prefix, "tf-object", [prefix + ".index", prefix + ".data-00000-of-00001"],
                                       2, 6 * 4 + 1 + 4 + 1,
                                       [_item("w", "w", "float32", "float32", [2, 3]),
                                        _item("_CHECKPOINTABLE_OBJECT_GRAPH", "_CHECKPOINTABLE_OBJECT_GRAPH",
                                              "string", "string", [])])


def test_keras_writer_reports(tmp_path: Path) -> None:
    k2 = tmp_path / "w.h5"
    report = write_keras2_h5(k2, [Keras2Layer("d", [("d/kernel:0", WEIGHTS), ("d/bias:0", np.zeros(3, np.float32))])])
    assert report.to_json() == _report(k2, "keras2-h5", [str(k2)], 2, 24 + 12,
                                       [_item("d/d/kernel:0", "d/d/kernel:0", "float32", "float32", [2, 3]),
                                        _item("d/d/bias:0", "d/d/bias:0", "float32", "float32", [3])])
    k3 = tmp_path / "w.weights.h5"
    report = write_keras3_h5(k3, [Keras3Group("layers/dense", "dense", [WEIGHTS, BF16])])
    assert report.to_json() == _report(k3, "keras3-h5", [str(k3)], 2, 24 + 6,
                                       [_item("layers/dense/vars/0", "layers/dense/vars/0", "float32", "float32",
                                              [2, 3]),
                                        _item("layers/dense/vars/1", "layers/dense/vars/1", "bfloat16", "bfloat16",
                                              [3])])


def test_npz_and_safetensors_reports(small: Path, tmp_path: Path) -> None:
    npz = tmp_path / "o.npz"
    written = convert_file(small, npz, "npz").written
    assert written.to_json() == _report(npz, "npz", [str(npz)], 3, 6 + 24 + 4,
                                        [_item("b", "b.npy", "bfloat16", "uint16", [3]),
                                         _item("s", "s.npy", "string", "|S2", [2]),
                                         _item("w", "w.npy", "float32", "float32", [2, 3])], [NOTE])
    st = tmp_path / "o.safetensors"
    written = convert_file(small, st, "safetensors", skip_unreadable=True).written  # no strings in safetensors
    assert written.to_json() == _report(st, "safetensors", [str(st)], 2, 6 + 24,
                                        [_item("b", "b", "bfloat16", "bfloat16", [3]),
                                         _item("w", "w", "float32", "float32", [2, 3])])


def test_extract_reports(small: Path, tmp_path: Path) -> None:
    with formats.open_checkpoint(small) as ckpt:
        one = extract(ckpt, ["b"], tmp_path / "b")
        many = extract(ckpt, [], tmp_path / "all.npz")
        folder = extract(ckpt, ["w", "s"], f"{tmp_path / 'arrays'}/")
    assert one.to_json() == _report(tmp_path / "b.npy", "npy", [str(tmp_path / "b.npy")], 1, 6,
                                    [_item("b", "b.npy", "bfloat16", "uint16", [3])], [NOTE])
    assert many.to_json() == _report(tmp_path / "all.npz", "npz", [str(tmp_path / "all.npz")], 3, 6 + 24 + 4,
                                     [_item("b", "b.npy", "bfloat16", "uint16", [3]),
                                      _item("s", "s.npy", "string", "|S2", [2]),
                                      _item("w", "w.npy", "float32", "float32", [2, 3])], [NOTE])
    assert folder.to_json() == _report(f"{tmp_path / 'arrays'}/", "npy-dir",
                                       [str(tmp_path / "arrays" / "s.npy"), str(tmp_path / "arrays" / "w.npy")],
                                       2, 4 + 24, [_item("s", "s.npy", "string", "|S2", [2]),
                                                   _item("w", "w.npy", "float32", "float32", [2, 3])])
    assert np.load(tmp_path / "b.npy").view(ml_dtypes.bfloat16).tolist() == BF16.tolist()


def test_rules_file_report(run_cli, tmp_path: Path) -> None:
    rules = tmp_path / "fix.json"
    result = run_cli("doctor", "--json", CORPUS / "tf1_estimator/model.ckpt-200", "--against",
                     CORPUS / "tf1_adam/model.ckpt-200", "--write-rules", rules)
    written = json.loads(result.stdout)["written"]
    assert written == _report(rules, "rules", [str(rules)], 0, len(rules.read_bytes()), [])


# -- one place renders it ---------------------------------------------------------------------------------
@pytest.mark.parametrize("target", ["npz", "safetensors", "tf-name", "keras2-h5"])
def test_cli_says_verified(run_cli, tmp_path: Path, target: str) -> None:
    src = CORPUS / "keras2_tagger/tagger_tf/ckpt"
    out = tmp_path / f"o.{target}"
    result = run_cli("convert", src, "-o", out, "--to", target)
    assert result.exit_code == 0, result.stderr
    last = result.stdout.splitlines()[-1]
    assert last.startswith(f"wrote {out}: ") and f"({target}), verified" in last
    unverified = run_cli("convert", src, "-o", tmp_path / f"n.{target}", "--to", target, "--no-verify")
    assert f"({target}), not verified" in unverified.stdout.splitlines()[-1]


def test_cli_extract_names_bits(run_cli, tmp_path: Path) -> None:
    bf16 = "typed/bfloat16/.ATTRIBUTES/VARIABLE_VALUE"
    result = run_cli("extract", CORPUS / DTYPES, bf16, "-o", tmp_path / "bf.npy")
    assert result.stdout == (f"note {bf16}: bfloat16 stored as uint16 bits (the record keeps bfloat16)\n"
                             f"wrote {tmp_path / 'bf.npy'}: 1 tensor, 24 B (npy), verified\n")


# -- one npz dtype policy ---------------------------------------------------------------------------------
def test_extract_and_convert_store_npz_alike(run_cli, tmp_path: Path) -> None:
    a, b = tmp_path / "extract.npz", tmp_path / "convert.npz"
    assert run_cli("extract", CORPUS / DTYPES, "-o", a).exit_code == 0
    assert run_cli("convert", CORPUS / DTYPES, "-o", b, "--to", "npz").exit_code == 0
    tensors = MANIFEST[DTYPES]["tensors"]
    with np.load(a) as x, np.load(b) as y:
        assert sorted(x.files) == sorted(y.files) == sorted(  # both carry the object graph beside the tensors
            [*(k for k in tensors if k != "_CHECKPOINTABLE_OBJECT_GRAPH"), "__ckpt_provenance__",
             "__ckpt_object_graph__"])
        for key in y.files:
            if key != "__ckpt_provenance__":
                assert (x[key].dtype, x[key].shape, x[key].tobytes()) == (y[key].dtype, y[key].shape,
                                                                           y[key].tobytes()), key
        left, right = (json.loads(str(z["__ckpt_provenance__"])) for z in (x, y))
    assert left["tensors"] == right["tensors"]
    assert {t["key"]: t["dtype"] for t in right["tensors"]} == {k: v["dtype"] for k, v in tensors.items()
                                                                if k != "_CHECKPOINTABLE_OBJECT_GRAPH"}
    with np.load(b) as y:  # the policy: numpy's own types as themselves, bfloat16 as its bits
        stored = {k: y[k].dtype.str for k in y.files if k.startswith("typed/")}
    assert stored["typed/bfloat16/.ATTRIBUTES/VARIABLE_VALUE"] == "<u2"
    assert stored["typed/float16/.ATTRIBUTES/VARIABLE_VALUE"] == "<f2"
    assert stored["typed/string/.ATTRIBUTES/VARIABLE_VALUE"].startswith("|S")
