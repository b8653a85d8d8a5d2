"""An archive's central directory read without a ``ZipInfo`` a member (``read_directory``) is what ``zipfile`` reads:
the same members, names, flags, methods, CRC-32s, sizes and offsets, or None (zipfile then reads it) - never an
archive zipfile refuses. An uncompressed member read in place (``StoredMember``) checks its CRC-32 as zipfile's
stream does, with its error; an npz that ckpt, numpy or zipfile wrote reads without a ``zipfile.ZipFile``."""
from __future__ import annotations

import random
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest

import formats
from formats.io.zip_directory import StoredMember, read_directory
from formats.io.zip_stored import StoredZip

from .conftest import CORPUS
from .scale_bundles import name_based, object_based

CORPUS_DTYPES = CORPUS / "tf2_mixed/all_dtypes/ckpt-1"


def _zipfile_entries(path) -> list[tuple]:
    with zipfile.ZipFile(path) as zf:
        return [(i.filename, i.orig_filename, i.flag_bits, i.compress_type, i.CRC, i.compress_size, i.file_size,
                 i.header_offset) for i in zf.infolist()]


def _archives(tmp_path: Path, run_cli) -> dict[str, tuple[Path, bool]]:
    """Archives of every kind: ``name -> (path, whether read_directory reads it)``."""
    out: dict[str, tuple[Path, bool]] = {}
    prefix = name_based(tmp_path / "in", 40)
    for name, source in [("ckpt-name", prefix), ("ckpt-object", object_based(prefix))]:
        path = tmp_path / f"{name}.npz"
        result = run_cli("convert", source, "--to", "npz", "-o", path)
        assert result.exit_code == 0, result.output
        out[name] = (path, True)
    np.savez(tmp_path / "savez.npz", a=np.ones(3), b=np.arange(4))
    np.savez_compressed(tmp_path / "compressed.npz", a=np.ones(3), **{"é/b": np.arange(4)})
    out["savez"] = (tmp_path / "savez.npz", True)
    out["compressed"] = (tmp_path / "compressed.npz", True)
    with zipfile.ZipFile(tmp_path / "names.zip", "w") as zf:
        zf.writestr("naïve.npy", b"x")  # (UTF-8, flag 0x800)
        info = zipfile.ZipInfo("plain.npy")
        info.comment = b"a comment"
        zf.writestr(info, b"yy")
    out["names"] = (tmp_path / "names.zip", True)
    raw = bytearray((tmp_path / "names.zip").read_bytes())
    at = raw.index(b"PK\x01\x02")  # the first central entry: its name's UTF-8 flag cleared (cp437, as zipfile reads it)
    raw[at + 8:at + 10] = struct.pack("<H", struct.unpack("<H", raw[at + 8:at + 10])[0] & ~0x800)
    (tmp_path / "cp437.zip").write_bytes(raw)
    out["cp437"] = (tmp_path / "cp437.zip", True)
    with zipfile.ZipFile(tmp_path / "extra.zip", "w") as zf:
        info = zipfile.ZipInfo("e.npy")
        info.extra = struct.pack("<HH4s", 0xCAFE, 4, b"abcd")
        zf.writestr(info, b"z")
    out["extra"] = (tmp_path / "extra.zip", False)
    (tmp_path / "concat.zip").write_bytes(b"#!prefix\n" + (tmp_path / "savez.npz").read_bytes())
    out["concat"] = (tmp_path / "concat.zip", False)
    with zipfile.ZipFile(tmp_path / "empty.zip", "w"):
        pass
    out["empty"] = (tmp_path / "empty.zip", True)
    with open(tmp_path / "zip64.zip", "wb") as f:  # (more than 65,535 members: ZIP64 end records)
        archive = StoredZip(f)
        archive.add_many([f"m{i}" for i in range(70_000)], [b""] * 70_000, [b"v"] * 70_000)
        archive.close()
    out["zip64"] = (tmp_path / "zip64.zip", True)
    return out


def test_the_directory_is_what_zipfile_reads(tmp_path, run_cli):
    for name, (path, read) in _archives(tmp_path, run_cli).items():
        got = read_directory(str(path))
        assert (got is not None) == read, name
        if got is not None:
            assert [tuple(e) for e in got] == _zipfile_entries(path), name


