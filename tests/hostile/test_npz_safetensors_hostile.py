"""Hostile npz and safetensors files: each is a clean one-line error (exit 3) or a listed problem (exit 1),
never a traceback, a huge allocation, or an unpickling."""
from __future__ import annotations

import io
import json
import pickle
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest

import formats
from formats.core.errors import CorruptCheckpointError, UnsupportedError
from formats.ops.compare.verify import verify_checkpoint


def _npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, allow_pickle=False)
    return buf.getvalue()


def _npy_header(header: str, version: int = 1) -> bytes:
    raw = header.encode("latin-1")
    raw += b" " * (-(len(raw) + 11) % 64) + b"\n"
    size = struct.pack("<H", len(raw)) if version == 1 else struct.pack("<I", len(raw))
    return b"\x93NUMPY" + bytes([version, 0]) + size + raw


def _zip(path: Path, members: dict[str, bytes], compression: int = zipfile.ZIP_STORED) -> Path:
    with zipfile.ZipFile(path, "w", compression) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def _safetensors(path: Path, header: dict | bytes, data: bytes = b"", length: int | None = None) -> Path:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw) if length is None else length) + raw + data)
    return path


def _open_error(path: Path) -> str:
    with pytest.raises(formats.CheckpointError) as err, formats.open_checkpoint(path) as ckpt:
        for entry in ckpt.values():
            entry.read()
    return err.value.message


@pytest.fixture(autouse=True)
def _never_unpickle(monkeypatch):
    """Any attempt to unpickle fails the test."""
    def boom(*args, **kwargs):  # pragma: no cover - only on a bug
        raise AssertionError("something tried to unpickle")

    monkeypatch.setattr(pickle, "load", boom)
    monkeypatch.setattr(pickle, "loads", boom)
    monkeypatch.setattr(pickle, "Unpickler", boom)


# --- npz ----------------------------------------------------------------------------------------------------

def test_pickled_npz_is_refused(tmp_path, run_cli):
    path = tmp_path / "p.npz"
    np.savez(path, a=np.array([{"x": 1}, None], dtype=object))
    with pytest.raises(UnsupportedError) as err:
        formats.open_checkpoint(path)
    assert err.value.message == ("every array in this .npz holds pickled Python objects (1, e.g. 'a'); ckpt never "
                                 "unpickles, so nothing can be read")
    res = run_cli("ls", path)
    assert res.exit_code == 3 and res.stderr.count("\n") == 1 and "never unpickles" in res.stderr


def test_pickled_member_beside_arrays_is_listed_unreadable(tmp_path):
    path = tmp_path / "mixed.npz"
    np.savez(path, ok=np.arange(3), bad=np.array([b"x", 1], dtype=object))
    with formats.open_checkpoint(path) as ckpt:
        assert list(ckpt) == ["ok", "bad"] and "skipped" not in ckpt.metadata
        assert ckpt["bad"].dtype == "object" and ckpt["bad"].shape == (2,)
        assert ckpt["bad"].problem() == "holds pickled Python objects (dtype object): not read; ckpt never unpickles"
        with pytest.raises(formats.UnsupportedError):
            ckpt["bad"].read()


def test_npz_truncated(tmp_path, run_cli):
    path = tmp_path / "t.npz"
    np.savez(path, a=np.arange(1000, dtype=np.float64))
    path.write_bytes(path.read_bytes()[:5000])
    assert _open_error(path).startswith("damaged zip archive")
    res = run_cli("verify", path)
    assert res.exit_code == 3 and res.stderr.count("\n") == 1


def test_member_shorter_than_its_header_says(tmp_path, run_cli):
    body = _npy_header("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000, 1000000000), }")
    path = _zip(tmp_path / "short.npz", {"a.npy": body + b"\x00" * 16})
    with formats.open_checkpoint(path) as ckpt:
        assert ckpt["a"].shape == (10 ** 9, 10 ** 9)
        assert ckpt["a"].problem() == ("a.npy declares shape [1000000000, 1000000000] of float64 "
                                       "(8,000,000,000,000,000,000 bytes) but stores 16 bytes")
        with pytest.raises(CorruptCheckpointError, match="but stores 16 bytes"):
            ckpt["a"].read()
    res = run_cli("verify", path)
    assert res.exit_code == 1 and "but stores 16 bytes" in res.stdout


