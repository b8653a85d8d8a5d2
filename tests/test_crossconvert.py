"""Cross-format conversion: Keras TF-format bundle <-> Keras 2 .h5 <-> Keras 3 .weights.h5, npz and
safetensors exports; every tensor arrives with identical bytes, and what cannot be matched is reported."""
from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import h5py
import ml_dtypes
import numpy as np
import pytest

from formats.api import open_checkpoint
from formats.ops.convert.cross import convert_file
from formats.keras_h5.writer import Keras2Layer, write_keras2_h5
from formats.ops.rules import build_rules

from .conftest import CORPUS

BUNDLE = CORPUS / "keras2_tagger" / "tagger_tf" / "ckpt"
K2 = CORPUS / "keras2_tagger" / "tagger_weights.h5"
K3 = CORPUS / "keras3_tagger" / "tagger.weights.h5"
NAMES = ["embed/embeddings", "lstm/lstm_cell/kernel", "lstm/lstm_cell/recurrent_kernel", "lstm/lstm_cell/bias",
         "bn/gamma", "bn/beta", "bn/moving_mean", "bn/moving_variance", "dense/kernel", "dense/bias",
         "dense_1/kernel", "dense_1/bias"]


def _text(v: object) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def weights_by_name(path: Path) -> dict[str, bytes]:
    """Model weights (role variable) of a checkpoint: name -> raw bytes."""
    with open_checkpoint(str(path)) as ckpt:
        return {str(e.name).removesuffix(":0"): e.read().tobytes() for e in ckpt.values() if e.role == "variable"}


ORIGINAL = weights_by_name(BUNDLE)


def test_the_corpus_holds_one_model_three_ways() -> None:
    assert sorted(ORIGINAL) == sorted(NAMES)
    assert weights_by_name(K2) == ORIGINAL


def test_bundle_to_keras2_h5_layout(tmp_path: Path) -> None:
    out = tmp_path / "t.h5"
    result = convert_file(BUNDLE, out, "keras2-h5")
    assert result.ok and result.written.tensors == 12
    with h5py.File(out, "r") as h5:
        assert [_text(n) for n in h5.attrs["layer_names"]] == ["embed", "lstm", "bn", "layer_with_weights-3"]
        assert [_text(n) for n in h5["bn"].attrs["weight_names"]] == [
            "bn/gamma:0", "bn/beta:0", "bn/moving_mean:0", "bn/moving_variance:0"]
        assert [_text(n) for n in h5["lstm"].attrs["weight_names"]] == [
            "lstm/lstm_cell/kernel:0", "lstm/lstm_cell/recurrent_kernel:0", "lstm/lstm_cell/bias:0"]
        assert _text(h5.attrs["keras_version"]) == "2.21.0"
    assert weights_by_name(out) == ORIGINAL
    fallbacks = [p for p in result.plan.warnings if p.kind == "fallback"]
    assert [p.key for p in fallbacks] == ["layer_with_weights-3"] and "dense, dense_1" in fallbacks[0].message
    unused = {p.key: p.message.split(" ", 1)[0] for p in result.plan.warnings if p.kind == "unused"}
    assert unused == {"object_graph": "1", "optimizer": "2", "slot": "20"}
    slots = next(p for p in result.plan.warnings if p.key == "slot")
    with open_checkpoint(BUNDLE) as source:  # every one, for --verbose and --json to list
        assert slots.candidates == sorted(k for k in source if source[k].role == "slot")


def test_keras2_to_keras3_onto_template(tmp_path: Path) -> None:
    out = tmp_path / "t.weights.h5"
    result = convert_file(K2, out, "keras3-h5", template=str(K3))
    assert result.ok
    rows = {r.key: r.source for r in result.plan.rows}
    assert rows["layers/lstm/cell/vars/1"] == "lstm/lstm/lstm_cell/recurrent_kernel:0"
    assert rows["layers/sequential/layers/dense_1/vars/0"] == "head/dense_1/kernel:0"
    assert weights_by_name(out) == ORIGINAL
    with h5py.File(out, "r") as h5, h5py.File(K3, "r") as t:
        assert "optimizer" not in h5
        for path in ["vars", "layers/input_layer/vars", "layers/lstm/vars", "layers/sequential/vars"]:
            assert dict(h5[path].attrs) == dict(t[path].attrs)
        assert len(h5["layers/input_layer/vars"]) == 0


