"""`ckpt diff` and formats.ops.compare.diff: corpus runs with expected numbers computed here with numpy, tolerances,
name matching, rename rules, checksums while streaming, output modes, a golden table.

Also home of small helpers the other issue-7 tests import: in-memory checkpoints and `patch_value`,
which writes a new value into a copied bundle and fixes its CRCs (entry and index block) by hand.
"""
from __future__ import annotations

import json
import os
import math
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from formats.core import dtypes
from formats.io.crc import crc32c, mask
from formats.api import open_checkpoint
from formats.ops.compare.diff import Tolerance, diff_checkpoints
from formats.core.model import Checkpoint, TensorEntry
from formats.ops.rules import build_rules
from formats.io.sstable.block import FOOTER_SIZE, parse_block
from formats.io.protowire import read_varint

from .conftest import CORPUS, MANIFEST, digest

GOLDEN = Path(__file__).parent / "golden"
EST1, EST200 = "tf1_estimator/model.ckpt-1", "tf1_estimator/model.ckpt-200"
ADAM200 = "tf1_adam/model.ckpt-200"


# -- helpers (imported by test_stats, test_show_extract, test_doctor, test_trend) ----------------------
class ArrayEntry(TensorEntry):
    """A tensor held in memory."""

    __slots__ = ("value",)

    def __init__(self, key: str, value: Any, name: str | None = None) -> None:
        value = np.asarray(value)
        super().__init__(key, value.shape, dtypes.from_numpy(value.dtype).name, value.nbytes, name)
        self.value = value

    def read(self) -> np.ndarray:
        return self.value.copy()


def memory_checkpoint(path: str, tensors: dict[str, Any], names: dict[str, str] | None = None) -> Checkpoint:
    """A Checkpoint of in-memory arrays; ``names`` optionally gives TF1-style names."""
    names = names or {}
    return Checkpoint(path, "memory", {k: ArrayEntry(k, v, names.get(k)) for k, v in tensors.items()})


def patch_value(prefix: Path, key: str, flat_index: int, value: Any) -> None:
    """Overwrite one element of a fixed-width tensor in a (copied) bundle, then fix the entry's CRC32C and the
    CRC of every index data block, so that the result is a valid checkpoint with a different value."""
    with open_checkpoint(prefix) as ckpt:
        entry = ckpt[key]
        raw, dt = entry.raw, dtypes.by_name(entry.dtype)  # type: ignore[attr-defined]
        data_path = ckpt.reader.data_paths[raw.shard_id]  # type: ignore[attr-defined]
    item = np.asarray(value, dtype=dt.numpy()).tobytes()
    data = bytearray(Path(data_path).read_bytes())
    at = raw.offset + flat_index * dt.itemsize
    data[at:at + len(item)] = item
    Path(data_path).write_bytes(bytes(data))
    new_crc = mask(crc32c(bytes(data[raw.offset:raw.offset + raw.size])))
    index_path = Path(str(prefix) + ".index")
    index = bytearray(index_path.read_bytes())
    old = b"\x35" + struct.pack("<I", raw.crc32c)
    assert index.count(old) == 1, "entry CRC not found exactly once"
    at = index.find(old)
    index[at + 1:at + 5] = struct.pack("<I", new_crc)
    _fix_block_crcs(index)
    index_path.write_bytes(bytes(index))


def _fix_block_crcs(index: bytearray) -> None:
    footer = len(index) - FOOTER_SIZE
    _, pos = read_varint(bytes(index), footer, len(index))
    _, pos = read_varint(bytes(index), pos, len(index))
    index_offset, pos = read_varint(bytes(index), pos, len(index))
    index_size, _ = read_varint(bytes(index), pos, len(index))
    for _, handle in parse_block(bytes(index[index_offset:index_offset + index_size])):
        offset, p = read_varint(handle, 0, len(handle))
        size, _ = read_varint(handle, p, len(handle))
        trailer = offset + size
        index[trailer + 1:trailer + 5] = struct.pack("<I", mask(crc32c(bytes(index[offset:trailer + 1]))))


def read_all(rel: str) -> dict[str, np.ndarray]:
    """Every tensor of a corpus bundle, each checked against the manifest's sha256 (TensorFlow's view)."""
    with open_checkpoint(CORPUS / rel) as ckpt:
        values = {k: e.read() for k, e in ckpt.items()}
    for k, v in values.items():
        if MANIFEST[rel]["tensors"][k]["sha256"] is not None:
            assert digest(v) == MANIFEST[rel]["tensors"][k]["sha256"], k
    return values


