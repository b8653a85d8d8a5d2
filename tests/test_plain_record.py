"""A provenance record lists no item where none says more than the file (``without_plain``): an export whose every
tensor is a variable named by its key, of a dtype the file names as it is, writes ``"tensors": []``, and reads back
exactly as the same file with every item listed; an export one of whose items says more (a slot, a renamed key, an
object path, a bfloat16 an npz stores as uint16) lists every item, as before."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

import formats
from formats.core.model import OBJECT_GRAPH_KEY
from formats.core.provenance import PROVENANCE_KEY, PROVENANCE_MEMBER
from formats.io.npy_output import named_as_written
from formats.safetensors.header import DTYPES as SAFETENSORS_DTYPES
from formats.tf_bundle.writer import write_checkpoint

from .conftest import CORPUS
from .memory import every_item_listed
from .scale_bundles import name_based, object_based

ALL_DTYPES = CORPUS / "tf2_mixed/all_dtypes/ckpt-1"
TF1 = CORPUS / "tf1_adam/model.ckpt-200"
EXPORTS = [("convert", "npz"), ("extract", "npz"), ("convert", "safetensors")]


def _record(path: Path) -> dict:
    """The provenance record as numpy (an npz) or ``struct`` and ``json`` (a safetensors header) read it."""
    if path.suffix == ".npz":
        with np.load(path) as npz:
            return json.loads(str(npz[PROVENANCE_MEMBER]))
    raw = path.read_bytes()
    return json.loads(json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])["__metadata__"][PROVENANCE_KEY])


def _export(run_cli, command: str, source, out: Path, *extra: str) -> None:
    args = ["convert", source, "--to", out.suffix[1:]] if command == "convert" else ["extract", source]
    result = run_cli(*args, *extra, "-o", out)
    assert result.exit_code == 0, result.output


def _as_read(path) -> list[tuple]:
    """Each tensor of ``path`` as ckpt reads it: key, dtype, shape, name, role, slot and value (bytes; a string
    tensor's elements), in its order."""
    def value(entry):
        read = entry.read()
        return read.tolist() if read.dtype == object else read.tobytes()

    with formats.open_checkpoint(path) as ckpt:
        return [(k, e.dtype, e.shape, e.name, e.role, e.slot_of, value(e)) for k, e in ckpt.items()
                if k != OBJECT_GRAPH_KEY]


def _bundle(folder: Path, dtypes) -> str:
    """A name-based bundle of one tensor of each of ``dtypes`` (``t/<position>-<dtype>``, the corpus's values)
    written by ckpt's bundle writer: the prefix."""
    prefix = str(folder / "ckpt-1")
    with formats.open_checkpoint(ALL_DTYPES) as src:
        pairs = [(f"t/{i:02d}-{d}", src[f"typed/{d}/.ATTRIBUTES/VARIABLE_VALUE"].read())
                 for i, d in enumerate(dtypes)]
    write_checkpoint(prefix, pairs, None)
    return prefix


@pytest.mark.parametrize("command,to", EXPORTS)
def test_a_plain_export_lists_no_item_and_reads_back_as_one_that_lists_each(tmp_path, monkeypatch, run_cli,
                                                                            command, to):
    prefix = name_based(tmp_path / "in", 300)
    plain = tmp_path / f"plain.{to}"
    _export(run_cli, command, prefix, plain)
    assert _record(plain) == {"source": prefix, "format": "tf-name", "tensors": []}
    source = _as_read(prefix)
    assert [t[0] for t in source] == sorted(f"model/layer_{i // 100}/unit_{i % 100}/w" for i in range(300))
    with monkeypatch.context() as m:
        every_item_listed(m)
        listed = tmp_path / f"listed.{to}"
        _export(run_cli, command, prefix, listed)
    assert len(_record(listed)["tensors"]) == 300
    assert _as_read(plain) == _as_read(listed) == source  # same keys in the same order, names, roles and bytes
    assert plain.stat().st_size < listed.stat().st_size
    result = run_cli("verify", plain)
    assert result.exit_code == 0, result.output
    result = run_cli("diff", "--match", "name", prefix, plain)
    assert result.exit_code == 0 and "identical" in result.stdout, result.output


def test_every_dtype_a_reader_names_as_written_reads_back_without_an_item(tmp_path, run_cli):
    """``named_as_written`` is what a reader without the record reads: a bundle of every such dtype exports with no
    item and reads back with each dtype; each other dtype (bfloat16, stored as uint16) keeps the record whole."""
    with formats.open_checkpoint(ALL_DTYPES) as src:
        present = [k.split("/")[1] for k in src if k.startswith("typed/")]
    named = [d for d in present if named_as_written(d)]
    assert set(present) - set(named) == {"bfloat16"}  # (the corpus's one dtype numpy lacks)
    prefix = _bundle(tmp_path / "named", named)
    out = tmp_path / "named.npz"
    _export(run_cli, "extract", prefix, out)
    assert _record(out)["tensors"] == []
    assert _as_read(out) == _as_read(prefix)
    for dtype in sorted(set(present) - set(named)):
        prefix = _bundle(tmp_path / dtype, ["float32", dtype])
        out = tmp_path / f"{dtype}.npz"
        _export(run_cli, "extract", prefix, out)
        assert [(i["key"], i["dtype"]) for i in _record(out)["tensors"]] == [("t/00-float32", "float32"),
                                                                            ("t/01-" + dtype, dtype)]
        assert _as_read(out) == _as_read(prefix)
    stored = [d for d in present if d in SAFETENSORS_DTYPES]  # (bfloat16 a safetensors header names: BF16)
    prefix = _bundle(tmp_path / "safetensors", stored)
    out = tmp_path / "all.safetensors"
    _export(run_cli, "convert", prefix, out)
    assert _record(out)["tensors"] == []
    assert _as_read(out) == _as_read(prefix)


@pytest.mark.parametrize("command,to", EXPORTS)
@pytest.mark.parametrize("says", ["slot", "key", "object path", "dtype"])
def test_an_item_that_says_more_keeps_every_item(tmp_path, run_cli, command, to, says):
    extra: tuple[str, ...] = ()
    if says == "slot":  # (TF1's Adam slots and global step: roles)
        source = str(TF1)
    elif says == "key":  # (a key the export renamed: its source key)
        if command == "extract":
            pytest.skip("extract keeps a name-based checkpoint's keys")
        source = name_based(tmp_path / "in", 30)
        extra = ("--map", "model/layer_0/unit_7/w=renamed")
    elif says == "object path":
        source = object_based(name_based(tmp_path / "in", 30))
    else:
        if to == "safetensors":
            pytest.skip("every dtype safetensors stores, its header names")
        source = _bundle(tmp_path / "bf16", ["float32", "bfloat16"])
    out = tmp_path / f"out.{to}"
    _export(run_cli, command, source, out, *extra)
    with formats.open_checkpoint(source) as src:
        count = sum(1 for k in src if k != OBJECT_GRAPH_KEY)
    assert len(_record(out)["tensors"]) == count
    with formats.open_checkpoint(out) as back:
        assert len(back) == count


def test_a_plain_safetensors_header_is_measured_without_items(tmp_path, monkeypatch, run_cli):
    """The header's floor counts a record item a tensor only where the record lists them: a plain export whose
    items would pass the limit is written (name-based 10^6 tiny tensors: a 106 MB file, refused before), and the
    same tensors with every item listed are refused before the header is made (exit 4)."""
    from formats.safetensors import writer

    prefix = name_based(tmp_path / "in", 300)
    first = tmp_path / "first.safetensors"
    _export(run_cli, "convert", prefix, first)
    length = struct.unpack("<Q", first.read_bytes()[:8])[0]
    with formats.open_checkpoint(prefix) as src:
        rows = [type("Row", (), {"key": k})() for k in src]
    assert writer.header_floor(rows, False) <= length < writer.header_floor(rows, True)
    monkeypatch.setattr(writer, "MAX_HEADER_BYTES", length)
    out = tmp_path / "plain.safetensors"
    _export(run_cli, "convert", prefix, out)
    assert out.read_bytes() == first.read_bytes()
    every_item_listed(monkeypatch)
    result = run_cli("convert", prefix, "--to", "safetensors", "-o", tmp_path / "listed.safetensors")
    assert result.exit_code == 4, result.output
    assert "would be at least" in result.output and not (tmp_path / "listed.safetensors").exists()