def test_reverse_directions_return_identical_bytes(tmp_path: Path) -> None:
    k3, k2, bundle = tmp_path / "a.weights.h5", tmp_path / "b.h5", tmp_path / "c" / "ckpt"
    assert convert_file(K2, k3, "keras3-h5", template=str(K3)).ok
    back = convert_file(k3, k2, "keras2-h5", template=str(K2))
    assert back.ok and back.written.tensors == 12
    with open_checkpoint(str(k2)) as got, open_checkpoint(str(K2)) as want:
        assert list(got) == list(want)
        assert all(got[k].read().tobytes() == want[k].read().tobytes() for k in want)
        assert got.metadata["layers"] == want.metadata["layers"]
    from formats.ops.convert.name_to_object import plan_tf_object
    from formats.ops.convert.plan import ConvertOptions, execute_plan

    with open_checkpoint(str(k2)) as src:
        plan = plan_tf_object(src, ConvertOptions(template=str(BUNDLE), allow_missing=True))
        assert execute_plan(plan, str(bundle)).ok
    assert weights_by_name(bundle) == ORIGINAL


def test_round_trip_through_every_format(tmp_path: Path) -> None:
    """bundle -> keras2-h5 -> keras3-h5 -> keras2-h5 -> npz / safetensors: the same bytes at every step."""
    k2a, k3, k2b = tmp_path / "1.h5", tmp_path / "2.weights.h5", tmp_path / "3.h5"
    assert convert_file(BUNDLE, k2a, "keras2-h5").ok
    assert convert_file(k2a, k3, "keras3-h5", template=str(K3)).ok
    assert convert_file(k3, k2b, "keras2-h5", template=str(K2)).ok
    for path in (k2a, k3, k2b):
        assert weights_by_name(path) == ORIGINAL, path
    npz, st = tmp_path / "4.npz", tmp_path / "5.safetensors"
    assert convert_file(k3, npz, "npz").ok and convert_file(k3, st, "safetensors").ok
    with np.load(npz, allow_pickle=False) as data:
        record = json.loads(str(data["__ckpt_provenance__"]))
        by_key = {t["key"]: t["full_name"] for t in record["tensors"]}
        assert {by_key[k]: data[k].tobytes() for k in by_key} == ORIGINAL
    header = _safetensors_header(st)
    record = json.loads(header["__metadata__"]["ckpt.provenance"])
    raw = st.read_bytes()
    start = 8 + struct.unpack("<Q", raw[:8])[0]
    got = {t["full_name"]: raw[start + header[t["key"]]["data_offsets"][0]:start + header[t["key"]]["data_offsets"][1]]
           for t in record["tensors"]}
    assert got == ORIGINAL


def _safetensors_header(path: Path) -> dict:
    raw = path.read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8:8 + size])


def test_npz_keeps_original_keys_and_provenance(tmp_path: Path) -> None:
    out = tmp_path / "b.npz"
    result = convert_file(BUNDLE, out, "npz")
    assert result.ok and result.written.tensors == 34
    key = "layer_with_weights-1/cell/kernel/.ATTRIBUTES/VARIABLE_VALUE"
    with np.load(out, allow_pickle=False) as data:
        assert len(data.files) == 36 and key in data.files  # 34 tensors, the record, the object graph
        record = json.loads(str(data["__ckpt_provenance__"]))
        assert data["__ckpt_object_graph__"].tobytes() == open_checkpoint(BUNDLE)[
            "_CHECKPOINTABLE_OBJECT_GRAPH"].read().reshape(-1)[0]
    assert record["format"] == "tf-object" and record["source"] == str(BUNDLE)
    entry = next(t for t in record["tensors"] if t["key"] == key)
    assert entry == {"key": key, "object_path": "layer_with_weights-1/cell/kernel",  # (source_key and role: defaults)
                     "full_name": "lstm/lstm_cell/kernel", "dtype": "float32", "shape": [8, 64]}
    slot = next(t for t in record["tensors"] if t["key"] == "optimizer/_variables/3/.ATTRIBUTES/VARIABLE_VALUE")
    assert (slot["full_name"], slot["role"]) == ("Adam/m/lstm/lstm_cell/kernel", "slot")