def expected_stats(a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
    """The diff statistics of two finite numeric arrays, computed directly."""
    a64, b64 = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    d = np.abs(a64 - b64)
    na, nb = np.linalg.norm(a64), np.linalg.norm(b64)
    differ = int((a.reshape(-1).view(np.uint8).reshape(a.size, -1) != b.reshape(-1).view(np.uint8).reshape(b.size, -1)).any(axis=1).sum())
    return {"size": a.size, "differ": differ, "frac_differ": differ / a.size, "max_abs_diff": d.max(),
            "mean_abs_diff": d.mean(), "rel_l2": np.linalg.norm(a64 - b64) / na if na else None,
            "cosine": float(a64 @ b64) / (na * nb) if na and nb else None, "nonfinite_appeared": False}


def side(rel: str, key: str, counts: bool = True) -> dict[str, Any]:
    t = MANIFEST[rel]["tensors"][key]
    out: dict[str, Any] = {"key": key, "shape": t["shape"], "dtype": t["dtype"]}
    if counts:
        out.update(nan=0, inf=0)
    return out


def approx_record(record: dict[str, Any]) -> dict[str, Any]:
    return {k: (pytest.approx(v, rel=1e-9, abs=1e-12) if isinstance(v, float) else v) for k, v in record.items()}


# -- corpus ----------------------------------------------------------------------------------------------
def test_estimator_step_1_vs_200_every_tensor_changed(run_cli):
    a, b = read_all(EST1), read_all(EST200)
    result = run_cli("diff", "--json", CORPUS / EST1, CORPUS / EST200)
    assert result.exit_code == 1, result.stderr
    doc = json.loads(result.stdout)
    assert list(doc) == ["a", "b", "only_in_a", "only_in_b", "changed", "same"]
    assert (doc["a"], doc["b"]) == (str(CORPUS / EST1), str(CORPUS / EST200))
    assert (doc["only_in_a"], doc["only_in_b"], doc["same"]) == ([], [], 0)
    assert [c["key"] for c in doc["changed"]] == sorted(MANIFEST[EST1]["tensors"]) and len(a) == 13
    for c in doc["changed"]:
        k = c["key"]
        want = {"key": k, "kind": "value", "a": side(EST1, k), "b": side(EST200, k), **expected_stats(a[k], b[k])}
        assert c == approx_record(want)
    assert doc["changed"][-1]["max_abs_diff"] == 199.0  # global_step 1 -> 200


def test_a_checkpoint_against_itself_is_equal(run_cli):
    result = run_cli("diff", "--json", CORPUS / EST200, CORPUS / EST200)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"a": str(CORPUS / EST200), "b": str(CORPUS / EST200), "only_in_a": [],
                                         "only_in_b": [], "changed": [], "same": 13}


def test_a_directory_means_its_latest_checkpoint(run_cli):
    assert run_cli("diff", "--quiet", CORPUS / "tf1_estimator", CORPUS / EST200).exit_code == 0
    assert run_cli("diff", "--quiet", CORPUS / "tf1_estimator", CORPUS / EST1).exit_code == 1


def test_seed_slots_ckpt3_vs_ckpt5(run_cli):
    rel3, rel5 = "seed_slots/tf_ckpts/ckpt-3", "seed_slots/tf_ckpts/ckpt-5"
    a, b = read_all(rel3), read_all(rel5)
    result = run_cli("diff", "--json", CORPUS / rel3, CORPUS / rel5)
    assert result.exit_code == 1, result.stderr
    doc = json.loads(result.stdout)
    numeric_changed = sorted(k for k in a if a[k].dtype != object and a[k].tobytes() != b[k].tobytes())
    it = "iterator/.ATTRIBUTES/ITERATOR_STATE"
    iterator_differ = sum(x != y for x, y in zip(a[it], b[it]))
    graph_same = a["_CHECKPOINTABLE_OBJECT_GRAPH"][()] == b["_CHECKPOINTABLE_OBJECT_GRAPH"][()]
    changed = sorted(numeric_changed + [it] + ([] if graph_same else ["_CHECKPOINTABLE_OBJECT_GRAPH"]))
    assert [c["key"] for c in doc["changed"]] == changed
    assert doc["same"] == 15 - len(changed)
    assert "net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE" in numeric_changed and iterator_differ > 0
    records = {c["key"]: c for c in doc["changed"]}
    assert records[it] == {"key": it, "kind": "value", "a": side(rel3, it, False), "b": side(rel5, it, False),
                           "size": 5, "differ": iterator_differ, "frac_differ": iterator_differ / 5}
    for k in numeric_changed:
        assert records[k] == approx_record({"key": k, "kind": "value", "a": side(rel3, k), "b": side(rel5, k),
                                            **expected_stats(a[k], b[k])})


