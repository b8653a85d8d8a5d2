"""Issue 14 #22: inputs that used to end in ``ckpt: internal error`` now end in one line naming the file,
with the documented exit code: key bytes that are not UTF-8, a key longer than a zip member name, a string
length varint of 2**64 or more, tensors numpy cannot represent (rank 65, ``[0, 2**62]`` float32), an
unknown dtype in ``extract``."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from .craft import bundle, entry

FLOAT, STRING = 1, 7
RAW = np.arange(2, dtype="<f4").tobytes()


def _one_line(result, code: int) -> str:
    assert result.exit_code == code, result.output
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) in (1, 2) and lines[0].startswith("ckpt: error: "), lines
    return lines[0]


def test_key_bytes_that_are_not_utf8(tmp_path, run_cli):
    prefix = bundle(tmp_path, "c", [(b"bad\xff\xfekey", entry(FLOAT, [2], 0, 8, RAW)), (b"good", entry(FLOAT, [2], 0, 8, RAW))],
                    RAW)
    out = tmp_path / "out"
    assert run_cli("convert", prefix, "-o", out / "obj" / "ckpt", "--to", "tf-object").exit_code == 0
    listing = json.loads(run_cli("ls", "--json", out / "obj" / "ckpt").stdout)
    assert sorted(t["key"] for t in listing["tensors"]) == [
        "_CHECKPOINTABLE_OBJECT_GRAPH", "bad\\xff\\xfekey/.ATTRIBUTES/VARIABLE_VALUE", "good/.ATTRIBUTES/VARIABLE_VALUE",
        "save_counter/.ATTRIBUTES/VARIABLE_VALUE"]  # tf.train.Checkpoint's, written by the conversion
    assert run_cli("extract", prefix, "-o", f"{out}/dir/").exit_code == 0
    assert sorted(os.listdir(os.fsencode(out / "dir"))) == [b"bad\xff\xfekey.npy", b"good.npy"]
    assert _one_line(run_cli("extract", prefix, "-o", out / "x.npz"), 4) == (
        f"ckpt: error: {out / 'x.npz'}: key b'bad\\xff\\xfekey' is not valid UTF-8, which an npz member name must be")
    result = run_cli("convert", prefix, "-o", out / "c.npz", "--to", "npz")
    assert result.exit_code == 1 and "key b'bad\\xff\\xfekey' is not valid UTF-8" in result.stderr
    assert not (out / "x.npz").exists() and not (out / "c.npz").exists()


def test_key_longer_than_a_zip_member_name(tmp_path, run_cli):
    prefix = bundle(tmp_path, "c", [(b"k" * 70_000, entry(FLOAT, [2], 0, 8, RAW))], RAW)
    out = tmp_path / "out"
    assert _one_line(run_cli("extract", prefix, "-o", out / "x.npz"), 4) == (
        f"ckpt: error: {out / 'x.npz'}: key '{'k' * 119}... (70002 chars) is 70,000 bytes long; an npz member name "
        "holds at most 65,531")
    assert _one_line(run_cli("extract", prefix, "-o", f"{out}/d/"), 4).endswith(
        "needs a path segment of 70,004 bytes (at most 255) as a file under this directory")
    assert not out.exists()


def test_string_length_varint_of_2_to_the_64(tmp_path, run_cli):
    body = b"\xff" * 9 + b"\x7f" + b"\x00" * 4 + b"abc"  # a ten-byte varint: bits beyond 64 are dropped, as TF does
    prefix = bundle(tmp_path, "c", [(b"s", entry(STRING, [1], 0, len(body), crc=0))], body)
    line = _one_line(run_cli("show", prefix, "s"), 3)
    assert line.startswith(f"ckpt: error: {prefix}.data-00000-of-00001: tensor 's': string length checksum mismatch")


@pytest.fixture
def unrepresentable(tmp_path):
    return bundle(tmp_path, "c", [(b"r65", entry(FLOAT, [1] * 65, 0, 4, RAW[:4])), (b"z", entry(FLOAT, [0, 2 ** 62], 4, 0, b"")),
                                  (b"w", entry(FLOAT, [1], 4, 4, RAW[4:]))], RAW)


def test_tensors_numpy_cannot_represent(tmp_path, run_cli, unrepresentable):
    prefix = unrepresentable
    assert _one_line(run_cli("show", prefix, "r65"), 3) == (
        f"ckpt: error: {prefix}.index: tensor 'r65' has rank 65; numpy arrays have at most 64 dimensions")
    assert _one_line(run_cli("show", prefix, "z"), 3) == (
        f"ckpt: error: {prefix}.index: tensor 'z' has shape [0, 4611686018427387904], too large for any numpy array")
    assert _one_line(run_cli("extract", prefix, "-o", tmp_path / "x.npz"), 3) == (
        f"ckpt: error: {prefix}.index: tensor 'r65' has rank 65; numpy arrays have at most 64 dimensions, which an "
        ".npy file cannot hold")
    for to in ("npz", "safetensors"):
        out = tmp_path / f"c.{to}"
        result = run_cli("convert", prefix, "-o", out, "--to", to)
        assert result.exit_code == 1 and not out.exists(), result.output  # each named, as below, as an error
        result = run_cli("convert", prefix, "-o", out, "--to", to, "--skip-unreadable")
        assert result.exit_code == 0, result.output
        assert "unsupported: r65: tensor has rank 65; numpy arrays have at most 64 dimensions; left out" in result.stdout
        assert "unsupported: z: tensor has shape [0, 4611686018427387904], too large for any numpy array; left out" \
            in result.stdout
    with np.load(tmp_path / "c.npz") as npz:
        assert sorted(npz.files) == ["__ckpt_provenance__", "w"]


def test_unknown_dtype_in_extract(tmp_path, run_cli):
    prefix = bundle(tmp_path, "c", [(b"q", entry(99, [2], 0, 8, RAW)), (b"w", entry(FLOAT, [2], 0, 8, RAW))], RAW)
    for out in (tmp_path / "x.npz", tmp_path / "q.npy", f"{tmp_path}/d/"):
        args = ["extract", prefix, "-o", out] + (["q"] if str(out).endswith(".npy") else [])
        assert _one_line(run_cli(*args), 3) == (
            f"ckpt: error: {prefix}.index: tensor 'q' has dtype unknown(99), which cannot be written")
    assert sorted(os.listdir(tmp_path)) == ["c.data-00000-of-00001", "c.index"]
