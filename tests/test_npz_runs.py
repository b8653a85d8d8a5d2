"""Issue 38: an ``.npz`` of a bundle's many small tensors is written in runs.

A small fixed-width tensor whose bytes lie unchanged in a bundle's data file is read with its neighbours (one
``pread`` a span, a CRC32C each: :func:`formats.io.spans.read_checked`) and a run of them goes into the archive
at once (:meth:`formats.io.zip_stored.StoredZip.add_many`: each field made by a C function mapped over the
members). Every other tensor - strings, empty, large, cast - goes a member at a time as before, in its place.
The archive is the one :mod:`zipfile` writes (the oracle: the arrays given to the bundle writer, written through
``zipfile`` and ``numpy.lib.format``), with runs cut short (a part of 7 members, 300 bytes) and as they come; a
run that would pass the ZIP64 limit goes a member at a time; a damaged tensor in a run is the input's error.
"""
from __future__ import annotations

import io
import os
import random
import zipfile
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import formats
from formats.core.sources import TensorValue
from formats.io import spans, zip_stored
from formats.io.crc import crc32c
from formats.npz import writer as npz_writer
from formats.npz.writer import write_npz


def _values() -> dict[str, object]:
    """Many tiny tensors of a few kinds, among them a bfloat16 (stored as its bits), strings, an empty tensor, a
    scalar, a large one (read by streaming), non-ASCII names."""
    values: dict[str, object] = {}
    for i in range(60):
        values[f"model/layer_{i // 10}/unit_{i % 10}/w"] = np.arange(i, i + 3 + i % 4, dtype=np.float32)
        values[f"model/layer_{i // 10}/unit_{i % 10}/b"] = np.int64(i)
    values["model/layer_2/emb"] = np.arange(20_000, dtype=np.float64)  # 160,000 bytes: not small
    values["model/layer_3/bf16"] = TensorValue(np.arange(6, dtype=np.float32).astype(ml_dtypes.bfloat16).reshape(2, 3),
                                               "bfloat16")
    values["model/layer_3/words"] = TensorValue([b"alpha", b"b"], "string")
    values["model/layer_4/empty"] = np.zeros((0, 3), np.float32)
    values["model/schicht_ä/名前"] = np.ones((2, 2), np.int8)
    values["model/layer_5/flag"] = np.array([True, False, True])
    return values


def _stored(value: object) -> np.ndarray:
    """The array an ``.npz`` stores for ``value`` (bfloat16 as its bits, strings as ``S<n>``)."""
    if isinstance(value, TensorValue):
        if value.dtype == "string":
            return np.array(list(value.value), dtype=f"S{max(len(x) for x in value.value)}")
        raw = np.asarray(value.value)
        return raw.view(f"<u{raw.dtype.itemsize}")
    return np.asarray(value)


def _oracle(path: Path, keys: list[str], values: dict[str, object]) -> bytes:
    """The archive zipfile writes for ``keys`` in order (what the writer wrote a member at a time before)."""
    with zipfile.ZipFile(path, "x", zipfile.ZIP_STORED, allowZip64=True) as zf:
        for key in keys:
            with zf.open(key + ".npy", "w", force_zip64=True) as member:
                buffer = io.BytesIO()
                np.lib.format.write_array(buffer, _stored(values[key]), allow_pickle=False)
                member.write(buffer.getvalue())
    return path.read_bytes()


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, object], list[str]]:
    values = _values()
    prefix = str(tmp_path_factory.mktemp("runs") / "ckpt-1")
    formats.write_checkpoint(prefix, values)
    return prefix, values, sorted(values, key=lambda k: k.encode())  # (a bundle's order: its keys' bytes)


