"""V1 checkpoints (TF1 ``Saver(write_version=V1)``) as TensorFlow wrote them: opened however a user names
them, checked against manifest_more.json (including the values TensorFlow's own reader cannot return),
and every command run on them through the CLI."""
from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import formats
from formats.discover.resolve import resolve
from formats.discover.scan import step_of

from .conftest import CORPUS, digest

MORE = json.loads((CORPUS / "manifest_more.json").read_text())["entries"]
V1 = sorted(k for k, v in MORE.items() if v["format"] == "tf-v1")
ADAM_DIR, SHARDED_DIR = CORPUS / "tf1_v1_adam", CORPUS / "tf1_v1_sharded"
LATEST, EARLIER = ADAM_DIR / "model.ckpt-30", ADAM_DIR / "model.ckpt-1"
PATTERN = SHARDED_DIR / "model.ckpt-?????-of-00003"
ITEMSIZE = {"float32": 4, "float64": 8, "complex64": 8, "int8": 1, "uint8": 1, "int32": 4, "int64": 8, "bool": 1}
# what TensorFlow's V1 reader refuses (UnimplementedError): partitioned variables and complex64
TF_CANNOT = ["input_layer/embedding/weights", "input_layer/embedding/weights/Adam",
             "input_layer/embedding/weights/Adam_1", "extra/c64"]

# (what the user types, relative to the corpus) -> the manifest entry it names
TYPED = [
    ("tf1_v1_adam/model.ckpt-1", "tf1_v1_adam/model.ckpt-1"),
    ("tf1_v1_adam/model.ckpt-30", "tf1_v1_adam/model.ckpt-30"),
    ("tf1_v1_adam/model.ckpt-30.meta", "tf1_v1_adam/model.ckpt-30"),
    ("tf1_v1_adam", "tf1_v1_adam/model.ckpt-30"),  # the state file's absolute paths are stale: basenames
    ("tf1_v1_sharded/model.ckpt-?????-of-00003", "tf1_v1_sharded/model.ckpt-?????-of-00003"),
    ("tf1_v1_sharded", "tf1_v1_sharded/model.ckpt-?????-of-00003"),
    ("tf1_v1_sharded/model.ckpt-00001-of-00003", "tf1_v1_sharded/model.ckpt-?????-of-00003"),
    ("tf1_v1_sharded/model.ckpt", "tf1_v1_sharded/model.ckpt-?????-of-00003"),
]


def _manifest_files(rel: str) -> list[str]:
    return [str(CORPUS / os.path.dirname(rel) / f) for f in MORE[rel]["files"]]


def test_manifest_lists_the_v1_families():
    assert V1 == ["tf1_v1_adam/model.ckpt-1", "tf1_v1_adam/model.ckpt-30", "tf1_v1_sharded/model.ckpt-?????-of-00003"]


@pytest.mark.parametrize("typed, rel", TYPED)
def test_open_as_typed_matches_the_manifest(typed, rel):
    want = MORE[rel]["tensors"]
    assert resolve(CORPUS / typed).format == "tf-v1"
    with formats.open_checkpoint(CORPUS / typed) as ckpt:
        assert (ckpt.path, ckpt.format, ckpt.files) == (str(CORPUS / rel), "tf-v1", _manifest_files(rel))
        assert sorted(ckpt) == sorted(want)
        for key, spec in want.items():
            entry = ckpt[key]
            assert (list(entry.shape), entry.dtype) == (spec["shape"], spec["dtype"]), key
            assert digest(entry.read()) == spec["sha256"], key


@pytest.mark.parametrize("rel", V1[:2])
def test_values_tensorflow_cannot_return(rel):
    """Partitioned variables (3 slices each) and complex64, which tf.train.load_checkpoint refuses."""
    with formats.open_checkpoint(CORPUS / rel) as ckpt:
        for key in TF_CANNOT:
            spec = MORE[rel]["tensors"][key]
            value = ckpt[key].read()
            assert (list(value.shape), value.dtype.name) == (spec["shape"], spec["dtype"])
            assert digest(value) == spec["sha256"], key


