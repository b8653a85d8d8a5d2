"""The npz and safetensors readers: what ``convert`` and ``extract`` wrote reads back with the source's keys,
dtypes (bfloat16 restored from the provenance record), names and roles, and ``diff --match name`` finds it
identical; files written by numpy and by the safetensors package read as those libraries read them."""
from __future__ import annotations

import json
import struct
import zipfile
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import formats
from formats.core.provenance import PROVENANCE_MEMBER
from formats.core.model import OBJECT_GRAPH_KEY
from formats.ops.compare.verify import verify_checkpoint
from formats.ops.convert.cross import convert_file

from .conftest import CORPUS, MANIFEST, digest

BUNDLE = "keras2_tagger/tagger_tf/ckpt"
KERAS = "keras3_tagger/tagger.weights.h5"
DTYPES = "tf2_mixed/all_dtypes/ckpt-1"
TF1 = "tf1_adam/model.ckpt-200"
NOT_IN_NPZ: set[str] = set()  # strings are stored as fixed-width bytes (the one npz policy)
NOT_IN_SAFETENSORS = {"string", "complex64", "complex128"}


def _export(tmp_path: Path, rel: str, to: str) -> Path:
    """Convert a corpus checkpoint (or any path) to ``to`` in ``tmp_path``."""
    out = tmp_path / f"{Path(rel).name}.{to}"
    result = convert_file(CORPUS / rel, out, to, skip_unreadable=True)  # what the format cannot store
    assert result.ok, result.plan.errors
    return out


@pytest.mark.parametrize("to", ["npz", "safetensors"])
@pytest.mark.parametrize("rel", [BUNDLE, KERAS, DTYPES, TF1])
def test_export_reads_back_as_its_source(tmp_path, rel, to):
    out = _export(tmp_path, rel, to)
    left_out = NOT_IN_NPZ if to == "npz" else NOT_IN_SAFETENSORS
    with formats.open_checkpoint(CORPUS / rel) as src, formats.open_checkpoint(out) as back:
        assert back.format == to
        kept = [k for k in src if k != OBJECT_GRAPH_KEY and src[k].dtype not in left_out]
        assert list(back) == kept  # the source's order, from the provenance record
        for key in kept:
            a, b = src[key], back[key]
            assert (b.shape, b.dtype, b.name, b.role) == (a.shape, a.dtype, a.name, a.role), key
            assert b.nbytes == a.nbytes or a.dtype == "string", key  # strings are stored fixed-width in npz
            value, want = b.read(), a.read()
            assert value.dtype == want.dtype, key
            assert (value.tolist() == want.tolist()) if value.dtype == object else value.tobytes() == want.tobytes(), key
            if rel in MANIFEST:
                assert digest(value) == MANIFEST[rel]["tensors"][key]["sha256"], key
        assert back.problems() == [] and verify_checkpoint(back).ok


@pytest.mark.parametrize("to", ["npz", "safetensors"])
@pytest.mark.parametrize("rel", [BUNDLE, KERAS, TF1])
def test_diff_match_name_finds_the_export_identical(tmp_path, run_cli, rel, to):
    out = _export(tmp_path, rel, to)
    res = run_cli("diff", "--match", "name", CORPUS / rel, out)
    assert res.exit_code == 0, res.output
    assert "identical" in res.stdout


@pytest.mark.parametrize("to", ["npz", "safetensors"])
def test_bfloat16_round_trip(tmp_path, run_cli, to):
    out = _export(tmp_path, DTYPES, to)
    key = "typed/bfloat16/.ATTRIBUTES/VARIABLE_VALUE"
    if to == "npz":
        with np.load(out, allow_pickle=False) as data:  # what numpy sees: the bits as uint16
            assert data[key].dtype == np.dtype("<u2")
    with formats.open_checkpoint(out) as back:
        assert back[key].dtype == "bfloat16"
        value = back[key].read()
        assert value.dtype == np.dtype(ml_dtypes.bfloat16)
        assert digest(value) == MANIFEST[DTYPES]["tensors"][key]["sha256"]
        assert b"".join(bytes(c) for c in back[key].byte_chunks(5)) == value.tobytes()
        assert np.concatenate(list(back[key].iter_chunks(5))).tobytes() == value.tobytes()