def test_zip_bomb_claim_is_refused_before_inflating(tmp_path):
    path = _zip(tmp_path / "bomb.npz", {"a.npy": _npy(np.zeros(100_000, dtype=np.uint8))}, zipfile.ZIP_DEFLATED)
    raw = bytearray(path.read_bytes())
    central = raw.rindex(b"PK\x01\x02")
    raw[central + 24:central + 28] = struct.pack("<I", 0xFFFF0000)  # claimed uncompressed size: ~4 GB
    local = raw.index(b"PK\x03\x04")
    raw[local + 22:local + 26] = struct.pack("<I", 0xFFFF0000)
    path.write_bytes(bytes(raw))
    message = _open_error(path)
    assert "refusing to expand it (zip bomb?)" in message and "claims 4,294,901,760 bytes" in message


@pytest.mark.parametrize("header, message", [
    ("{'descr': __import__('os').getcwd(), 'fortran_order': False, 'shape': (2,), }",
     "a.npy: the .npy header is not a Python literal"),
    ("{'descr': '<f8', 'fortran_order': 0, 'shape': (2,), }", "a.npy: the .npy header's fortran_order is not True"),
    ("{'descr': '<f8', 'fortran_order': False, 'shape': (-2,), }", "a.npy: the .npy header's shape (-2,) holds"),
    ("{'descr': '<f8', 'fortran_order': False, 'shape': [2], }", "a.npy: the .npy header's shape is list"),
    ("{'descr': 'not a dtype', 'fortran_order': False, 'shape': (2,), }", "a.npy: the .npy header's descr"),
    ("{'descr': '<f8', 'shape': (2,), }", "a.npy: the .npy header is not a dict of descr"),
    ("(" * 5000 + ")" * 5000, "a.npy: the .npy header is not a Python literal"),
])
def test_bad_npy_headers(tmp_path, header, message):
    path = _zip(tmp_path / "h.npz", {"a.npy": _npy_header(header) + b"\x00" * 16})
    assert _open_error(path).startswith(message)


def test_npy_header_length_beyond_the_limit(tmp_path):
    body = b"\x93NUMPY\x02\x00" + struct.pack("<I", 1 << 31) + b"{"
    path = _zip(tmp_path / "long.npz", {"a.npy": body})
    assert _open_error(path) == "a.npy: the .npy header claims 2,147,483,648 bytes (at most 65,536 accepted)"


def test_not_npy_member(tmp_path):
    path = _zip(tmp_path / "x.npz", {"a.npy": b"hello world, not numpy"})
    assert _open_error(path) == "a.npy: not a .npy array (no \\x93NUMPY magic)"


def test_structured_and_void_members_are_listed_unreadable(tmp_path):
    path = tmp_path / "s.npz"
    np.savez(path, rec=np.zeros(2, dtype=[("a", "<i4"), ("b", "<f4")]), raw=np.zeros(2, dtype="V3"), ok=np.ones(1))
    with formats.open_checkpoint(path) as ckpt:
        assert sorted(ckpt) == ["ok", "raw", "rec"]
        assert [k for k, e in ckpt.items() if e.unreadable] == ["rec", "raw"]


def test_member_crc_mismatch_is_caught_by_verify(tmp_path, run_cli):
    path = tmp_path / "c.npz"
    np.savez(path, a=np.arange(64, dtype=np.int32))
    raw = bytearray(path.read_bytes())
    at = raw.index(np.arange(64, dtype=np.int32).tobytes()) + 40
    raw[at] ^= 0xFF
    path.write_bytes(bytes(raw))
    res = run_cli("verify", path)
    assert res.exit_code == 1 and "Bad CRC-32" in res.stdout


# --- safetensors ------------------------------------------------------------------------------------------

