"""Issue 38: the npz writer's own ZIP64 writer (:mod:`formats.io.zip_stored`) writes many small members at a cost
of a few ``struct.pack`` calls each, and reads the archive back in blocks.

The bytes are unchanged: every archive here is compared byte for byte with the one :mod:`zipfile` writes as the
writer did before (``ZipFile(path, "x", ZIP_STORED, allowZip64=True)``, each tensor through
``open(name, "w", force_zip64=True)``, the record through ``open(name, "w")`` and ``numpy.lib.format.write_array``):
same local headers (ZipInfo's fixed date 1980-01-01, ZIP64 extra fields in each tensor's local header), same
central directory, same end records. No header field differs, so ``numpy.load``, ``zipfile`` and ``unzip -t``
read what they read before; they are run here as independent readers all the same. The limits past which ZIP64
fields are needed (2 GiB - 1 of offset or size, 65,535 members) are lowered in both writers at once to reach
those fields without writing gigabytes.
"""
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import formats
from formats.core.errors import PickleRequiredError, VerificationError
from formats.core.sources import TensorValue
from formats.io import zip_stored
from formats.npz import writer as npz_writer
from formats.npz.writer import write_npz

from tests.call_counts import python_calls

BF16 = np.arange(6, dtype=np.float32).astype(ml_dtypes.bfloat16).reshape(2, 3)