def test_safetensors_read_by_the_safetensors_package(tmp_path: Path) -> None:
    safetensors = pytest.importorskip("safetensors")
    from safetensors.numpy import load_file

    out = tmp_path / "k3.safetensors"
    assert convert_file(K3, out, "safetensors").ok
    data = load_file(str(out))
    with open_checkpoint(str(K3)) as src:
        assert sorted(data) == sorted(src)
        assert all(data[k].tobytes() == src[k].read().tobytes() and data[k].dtype == src[k].read().dtype for k in src)
    with safetensors.safe_open(str(out), "np") as f:
        record = json.loads(f.metadata()["ckpt.provenance"])
    entry = next(t for t in record["tensors"] if t["key"] == "layers/lstm/cell/vars/1")
    assert (entry["object_path"], entry["full_name"]) == ("layers/lstm/cell", "lstm/lstm_cell/recurrent_kernel")


def test_bfloat16_exports(tmp_path: Path) -> None:
    value = np.arange(6, dtype=np.float32).reshape(2, 3).astype(ml_dtypes.bfloat16)
    src = tmp_path / "bf.h5"
    write_keras2_h5(src, [Keras2Layer("d", [("d/kernel:0", value)])])
    assert convert_file(src, tmp_path / "bf.npz", "npz").ok
    with np.load(tmp_path / "bf.npz", allow_pickle=False) as data:
        assert data["d/d/kernel:0"].dtype == np.dtype("<u2")
        assert data["d/d/kernel:0"].tobytes() == value.tobytes()
        assert json.loads(str(data["__ckpt_provenance__"]))["tensors"][0]["dtype"] == "bfloat16"
    assert convert_file(src, tmp_path / "bf.safetensors", "safetensors").ok
    header = _safetensors_header(tmp_path / "bf.safetensors")
    assert header["d/d/kernel:0"] == {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 12]}


def test_rules_rename_npz_keys(tmp_path: Path) -> None:
    rules = build_rules(regexes=[r"^(.*)/\.ATTRIBUTES/VARIABLE_VALUE$=\1"], maps=["nothing=here"])
    result = convert_file(BUNDLE, tmp_path / "r.npz", "npz", rules=rules)
    assert result.ok
    with np.load(tmp_path / "r.npz", allow_pickle=False) as data:
        assert "layer_with_weights-1/cell/kernel" in data.files
    assert [p.key for p in result.plan.warnings if p.kind == "unmatched-rule"] == ["--map nothing=here"]


