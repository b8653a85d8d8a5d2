"""Orbax and T5X checkpoints (``formats.orbax``) against what Orbax itself returned.

The samples in ``tests/data/orbax`` were written by orbax-checkpoint (``StandardCheckpointer``, a
``PyTreeCheckpointer`` with ``use_ocdbt=False``, a ``CheckpointManager`` with steps 1-3) and, for T5X, by
tensorstore the way T5X's ``checkpoints.py`` writes; ``goldens.json`` holds each key's shape, dtype and sha256 as
Orbax's ``restore()`` and ``metadata()`` returned them (``make_orbax.py`` beside them). These tests need
tensorstore (the ``orbax`` extra, in the ``test`` extra) but neither jax nor orbax.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import formats

DATA = Path(__file__).parent / "data" / "orbax"
GOLDENS = json.loads((DATA / "goldens.json").read_text())
SAMPLES = ("standard", "pytree_zarr", "pytree_zarr3", "run/1", "run/2", "run/3", "t5x/checkpoint_3")

pytest.importorskip("tensorstore")


def digest(value: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()


@pytest.mark.parametrize("sample", SAMPLES)
def test_keys_shapes_dtypes_and_bytes_equal_orbax_restore(sample: str) -> None:
    want = GOLDENS[sample]["restore"]
    with formats.open_checkpoint(DATA / sample) as ckpt:
        assert ckpt.format == ("t5x" if sample.startswith("t5x") else "orbax")
        assert sorted(ckpt) == sorted(want)
        for key, golden in want.items():
            entry = ckpt[key]
            assert (list(entry.shape), entry.dtype) == (golden["shape"], golden["dtype"]), key
            value = entry.read()
            assert (list(value.shape), value.dtype.name) == (golden["shape"], golden["dtype"]), key
            assert digest(value) == golden["sha256"], key


@pytest.mark.parametrize("sample", [s for s in SAMPLES if "metadata" in GOLDENS[s]])
def test_shapes_and_dtypes_equal_orbax_metadata(sample: str) -> None:
    want = GOLDENS[sample]["metadata"]
    with formats.open_checkpoint(DATA / sample) as ckpt:
        assert {k: {"shape": list(e.shape), "dtype": e.dtype} for k, e in ckpt.items()} == want


def test_the_layouts_are_the_ones_orbax_wrote() -> None:
    with formats.open_checkpoint(DATA / "standard") as a, formats.open_checkpoint(DATA / "pytree_zarr") as b:
        assert (a.metadata["storage"], b.metadata["storage"]) == ("ocdbt", "zarr")
    with formats.open_checkpoint(DATA / "run/2") as step:
        assert step.metadata["items"] == ["default"]
        assert "StandardCheckpointHandler" in str(step.metadata["checkpoint_metadata"]["item_handlers"])


def test_ls_of_a_root_lists_its_steps_the_highest_latest(run_cli: Any) -> None:
    result = run_cli("ls", DATA / "run", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["checkpoints"]
    assert [(Path(r["path"]).name, r["step"], r["format"], r["tensors"], r["latest"]) for r in rows] == [
        ("1", 1, "orbax", 8, False), ("2", 2, "orbax", 8, False), ("3", 3, "orbax", 8, True)]
    shown = run_cli("show", DATA / "run", "opt/count")
    assert shown.exit_code == 0 and "3" in shown.stdout.splitlines()[-1], shown.output


def test_ls_tree_shows_the_pytree(run_cli: Any) -> None:
    result = run_cli("ls", "--tree", DATA / "pytree_zarr")
    assert result.exit_code == 0, result.output
    lines = [line.rstrip() for line in result.stdout.splitlines()]
    assert lines[1].split() == ["opt", "16", "B", "5"]
    assert lines[2].split() == ["├──", "count", "int64", "[]", "8", "B", "1"]
    assert [line.split()[:2] for line in lines[3:5]] == [["└──", "mu"], ["└──", "0"]]
    assert any(line.split()[:3] == ["│", "└──", "w"] and "int8" in line for line in lines), lines


def test_verify_passes_on_what_orbax_wrote(run_cli: Any) -> None:
    for sample in SAMPLES:
        result = run_cli("verify", DATA / sample)
        assert result.exit_code == 0, (sample, result.output)
        assert result.stdout.startswith("ok "), result.output


def test_diff_between_steps_names_the_changed_tensors(run_cli: Any) -> None:
    result = run_cli("diff", DATA / "run/1", DATA / "run/2", "--json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    changed = {r["key"] for r in report["rows"] if r["change"] != "same"} if "rows" in report else None
    # independent: the goldens' digests of the two steps
    one, two = GOLDENS["run/1"]["restore"], GOLDENS["run/2"]["restore"]
    differ = {k for k in one if one[k]["sha256"] != two[k]["sha256"]}
    assert differ == {"params/dense/bias", "params/dense/kernel", "params/layers/0/w", "params/layers/1/w",
                      "opt/count", "opt/mu/0"}
    if changed is not None:
        assert changed == differ
    quiet = run_cli("diff", "--quiet", DATA / "run/3", DATA / "run/3")
    assert quiet.exit_code == 0, quiet.output


def test_diff_between_layouts_of_the_same_tree(run_cli: Any, tmp_path: Path) -> None:
    """An OCDBT step and the zarr item written from step 2's tree: the same keys, dtypes and bytes."""
    result = run_cli("diff", "--quiet", DATA / "run/2", DATA / "pytree_zarr")
    assert result.exit_code == 0, result.output