GOOD = {"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}


@pytest.mark.parametrize("build, message", [
    (lambda p: p.write_bytes(b"\x05\x00\x00"), "safetensors file is truncated (3 bytes, no header length)"),
    (lambda p: _safetensors(p, GOOD, b"\x00" * 16, length=1 << 60),
     "safetensors header claims 1,152,921,504,606,846,976 bytes, but the file holds"),
    (lambda p: _safetensors(p, b"{not json}", b""), "the safetensors header is not valid JSON"),
    (lambda p: _safetensors(p, b"[" * 2000 + b"]" * 2000), "the safetensors header nests deeper than 4 levels"),
    (lambda p: _safetensors(p, b'{"w": 3}'), "header entry 'w' is not an object"),
    (lambda p: _safetensors(p, {"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}),
     "header entry 'w': shape [-1] is not a list of sizes"),
    (lambda p: _safetensors(p, {"w": {"dtype": "F32", "shape": [1], "data_offsets": [8, 4]}}),
     "header entry 'w': data_offsets [8, 4] are not [begin, end] with begin <= end"),
    (lambda p: _safetensors(p, {"w": {"dtype": "F32", "shape": [1], "data_offsets": [0.5, 4]}}),
     "header entry 'w': data_offsets [0.5, 4] are not"),
    (lambda p: _safetensors(p, {"__metadata__": {"a": 1}}), "__metadata__ is not an object of strings"),
    (lambda p: _safetensors(p, b'{"w": {"dtype": "F32"}} \xff'), "the safetensors header is not UTF-8 text"),
])
def test_bad_safetensors_headers(tmp_path, run_cli, build, message):
    path = tmp_path / "bad.safetensors"
    build(path)
    assert _open_error(path).startswith(message)
    res = run_cli("ls", path)
    assert res.exit_code == 3 and res.stderr.count("\n") == 1, res.output


def test_offsets_past_the_file(tmp_path, run_cli):
    header = {"w": {"dtype": "F32", "shape": [1000000, 1000000], "data_offsets": [0, 4 * 10 ** 12]},
              "b": {"dtype": "F32", "shape": [4], "data_offsets": [16, 32]}}
    path = _safetensors(tmp_path / "past.safetensors", header, b"\x00" * 20)
    with formats.open_checkpoint(path) as ckpt:
        assert ckpt["w"].problem() == ("bytes [0, 4,000,000,000,000) run past the end of the data (20 bytes): "
                                       "truncated?")
        assert ckpt["b"].problem() == "bytes [16, 32) run past the end of the data (20 bytes): truncated?"
        with pytest.raises(CorruptCheckpointError, match="run past the end"):
            ckpt["w"].read()
        assert [(p.where, p.message) for p in ckpt.problems()] == [("b", "bytes [16, 32) overlap 'w'")]
    res = run_cli("verify", path)
    assert res.exit_code == 1 and "run past the end" in res.stdout


def test_offsets_disagreeing_with_the_shape(tmp_path):
    path = _safetensors(tmp_path / "s.safetensors", {"w": {"dtype": "F32", "shape": [10], "data_offsets": [0, 8]}},
                        b"\x00" * 8)
    with formats.open_checkpoint(path) as ckpt:
        assert ckpt["w"].problem() == "declares shape [10] of F32 (40 bytes) but its data_offsets span 8 bytes"
        assert verify_checkpoint(ckpt).ok is False


def test_unknown_dtype_is_listed_unreadable(tmp_path):
    path = _safetensors(tmp_path / "u.safetensors", {"w": {"dtype": "F8_E8M0", "shape": [2], "data_offsets": [0, 2]},
                                                     "b": {"dtype": "U8", "shape": [2], "data_offsets": [2, 4]}},
                        b"\x01\x02\x03\x04")
    with formats.open_checkpoint(path) as ckpt:
        assert list(ckpt) == ["w", "b"] and list(ckpt["b"].read()) == [3, 4] and "skipped" not in ckpt.metadata
        assert (ckpt["w"].dtype, ckpt["w"].shape, ckpt["w"].nbytes) == ("F8_E8M0", (2,), 2)
        assert ckpt["w"].problem() == "safetensors dtype F8_E8M0 has no TensorFlow counterpart"


def test_file_truncated_after_opening(tmp_path):
    data = np.arange(4, dtype=np.float32).tobytes()
    path = _safetensors(tmp_path / "t.safetensors", GOOD, data)
    with formats.open_checkpoint(path) as ckpt:
        path.write_bytes(path.read_bytes()[:-8])
        with pytest.raises(CorruptCheckpointError, match="the file ends at data byte 8"):
            ckpt["w"].read()


def test_huge_provenance_record_is_bounded(tmp_path):
    header = {"__metadata__": {"ckpt.provenance": "[" * 100 + "]" * 100}, **GOOD}
    path = _safetensors(tmp_path / "p.safetensors", header, b"\x00" * 16)
    with formats.open_checkpoint(path) as ckpt:
        assert [(p.where, p.message) for p in ckpt.problems()] == [
            ("ckpt.provenance", "the provenance record nests deeper than 8 levels; refusing to parse it; ignored")]