def test_a_damaged_directory_is_never_read_where_zipfile_refuses_it(tmp_path, run_cli):
    """Bytes of a small export's central directory and end records changed at random (400 seeded trials): each
    archive read_directory reads, zipfile reads the same; each zipfile refuses, read_directory gives None."""
    path = tmp_path / "small.npz"
    result = run_cli("convert", name_based(tmp_path / "in", 3), "--to", "npz", "-o", path)
    assert result.exit_code == 0, result.output
    good = path.read_bytes()
    directory = good.index(b"PK\x01\x02")
    rng = random.Random(38)
    read = refused = 0
    for trial in range(400):
        raw = bytearray(good)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(directory, len(raw))
            raw[at] = rng.randrange(256) if trial % 2 else raw[at] ^ (1 << rng.randrange(8))
        bad = tmp_path / "bad.npz"
        bad.write_bytes(raw)
        try:
            want = _zipfile_entries(bad)
        except Exception:  # noqa: BLE001  (whatever zipfile refuses it with)
            want = None
        got = read_directory(str(bad))
        if got is not None:
            read += 1
            assert [tuple(e) for e in got] == want, trial
        elif want is None:
            refused += 1
    assert read > 50 and refused > 50, (read, refused)


def test_a_stored_member_is_checked_as_zipfiles_stream_checks_it(tmp_path):
    path = tmp_path / "a.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("a.npy", bytes(range(200)))
    entry = read_directory(str(path))[0]
    start = 30 + len("a.npy")
    import os

    fd = os.open(path, os.O_RDONLY)
    try:
        member = StoredMember(fd, start, entry)
        assert member.read(10) + member.read() == bytes(range(200)) and member.read(5) == b""
    finally:
        os.close(fd)
    raw = bytearray(path.read_bytes())
    raw[start + 150] ^= 1
    path.write_bytes(raw)
    with zipfile.ZipFile(path) as zf, zf.open("a.npy") as stream:
        with pytest.raises(zipfile.BadZipFile) as theirs:
            stream.read()
    fd = os.open(path, os.O_RDONLY)
    try:
        member = StoredMember(fd, start, entry)
        member.read(100)  # (the first bytes: not yet checked)
        with pytest.raises(zipfile.BadZipFile) as ours:
            member.read(100)
        assert str(ours.value) == str(theirs.value) == "Bad CRC-32 for file 'a.npy'"
        with pytest.raises(EOFError):
            StoredMember(fd, start + 100, entry).read()  # (past the file's end)
    finally:
        os.close(fd)


def test_an_npz_reads_without_a_zipfile(tmp_path, run_cli, monkeypatch):
    """ckpt's exports and numpy's files are listed, verified and read without ``zipfile.ZipFile`` (the record and
    the object graph too, read in place); a compressed npz opens one for its members when they are read."""
    archives = _archives(tmp_path, run_cli)
    opened = []
    real = zipfile.ZipFile

    def counted(*args, **kwargs):
        opened.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(zipfile, "ZipFile", counted)
    for name in ("ckpt-name", "ckpt-object", "savez"):
        path = archives[name][0]
        with formats.open_checkpoint(path) as ckpt:
            assert len(ckpt) and all(e.read() is not None for e in ckpt.values())
            if name == "ckpt-object":
                assert ckpt.carried_object_graph() is not None
                assert ckpt.metadata["provenance"]["tensors"] == len(ckpt)  # (the record read in place)
        result = run_cli("verify", path)
        assert result.exit_code == 0, result.output
    assert opened == []
    with formats.open_checkpoint(archives["compressed"][0]) as ckpt:
        assert opened == []
        assert ckpt["é/b"].read().tolist() == [0, 1, 2, 3]
    assert len(opened) == 1
    monkeypatch.setattr(zipfile, "ZipFile", real)
    from formats.npz.reader import open_npz

    with open_npz(str(archives["concat"][0])) as ckpt:  # (zipfile's reading: bytes before the archive)
        assert ckpt["b"].read().tolist() == [0, 1, 2, 3]