def test_diff_against_a_tf_checkpoint_with_the_same_keys(run_cli: Any, tmp_path: Path) -> None:
    """A TensorFlow name-based bundle holding the Orbax step's tensors under the same keys (written by ``ckpt
    rename``, its values checked against Orbax's restore first) diffs equal; one changed tensor is found."""
    out = tmp_path / "tf" / "ckpt"
    result = run_cli("rename", DATA / "run/2", "-o", out, "--map", "params=params")
    assert result.exit_code == 0, result.output
    want = GOLDENS["run/2"]["restore"]
    with formats.open_checkpoint(out) as tf:
        assert tf.format == "tf-name"
        assert {k: digest(e.read()) for k, e in tf.items()} == {k: v["sha256"] for k, v in want.items()}
    assert run_cli("diff", "--quiet", out, DATA / "run/2").exit_code == 0
    changed = run_cli("diff", "--json", out, DATA / "run/3")
    assert changed.exit_code == 1, changed.output


def test_extract_and_convert_equal_orbax_restore(run_cli: Any, tmp_path: Path) -> None:
    from safetensors import safe_open

    want = GOLDENS["run/3"]["restore"]
    st = tmp_path / "s.safetensors"
    result = run_cli("convert", DATA / "run", "--to", "safetensors", "-o", st, "--skip-unreadable")
    assert result.exit_code == 0, result.output
    assert "params/q4: int4 tensors cannot be stored in safetensors; left out" in result.output
    with safe_open(str(st), framework="numpy") as f:  # numpy has no float8/int4: those keys are left to ckpt's tests
        for key in ("params/dense/kernel", "params/dense/bias", "params/layers/0/w", "opt/count", "opt/mu/0"):
            value = f.get_tensor(key)
            assert value.dtype.name == want[key]["dtype"] and digest(value) == want[key]["sha256"], key
    npz = tmp_path / "s.npz"
    assert run_cli("convert", DATA / "t5x/checkpoint_3", "--to", "npz", "-o", npz).exit_code == 0
    t5x = GOLDENS["t5x/checkpoint_3"]["restore"]
    with np.load(npz) as z:
        for key, golden in t5x.items():
            assert digest(z[key]) == golden["sha256"], key
    whole = tmp_path / "run.npz"
    assert run_cli("convert", DATA / "run/3", "--to", "npz", "-o", whole).exit_code == 0
    assert run_cli("diff", "--quiet", whole, DATA / "run/3").exit_code == 0  # int4 and float8 come back as such
    npy = tmp_path / "k.npy"
    result = run_cli("extract", DATA / "pytree_zarr", "params/layers/1/w", "-o", npy)
    assert result.exit_code == 0, result.output
    assert digest(np.load(npy)) == GOLDENS["pytree_zarr"]["restore"]["params/layers/1/w"]["sha256"]


def test_t5x_optimizer_state_is_slots_of_its_parameters() -> None:
    with formats.open_checkpoint(DATA / "t5x/checkpoint_3") as ckpt:
        slot = ckpt["state/param_states/token_embedder/embedding/v_row"]
        assert (slot.role, slot.slot_of, slot.slot_name) == ("slot", "target/token_embedder/embedding", "v_row")
        assert ckpt["state/step"].role == "optimizer"
        assert ckpt["target/encoder/encoder_norm/scale"].role == "variable"


def test_without_tensorstore_zarr_and_t5x_list_and_ocdbt_says_what_to_install(run_cli: Any, monkeypatch: Any) -> None:
    monkeypatch.setitem(sys.modules, "tensorstore", None)
    listed = run_cli("ls", DATA / "pytree_zarr", "--json")
    assert listed.exit_code == 0, listed.output
    assert len(json.loads(listed.stdout)["tensors"]) == 8
    assert run_cli("ls", DATA / "t5x/checkpoint_3").exit_code == 0
    ocdbt = run_cli("ls", DATA / "standard")
    assert ocdbt.exit_code == 3
    assert ocdbt.stderr.strip().count("\n") == 0
    assert "pip install 'tfckpt[orbax]'" in ocdbt.stderr
    read = run_cli("show", DATA / "pytree_zarr", "params/q4")
    assert read.exit_code == 3 and "pip install 'tfckpt[orbax]'" in read.stderr