def test_strings_scalars_and_small_integers():
    with formats.open_checkpoint(LATEST) as ckpt:
        assert ckpt["extra/words"].read().tolist() == [b"alpha", b"", b"\x00bin\xff"]
        assert ckpt["extra/scalar"].read() == np.float32(3.5) and ckpt["extra/scalar"].shape == ()
        assert ckpt["global_step"].read() == 30 and ckpt["global_step"].dtype == "int64"
        assert ckpt["extra/flag"].read().tolist() == [True, False, True]
        # 3 strings: a tag and a length byte each, then 5 + 0 + 5 bytes
        assert ckpt["extra/words"].nbytes == 3 * 2 + 10


def test_roles_follow_tf1_names():
    with formats.open_checkpoint(LATEST) as ckpt:
        slot = ckpt["input_layer/embedding/weights/Adam_1"]
        assert (slot.role, slot.slot_of, slot.optimizer, slot.slot_name) == \
            ("slot", "input_layer/embedding/weights", "Adam", "v")
        assert [ckpt[k].role for k in ("global_step", "beta1_power", "extra/f64")] == \
            ["optimizer", "optimizer", "variable"]
        assert ckpt["dnn/logits/kernel"].name == "dnn/logits/kernel"


def test_metadata_and_files():
    with formats.open_checkpoint(PATTERN) as ckpt:
        assert ckpt.metadata == {"files": 3, "producer": 1, "min_consumer": 0}
        assert [os.path.basename(f) for f in ckpt["tower_1/w"].files] == ["model.ckpt-00001-of-00003"]
        assert ckpt.problems() == []


def test_a_bundle_beside_a_v1_file_of_the_same_prefix_wins(tmp_path):
    """TensorFlow reads ``prefix.index`` when it exists, whatever else is there."""
    shutil.copyfile(LATEST, tmp_path / "model.ckpt-1")
    for f in (CORPUS / "tf1_adam").glob("model.ckpt-1.*"):
        shutil.copyfile(f, tmp_path / f.name)
    with formats.open_checkpoint(tmp_path / "model.ckpt-1") as ckpt:
        assert ckpt.format == "tf-name"


def test_step_of_a_sharded_pattern():
    assert step_of("run/model.ckpt-200-?????-of-00003") == 200
    assert step_of("run/model.ckpt-?????-of-00003") is None


# -- ls DIR ----------------------------------------------------------------------------------------

def _nbytes(rel: str) -> int:
    """Bytes of every tensor of a manifest entry: elements x item size; the one string tensor as above."""
    total = 0
    for spec in MORE[rel]["tensors"].values():
        total += 16 if spec["dtype"] == "string" else math.prod(spec["shape"]) * ITEMSIZE[spec["dtype"]]
    return total


def test_ls_json_dir_lists_each_v1_checkpoint_once_latest_marked(run_cli):
    result = run_cli("ls", "--json", ADAM_DIR)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)["checkpoints"]
    assert [(r["path"], r["step"], r["format"], r["tensors"], r["nbytes"], r["latest"]) for r in rows] == [
        (str(EARLIER), 1, "tf-v1", 26, _nbytes(V1[0]), False),
        (str(LATEST), 30, "tf-v1", 26, _nbytes(V1[1]), True)]
    result = run_cli("ls", "--json", SHARDED_DIR)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)["checkpoints"]
    assert [(r["path"], r["step"], r["tensors"], r["nbytes"], r["latest"]) for r in rows] == [
        (str(PATTERN), None, 3, _nbytes(V1[2]), True)]
    # a checkpoint's time is its first file's (a bundle's index), locally as behind a URL (one request)
    assert rows[0]["mtime"] == os.path.getmtime(_manifest_files(V1[2])[0])