def test_small_members_are_read_a_span_at_a_time_checked_by_their_crc32(tmp_path, run_cli):
    """``NpzTensor.small_ranges``: a small uncompressed member storing its tensor's canonical bytes is read with
    its neighbours (``read_checked``), its CRC-32 checked over its ``.npy`` header and bytes, and gives the bytes
    ``byte_chunks`` gives; a string, a big-endian or Fortran-order member is read the usual way; a member whose
    bytes changed gives None, and ``verify`` names it."""
    from formats.io.spans import read_checked, small_ranges

    out = tmp_path / "dtypes.npz"
    result = run_cli("extract", CORPUS_DTYPES, "-o", out)
    assert result.exit_code == 0, result.output
    np.savez(tmp_path / "layouts.npz", big=np.arange(6, dtype=">i4"), fortran=np.asfortranarray(np.ones((2, 3))),
             plain=np.arange(5, dtype="<i2"))
    for path in (out, tmp_path / "layouts.npz"):
        with formats.open_checkpoint(path) as ckpt:
            entries = [e for e in ckpt.values() if e.unreadable is None]
            ranges = small_ranges(entries)
            pieces = read_checked(ranges)
            for entry, where, piece in zip(entries, ranges, pieces):
                plain = entry.dtype not in ("string", "variant") and entry.key not in ("big", "fortran") and \
                    entry.nbytes > 0
                assert (where is not None) == plain, entry.key
                if plain:
                    assert bytes(piece) == b"".join(bytes(c) for c in entry.byte_chunks()), entry.key
    with formats.open_checkpoint(out) as ckpt:
        key = "typed/int32/.ATTRIBUTES/VARIABLE_VALUE"
        where = small_ranges([ckpt[key]])[0]
    raw = bytearray(out.read_bytes())
    raw[where[1] + where[4] + 1] ^= 0x40  # (a byte of the tensor, after its .npy header)
    out.write_bytes(raw)
    with formats.open_checkpoint(out) as ckpt:
        assert read_checked(small_ranges([ckpt[key]])) == [None]
    result = run_cli("verify", out)
    assert result.exit_code == 1 and key in result.output, result.output


def test_diff_of_npz_members_in_spans_is_the_diff_of_each_pair(tmp_path, run_cli, monkeypatch):
    """``diff`` of two npz files (and of an npz and a bundle) read in spans (``same_small`` with the members'
    ranges) reports what the pair-by-pair comparison reports: equal, changed (with its statistics), NaN, a dtype
    and a shape changed."""
    from formats.npz.reader import NpzTensor

    rng = np.random.default_rng(38)
    a = {f"w{i}": rng.standard_normal(6).astype(np.float32) for i in range(60)}
    a.update(i16=np.arange(8, dtype=np.int16), f64=np.linspace(0, 1, 5))
    b = {k: v.copy() for k, v in a.items()}
    b["w3"][2] += 0.5
    b["w7"] *= 2
    b["w9"][0] = np.nan
    b["w11"] = b["w11"].astype(np.float64)
    b["w13"] = b["w13"][:4]
    b["i16"][1] = -7
    np.savez(tmp_path / "a.npz", **a)
    np.savez(tmp_path / "b.npz", **b)
    prefix = name_based(tmp_path / "in", 30)
    out = tmp_path / "bundle.npz"
    result = run_cli("convert", prefix, "--to", "npz", "-o", out)
    assert result.exit_code == 0, result.output
    pairs = [(tmp_path / "a.npz", tmp_path / "b.npz"), (prefix, out)]
    spans = [run_cli("diff", "--json", x, y) for x, y in pairs]
    monkeypatch.delattr(NpzTensor, "small_ranges")
    each = [run_cli("diff", "--json", x, y) for x, y in pairs]
    for fast, slow in zip(spans, each):
        assert (fast.exit_code, fast.stdout) == (slow.exit_code, slow.stdout)
    assert spans[0].exit_code == 1 and spans[1].exit_code == 0
    assert all(k in spans[0].stdout for k in ("w3", "w7", "w9", "w11", "w13", "i16"))
