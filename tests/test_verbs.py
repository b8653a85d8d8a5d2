"""The library's verbs (formats.verbs, exported by ``formats``): each command as a call returning a result.

Expected values come from the corpus manifest (what TensorFlow's own reader saw: keys, shapes, dtypes and the
sha256 of each tensor's bytes), not from ckpt's own output."""
from __future__ import annotations

import hashlib
import json
import shutil

import numpy as np
import pytest

import formats
from tests.conftest import CORPUS

SOURCE = CORPUS / "tf1_adam" / "model.ckpt-200"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())["entries"]["tf1_adam/model.ckpt-200"]["tensors"]


def _flip_a_byte(prefix: str, key: str) -> None:
    with formats.open_checkpoint(prefix) as ckpt:
        offset = ckpt[key].raw.offset
    with open(prefix + ".data-00000-of-00001", "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0x55]))


def test_verify_takes_a_path_or_an_open_checkpoint_and_reports_progress(tmp_path) -> None:
    seen: list[tuple[int, int]] = []
    report = formats.verify(str(SOURCE), progress=lambda done, count: seen.append((done, count)))
    assert report.ok and report.tensors == len(MANIFEST) and seen[-1][1] == len(MANIFEST)
    (tmp_path / "copy").mkdir()
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copy(str(SOURCE) + suffix, tmp_path / "copy" / ("model.ckpt-200" + suffix))
    kernel = next(k for k, v in MANIFEST.items() if len(v["shape"]) == 2)
    _flip_a_byte(str(tmp_path / "copy" / "model.ckpt-200"), kernel)
    with formats.open_checkpoint(str(tmp_path / "copy" / "model.ckpt-200")) as ckpt:
        damaged = formats.verify(ckpt, jobs=2)
        assert ckpt[kernel].shape == tuple(MANIFEST[kernel]["shape"])  # left open: the caller opened it
    assert not damaged.ok and [p.where for p in damaged.problems] == [kernel]


def test_convert_then_verify_against_pairs_by_name(tmp_path) -> None:
    out = tmp_path / "tf2" / "ckpt-1"
    result = formats.convert(str(SOURCE), str(out), "tf-object")
    assert result.ok and result.written is not None
    report = formats.verify_against(str(out), str(SOURCE), match="name")
    assert report.ok and report.tensors == len(MANIFEST) and report.notes == []
    by_key = formats.verify_against(str(out), str(SOURCE))
    assert not by_key.ok  # object-based keys are not the TF1 names


def test_diff_and_stats(tmp_path) -> None:
    assert formats.diff(str(SOURCE), str(SOURCE)).equal
    other = CORPUS / "tf1_adam" / "model.ckpt-1"
    result = formats.diff(str(SOURCE), str(other))
    assert not result.equal and result.changed
    stats = formats.stats(str(SOURCE))
    assert sorted(t.key for t in stats.tensors) == sorted(MANIFEST)
    assert [t.key for t in formats.stats(str(SOURCE), ["global_step"]).tensors] == ["global_step"]


def test_rename_with_prefix_rules(tmp_path) -> None:
    out = tmp_path / "renamed" / "model.ckpt-200"
    result = formats.rename(str(SOURCE), str(out), ["global_step=step"])
    assert result.ok
    with formats.open_checkpoint(str(out)) as ckpt:
        assert sorted(ckpt) == sorted("step" if k == "global_step" else k for k in MANIFEST)


def test_extract_writes_the_bytes_tensorflow_read(tmp_path) -> None:
    out = tmp_path / "weights.npz"
    formats.extract(str(SOURCE), [], str(out))
    with np.load(out) as npz:
        for key, expected in MANIFEST.items():
            value = npz[key]
            assert value.dtype.name == expected["dtype"] and list(value.shape) == expected["shape"]
            assert hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest() == expected["sha256"]


def test_a_dry_run_writes_nothing(tmp_path) -> None:
    result = formats.convert(str(SOURCE), str(tmp_path / "x" / "ckpt"), "tf-object", dry_run=True)
    assert result.ok and not (tmp_path / "x").exists()


@pytest.mark.parametrize("name", ["verify", "verify_against", "diff", "stats", "extract", "convert", "rename",
                                  "edit", "average"])
def test_every_verb_is_exported(name: str) -> None:
    assert callable(getattr(formats, name)) and name in formats.__all__