def _two_dense(path: Path, names: tuple[str, str], shapes: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
    rng = np.random.default_rng(3)
    layers = [Keras2Layer(n, [(f"{n}/kernel:0", rng.normal(size=s).astype(np.float32))]) for n, s in zip(names, shapes)]
    write_keras2_h5(path, layers)


def test_layers_paired_by_kind_and_shape_when_names_differ(tmp_path: Path) -> None:
    src, tpl, out = tmp_path / "s.h5", tmp_path / "t.h5", tmp_path / "o.h5"
    _two_dense(src, ("dense_7", "dense_8"), ((3, 4), (4, 2)))
    _two_dense(tpl, ("a", "b"), ((4, 2), (3, 4)))
    result = convert_file(src, out, "keras2-h5", template=str(tpl))
    assert result.ok
    assert {r.key: r.source for r in result.plan.rows} == {"a/a/kernel:0": "dense_8/dense_8/kernel:0",
                                                           "b/b/kernel:0": "dense_7/dense_7/kernel:0"}
    assert [p.candidates for p in result.plan.warnings if p.kind == "fallback"] == [["a", "b"]]  # one warning


def test_ambiguous_layers_are_reported_not_guessed(tmp_path: Path) -> None:
    src, tpl, out = tmp_path / "s.h5", tmp_path / "t.h5", tmp_path / "o.h5"
    _two_dense(src, ("dense_7", "dense_8"), ((3, 3), (3, 3)))
    _two_dense(tpl, ("a", "b"), ((3, 3), (3, 3)))
    result = convert_file(src, out, "keras2-h5", template=str(tpl))
    assert not result.ok and not out.exists()
    ambiguous = [p for p in result.plan.errors if p.kind == "ambiguous"]
    assert [p.key for p in ambiguous] == ["a", "b"] and ambiguous[0].candidates == ["dense_7", "dense_8"]
    assert sorted(p.key for p in result.plan.errors if p.kind == "missing") == ["a/a/kernel:0", "b/b/kernel:0"]
    fixed = convert_file(src, out, "keras2-h5", template=str(tpl),
                         rules=build_rules(maps=["dense_7=b", "dense_8=a"]))
    assert fixed.ok and {r.key: r.source for r in fixed.plan.rows} == {"a/a/kernel:0": "dense_8/dense_8/kernel:0",
                                                                       "b/b/kernel:0": "dense_7/dense_7/kernel:0"}


def test_shape_mismatch_writes_nothing(tmp_path: Path) -> None:
    src, tpl, out = tmp_path / "s.h5", tmp_path / "t.h5", tmp_path / "o.h5"
    _two_dense(src, ("a", "b"), ((3, 4), (4, 2)))
    _two_dense(tpl, ("a", "b"), ((3, 4), (4, 3)))
    result = convert_file(src, out, "keras2-h5", template=str(tpl))
    assert [(p.kind, p.key) for p in result.plan.errors] == [("shape", "b/b/kernel:0")]
    assert "has shape [4, 2], the template's 'b/kernel' has [4, 3]" in result.plan.errors[0].message
    assert not out.exists()


def test_keras3_needs_a_template_and_the_right_kind(tmp_path: Path) -> None:
    result = convert_file(K2, tmp_path / "o.weights.h5", "keras3-h5")
    assert [p.kind for p in result.plan.errors] == ["unsupported"] and "--template" in result.plan.errors[0].message
    result = convert_file(K2, tmp_path / "o.weights.h5", "keras3-h5", template=str(K2))
    assert [p.kind for p in result.plan.errors] == ["unsupported"] and "keras2-h5" in result.plan.errors[0].message
    result = convert_file(K3, tmp_path / "o.h5", "keras2-h5")
    assert [p.kind for p in result.plan.errors] == ["unsupported"]
    assert os.listdir(tmp_path) == []


def test_dry_run_plans_without_writing(tmp_path: Path) -> None:
    out = tmp_path / "o.weights.h5"
    result = convert_file(BUNDLE, out, "keras3-h5", template=str(K3), dry_run=True)
    assert result.ok and result.dry_run and result.written is None and not out.exists()
    data = result.to_json()
    row = next(r for r in data["rows"] if r["key"] == "layers/embedding/vars/0")
    assert row == {"source": "layer_with_weights-0/embeddings/.ATTRIBUTES/VARIABLE_VALUE",
                   "key": "layers/embedding/vars/0", "shape": [50, 8], "dtype": "float32", "note": "",
                   "transform": None}


def test_existing_output_refused(tmp_path: Path) -> None:
    out = tmp_path / "o.npz"
    out.write_bytes(b"x")
    from formats.tf_bundle.writer import OutputExistsError

    with pytest.raises(OutputExistsError):
        convert_file(BUNDLE, out, "npz")
    assert out.read_bytes() == b"x"
    assert convert_file(BUNDLE, out, "npz", force=True).ok


def test_cli_json_dry_run(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from ckpt_cli.build import build_command
    from ckpt_cli.commands.convert import SPEC

    convert = build_command(SPEC)

    out = tmp_path / "o.weights.h5"
    res = CliRunner().invoke(convert, [str(K2), "-o", str(out), "--to", "keras3-h5", "--template", str(K3),
                                       "--dry-run", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["target"] == "keras3-h5" and len(data["rows"]) == 12 and not out.exists()
    res = CliRunner().invoke(convert, [str(K2), "-o", str(out), "--to", "keras3-h5", "--json"])
    assert res.exit_code == 1 and json.loads(res.output)["problems"][0]["kind"] == "unsupported"
    res = CliRunner().invoke(convert, [str(BUNDLE), "-o", str(tmp_path / "o.safetensors"), "--to", "safetensors",
                                       "--json"])
    assert res.exit_code == 0 and json.loads(res.output)["written"]["tensors"] == 34