def test_ls_recursive_over_both_runs(corpus_copy, run_cli, tmp_path):
    corpus_copy("tf1_v1_adam")
    corpus_copy("tf1_v1_sharded")
    result = run_cli("ls", "-r", "--json", tmp_path)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)["checkpoints"]
    assert [(os.path.relpath(r["path"], tmp_path), r["latest"]) for r in rows] == [
        ("tf1_v1_adam/model.ckpt-1", False), ("tf1_v1_adam/model.ckpt-30", True),
        ("tf1_v1_sharded/model.ckpt-?????-of-00003", True)]


# -- every command ---------------------------------------------------------------------------------

@pytest.mark.parametrize("typed, rel", [TYPED[0], TYPED[6], TYPED[4]])
def test_ls_and_verify(run_cli, typed, rel):
    result = run_cli("ls", "--json", CORPUS / typed)
    assert result.exit_code == 0, result.output
    listing = json.loads(result.output)
    assert listing["format"] == "tf-v1"
    assert {t["key"]: t["shape"] for t in listing["tensors"]} == \
        {k: v["shape"] for k, v in MORE[rel]["tensors"].items()}
    # TensorFlow's V1 reader copies out only these (complex64 and the like: "Data type not supported"), and no
    # partitioned variable ("Sliced checkpoints are not supported"; the interop tier asks TensorFlow)
    refused = sorted(k for k, v in MORE[rel]["tensors"].items()
                     if v["dtype"] not in ("float32", "float64", "int32", "uint8", "int16", "int8", "string", "int64",
                                           "bool") or k.startswith("input_layer/embedding/weights"))
    result = run_cli("verify", "--json", CORPUS / typed)
    assert result.exit_code == (1 if refused else 0), result.output
    report = json.loads(result.output)
    assert (report["ok"], report["tensors"], report["files"], report["problems"]) == \
        (not refused, len(MORE[rel]["tensors"]), MORE[rel]["files"], [])
    assert [p["where"] for p in report["loader_refusals"]] == refused
    result = run_cli("verify", "--json", "--allow-loader-refusals", CORPUS / typed)
    assert result.exit_code == 0 and json.loads(result.output)["ok"] is True


def test_ls_tree_and_names(run_cli):
    result = run_cli("ls", "--tree", LATEST)
    assert result.exit_code == 0 and "slot v of Adam" in result.output
    result = run_cli("ls", "--names", LATEST)
    assert result.exit_code == 0 and "input_layer/embedding/weights" in result.output


def test_show(run_cli):
    result = run_cli("show", "--json", ADAM_DIR, "input_layer/embedding/weights[10:12, :]")
    assert result.exit_code == 0, result.output
    with formats.open_checkpoint(LATEST) as ckpt:  # its digest is checked against the manifest above
        whole = ckpt["input_layer/embedding/weights"].read()
    np.testing.assert_array_equal(np.array(json.loads(result.output)["values"], "f4"), whole[10:12])
    result = run_cli("show", "--json", LATEST, "extra/c64")
    assert result.exit_code == 0, result.output
    pairs = json.loads(result.output)["values"]
    assert hashlib.sha256(np.array([complex(*p) for p in pairs], "c8").tobytes()).hexdigest() == \
        MORE[V1[1]]["tensors"]["extra/c64"]["sha256"]


def test_stats(run_cli):
    result = run_cli("stats", "--json", PATTERN)
    assert result.exit_code == 0, result.output
    rows = {r["key"]: r for r in json.loads(result.output)["tensors"]}
    with formats.open_checkpoint(PATTERN) as ckpt:
        for key in ("tower_0/w", "tower_2/w"):
            value = ckpt[key].read().astype("f8")
            assert rows[key]["min"] == pytest.approx(value.min()) and rows[key]["max"] == pytest.approx(value.max())
            assert rows[key]["mean"] == pytest.approx(value.mean(), rel=1e-6)


def test_diff(run_cli):
    result = run_cli("diff", "--json", EARLIER, LATEST)
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    before, after = MORE[V1[0]]["tensors"], MORE[V1[1]]["tensors"]
    assert sorted(c["key"] for c in report["changed"]) == sorted(k for k in after if after[k] != before[k])
    assert (report["only_in_a"], report["only_in_b"]) == ([], [])
    assert run_cli("diff", LATEST, ADAM_DIR).exit_code == 0