def test_the_registry_claims_named_files_and_not_a_tf_state_file(tmp_path: Path) -> None:
    from formats.discover.resolve import resolve

    assert resolve(DATA / "standard" / "_METADATA").path == str(DATA / "standard")
    assert resolve(DATA / "t5x/checkpoint_3/checkpoint").format == "orbax"
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "ckpt-1"\n')
    from formats.orbax.format import FORMAT

    assert not FORMAT.sniff(str(tmp_path)) and not FORMAT.sniff(str(tmp_path / "checkpoint"))


def copy(sample: str, tmp_path: Path) -> Path:
    out = tmp_path / Path(sample).name
    shutil.copytree(DATA / sample, out)
    return out


def test_a_folder_of_items_is_listed_not_taken_for_a_step(run_cli: Any) -> None:
    result = run_cli("ls", DATA, "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["checkpoints"]
    assert sorted((Path(r["path"]).name, r["format"]) for r in rows) == [
        ("pytree_zarr", "orbax"), ("pytree_zarr3", "orbax"), ("standard", "orbax"), ("t5x_golden", "hf")]


def test_a_step_with_two_items_prefixes_each_key_with_its_item(tmp_path: Path) -> None:
    """An Orbax < 0.5 step (no _CHECKPOINT_METADATA, named by its number) holding items ``params`` and ``zarr``."""
    step = tmp_path / "7"
    step.mkdir()
    shutil.copytree(DATA / "standard", step / "params")
    shutil.copytree(DATA / "pytree_zarr", step / "zarr")
    (step / "params" / "_CHECKPOINT_METADATA").unlink()
    (step / "zarr" / "_CHECKPOINT_METADATA").unlink()
    with formats.open_checkpoint(step) as ckpt:
        assert ckpt.metadata["items"] == ["params", "zarr"]
        want = {**{f"params/{k}": v for k, v in GOLDENS["standard"]["restore"].items()},
                **{f"zarr/{k}": v for k, v in GOLDENS["pytree_zarr"]["restore"].items()}}
        assert sorted(ckpt) == sorted(want)
        for key, golden in want.items():
            assert digest(ckpt[key].read()) == golden["sha256"], key
    with formats.open_checkpoint(tmp_path) as latest:  # a root of one step
        assert Path(latest.path).name == "7"


def test_report_of_a_root_covers_its_steps(run_cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    result = run_cli("report", DATA / "run", "-o", out)
    assert result.exit_code == 0, result.output
    assert "3 checkpoints, 8 variables" in result.output
    assert out.read_text().count("params/dense/kernel") >= 1


def test_t5x_chunked_inline_arrays_and_gcs_specs_read_as_written(tmp_path: Path) -> None:
    """flax's chunked form of a large inline array, and a spec T5X wrote for gs:// (the path beside a ``gcs``
    kvstore with T5X's dummy bucket): the same values as the goldens."""
    import msgpack

    ckpt = shutil.copytree(DATA / "t5x/checkpoint_3", tmp_path / "checkpoint_3")
    top = msgpack.unpackb((ckpt / "checkpoint").read_bytes(), raw=False, strict_map_key=False)
    target = top["optimizer"]["target"]
    ext = target["encoder"]["encoder_norm"]["scale"]
    shape, dtype, raw = msgpack.unpackb(ext.data, raw=False)
    pieces = [raw[:20], raw[20:]]  # 5 and 3 float32s
    target["encoder"]["encoder_norm"]["scale"] = {
        "__msgpack_chunked_array__": True, "shape": {"0": shape[0]},
        "chunks": {str(i): msgpack.ExtType(1, msgpack.packb(([len(p) // 4], dtype, p), use_bin_type=True))
                   for i, p in enumerate(pieces)}}
    spec = target["token_embedder"]["embedding"]
    spec["path"] = spec["kvstore"].pop("path")
    spec["kvstore"] = {"driver": "gcs", "bucket": "t5x-dummy-bucket"}
    (ckpt / "checkpoint").write_bytes(msgpack.packb(top, use_bin_type=True))
    want = GOLDENS["t5x/checkpoint_3"]["restore"]
    with formats.open_checkpoint(ckpt) as opened:
        for key in ("target/encoder/encoder_norm/scale", "target/token_embedder/embedding"):
            assert digest(opened[key].read()) == want[key]["sha256"], key
        assert sorted(opened) == sorted(want)