def test_runs_whose_layer_widths_differ_name_each_shape_change(run_cli):
    result = run_cli("diff", "--json", CORPUS / EST200, CORPUS / ADAM200)
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    ka, kb = set(MANIFEST[EST200]["tensors"]), set(MANIFEST[ADAM200]["tensors"])
    assert doc["only_in_a"] == sorted(ka - kb) == [f"dnn/{layer}/{w}/Adagrad" for layer in ("hiddenlayer_0", "hiddenlayer_1",
                                                   "logits") for w in ("bias", "kernel")]
    assert doc["only_in_b"] == sorted(kb - ka) and len(doc["only_in_b"]) == 14
    shapes = {c["key"]: (c["a"]["shape"], c["b"]["shape"]) for c in doc["changed"] if c["kind"] == "shape"}
    assert shapes == {"dnn/hiddenlayer_0/bias": ([10], [8]), "dnn/hiddenlayer_0/kernel": ([4, 10], [4, 8]),
                      "dnn/hiddenlayer_1/bias": ([10], [8]), "dnn/hiddenlayer_1/kernel": ([10, 10], [8, 8]),
                      "dnn/logits/kernel": ([10, 3], [8, 3])}
    shape_records = [c for c in doc["changed"] if c["kind"] == "shape"]
    assert shape_records[0] == {"key": "dnn/hiddenlayer_0/bias", "kind": "shape",
                                "a": side(EST200, "dnn/hiddenlayer_0/bias", False),
                                "b": side(ADAM200, "dnn/hiddenlayer_0/bias", False)}
    # logits/bias has 3 units on both sides and global_step differs in value only if the runs differ
    others = {c["key"]: c["kind"] for c in doc["changed"] if c["kind"] != "shape"}
    assert others == {"dnn/logits/bias": "value"}
    assert doc["same"] == 1  # global_step: 200 in both


def _generic_object_conversion(rel: str, out: Path) -> Path:
    from formats.ops.convert.name_to_object import plan_name_to_object
    from formats.ops.convert.plan import ConvertOptions, execute_plan

    with open_checkpoint(CORPUS / rel) as src:
        result = execute_plan(plan_name_to_object(src, ConvertOptions()), str(out))
    assert result.written is not None
    return out


def test_name_based_vs_its_object_based_conversion_match_by_name(run_cli, tmp_path):
    converted = _generic_object_conversion(EST200, tmp_path / "obj" / "ckpt-1")
    with open_checkpoint(converted) as ckpt:
        assert "_CHECKPOINTABLE_OBJECT_GRAPH" in ckpt and "dnn/logits/kernel" not in ckpt
    by_key = run_cli("diff", "--json", CORPUS / EST200, converted)
    assert by_key.exit_code == 1 and json.loads(by_key.stdout)["same"] == 0
    result = run_cli("diff", "--json", "--match", "name", CORPUS / EST200, converted)
    assert result.exit_code == 0, result.stdout
    assert json.loads(result.stdout) == {"a": str(CORPUS / EST200), "b": str(converted), "only_in_a": [],
                                         "only_in_b": [], "changed": [], "same": 13}


def test_golden_table_for_widths_and_steps(run_cli, monkeypatch):
    monkeypatch.chdir(CORPUS)
    for args, name in (((EST200, ADAM200), "diff_widths.txt"), ((EST1, EST200), "diff_steps.txt"),
                       (("--keys-only", EST1, EST200), "diff_keys_only.txt")):
        result = run_cli("diff", *args)
        assert result.stdout == (GOLDEN / name).read_text(), name


def test_keys_only_and_quiet(run_cli):
    result = run_cli("diff", "--keys-only", "--json", CORPUS / EST1, CORPUS / EST200)
    assert result.exit_code == 0
    assert json.loads(result.stdout)["same"] == 13
    result = run_cli("diff", "--quiet", CORPUS / EST1, CORPUS / EST200)
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", "")