def test_extract(run_cli, tmp_path):
    result = run_cli("extract", LATEST, "-o", f"{tmp_path}/arrays/")
    assert result.exit_code == 0, result.output
    for key, spec in MORE[V1[1]]["tensors"].items():
        value = np.load(tmp_path / "arrays" / f"{key}.npy")
        assert digest(value) == spec["sha256"], key


def test_doctor(run_cli):
    assert run_cli("doctor", LATEST, "--against", EARLIER).exit_code == 0
    result = run_cli("doctor", "--json", LATEST, "--against", CORPUS / "tf1_adam" / "model.ckpt-200")
    assert result.exit_code == 1, result.output
    assert json.loads(result.output)["would_load"] is False


@pytest.mark.parametrize("to", ["tf-name", "tf-object"])
@pytest.mark.parametrize("rel", [V1[1], V1[2]])
def test_convert_migrates_to_a_v2_bundle(run_cli, tmp_path, to, rel):
    out = tmp_path / "v2" / "model.ckpt"
    result = run_cli("convert", CORPUS / rel, "-o", out, "--to", to)
    assert result.exit_code == 0, result.output
    want = MORE[rel]["tensors"]
    with formats.open_checkpoint(out) as ckpt:
        assert ckpt.format == to
        by_name = {e.name: e for e in ckpt.values() if e.role not in ("object_graph", "save_counter")}
        assert sorted(by_name) == sorted(want)
        counters = [e.read() for e in ckpt.values() if e.role == "save_counter"]
        assert counters == ([1] if to == "tf-object" else [])  # tf.train.Checkpoint's, saved once
        for name, spec in want.items():
            assert digest(by_name[name].read()) == spec["sha256"], name
    match = ["--match", "name"] if to == "tf-object" else []
    assert run_cli("diff", *match, CORPUS / rel, out).exit_code == 0


def test_trend_over_a_v1_run(run_cli):
    result = run_cli("trend", "--json", ADAM_DIR)
    assert result.exit_code == 0, result.output