@pytest.mark.parametrize("to", ["npz", "safetensors"])
def test_bfloat16_survives_bundle_export_bundle(tmp_path, run_cli, to):
    from formats.tf_bundle.writer import write_checkpoint

    kernel = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4).astype(ml_dtypes.bfloat16)
    src = tmp_path / "src" / "model.ckpt-1"
    write_checkpoint(src, [("dense/kernel", kernel), ("dense/bias", np.ones(4, np.float32))], None)
    out = _export(tmp_path, str(src), to)
    back = tmp_path / "back" / "ckpt-1"
    res = run_cli("convert", out, "-o", back, "--to", "tf-object")
    assert res.exit_code == 0, res.output
    with formats.open_checkpoint(back) as again:
        by_name = {e.name: e for e in again.values()}
        assert by_name["dense/kernel"].dtype == "bfloat16"
        assert by_name["dense/kernel"].read().tobytes() == kernel.tobytes()
    res = run_cli("diff", "--match", "name", src, back)
    assert res.exit_code == 0 and "identical (2 tensors" in res.stdout, res.output


def test_npz_converted_back_to_a_bundle_diffs_identical(tmp_path, run_cli):
    npz = _export(tmp_path, TF1, "npz")
    back = tmp_path / "tf2" / "ckpt-1"
    assert run_cli("convert", npz, "-o", back, "--to", "tf-object").exit_code == 0
    res = run_cli("diff", "--match", "name", CORPUS / TF1, back)
    assert res.exit_code == 0 and "identical (21 tensors" in res.stdout


def test_listed_in_a_directory(tmp_path, run_cli):
    _export(tmp_path, KERAS, "npz")
    _export(tmp_path, KERAS, "safetensors")
    res = run_cli("ls", "--json", tmp_path)
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    rows = rows["checkpoints"] if isinstance(rows, dict) else rows
    assert sorted((Path(r["path"]).name, r["format"], r["tensors"]) for r in rows) == [
        ("tagger.weights.h5.npz", "npz", 34), ("tagger.weights.h5.safetensors", "safetensors", 34)]


# --- files other programs wrote ---------------------------------------------------------------------------

def _numpy_arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    return {
        "f32": rng.normal(size=(3, 5)).astype("<f4"),
        "fortran": np.asfortranarray(rng.normal(size=(4, 3))),
        "big_endian": np.arange(6, dtype=">i4").reshape(2, 3),
        "flags": np.array([True, False, True]),
        "c64": (rng.normal(size=4) + 1j).astype(np.complex64),
        "half": np.arange(5, dtype=np.float16),
        "scalar": np.array(3.5),
        "empty": np.zeros((0, 4), dtype=np.int16),
        "nested/name": np.arange(3, dtype=np.uint8),
        "words": np.array([b"ab", b"c", b""]),
    }


@pytest.mark.parametrize("save", [np.savez, np.savez_compressed])
def test_npz_written_by_numpy(tmp_path, save):
    arrays = _numpy_arrays()
    path = tmp_path / "plain.npz"
    save(path, **arrays)
    with formats.open_checkpoint(path) as ckpt, np.load(path, allow_pickle=False) as data:
        assert ckpt.format == "npz" and sorted(ckpt) == sorted(arrays) == sorted(data.files)
        assert ckpt.metadata == {"members": len(arrays)}
        for key, want in arrays.items():
            entry = ckpt[key]
            assert entry.shape == want.shape
            got = entry.read()
            if key == "words":
                assert entry.dtype == "string" and list(got) == [b"ab", b"c", b""]
                continue
            assert entry.dtype == want.dtype.newbyteorder("=").name
            assert got.dtype.byteorder in "=<|"
            np.testing.assert_array_equal(got, data[key])
            assert got.flags.c_contiguous
            if got.size:
                assert np.concatenate([c.reshape(-1) for c in entry.iter_chunks(4)]).tobytes() == got.tobytes()
        assert verify_checkpoint(ckpt).ok