def test_unreadable_input_exits_3(run_cli, tmp_path):
    result = run_cli("diff", CORPUS / EST1, tmp_path / "nothing")
    assert result.exit_code == 3
    assert result.stderr.startswith(f"ckpt: error: {tmp_path / 'nothing'}")


def test_checksums_are_checked_while_streaming_on_both_sides(run_cli, corpus_copy):
    folder = corpus_copy("tf1_estimator")
    data = folder / "model.ckpt-200.data-00000-of-00001"
    with open_checkpoint(folder / "model.ckpt-200") as ckpt:
        raw = ckpt["dnn/hiddenlayer_1/kernel"].raw  # type: ignore[attr-defined]
    blob = bytearray(data.read_bytes())
    blob[raw.offset + 17] ^= 0x40
    data.write_bytes(bytes(blob))
    for a, b in ((CORPUS / EST200, folder / "model.ckpt-200"), (folder / "model.ckpt-200", CORPUS / EST200)):
        result = run_cli("diff", "--json", a, b)
        assert result.exit_code == 3, result.stdout
        assert "tensor 'dnn/hiddenlayer_1/kernel': checksum mismatch" in result.stderr
        doc = json.loads(result.stdout)  # with --json, the error as a document, not a half-written report
        assert (doc["ok"], doc["exit_code"]) == (False, 3) and "checksum mismatch" in doc["error"]


def test_chunked_comparison_equals_whole_comparison():
    whole = diff_checkpoints(CORPUS / EST1, CORPUS / EST200).to_json()
    small = diff_checkpoints(CORPUS / EST1, CORPUS / EST200, chunk_elements=3).to_json()
    assert [c["key"] for c in small["changed"]] == [c["key"] for c in whole["changed"]]
    for x, y in zip(small["changed"], whole["changed"]):
        assert x == approx_record(y)


def test_nan_appearing_is_flagged(corpus_copy):
    folder = corpus_copy("tf1_estimator")
    patch_value(folder / "model.ckpt-1", "dnn/logits/kernel", 4, np.nan)
    result = diff_checkpoints(CORPUS / EST1, folder / "model.ckpt-1").to_json()
    (record,) = result["changed"]
    assert record["key"] == "dnn/logits/kernel"
    assert (record["a"]["nan"], record["b"]["nan"], record["nonfinite_appeared"]) == (0, 1, True)
    assert (record["differ"], record["size"], record["max_abs_diff"], record["mean_abs_diff"]) == (1, 30, 0.0, 0.0)
    assert result["same"] == 12


