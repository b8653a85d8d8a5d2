"""`ckpt ls` and `ckpt verify` on Keras weight files: JSON against the manifest, directory rows, errors."""
from __future__ import annotations

import json

import h5py
import pytest

from .conftest import CORPUS, MANIFEST, entries_of, numbers_by_value

HDF5 = entries_of("hdf5")
FORMATS = {"keras2_tagger/tagger_model.h5": "keras2-h5", "keras2_tagger/tagger_weights.h5": "keras2-h5",
           "keras3_tagger/tagger.weights.h5": "keras3-h5", "seed_slots/easy_weights.h5": "keras2-h5"}


def _error_line(result) -> str:
    lines = result.stderr.splitlines()
    assert result.exit_code == 3, result.stdout
    assert len(lines) >= 1 and "Traceback" not in result.stderr
    assert all(line.startswith("  hint: ") for line in lines[1:])
    return lines[0]


@pytest.mark.parametrize("rel", HDF5)
def test_ls_json_lists_what_h5py_lists(run_cli, rel):
    result = run_cli("ls", "--json", CORPUS / rel)
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["path"] == str(CORPUS / rel) and doc["format"] == FORMATS[rel]
    got = {t["key"]: (t["shape"], t["dtype"]) for t in doc["tensors"]}
    assert got == {k: (v["shape"], v["dtype"]) for k, v in MANIFEST[rel]["tensors"].items()}
    assert [t["key"] for t in doc["tensors"]] == sorted(got, key=numbers_by_value)  # natural order


def test_ls_keras_archive_table(run_cli):
    path = CORPUS / "keras3_tagger/tagger.keras"
    result = run_cli("ls", path, "--filter", "layers/lstm/*")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["key", "dtype", "shape", "size"]
    assert [line.split()[0] for line in lines[1:4]] == [
        "layers/lstm/cell/vars/0", "layers/lstm/cell/vars/1", "layers/lstm/cell/vars/2"]
    assert lines[-1] == f"{path}: keras-zip, 3 tensors shown of 34, 1,600 parameters, 6.2 KiB"


@pytest.mark.parametrize("rel", [*HDF5, "keras3_tagger/tagger.keras"])
def test_verify_ok(run_cli, rel):
    result = run_cli("verify", "--json", CORPUS / rel)
    assert result.exit_code == 0, result.stdout
    doc = json.loads(result.stdout)
    assert doc["ok"] is True and doc["problems"] == []
    want = 34 if rel.endswith(".keras") else len(MANIFEST[rel]["tensors"])
    assert doc["tensors"] == want


def test_ls_directory_lists_keras_files_beside_bundles(run_cli):
    folder = CORPUS / "seed_slots"
    result = run_cli("ls", "--json", folder)
    assert result.exit_code == 0, result.stderr
    rows = {c["path"].rsplit("/", 1)[-1]: (c["format"], c["tensors"], c["step"], c["latest"])
            for c in json.loads(result.stdout)["checkpoints"]}
    assert rows == {"easy_checkpoint": ("tf-object", 3, None, True), "easy_weights.h5": ("keras2-h5", 2, None, False)}


def test_ls_directory_of_keras_files_with_epochs(run_cli, tmp_path):
    for name in ("weights.02-0.41.h5", "weights.10-0.33.h5"):
        (tmp_path / name).write_bytes((CORPUS / "keras2_tagger/tagger_weights.h5").read_bytes())
    (tmp_path / "model.keras").write_bytes((CORPUS / "keras3_tagger/tagger.keras").read_bytes())
    result = run_cli("ls", tmp_path)
    assert result.exit_code == 0, result.stderr
    rows = [line.split()[:4] for line in result.stdout.splitlines()[1:-1]]
    # checkpoint, save (the number in the name; none for model.keras), step (its optimizer's iterations: the
    # .keras model's Adam ran 4; the weights files hold no optimizer), format
    assert rows == [["model.keras", "4", "keras-zip", "34"],
                    ["weights.02-0.41.h5", "2", "-", "keras2-h5"],
                    ["weights.10-0.33.h5", "10", "-", "keras2-h5"]]


def test_ls_directory_with_a_broken_h5_beside(run_cli, tmp_path):
    (tmp_path / "good.h5").write_bytes((CORPUS / "keras2_tagger/tagger_weights.h5").read_bytes())
    (tmp_path / "bad.h5").write_bytes(b"version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 9\n")
    result = run_cli("ls", "--json", tmp_path)
    assert result.exit_code == 1
    rows = {c["path"].rsplit("/", 1)[-1]: c for c in json.loads(result.stdout)["checkpoints"]}
    assert rows["good.h5"]["tensors"] == 12 and "error" not in rows["good.h5"]
    assert rows["bad.h5"]["error"] == "is a Git LFS pointer, not the file itself (run `git lfs pull`)"


@pytest.mark.parametrize("command", ["ls", "verify"])
def test_lfs_pointer_saved_as_h5(run_cli, tmp_path, command):
    path = tmp_path / "model.h5"
    path.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:4d7a\nsize 132735\n")
    line = _error_line(run_cli(command, path))
    assert line == f"ckpt: error: {path}: is a Git LFS pointer, not the file itself (run `git lfs pull`)"


def test_html_page_saved_as_h5(run_cli, tmp_path):
    path = tmp_path / "weights.h5"
    path.write_text("\n  <!DOCTYPE html>\n<html><head><title>Not Found</title></head></html>\n")
    line = _error_line(run_cli("ls", path))
    assert line == f"ckpt: error: {path}: is an HTML/XML page, not a checkpoint (a failed download?)"


def test_truncated_h5(run_cli, tmp_path):
    path = tmp_path / "cut.h5"
    data = (CORPUS / "keras3_tagger/tagger.weights.h5").read_bytes()
    path.write_bytes(data[:5000])
    line = _error_line(run_cli("verify", path))
    assert line == f"ckpt: error: {path}: HDF5 file is truncated (5,000 of {len(data):,} bytes present)"


def test_verify_reports_missing_weights_and_bad_storage(run_cli, tmp_path):
    path = tmp_path / "w.h5"
    path.write_bytes((CORPUS / "keras2_tagger/tagger_weights.h5").read_bytes())
    with h5py.File(path, "a") as f:
        del f["bn/bn/beta:0"]
        f.create_dataset("bn/bn/beta:0", shape=(1 << 36,), dtype="f4", chunks=(1 << 10,))
        del f["embed/embed/embeddings:0"]
    result = run_cli("verify", "--json", path)
    assert result.exit_code == 1
    problems = [(p["where"], p["message"]) for p in json.loads(result.stdout)["problems"]]
    assert problems == [
        ("embed/embed/embeddings:0", "weight_names lists this weight, but the file has no such dataset"),
        ("bn/bn/beta:0", "declares shape (68719476736,) (274,877,906,944 bytes) but stores only 0 bytes; "
                         "refusing to allocate it")]