def test_verify_of_a_damaged_copy(run_cli, corpus_copy):
    copy = corpus_copy("tf1_v1_adam") / "model.ckpt-1"
    data = bytearray(copy.read_bytes())
    data[len(data) // 2] ^= 0x10
    copy.write_bytes(bytes(data))
    result = run_cli("verify", copy)
    assert result.exit_code == 3 and "checksum mismatch" in result.output


def test_state_file_naming_stale_absolute_paths_is_followed():
    state = (ADAM_DIR / "checkpoint").read_text()
    assert '"/home/user/experiments/tf1_v1_adam/model.ckpt-30"' in state and not Path("/home/user/experiments").exists()
    assert resolve(ADAM_DIR).path == str(LATEST)
    assert resolve(SHARDED_DIR).path == str(PATTERN)


def test_glob_characters_in_the_directory_are_literal(tmp_path, run_cli):
    run = tmp_path / "run[1]"
    shutil.copytree(SHARDED_DIR, run)
    for shard in run.glob("model.ckpt-0000?-of-00003"):
        shard.rename(run / shard.name.replace("model.ckpt", "m[2]"))
    (run / "checkpoint").write_text('model_checkpoint_path: "m[2]-?????-of-00003"\n')
    shutil.copyfile(EARLIER, run / "single?")  # a file whose name holds a glob character
    with formats.open_checkpoint(run / "m[2]-?????-of-00003") as ckpt:
        assert sorted(ckpt) == ["tower_0/w", "tower_1/w", "tower_2/w"] and len(ckpt.files) == 3
    with formats.open_checkpoint(run / "single?") as ckpt:
        assert ckpt.files == [str(run / "single?")] and len(ckpt) == 26
    rows = json.loads(run_cli("ls", "--json", run).output)["checkpoints"]
    assert [(os.path.basename(r["path"]), r["latest"]) for r in rows] == \
        [("m[2]-?????-of-00003", True), ("single?", False)]


# -- every dtype V1 stores, crafted byte by byte (TensorFlow's own files: tests/interop/test_v1_tf.py) ---------

def _crafted_cases():
    import ml_dtypes

    from .hostile.craft_v1 import ld, packed_varints

    half = np.array([1.5, -2.0, 65504.0, 0.0], "<f2")
    bf16 = np.array([1.5, -2.0, 3e38, -0.0], ml_dtypes.bfloat16)
    return [  # (DataType number, value, its TensorProto)
        (19, half, packed_varints(13, half.view("<u2").tolist())),
        (14, bf16, packed_varints(13, bf16.view("<u2").tolist())),
        (2, np.array([0.1, -1e300]), ld(6, np.array([0.1, -1e300], "<f8").tobytes())),
        (18, np.array([complex(1, 2), complex(0, -3.5)]), ld(12, np.array([1, 2, 0, -3.5], "<f8").tobytes())),
        (5, np.array([-32768, 7], "i2"), packed_varints(7, [-32768, 7])),
        (17, np.array([65535, 0], "u2"), packed_varints(7, [65535, 0])),
        (11, np.array([-128, 127], "i1"), packed_varints(7, [-128, 127])),  # qint8: as int8
        (9, np.array([-(2 ** 63), 2 ** 63 - 1]), packed_varints(10, [-(2 ** 63), 2 ** 63 - 1])),
        (22, np.array([2 ** 32 - 1, 1], "u4"), packed_varints(16, [2 ** 32 - 1, 1])),
        (23, np.array([2 ** 64 - 1, 5], "u8"), packed_varints(17, [2 ** 64 - 1, 5])),
        (10, np.array([False, True]), packed_varints(11, [0, 1])),
        (1, np.array([1.0, -2.5], "f4"), b"".join(bytes([5 << 3 | 5]) + np.float32(v).tobytes() for v in (1, -2.5))),
    ]


def test_scalar_string(tmp_path):
    from .hostile.craft_v1 import STRING, ld, simple

    path = simple(tmp_path / "model.ckpt", b"s", STRING, [], ld(8, b"\x00text"))
    with formats.open_checkpoint(path) as ckpt:
        value = ckpt["s"].read()
        assert value.shape == () and value.dtype == object and value.item() == b"\x00text"


@pytest.mark.parametrize("case", range(12))
def test_crafted_dtypes(tmp_path, case):
    from .hostile.craft_v1 import simple

    dtype, want, tensor = _crafted_cases()[case]
    path = simple(tmp_path / "model.ckpt", b"t", dtype, list(want.shape), tensor)
    with formats.open_checkpoint(path) as ckpt:
        got = ckpt["t"].read()
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_snappy_compressed_v1_table(tmp_path, run_cli):
    from .hostile.craft import block, table, varint
    from .hostile.craft_v1 import FLOAT, FULL, floats, meta_value, saved_slice, slice_key, slice_meta

    pairs = sorted([(b"", meta_value([slice_meta(b"w", FLOAT, [3], [[(0, FULL)]])])),
                    (slice_key(b"w", [(0, FULL)]), saved_slice(b"w", [(0, FULL)], floats([1, 2, 3])))])
    raw = block(pairs)
    literal = varint(len(raw)) + b"".join(bytes([(len(raw[i:i + 60]) - 1) << 2]) + raw[i:i + 60]
                                          for i in range(0, len(raw), 60))
    (tmp_path / "model.ckpt").write_bytes(table(pairs, data_block=literal, kind=1))
    with formats.open_checkpoint(tmp_path / "model.ckpt") as ckpt:
        assert ckpt.format == "tf-v1" and ckpt["w"].read().tolist() == [1.0, 2.0, 3.0]
    rows = json.loads(run_cli("ls", "--json", tmp_path).output)["checkpoints"]
    assert [r["path"] for r in rows] == [str(tmp_path / "model.ckpt")]