# -- tolerances, names, rules (in-memory checkpoints) ----------------------------------------------------
def _pair(a: dict[str, Any], b: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return diff_checkpoints(memory_checkpoint("A", a), memory_checkpoint("B", b), **kw).to_json()


def test_tolerances_follow_allclose():
    a = {"w": np.array([1.0, 2.0, np.nan], np.float32)}
    b = {"w": np.array([1.0 + 1e-6, 2.0, np.nan], np.float32)}
    bytewise = _pair(a, b)["changed"][0]
    assert (bytewise["differ"], bytewise["a"]["nan"], bytewise["b"]["nan"]) == (1, 1, 1)  # NaN bits are identical
    assert bytewise["max_abs_diff"] == pytest.approx(float(np.float32(1.0 + 1e-6)) - 1.0)
    assert _pair(a, b, tolerance=Tolerance.of(atol=1e-5))["changed"][0]["differ"] == 1  # NaN != NaN
    assert _pair(a, b, tolerance=Tolerance.of(atol=1e-5, equal_nan=True))["changed"] == []
    assert _pair(a, b, tolerance=Tolerance.of(rtol=5e-7, equal_nan=True))["changed"][0]["differ"] == 1
    assert _pair(a, b, tolerance=Tolerance.of(rtol=2e-6, equal_nan=True))["changed"] == []


def test_cli_tolerance_options(run_cli):
    result = run_cli("diff", "--json", "--atol", "300", CORPUS / EST1, CORPUS / EST200)
    assert (result.exit_code, json.loads(result.stdout)["same"]) == (0, 13)
    result = run_cli("diff", "--json", "--atol", "1", CORPUS / EST1, CORPUS / EST200)
    doc = json.loads(result.stdout)
    a, b = read_all(EST1), read_all(EST200)
    still = sorted(k for k in a if not np.allclose(a[k], b[k], rtol=0, atol=1))
    assert [c["key"] for c in doc["changed"]] == still and "global_step" in still and result.exit_code == 1


def test_dtype_change_reports_values_too():
    result = _pair({"w": np.array([1.0, 2.5], np.float32)}, {"w": np.array([1.0, 2.0], np.float16)})
    (c,) = result["changed"]
    assert (c["kind"], c["a"]["dtype"], c["b"]["dtype"], c["differ"], c["max_abs_diff"]) == \
        ("dtype", "float32", "float16", 1, 0.5)


def test_match_by_name_pairs_tf1_names_and_skips_the_object_graph():
    a = memory_checkpoint("A", {"dense/kernel": np.ones((2, 2), np.float32), "global_step": np.int64(5)})
    b = memory_checkpoint("B", {"model/dense/kernel/.ATTRIBUTES/VARIABLE_VALUE": np.ones((2, 2), np.float32),
                                "step/.ATTRIBUTES/VARIABLE_VALUE": np.int64(5),
                                "_CHECKPOINTABLE_OBJECT_GRAPH": np.array(b"graph", dtype=object)},
                          names={"model/dense/kernel/.ATTRIBUTES/VARIABLE_VALUE": "dense/kernel",
                                 "step/.ATTRIBUTES/VARIABLE_VALUE": "global_step"})
    by_key = diff_checkpoints(a, b).to_json()
    assert (len(by_key["only_in_a"]), len(by_key["only_in_b"]), by_key["same"]) == (2, 3, 0)
    assert diff_checkpoints(a, b, match="name").to_json() == {"a": "A", "b": "B", "only_in_a": [], "only_in_b": [],
                                                               "changed": [], "same": 2}


def test_rules_rewrite_a_names_and_prefixes_strip_each_side():
    a = {"dnn/hiddenlayer_0/weights": np.zeros(3, np.float32), "tower/x": np.ones(1, np.float32)}
    b = {"model/dense/kernel": np.zeros(3, np.float32), "x": np.ones(1, np.float32)}
    rules = build_rules(maps=["dnn/hiddenlayer_0=dense"], regexes=["weights$=kernel"])
    out = diff_checkpoints(memory_checkpoint("A", a), memory_checkpoint("B", b), rules=rules,
                           strip_prefix_a="tower", strip_prefix_b="model")
    # the first matching rule wins: the map turns the name into dense/weights; the regex never runs on it
    assert (out.only_in_a, out.only_in_b, out.same) == (["dnn/hiddenlayer_0/weights"], ["model/dense/kernel"], 1)
    rules = build_rules(regexes=["^dnn/hiddenlayer_0/weights$=dense/kernel"])
    out = diff_checkpoints(memory_checkpoint("A", a), memory_checkpoint("B", b), rules=rules,
                           strip_prefix_a="tower", strip_prefix_b="model")
    assert out.equal and out.same == 2 and out.unused_rules == []


def test_cli_map_and_unused_rule_warning(run_cli):
    result = run_cli("diff", "--json", "--map", "dnn=net", "--strip-prefix-b", "nothing", CORPUS / EST1, CORPUS / EST1)
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["only_in_a"] == sorted(k for k in MANIFEST[EST1]["tensors"] if k.startswith("dnn/"))
    assert doc["same"] == 1  # global_step
    result = run_cli("diff", "--quiet", "--map", "nomatch=x", CORPUS / EST1, CORPUS / EST1)
    assert (result.exit_code, result.stderr) == (0, "")
    result = run_cli("diff", "--map", "nomatch=x", CORPUS / EST1, CORPUS / EST1)
    assert result.stderr == "ckpt: warning: rule --map nomatch=x matched nothing\n"


def test_name_clashes_leave_keys_unmatched():
    a = memory_checkpoint("A", {"x/a": np.zeros(1), "y/a": np.zeros(1)})
    b = memory_checkpoint("B", {"a": np.zeros(1)})
    out = diff_checkpoints(a, b, rules=build_rules(regexes=["^[xy]/=" ]))
    assert (out.only_in_a, out.same) == (["y/a"], 1)
    assert out.notes == ["A: 'y/a' and 'x/a' both match as 'a'; 'y/a' left unmatched"]


def test_strings_and_empty_tensors():
    a = {"s": np.array([b"a", b"b"], dtype=object), "e": np.zeros((0, 7), np.float32)}
    b = {"s": np.array([b"a", b"c"], dtype=object), "e": np.zeros((0, 7), np.float32)}
    out = _pair(a, b)
    assert out["changed"] == [{"key": "s", "kind": "value", "a": {"key": "s", "shape": [2], "dtype": "string"},
                               "b": {"key": "s", "shape": [2], "dtype": "string"}, "size": 2, "differ": 1,
                               "frac_differ": 0.5}]
    assert out["same"] == 1


def _strings_read_whole(monkeypatch) -> list[str]:
    """The names of the string tensors whose elements are read whole from here on."""
    from formats.tf_bundle.reader import BundleReader

    read: list[str] = []
    original = BundleReader._read_strings

    def spy(self, e, keep=True):
        if keep:
            read.append(e.name)
        return original(self, e, keep)

    monkeypatch.setattr(BundleReader, "_read_strings", spy)
    return read


def test_equal_string_tensors_are_compared_as_stored_bytes_not_read_whole(tmp_path, monkeypatch):
    import shutil

    import formats

    # an object-based bundle TensorFlow wrote (its graph is one string) against a copy: the graph is not read whole
    src = CORPUS / "seed_slots/easy_checkpoint"
    copy = tmp_path / "copy"
    copy.mkdir()
    for f in src.parent.glob(src.name + ".*"):
        shutil.copy(f, copy / f.name)
    read = _strings_read_whole(monkeypatch)
    out = diff_checkpoints(src, copy / src.name).to_json()
    assert (out["changed"], out["same"], read) == ([], len(MANIFEST["seed_slots/easy_checkpoint"]["tensors"]), [])
    # a big scalar string and a string array, equal; then one byte of each changed, then corrupt
    big = bytes(range(256)) * 12289  # 3 MiB and a bit: several read buffers
    values = {"big": np.array(big, dtype=object), "arr": np.array([b"x", b"", b"yz"], dtype=object)}
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    formats.write_checkpoint(a, values.items())
    formats.write_checkpoint(b, values.items())
    read.clear()  # (the writes' read-back)
    assert diff_checkpoints(a, b).to_json()["same"] == 2 and read == []
    changed = {"big": np.array(big[:-1] + b"!", dtype=object), "arr": np.array([b"x", b"", b"yy"], dtype=object)}
    formats.write_checkpoint(b, changed.items(), force=True)
    read.clear()
    out = diff_checkpoints(a, b).to_json()
    assert [(c["key"], c["kind"], c["differ"]) for c in out["changed"]] == [("arr", "value", 1), ("big", "value", 1)]
    assert set(read) == {"arr", "big"}  # unequal stored bytes: compared element by element
    formats.write_checkpoint(b, values.items(), force=True)
    with open(b + ".data-00000-of-00001", "r+b") as f:  # a byte of the big string flipped, its CRC not fixed
        data = f.read()
        at = data.index(big[1000:1100]) + 50
        f.seek(at)
        f.write(bytes([data[at] ^ 1]))
    from formats.core.errors import ChecksumError

    with pytest.raises(ChecksumError, match="big"):
        diff_checkpoints(a, b)


def test_all_dtypes_against_itself_and_bfloat16_stats():
    rel = "tf2_mixed/all_dtypes/ckpt-1"
    assert diff_checkpoints(CORPUS / rel, CORPUS / rel).to_json()["same"] == len(MANIFEST[rel]["tensors"])
    import ml_dtypes

    x = np.array([1.0, 2.0, 3.0], ml_dtypes.bfloat16)
    y = np.array([1.0, 2.0, 3.5], ml_dtypes.bfloat16)
    (c,) = _pair({"b": x}, {"b": y})["changed"]
    assert (c["max_abs_diff"], c["differ"]) == (0.5, 1)
    assert c["cosine"] == pytest.approx((1 + 4 + 10.5) / (math.sqrt(14) * math.sqrt(1 + 4 + 12.25)))


def test_bundle_vs_keras_hdf5_by_name(run_cli):
    a, b = CORPUS / "seed_slots/easy_checkpoint", CORPUS / "seed_slots/easy_weights.h5"
    assert run_cli("diff", "--quiet", a, b).exit_code == 1
    result = run_cli("diff", "--json", "--match", "name", a, b)
    assert result.exit_code == 0, result.stdout
    assert json.loads(result.stdout)["same"] == 2


def test_partitioned_against_whole_pairs_chunks_of_different_sizes(tmp_path, run_cli):
    """Issue 14 #2: a partitioned variable streams slice by slice (33, 32, 32 rows), a whole one in fixed
    chunks; the comparison realigns them instead of crashing."""
    src = CORPUS / "tf1_partitioned/model.ckpt-200"
    whole = tmp_path / "conv/ckpt-1"
    assert run_cli("convert", src, "--to", "tf-object", "-o", whole).exit_code == 0
    result = run_cli("diff", "--match", "name", "--json", src, whole)
    doc = json.loads(result.stdout)
    assert result.exit_code == 0 and doc["same"] == 11 and doc["changed"] == []
    changed = run_cli("diff", "--match", "name", "--json", CORPUS / "tf1_partitioned/model.ckpt-1", whole)
    rows = {c["key"]: c for c in json.loads(changed.stdout)["changed"]}
    with open_checkpoint(CORPUS / "tf1_partitioned/model.ckpt-1") as a, open_checkpoint(src) as b:
        x = a["input_layer/embedding/weights"].read().astype(np.float64)
        y = b["input_layer/embedding/weights"].read().astype(np.float64)
    row = rows["input_layer/embedding/weights"]
    assert changed.exit_code == 1 and row["kind"] == "value"
    assert row["max_abs_diff"] == pytest.approx(float(np.abs(x - y).max()))
    assert row["differ"] == int((x != y).sum())


def test_paired_chunks_realigns_any_boundaries():
    from formats.core.values import paired_chunks

    data = np.arange(100)
    a = iter([data[:33], data[33:65], data[65:]])
    b = iter([data[i:i + 7] for i in range(0, 100, 7)])
    pieces = list(paired_chunks(a, b))
    assert all(x.size == y.size and np.array_equal(x, y) for x, y in pieces)
    assert np.array_equal(np.concatenate([x for x, _ in pieces]), data)


def test_no_pairs_by_key_suggests_matching_by_name(tmp_path, run_cli):
    """Issue 14 #11: a name-based vs object-based diff with 0 pairs says what to try."""
    src = CORPUS / "tf1_estimator/model.ckpt-200"
    conv = tmp_path / "conv/ckpt-1"
    assert run_cli("convert", src, "--to", "tf-object", "-o", conv).exit_code == 0
    result = run_cli("diff", src, conv)
    assert result.exit_code == 1
    assert "ckpt: hint: no key is in both checkpoints, but 13 tensors pair by variable name: try --match name\n" \
        in result.stderr
    assert "hint" not in run_cli("diff", "--match", "name", src, conv).stderr


def test_names_as_ls_shows_them(run_cli):
    """Issue 24, item 12: diff showed only optimizer/_variables/N keys; --names says what each one is
    (through the shipped entry point, which runs diff without click)."""
    import subprocess
    import sys

    from .test_stats import KERAS2_RUN, KERAS2_SLOTS

    done = subprocess.run([sys.executable, "-m", "ckpt_cli", "--no-color", "diff", "--names", "-f",
                           "optimizer/_variables/*", str(KERAS2_RUN / "ckpt-9"), str(KERAS2_RUN / "ckpt-10")],
                          capture_output=True, text=True, env={**os.environ, "COLUMNS": "250"})
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:4] == ["key", "name", "role", "change"]
    assert {line.split()[0]: tuple(line.split()[1:3]) for line in lines[1:-1]} == KERAS2_SLOTS
    doc = json.loads(run_cli("diff", "--names", "--json", "-f", "optimizer/_variables/*", KERAS2_RUN / "ckpt-9",
                             KERAS2_RUN / "ckpt-10").stdout)
    expected = {k: {"name": n, "role": r} for k, (n, r) in KERAS2_SLOTS.items()}
    assert doc["names"] == {"a": expected, "b": expected}


def test_names_of_keys_on_one_side_only(run_cli):
    result = run_cli("diff", "--names", CORPUS / "tf1_estimator/model.ckpt-1", CORPUS / "seed_keras2/tf_ckpts/ckpt-10")
    rows = [line.split() for line in result.stdout.splitlines()]
    assert ["dnn/hiddenlayer_0/kernel/Adagrad", "dnn/hiddenlayer_0/kernel/Adagrad", "slot", "only", "in", "A"] in rows
    assert ["optimizer/_variables/2/.ATTRIBUTES/VARIABLE_VALUE", "Adam/v/net/dense/kernel", "slot", "only", "in",
            "B"] in rows