class _Spy:
    """The members :meth:`StoredZip.add_many` is given (``members``) and those it hands to :meth:`StoredZip.add`
    one at a time (``one_by_one``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.members: list[str] = []
        self.one_by_one: list[str] = []
        self.inside = False
        real_many, real_add = zip_stored.StoredZip.add_many, zip_stored.StoredZip.add

        def add_many(archive: zip_stored.StoredZip, names: list[str], headers: list[bytes], datas: list) -> None:
            self.members += [name[:-4] for name in names]
            self.inside = True
            try:
                real_many(archive, names, headers, datas)
            finally:
                self.inside = False

        def add(archive: zip_stored.StoredZip, name: str, *args: object) -> int:
            if self.inside:
                self.one_by_one.append(name[:-4])
            return real_add(archive, name, *args)

        monkeypatch.setattr(zip_stored.StoredZip, "add_many", add_many)
        monkeypatch.setattr(zip_stored.StoredZip, "add", add)


@pytest.mark.parametrize("joined", [None, 1, 700], ids=["joined-64k", "joined-one-by-one", "joined-few"])
@pytest.mark.parametrize("cut", [None, (7, 300)], ids=["as-they-come", "cut-short"])
def test_a_bundles_small_tensors_go_in_runs_and_the_archive_is_zipfiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                        bundle, cut, joined) -> None:
    prefix, values, keys = bundle
    if cut is not None:
        monkeypatch.setattr(npz_writer, "RUN", cut[0])
        monkeypatch.setattr(npz_writer, "RUN_BYTES", cut[1])
    if joined is not None:  # (a run's members joined this many bytes at a time, each alone past it)
        monkeypatch.setattr(zip_stored, "_JOINED", joined)
    spy = _Spy(monkeypatch)
    seen: list[tuple[int, int]] = []
    with formats.open_checkpoint(prefix) as ckpt:
        report = write_npz(tmp_path / "out.npz", [(k, ckpt[k]) for k in keys], progress=lambda b, n: seen.append((b, n)))
    monkeypatch.undo()
    assert report.verified and report.tensors == len(keys) and report.roundtrip.tensors == len(keys)
    runs = {k for k in keys if not isinstance(values[k], TensorValue) and 0 < _stored(values[k]).nbytes <= 65536}
    runs.add("model/layer_3/bf16")  # (bits as stored: bfloat16's bytes are its uint16 bits)
    assert sorted(spy.members) == sorted(runs) and spy.one_by_one == []  # every small tensor in a run, no other
    assert (tmp_path / "out.npz").read_bytes() == _oracle(tmp_path / "oracle.npz", keys, values)
    assert [n for _, n in seen] == list(range(1, len(keys) + 1))  # progress a member at a time, as before
    assert seen[-1][0] == sum(_stored(values[k]).nbytes for k in keys)
    assert report.warnings == ["model/layer_3/bf16: bfloat16 stored as uint16 bits (the record keeps bfloat16)"]
    loaded = np.load(tmp_path / "out.npz")
    for key in keys:
        assert loaded[key].tobytes() == _stored(values[key]).tobytes() and loaded[key].shape == _stored(values[key]).shape


def test_a_run_that_would_pass_the_zip64_limit_goes_a_member_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                      bundle) -> None:
    """Limits lowered in both writers: members past 3,000 bytes need ZIP64 offsets in the central directory; the
    runs of 5 before them are mapped, the rest written by :meth:`StoredZip.add` (which writes those fields)."""
    prefix, values, keys = bundle
    for module in (zipfile, zip_stored):
        monkeypatch.setattr(module, "ZIP64_LIMIT", 3000)
    monkeypatch.setattr(npz_writer, "RUN", 5)  # (runs of 5: some end before the limit)
    spy = _Spy(monkeypatch)
    with formats.open_checkpoint(prefix) as ckpt:
        write_npz(tmp_path / "out.npz", [(k, ckpt[k]) for k in keys])
    expected = _oracle(tmp_path / "oracle.npz", keys, values)
    monkeypatch.undo()
    assert (tmp_path / "out.npz").read_bytes() == expected
    mapped = [k for k in spy.members if k not in spy.one_by_one]
    assert 0 < len(mapped) < 20 and len(spy.one_by_one) > 50  # (runs before the limit, then one at a time)
    with zipfile.ZipFile(tmp_path / "out.npz") as zf:
        assert zf.testzip() is None


def test_a_damaged_tensor_in_a_run_is_the_inputs_error(tmp_path: Path, bundle, run_cli) -> None:
    prefix, values, keys = bundle
    folder = Path(prefix).parent
    copy = tmp_path / "ckpt-1"
    for path in folder.iterdir():
        (tmp_path / path.name).write_bytes(path.read_bytes())
    victim = "model/layer_1/unit_4/w"
    with formats.open_checkpoint(str(copy)) as ckpt:
        _, offset, _, _ = ckpt[victim].stored_range()
        data = next(p for p in tmp_path.iterdir() if ".data-" in p.name)
    raw = bytearray(data.read_bytes())
    raw[offset] ^= 0x01
    data.write_bytes(bytes(raw))
    result = run_cli("extract", str(copy), "-o", str(tmp_path / "all.npz"))
    message = result.stdout + result.stderr
    assert result.exit_code == 3, message
    assert len(message.strip().splitlines()) == 1 and victim in message and data.name in message, message
    assert not (tmp_path / "all.npz").exists()


def test_spans_read_as_each_range_read_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """read_checked (the runs' reader: ranges grouped by file and offset into spans) gives each range the bytes a
    ``pread`` of it alone gives when they match its CRC32C, else None: on 400 random sets of ranges over two files
    (in order, shuffled, overlapping, far apart, past the end, wrong checksums) and three made to trip a shortcut.
    Each span read is one file's, within the budget (or one range), holding its ranges with no hole over the gap."""
    rng = random.Random(38)
    read: list[tuple[int, int, int, list]] = []
    real = spans._read_span

    def read_span(fd: int, start: int, end: int, members: list[int], ranges: list, out: list) -> None:
        read.append((fd, start, end, [ranges[i] for i in members]))
        real(fd, start, end, members, ranges, out)

    monkeypatch.setattr(spans, "_read_span", read_span)
    paths = [tmp_path / "a", tmp_path / "b"]
    for path in paths:
        path.write_bytes(rng.randbytes(200_000))
    fds = [os.open(path, os.O_RDONLY) for path in paths]
    try:
        def ranged(fd: int, offset: int, size: int) -> tuple[int, int, int, int]:
            return fd, offset, size, crc32c(os.pread(fd, size, offset))

        fixed = [[ranged(fds[0], 100, 50), ranged(fds[0], 50, 120)],  # offsets fall as their ends rise
                 [ranged(fds[0], 0, 100), ranged(fds[0], 10, 20)],  # the ends fall
                 [ranged(fds[0], 0, 100), ranged(fds[1], 100, 100)]]  # two files, one after the other
        for trial in range(400 + len(fixed)):
            ranges: list = fixed[trial - 400] if trial >= 400 else []
            at = rng.randrange(1000)
            for _ in range(rng.randrange(1, 40) if trial < 400 else 0):
                fd = fds[0] if trial % 3 else rng.choice(fds)
                size = rng.randrange(1, 3000)
                at = at + rng.choice([0, 0, 0, 5, 4000, 5000, -200]) if trial % 2 else rng.randrange(205_000)
                at = max(at, 0)
                crc = crc32c(os.pread(fd, size, at))
                ranges.append(None if rng.random() < 0.05 else (fd, at, size, crc ^ (rng.random() < 0.1)))
                at += size
            if trial % 5 == 0:
                rng.shuffle(ranges)
            budget = rng.choice([4096, 1 << 20])
            read.clear()
            got = spans.read_checked(ranges, budget)
            for fd, start, end, members in read:
                assert {r[0] for r in members} == {fd} and (end - start <= budget or len(members) == 1), trial
                covered = start
                for _, offset, size, _ in sorted(members, key=lambda r: r[1]):
                    assert start <= offset and offset + size <= end and offset - covered <= spans.GAP_BYTES, trial
                    covered = max(covered, offset + size)
                assert covered == end, trial
            assert sorted(r for _, _, _, members in read for r in members) == sorted(r for r in ranges if r), trial
            want = []
            for r in ranges:
                piece = None if r is None else os.pread(r[0], r[2], r[1])
                want.append(piece if piece is not None and len(piece) == r[2] and crc32c(piece) == r[3] else None)
            assert [None if g is None else bytes(g) for g in got] == want, trial
    finally:
        for fd in fds:
            os.close(fd)


def test_the_read_back_of_a_run_counts_every_member_and_names_a_wrong_record(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The read-back takes a block's members together (each distinct header parsed once): it counts every tensor
    and its bytes, and the record among them is still checked as a 0-d unicode array (here written as shape
    (1,), its bytes as written, so only that check can see it)."""
    items = [(f"t{i}", np.arange(i % 5 + 1, dtype=np.float32)) for i in range(3000)]
    report = write_npz(tmp_path / "ok.npz", items, provenance={"source": "s", "tensors": []})
    assert report.verified and report.roundtrip.tensors == 3000
    assert report.roundtrip.bytes == sum(v.nbytes for _, v in items)
    real = npz_writer.npy_header
    monkeypatch.setattr(npz_writer, "npy_header", lambda descr, shape: real(descr, (1,)))
    with pytest.raises(formats.VerificationError, match="provenance record does not read back as a 0-d unicode"):
        write_npz(tmp_path / "bad.npz", items, provenance={"source": "s", "tensors": []})
    assert not (tmp_path / "bad.npz").exists()


def test_a_pickled_member_among_small_ones_is_checked_by_its_digest(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A pickled member's bytes are compared by sha256 on read-back, in a block of small members too (its
    digest replaced here: the bytes are as written, so only that comparison can see it)."""
    from formats.core.records import replace

    held = np.empty(2, dtype=object)
    held[:] = [b"ends in nul\x00", b"x"]
    items = [("a", np.arange(3, dtype=np.int16)), ("words", TensorValue(held, "string")), ("z", np.ones(2))]
    real = npz_writer.write_member
    monkeypatch.setattr(npz_writer, "write_member", lambda *a, **k: replace(real(*a, **k), digest="0" * 64))
    with pytest.raises(formats.VerificationError, match="pickled member does not read back as written"):
        write_npz(tmp_path / "out.npz", items, allow_pickle=True)


def test_only_a_version_1_header_is_taken_a_block_at_a_time() -> None:
    """Other versions' lengths take four bytes: those headers are read a member at a time."""
    text = b"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"
    assert npz_writer._v1_length(b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little")) == len(text)
    for version in (b"\x02\x00", b"\x03\x00", b"\x01\x01"):
        assert npz_writer._v1_length(b"\x93NUMPY" + version + len(text).to_bytes(2, "little")) is None
    assert npz_writer._v1_length(b"\x93NUMPZ\x01\x00\x10\x00") is None
    assert npz_writer._v1_length(b"\x93NUMPY\x01\x00\x10") is None


@pytest.mark.parametrize("budget", [1, 300, 700, 5000])
def test_a_runs_members_are_joined_within_the_budget_each_crc_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     budget: int) -> None:
    """:meth:`StoredZip.add_many` writes a run's members joined at most ``_JOINED`` bytes at a time (one member alone
    where it is larger), the bytes zipfile writes, and takes each member's CRC32C over the member alone."""
    monkeypatch.setattr(zip_stored, "_JOINED", budget)
    rng = random.Random(budget)
    names = [f"m{i}/{'x' * rng.randrange(40)}.npy" for i in range(57)]
    headers = [b"H" * rng.choice([64, 128]) for _ in names]
    datas = [memoryview(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 900)))) for _ in names]
    writes: list[int] = []

    class _File(io.BytesIO):
        def write(self, data) -> int:  # type: ignore[override]
            writes.append(len(data))
            return super().write(data)

    f = _File()
    archive = zip_stored.StoredZip(f)
    archive.add_many(names[:20], headers[:20], datas[:20])
    archive.add_many(names[20:], headers[20:], datas[20:])
    assert len(writes) >= 2
    members = [30 + len(n.encode()) + 20 + len(h) + len(d) for n, h, d in zip(names, headers, datas)]
    assert sum(writes) == sum(members)
    for size in writes:  # (each write: whole members, within the budget unless one member alone)
        assert size <= budget or size in members
    starts = [0, *np.cumsum(members)]
    written = f.getvalue()
    assert list(archive.check_crc) == [crc32c(written[a:b]) for a, b in zip(starts, starts[1:])]
    archive.close()
    with zipfile.ZipFile(io.BytesIO(f.getvalue())) as zf:
        assert zf.testzip() is None
        assert [zf.read(n) for n in names] == [h + bytes(d) for h, d in zip(headers, datas)]


