"""Reading back what ``convert --to npz|safetensors`` and ``extract`` write, at many tensors: the parts of opening an
npz that are a Python step a member give what they gave before."""
from __future__ import annotations

import zipfile

import pytest

from formats.io.zipped import _encoded_name

_NAMES = ["w.npy", "model/layer_0/unit_0/w.npy", "caf\u00e9.npy", "\u00c7\u00fc\u00e9.npy", "\u2603.npy", "\ud800.npy",
          "tab\there.npy", "", "\x00\x7f.npy", "\u00a0\u00ff.npy"]


def _encoded_before(info: zipfile.ZipInfo) -> bytes:
    """The name a local header holds, as zipfile compares it (the code before ASCII names were encoded as ASCII)."""
    try:
        return info.orig_filename.encode("utf-8" if info.flag_bits & 0x800 else "cp437")
    except UnicodeEncodeError:
        return b""


@pytest.mark.parametrize("flags", [0, 0x800])
@pytest.mark.parametrize("name", _NAMES)
def test_a_members_name_is_encoded_as_zipfile_encodes_it(name, flags):
    info = zipfile.ZipInfo(name)
    info.flag_bits = flags
    assert _encoded_name(info) == _encoded_before(info)


def test_what_extract_writes_of_a_million_tensors_ckpt_reads():
    """A limit of 1,000,000 members refused the npz ``extract`` wrote of 10^6 tensors (their provenance record is a
    member too): the writer and the reader share one limit, with room for a million tensors and the record."""
    from formats.io import zip_stored
    from formats.npz import reader, writer

    assert reader.MAX_MEMBERS == writer.MAX_MEMBERS == zip_stored.MAX_MEMBERS >= 1_000_001


@pytest.mark.parametrize("most", [7, 6])
def test_an_npz_ckpt_would_not_read_is_not_written(tmp_path, monkeypatch, run_cli, most):
    """At the limit (six tensors and the record: seven members) the npz is written and read back; one member past
    it, nothing is written and the error says why (exit 4), as a reader past it refuses the file (exit 3)."""
    from formats.npz import reader, writer

    from .scale_bundles import name_based

    prefix = name_based(tmp_path / "in", 6)
    monkeypatch.setattr(writer, "MAX_MEMBERS", most)
    monkeypatch.setattr(reader, "MAX_MEMBERS", most)
    out = tmp_path / "all.npz"
    result = run_cli("extract", prefix, "-o", out)
    if most == 7:
        assert result.exit_code == 0, result.output
        listed = run_cli("ls", out)
        assert listed.exit_code == 0 and "6 tensors" in listed.output, listed.output
        monkeypatch.setattr(reader, "MAX_MEMBERS", 6)
        refused = run_cli("ls", out)
        assert refused.exit_code == 3
        assert refused.stderr.strip() == f"ckpt: error: {out}: holds 7 members (at most 6 read)"
    else:
        assert result.exit_code == 4, result.output
        assert result.stderr.splitlines()[0] == f"ckpt: error: {out}: an npz of 7 members; ckpt reads at most 6"
        assert not out.exists() and list(tmp_path.iterdir()) == [tmp_path / "in"]


def test_a_member_count_past_the_limit_is_refused_before_the_directory_is_parsed(tmp_path, monkeypatch, run_cli):
    """The end record's count (65,535 here, for a file of three members) is read first: past the limit, the file
    is refused (exit 3) before zipfile makes a ZipInfo of any member; a count within it goes on to zipfile, which
    reads the directory there is."""
    import struct
    import zipfile

    import numpy as np

    from formats.io.zipped import declared_members
    from formats.npz import reader

    path = tmp_path / "a.npz"
    np.savez(path, a=np.zeros(2), b=np.ones(3), c=np.arange(4))
    assert declared_members(str(path)) == 3
    raw = bytearray(path.read_bytes())
    end = raw.rindex(b"PK\x05\x06")
    raw[end + 8:end + 12] = struct.pack("<HH", 0xFFFF, 0xFFFF)  # (entries on this disk, entries in all)
    path.write_bytes(bytes(raw))
    assert declared_members(str(path)) == 0xFFFF
    monkeypatch.setattr(reader, "MAX_MEMBERS", 1000)
    real = zipfile.ZipFile

    def never(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("the central directory was parsed")

    monkeypatch.setattr(zipfile, "ZipFile", never)
    refused = run_cli("ls", path)
    assert refused.exit_code == 3
    assert refused.stderr.strip() == f"ckpt: error: {path}: holds 65,535 members (at most 1,000 read)"
    monkeypatch.setattr(zipfile, "ZipFile", real)
    monkeypatch.setattr(reader, "MAX_MEMBERS", 70_000)
    parsed = run_cli("ls", path)  # (zipfile reads the directory by its size: the three members)
    assert parsed.exit_code == 0 and "3 tensors" in parsed.output, parsed.output
    assert declared_members(str(tmp_path / "missing.npz")) is None
    (tmp_path / "empty.npz").write_bytes(b"")
    assert declared_members(str(tmp_path / "empty.npz")) is None