def _items() -> list[tuple[str, object]]:
    """Tensors of every kind: numeric, empty, scalar, bits-stored (bfloat16, float8), strings, non-ASCII
    names, one past the in-memory limit (streamed, its header rewritten) and one tiny."""
    return [("dense/kernel", np.arange(12, dtype=np.float32).reshape(3, 4)),
            ("empty", np.zeros((0, 3), np.float64)),
            ("scalar", np.int64(7)),
            ("bf16", TensorValue(BF16, "bfloat16")),
            ("f8", TensorValue(np.array([1.0, -2.0], dtype=ml_dtypes.float8_e4m3fn), "float8_e4m3fn")),
            ("words", TensorValue([b"alpha", b"b", b"\xff\x00x"], "string")),
            ("no strings", TensorValue(np.array([], dtype=object), "string")),
            ("schicht/gewicht_ä/名前", np.ones((2, 2), np.int8)),
            ("big", np.arange((zip_stored.SPOOL // 8) + 100, dtype=np.float64)),
            ("z", np.array([True, False]))]


def _oracle_bytes(key: str, value: object) -> bytes:
    """The ``.npy`` numpy writes for a tensor as the policy stores it (bits as unsigned ints, strings as S<n>)."""
    if isinstance(value, TensorValue):
        if value.dtype == "string":
            flat = list(value.value)
            value = np.array(flat, dtype=f"S{max((len(x) for x in flat), default=1) or 1}")
        else:
            raw = np.asarray(value.value)
            value = raw.view(f"<u{raw.dtype.itemsize}")
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.asarray(value), allow_pickle=False)
    return buffer.getvalue()


def _zipfile_archive(path: Path, items: list[tuple[str, object]], record: dict | None) -> bytes:
    """What the writer wrote before, through :mod:`zipfile` (the oracle)."""
    with zipfile.ZipFile(path, "x", zipfile.ZIP_STORED, allowZip64=True) as zf:
        for key, value in items:
            with zf.open(key + ".npy", "w", force_zip64=True) as member:
                member.write(_oracle_bytes(key, value))
        if record is not None:
            with zf.open("__ckpt_provenance__.npy", "w") as member:
                np.lib.format.write_array(member, np.array(json.dumps(record)), allow_pickle=False)
    return path.read_bytes()


RECORD = {"source": "src", "format": "test", "tensors": [{"key": "bf16", "dtype": "bfloat16", "shape": [2, 3]},
                                                         {"key": "f8", "dtype": "float8_e4m3fn", "shape": [2]}]}


def _check_independent_readers(path: Path, items: list[tuple[str, object]]) -> None:
    with zipfile.ZipFile(path) as zf:
        assert zf.testzip() is None
        assert zf.namelist()[:len(items)] == [k + ".npy" for k, _ in items]
    loaded = np.load(path, allow_pickle=False)
    for key, value in items:
        assert loaded[key].tobytes() == np.load(io.BytesIO(_oracle_bytes(key, value))).tobytes()
    if shutil.which("unzip"):
        result = subprocess.run(["unzip", "-t", str(path)], capture_output=True, text=True)
        assert result.returncode == 0 and "No errors detected" in result.stdout, result.stdout + result.stderr


@pytest.mark.parametrize("record", [None, RECORD])
def test_the_archive_is_byte_for_byte_what_zipfile_wrote(tmp_path: Path, record: dict | None) -> None:
    items = _items()
    report = write_npz(tmp_path / "fast.npz", items, provenance=record)
    assert report.verified and report.tensors == len(items)
    assert (tmp_path / "fast.npz").read_bytes() == _zipfile_archive(tmp_path / "oracle.npz", items, record)
    _check_independent_readers(tmp_path / "fast.npz", items)
    with formats.open_checkpoint(str(tmp_path / "fast.npz")) as ckpt:
        assert ckpt["bf16"].dtype == ("bfloat16" if record else "uint16")
        assert np.array_equal(ckpt["dense/kernel"].read(), items[0][1])
        assert ckpt["schicht/gewicht_ä/名前"].read().tolist() == [[1, 1], [1, 1]]


def test_zip64_fields_past_the_limits_are_the_ones_zipfile_writes(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """With zipfile's and our limits lowered to 1,000 bytes and 3 members, members past the limit get ZIP64
    sizes and offsets in the central directory and the ZIP64 end records are written (as past 2 GiB - 1 and
    65,535 members); zipfile (with its real limits), numpy and unzip read them."""
    items = _items()
    for module in (zipfile, zip_stored):
        monkeypatch.setattr(module, "ZIP64_LIMIT", 1000)
    monkeypatch.setattr(zipfile, "ZIP_FILECOUNT_LIMIT", 3)
    monkeypatch.setattr(zip_stored, "_FILECOUNT_LIMIT", 3)
    write_npz(tmp_path / "fast.npz", items, provenance=RECORD)
    expected = _zipfile_archive(tmp_path / "oracle.npz", items, RECORD)
    monkeypatch.undo()
    raw = (tmp_path / "fast.npz").read_bytes()
    assert raw == expected
    assert b"PK\x06\x06" in raw[-200:] and b"PK\x06\x07" in raw[-100:]
    with zipfile.ZipFile(tmp_path / "fast.npz") as zf:
        late = zf.getinfo("z.npy")
        assert late.header_offset > 1000 and late.extra[:4] == b"\x01\x00\x08\x00"  # ZIP64: the offset
        big = zf.getinfo("big.npy")
        assert big.file_size > 1000 and big.extra[:4] == b"\x01\x00\x18\x00"  # ZIP64: sizes and offset
    _check_independent_readers(tmp_path / "fast.npz", items)


def test_threaded_members_and_a_spooled_record_are_the_same_bytes(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Every member through the writing thread, and a record larger than the spool (its header rewritten in
    place, without ZIP64 fields as zipfile writes it)."""
    items = _items()
    record = {**RECORD, "padding": "x" * (zip_stored.SPOOL // 2)}
    monkeypatch.setattr(npz_writer, "PIPELINE_BYTES", 0)
    write_npz(tmp_path / "fast.npz", items, provenance=record)
    assert (tmp_path / "fast.npz").read_bytes() == _zipfile_archive(tmp_path / "oracle.npz", items, record)


def test_bytes_damaged_before_the_read_back_fail_verification(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """One byte changed in the file after it is written (a small member's data, then the central directory):
    verification fails naming the tensor, and nothing takes the output's name."""
    real = zip_stored.StoredZip.close

    for target in ("member", "directory"):
        def close_then_damage(self, target=target):  # type: ignore[no-untyped-def]
            real(self)
            at = self.starts[0] + 200 if target == "member" else self.offset + 10
            fd = os.open(self.f.name, os.O_RDWR)
            os.pwrite(fd, bytes([os.pread(fd, 1, at)[0] ^ 1]), at)
            os.close(fd)

        monkeypatch.setattr(zip_stored.StoredZip, "close", close_then_damage)
        with pytest.raises(VerificationError) as info:
            write_npz(tmp_path / f"{target}.npz", [("a", np.arange(100, dtype=np.float32)), ("b", np.ones(3))])
        assert "'a'" in str(info.value) if target == "member" else "central directory" in str(info.value)
        assert not (tmp_path / f"{target}.npz").exists()
    assert [p for p in os.listdir(tmp_path)] == []


def test_a_damaged_input_tensor_is_reported_as_the_inputs_error(tmp_path: Path, run_cli) -> None:
    prefix = str(tmp_path / "src" / "ckpt-1")
    formats.write_checkpoint(prefix, {"a": np.arange(8, dtype=np.float32), "b": np.ones(4, np.float32)})
    data = next(p for p in (tmp_path / "src").iterdir() if ".data-" in p.name)
    raw = bytearray(data.read_bytes())
    raw[3] ^= 0xFF
    data.write_bytes(bytes(raw))
    result = run_cli("extract", prefix, "-o", str(tmp_path / "all.npz"))
    assert result.exit_code != 0 and "checksum" in (result.stdout + result.stderr).lower()
    assert not (tmp_path / "all.npz").exists()


def test_a_key_holding_nul_is_refused_before_writing(tmp_path: Path) -> None:
    """zipfile cuts a member name at NUL (the write then failed its read-back); now refused up front."""
    with pytest.raises(formats.InvalidOutputError, match="cannot be an npz member name"):
        write_npz(tmp_path / "a.npz", [("a\x00b", np.ones(2))])
    assert not (tmp_path / "a.npz").exists()


def _bundle(folder: Path, n: int) -> str:
    prefix = str(folder / f"n{n}" / "ckpt-1")
    formats.write_checkpoint(prefix, ((f"model/layer_{i // 100}/unit_{i % 100}/w", np.full((4,), i, np.float32))
                                      for i in range(n)), force=True, verify=False)
    return prefix


N = 500
SLACK = 2.3
"""The calls from 2N to 4N may be at most this many times those from N to 2N (linear: 2; quadratic: 4)."""


@pytest.fixture(scope="module")
def scale(tmp_path_factory):
    folder = tmp_path_factory.mktemp("npzscale")
    return [_bundle(folder, n) for n in (N, 2 * N, 4 * N)]


@pytest.mark.parametrize("command", ["extract", "convert", "ls", "verify"])
def test_npz_work_grows_linearly_with_the_members(scale, run_cli, tmp_path, command) -> None:
    """Python calls (not seconds) of writing an npz of N, 2N, 4N tiny tensors, and of listing and verifying it."""
    def argv(prefix: str, out: str) -> list[str]:
        npz = out + ".npz"
        if command in ("ls", "verify"):
            if not os.path.exists(npz):
                assert run_cli("extract", prefix, "-o", npz).exit_code == 0
            return ["ls", npz] if command == "ls" else ["verify", "--jobs", "1", npz]
        if command == "extract":
            return ["extract", prefix, "-o", npz]
        return ["convert", "--jobs", "1", prefix, "--to", "npz", "-o", npz]

    python_calls(run_cli, argv(scale[0], str(tmp_path / "warm")))
    counts = [python_calls(run_cli, argv(prefix, str(tmp_path / f"out{i}"))) for i, prefix in enumerate(scale)]
    first, second = counts[1] - counts[0], counts[2] - counts[1]
    assert first > 0, counts
    assert second <= SLACK * first, f"{command}: calls {counts} grow faster than the members"
    per_member = second / (2 * N)
    # ckpt at 68bca3f (zipfile, a member at a time): extract 304 calls per member, verify of the npz 186
    assert per_member < {"extract": 170, "convert": 220, "ls": 120, "verify": 140}[command], (command, per_member)


def test_pickled_members_with_allow_pickle_are_zipfiles_bytes_and_checked_by_digest(tmp_path: Path) -> None:
    """A string tensor with an element ending in NUL is an object array only with ``allow_pickle``; its bytes
    are numpy's (a pickle of the same list) and its read-back compares their sha256, unpickling nothing."""
    words = [b"ends in nul\x00", b"x"]
    held = np.empty(2, dtype=object)
    held[:] = words  # (a list of bytes would go through numpy's S dtype, which drops the NUL itself)
    items = [("words", TensorValue(held, "string")), ("n", np.arange(3, dtype=np.int16))]
    with pytest.raises(PickleRequiredError):
        write_npz(tmp_path / "refused.npz", items)
    assert not (tmp_path / "refused.npz").exists()
    report = write_npz(tmp_path / "fast.npz", items, allow_pickle=True)
    assert report.verified and report.contents[0].stored_dtype == "object"
    with zipfile.ZipFile(tmp_path / "oracle.npz", "x", zipfile.ZIP_STORED, allowZip64=True) as zf:
        with zf.open("words.npy", "w", force_zip64=True) as member:
            value = np.empty(2, dtype=object)
            value[:] = words
            np.lib.format.write_array(member, value, allow_pickle=True)
        with zf.open("n.npy", "w", force_zip64=True) as member:
            np.lib.format.write_array(member, np.arange(3, dtype=np.int16))
    assert (tmp_path / "fast.npz").read_bytes() == (tmp_path / "oracle.npz").read_bytes()
    assert np.load(tmp_path / "fast.npz", allow_pickle=True)["words"].tolist() == words


def test_the_central_directory_is_compared_a_piece_at_a_time(tmp_path: Path) -> None:
    """The written central directory against the file, a MiB at a time: the same bytes match; one byte changed past
    the first MiB, or a file cut short inside the last piece, do not."""
    written = bytearray(np.random.default_rng(7).integers(0, 256, (3 << 20) + 17, dtype=np.uint8).tobytes())
    path = tmp_path / "archive"
    path.write_bytes(b"12345" + written)
    fd = os.open(path, os.O_RDWR)
    try:
        assert zip_stored._reads_back(fd, written, 5)
        assert not zip_stored._reads_back(fd, written, 4)
        os.pwrite(fd, bytes([written[(2 << 20) + 3] ^ 1]), 5 + (2 << 20) + 3)
        assert not zip_stored._reads_back(fd, written, 5)
        os.pwrite(fd, bytes([written[(2 << 20) + 3]]), 5 + (2 << 20) + 3)
        assert zip_stored._reads_back(fd, written, 5)
        os.ftruncate(fd, 5 + len(written) - 1)
        assert not zip_stored._reads_back(fd, written, 5)
    finally:
        os.close(fd)


def _runs_one_member_at_a_time(archive: zip_stored.StoredZip, block: int) -> list[tuple[int, int]]:
    """The runs of members read back together as the reader found them before, a member at a time (the oracle)."""
    runs, first = [], 0
    while first < archive.count:
        start, last = archive.check_at[first], first
        while last < archive.count and first not in archive.rewritten and last not in archive.rewritten and \
                archive.check_at[last] + archive.check_size[last] - start <= block:
            last += 1
        runs.append((first, max(last, first + 1)))
        first = max(last, first + 1)
    return runs


@pytest.mark.parametrize("seed", range(40))
def test_the_read_back_runs_are_the_members_that_fit_a_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             seed: int) -> None:
    """The members read back with one ``pread`` are found by bisection: the runs are those found a member at a
    time (members of random sizes, some written in pieces past the spool and their headers rewritten, blocks from
    one byte up), each member is seen once, and a byte flipped in any member names that member alone."""
    import random

    rng = random.Random(seed)
    monkeypatch.setattr(zip_stored, "SPOOL", 3000)
    block = rng.choice([1, 200, 700, 5000, 1 << 20])
    run = rng.choice([1, 300, 5000, 1 << 20])  # (members join a run up to the smaller)
    monkeypatch.setattr(zip_stored, "BLOCK", block)
    monkeypatch.setattr(zip_stored, "RUN_BLOCK", run)
    path = tmp_path / "a.zip"
    with open(path, "wb") as f:
        archive = zip_stored.StoredZip(f)
        for i in range(rng.randrange(1, 60)):
            data = rng.randbytes(rng.choice([0, 1, 50, 300, 2000, 4000]))
            if rng.random() < 0.3:
                member = archive.member(f"m{i}")
                for at in range(0, len(data), 1000):
                    member.write(data[at:at + 1000])
                member.close()
            else:
                archive.add(f"m{i}", b"h" * rng.randrange(5), data)
        archive.close()
    runs: list[tuple[int, int]] = []
    check_run = zip_stored.StoredZip._check_run

    def recorded(self, fd, first, *args):  # type: ignore[no-untyped-def]
        last = check_run(self, fd, first, *args)
        runs.append((first, last))
        return last

    monkeypatch.setattr(zip_stored.StoredZip, "_check_run", recorded)
    seen: list[tuple[int, bool]] = []
    assert archive.problems(str(path), lambda i, view, whole: seen.append((i, whole))) == []
    assert runs == _runs_one_member_at_a_time(archive, min(block, run))
    assert sorted(i for i, _ in seen) == list(range(archive.count))
    # (read back here whole: a member of up to BLOCK, alone or in a run; a larger one, or one whose header was
    # rewritten, on every core, its first bytes seen here)
    assert all(whole == (i not in archive.rewritten and archive.check_size[i] <= block) for i, whole in seen)
    assert any(last - first > 1 for first, last in runs) or min(block, run) < 700 or archive.count < 3 or archive.rewritten
    damaged = rng.randrange(archive.count)
    at = archive.starts[damaged] - 1  # the last byte of its local header (or of the data before it, a name's)
    fd = os.open(path, os.O_RDWR)
    os.pwrite(fd, bytes([os.pread(fd, 1, at)[0] ^ 1]), at)
    os.close(fd)
    found = archive.problems(str(path), lambda i, view, whole: None)
    assert [i for i, _ in found] == [damaged], (found, damaged, archive.rewritten)


def test_each_kind_of_member_is_checked_once_and_a_wrong_one_named(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The read-back asks what is wrong with a member's ``.npy`` header once a kind (the header read back, what was
    written, its shape and size): 300 tiny members of three kinds, three questions. A member of a kind already
    checked whose written record says otherwise (here ``int32`` where ``float32`` was stored) is named alone."""
    from formats.io import npy_output

    items = [(f"t{i:03d}", np.full((i % 3 + 1,), i, np.float32)) for i in range(300)]
    asked = []
    problems = npy_output.header_problems

    def counted(header, written, shape, size):  # type: ignore[no-untyped-def]
        asked.append(shape)
        return problems(header, written, shape, size)

    monkeypatch.setattr(npy_output, "header_problems", counted)
    report = write_npz(tmp_path / "ok.npz", items)
    assert report.tensors == 300 and sorted(asked) == [(1,), (2,), (3,)]

    made = npy_output.fixed_member

    def wrong_for_t150(key, *args):  # type: ignore[no-untyped-def]
        header, data, written = made(key, *args)
        return header, data, npy_output.Written("int32", written.nbytes) if key == "t150" else written

    monkeypatch.setattr(npz_writer, "fixed_member", wrong_for_t150)
    with pytest.raises(VerificationError) as info:
        write_npz(tmp_path / "wrong.npz", items)
    assert "'t150'" in str(info.value) and "stored as float32, expected int32" in str(info.value)
    assert "t149" not in str(info.value) and "t151" not in str(info.value)
    assert not (tmp_path / "wrong.npz").exists()


@pytest.mark.parametrize("held", [None, 0, 300])
def test_a_central_directory_held_on_disk_is_the_same_bytes_and_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                         held: int | None) -> None:
    """The central directory waits in a temporary file past ``CENTRAL_HELD`` (10^6 members' is 76 MB), moved there
    a piece at a time: the archive is zipfile's, byte for byte, however much is held, and a byte changed anywhere
    in the directory on disk, or the file cut short inside it, fails the read-back."""
    import random

    spilled = []
    if held is not None:
        monkeypatch.setattr(zip_stored, "CENTRAL_HELD", held)
        monkeypatch.setattr(zip_stored, "_CENTRAL_PIECE", 64)
        spill = zip_stored.StoredZip._spill_central

        def counted(self):  # type: ignore[no-untyped-def]
            spilled.append(len(self.central))
            spill(self)

        monkeypatch.setattr(zip_stored.StoredZip, "_spill_central", counted)
    items = _items() + [(f"tiny/{i}", np.full(3, i, np.int16)) for i in range(40)]
    write_npz(tmp_path / "fast.npz", items, provenance=RECORD)
    assert (tmp_path / "fast.npz").read_bytes() == _zipfile_archive(tmp_path / "oracle.npz", items, RECORD)
    assert (len(spilled) > 10 and min(spilled) >= 64) if held is not None else spilled == []

    path = tmp_path / "a.zip"
    with open(path, "wb") as f:
        archive = zip_stored.StoredZip(f)
        for i in range(60):
            archive.add(f"m{i}", b"h", bytes(i))
        archive.close()
    assert archive.problems(str(path), lambda *a: None) == []
    rng = random.Random(held)
    for at in [archive.offset, archive.offset + archive.central_size - 1,
               *(archive.offset + rng.randrange(archive.central_size) for _ in range(5))]:
        fd = os.open(path, os.O_RDWR)
        os.pwrite(fd, bytes([os.pread(fd, 1, at)[0] ^ 1]), at)
        found = archive.problems(str(path), lambda *a: None)
        os.pwrite(fd, bytes([os.pread(fd, 1, at)[0] ^ 1]), at)
        os.close(fd)
        assert found == [(-1, "the central directory does not read back as written")], at
    os.truncate(path, archive.offset + archive.central_size // 2)
    assert (-1, "the central directory does not read back as written") in archive.problems(str(path), lambda *a: None)