@pytest.mark.parametrize("blocks", ["one-kind", "mixed"])
def test_a_block_read_back_names_each_member_whose_header_is_wrong(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 blocks: str) -> None:
    """A block of members read back is asked its questions once a distinct header, member, shape and size - once
    in all where the block is of one kind - and each member whose header says another shape is named, in order,
    none other: here the float32 tensors' headers are written saying shape (2, 2) (their bytes as written, so only
    the header's question can see it), among them, when mixed, int8 tensors and float64 ones with 20 dimensions
    (a longer header)."""
    values = {f"a{i:04d}": np.full((4,), i, np.float32) for i in range(300)}
    if blocks == "mixed":
        values |= {f"a{i:04d}x": np.arange(3, dtype=np.int8) for i in range(0, 300, 7)}
        values |= {f"a{i:04d}y": np.zeros((1,) * 20) for i in range(0, 300, 11)}
    prefix = str(tmp_path / "ckpt-1")
    formats.write_checkpoint(prefix, values)
    with formats.open_checkpoint(prefix) as ckpt:
        assert write_npz(tmp_path / "ok.npz", list(ckpt.items())).roundtrip.tensors == len(values)
        real = npz_writer.small_member
        monkeypatch.setattr(npz_writer, "small_member",
                            lambda dtype, shape: real(dtype, (2, 2) if dtype == "float32" else shape))
        with pytest.raises(formats.VerificationError) as caught:
            write_npz(tmp_path / "bad.npz", list(ckpt.items()))
    wrong = sorted(k for k, v in values.items() if v.dtype == np.float32)
    assert [(m.key, m.kind, m.message) for m in caught.value.report.mismatches] == [
        (k, "shape", "stored with shape [2, 2], expected [4]") for k in wrong]
    assert caught.value.report.tensors == len(values)