def test_npz_written_by_extract(tmp_path, run_cli):
    out = tmp_path / "all.npz"
    assert run_cli("extract", CORPUS / DTYPES, "-o", out).exit_code == 0
    with formats.open_checkpoint(out) as ckpt, np.load(out, allow_pickle=False) as data:
        members = [f for f in data.files if f not in (PROVENANCE_MEMBER, "__ckpt_object_graph__")]  # (extract
        assert sorted(ckpt) == sorted(members)  # records provenance too, and carries the object graph)
        assert len(data.files) == len(members) + 2
        for key in members:
            stored = data[key]
            if ckpt[key].dtype == "bfloat16":  # stored as its raw bits; the provenance record restores the dtype
                stored = stored.view(ml_dtypes.bfloat16)
            np.testing.assert_array_equal(ckpt[key].read(), stored.astype(object) if stored.dtype.kind == "S"
                                          else stored)


def test_safetensors_written_by_the_safetensors_package(tmp_path):
    save_file = pytest.importorskip("safetensors.numpy").save_file
    arrays = {"w": np.arange(12, dtype=np.float32).reshape(3, 4), "b": np.array([1, -2], dtype=np.int64),
              "h": np.ones((2, 2), dtype=np.float16), "m": np.array([True, False])}
    path = tmp_path / "lib.safetensors"
    save_file(arrays, str(path), metadata={"format": "np", "note": "hi"})
    with formats.open_checkpoint(path) as ckpt:
        assert ckpt.format == "safetensors" and sorted(ckpt) == sorted(arrays)
        assert ckpt.metadata["metadata"] == {"format": "np", "note": "hi"}
        for key, want in arrays.items():
            got = ckpt[key].read()
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
            assert (ckpt[key].name, ckpt[key].role) == (key, "variable")


def test_safetensors_found_by_content_whatever_its_name(tmp_path):
    out = _export(tmp_path, KERAS, "safetensors")
    renamed = out.rename(tmp_path / "weights.bin")
    with formats.open_checkpoint(renamed) as ckpt:
        assert ckpt.format == "safetensors" and len(ckpt) == 34


# --- the provenance record ----------------------------------------------------------------------------------

def _rewrite_npz_record(path: Path, change) -> None:
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    record = json.loads(str(arrays["__ckpt_provenance__"]))
    arrays["__ckpt_provenance__"] = np.array(change(record))
    path.unlink()
    np.savez(path, **arrays)


def test_record_disagreeing_with_the_file_is_reported_and_ignored(tmp_path):
    out = _export(tmp_path, DTYPES, "npz")
    key = "typed/int16/.ATTRIBUTES/VARIABLE_VALUE"

    def change(record):
        for item in record["tensors"]:
            if item["key"] == key:
                item["dtype"] = "float64"
        return json.dumps(record)

    _rewrite_npz_record(out, change)
    with formats.open_checkpoint(out) as ckpt:
        assert ckpt[key].dtype == "int16"
        assert [(p.where, p.message) for p in ckpt.problems()] == [
            (key, "provenance records dtype float64, the file stores int16; read as int16")]


@pytest.mark.parametrize("record, message", [
    ("not json", "the provenance record is not valid JSON"),
    (json.dumps({"tensors": 5}), "the provenance record lists no tensors; ignored"),
    (json.dumps({"tensors": [{"key": "x"}, 7]}), "2 provenance record item(s) are malformed or repeated; ignored"),
])
def test_damaged_record_is_a_problem_not_an_error(tmp_path, record, message):
    out = _export(tmp_path, KERAS, "npz")
    _rewrite_npz_record(out, lambda _: record)
    with formats.open_checkpoint(out) as ckpt:
        assert len(ckpt) == 34
        problems = [(p.where, p.message) for p in ckpt.problems()]
        assert len(problems) == 1 and problems[0][0] == "__ckpt_provenance__.npy"
        assert problems[0][1].startswith(message)


