"""Issue 24 #19: a name that is not valid UTF-8 because it holds a lone surrogate (a safetensors key
``"\\ud800"``, an npz provenance ``full_name``) is shown and written by the one rule of
:mod:`formats.core.names`, as undecodable HDF5 and V1 bytes are: shown ``\\ud800`` (bytes ``\\xNN``),
written as that text. No command ends in an internal error (exit 5) on such inputs."""
from __future__ import annotations

import json
import os
import struct

import numpy as np
import pytest

from ckpt_cli import fast

from .craft import bundle, entry

RAW = np.arange(2, dtype="<f4").tobytes()


def _safetensors(path, keys: list[str]) -> str:
    header = {k: {"dtype": "F32", "shape": [2], "data_offsets": [8 * i, 8 * i + 8]} for i, k in enumerate(keys)}
    raw = json.dumps(header).encode("ascii")  # lone surrogates as \ud800 escapes, as JSON allows
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + RAW * len(keys))
    return str(path)


def _npz(path) -> str:
    record = {"source": "x", "format": "tf-object", "tensors": [
        {"key": "w", "source_key": "w", "object_path": "w", "full_name": "\ud800/w", "role": "variable",
         "dtype": "float32", "shape": [2]}]}
    np.savez(path, w=np.arange(2, dtype="<f4"), __ckpt_provenance__=np.array(json.dumps(record)))
    return str(path)


def test_the_rule():
    from formats.core.names import name_bytes, safe_text, writable_name

    assert safe_text("a\udcffb\ud800c\udc00") == "a\\xffb\\ud800c\\udc00"
    assert safe_text("plain é") == "plain é"
    assert writable_name("a\udcffb\ud800") == "a\udcffb\\ud800"
    assert name_bytes("a\udcffb\ud800") == b"a\xffb\\ud800"
    assert name_bytes(b"\xff") == b"\xff"


@pytest.fixture
def inputs(tmp_path):
    return {"st": _safetensors(tmp_path / "lone.safetensors", ["\ud800", "ok/w"]),
            "npz": _npz(tmp_path / "prov.npz"),
            "tf": str(bundle(tmp_path, "b", [(b"bad\xff", entry(1, [2], 0, 8, RAW)), (b"ok/w", entry(1, [2], 0, 8, RAW))],
                             RAW))}


def _commands(path: str, out: str) -> list[list[str]]:
    return [["ls", path], ["ls", "--json", path], ["ls", "--names", path], ["ls", "--names", "--json", path],
            ["ls", "--tree", path], ["stats", path], ["stats", "--json", path], ["verify", path],
            ["verify", "--json", path], ["diff", path, path], ["diff", "--json", path, path],
            ["diff", "--keys-only", path, path], ["extract", path, "-o", f"{out}/x/"],
            ["extract", path, "-o", f"{out}/x.npz"], ["rename", path, "-o", f"{out}/r", "--map", "ok/=k/"],
            ["edit", path, "-o", f"{out}/e", "--cast", "float32=float16"],
            ["average", path, path, "-o", f"{out}/a"], ["trend", path, path], ["doctor", path, "--against", path],
            *[["convert", path, "--to", to, "-o", f"{out}/c-{to}"] for to in ("npz", "safetensors", "tf-object")],
            ["ls", "--json", f"{out}/c-tf-object"], ["ls", f"{out}/r"], ["graph", path], ["graph", f"{out}/c-tf-object"]]


@pytest.mark.parametrize("which", ["st", "npz", "tf"])
def test_no_command_ends_in_an_internal_error(inputs, which, tmp_path, run_cli, capsys):
    for argv in _commands(inputs[which], str(tmp_path / "out")):
        result = run_cli(*argv)
        assert result.exit_code != 5 and "internal error" not in result.stderr, (argv, result.stderr)
        parsed = fast.parse(argv)
        if parsed is not None and "-o" not in argv:  # the click-free path too (writers ran once, above)
            status = fast.run_fast(*parsed)
            err = capsys.readouterr().err
            assert status != 5 and "internal error" not in err, (argv, err)


def test_shown_and_written_as_the_one_rule(inputs, tmp_path, run_cli):
    path, out = inputs["st"], tmp_path / "out"
    assert run_cli("ls", path).stdout.splitlines()[:3] == [
        "key     dtype    shape  size", "ok/w    float32  [2]     8 B", "\\ud800  float32  [2]     8 B"]
    assert [t["key"] for t in json.loads(run_cli("ls", "--json", path).stdout)["tensors"]] == ["ok/w", "\\ud800"]
    assert run_cli("convert", path, "--to", "tf-object", "-o", out / "o" / "ckpt").exit_code == 0
    index = (out / "o" / "ckpt.index").read_bytes()
    assert b"\\ud800/.ATTRIBUTES/VARIABLE_VALUE" in index and b"\xed\xa0\x80" not in index
    assert run_cli("rename", path, "-o", out / "r" / "ckpt", "--map", "ok/=k/").exit_code == 0
    assert [t["key"] for t in json.loads(run_cli("ls", "--json", out / "r" / "ckpt").stdout)["tensors"]] == [
        "\\ud800", "k/w"]
    assert run_cli("extract", path, "-o", f"{out}/x/").exit_code == 0
    assert sorted(os.listdir(out / "x")) == ["%5Cud800.npy", "ok"]
    result = run_cli("convert", path, "--to", "npz", "-o", out / "c.npz")
    assert result.exit_code == 1 and "key '\\ud800' is not valid UTF-8, which an npz member name must be" in result.stderr
    names = json.loads(run_cli("ls", "--names", "--json", inputs["npz"]).stdout)["tensors"]
    assert [t["name"] for t in names] == ["\\ud800/w"]


def test_an_object_graph_written_from_undecodable_names_reads_back(inputs, tmp_path, run_cli):
    """Names in an object graph are proto strings (UTF-8): an undecodable key byte is written there, and in
    the key that the graph names, as it is shown (``\\xff``); TensorFlow and ckpt can read the graph."""
    out = tmp_path / "o" / "ckpt"
    assert run_cli("convert", inputs["tf"], "--to", "tf-object", "-o", out).exit_code == 0
    result = run_cli("graph", out)
    assert result.exit_code == 0, result.output
    assert 'n0 -> n1 [label="bad\\\\xff"];' in result.stdout
    index = (tmp_path / "o" / "ckpt.index").read_bytes()
    assert b"bad\\xff/.ATTRIBUTES/VARIABLE_VALUE" in index and b"bad\xff" not in index
    names = {t["key"]: t["name"] for t in json.loads(run_cli("ls", "--names", "--json", out).stdout)["tensors"]}
    assert names["bad\\xff/.ATTRIBUTES/VARIABLE_VALUE"] == "bad\\xff"
