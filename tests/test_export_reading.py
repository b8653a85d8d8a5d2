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