def test_renamed_export_keeps_the_new_keys_and_the_old_names(tmp_path, run_cli):
    out = tmp_path / "r.safetensors"
    res = run_cli("convert", CORPUS / BUNDLE, "-o", out, "--to", "safetensors",
                  "--regex", r"^(.*)/\.ATTRIBUTES/VARIABLE_VALUE$=\1")
    assert res.exit_code == 0, res.output
    with formats.open_checkpoint(out) as ckpt:
        assert ckpt["layer_with_weights-1/cell/kernel"].name == "lstm/lstm_cell/kernel"
    assert run_cli("diff", "--match", "name", CORPUS / BUNDLE, out).exit_code == 0


def test_safetensors_header_layout_is_what_the_reader_checks(tmp_path):
    out = _export(tmp_path, KERAS, "safetensors")
    raw = out.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + length])
    with formats.open_checkpoint(out) as ckpt:
        assert ckpt.metadata["header_bytes"] == length
        for key, entry in ckpt.items():
            begin, end = header[key]["data_offsets"]
            assert entry.read().tobytes() == raw[8 + length + begin:8 + length + end]


def test_npz_is_claimed_by_name_and_keras_zip_by_content(tmp_path):
    out = _export(tmp_path, KERAS, "npz")
    other = tmp_path / "weights.zip"
    other.write_bytes(out.read_bytes())
    assert zipfile.is_zipfile(other)
    with pytest.raises(formats.NotACheckpointError):
        formats.open_checkpoint(other)


@pytest.mark.parametrize("to", ["npz", "safetensors"])
def test_an_edit_that_casts_keeps_the_record_true(tmp_path, to):
    """The provenance record names the dtype each tensor is written with: an edit casting float32 to bfloat16
    reads back as bfloat16 with no problem (the record once kept float32: npz read uint16 bits)."""
    out = _export(tmp_path, DTYPES, to)
    edited = tmp_path / f"cast.{to}"
    assert formats.edit(out, edited, casts={"float32": "bfloat16"}).ok
    with formats.open_checkpoint(edited) as back:
        assert back.problems() == []
        assert back["typed/float32/.ATTRIBUTES/VARIABLE_VALUE"].dtype == "bfloat16"


def test_npz_without_a_record_keeps_bfloat16(tmp_path):
    """``write`` given no provenance record makes one when a dtype is stored as its bits."""
    from formats.core import registry

    bits = np.array([1.5, -2.0], dtype=ml_dtypes.bfloat16)

    class Row:
        key, value, shape, dtype = "w", bits, (2,), "bfloat16"

    out = str(tmp_path / "w.npz")
    registry.writer_of("npz").write(out, [Row()], layout="npz")
    with formats.open_checkpoint(out) as back:
        assert back["w"].dtype == "bfloat16" and back["w"].read().tobytes() == bits.tobytes()


def test_a_variant_exported_to_npz_reads_back_as_a_variant(tmp_path, run_cli):
    """A variant is stored as fixed-width bytes and the record says it was a variant: read back, it is one again
    (its serialized elements the source's), so converting the npz back writes a variant, not a string."""
    source = CORPUS / "seed_slots" / "tf_ckpts" / "ckpt-5"
    key = "iterator/.ATTRIBUTES/ITERATOR_STATE"
    out = tmp_path / "x.npz"
    assert run_cli("convert", source, "-o", out, "--to", "npz").exit_code == 0
    with np.load(out) as data:
        assert data[key].dtype.kind == "S"
        record = {t["key"]: t for t in json.loads(str(data[PROVENANCE_MEMBER]))["tensors"]}
    assert record[key]["dtype"] == "variant"
    with formats.open_checkpoint(source) as src, formats.open_checkpoint(out) as back:
        assert (back[key].dtype, back[key].shape) == ("variant", (5,)) == (src[key].dtype, tuple(src[key].shape))
        assert back[key].elements() == src[key].elements()
        plain = next(k for k in back if back[k].dtype != "variant")
        assert back[plain].dtype == src[plain].dtype
