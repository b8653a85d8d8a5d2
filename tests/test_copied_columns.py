"""Issue 38: a safetensors file every one of whose tensors lies unchanged in a bundle is written from arrays
(``formats.io.placed.Copied``: no ``Placed`` object nor stored-range tuple a tensor, 250 MB at 10^6 tensors) where the
bundle's index is held in arrays. The ranges found with arrays must be those found a tensor at a time
(``BundleTensor.stored_ranges``), the file the one the tensor-at-a-time writer writes, byte for byte, and its
read-back must find what reading each tensor alone finds: a byte changed on the way, a file cut short (a byte
changed before publishing and a damaged input, with the index in arrays: ``tests/test_placed_writes.py``)."""
from __future__ import annotations

import os
import random
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import formats
from formats.io import placed
from formats.io.crc import crc32c
from formats.safetensors import writer as st_writer
from formats.safetensors.header import DTYPES
from formats.tf_bundle import reader as bundle_reader
from formats.tf_bundle.checkpoint import BundleTensor

from tests.conftest import CORPUS

BUNDLES = sorted(str(p)[: -len(".index")] for p in CORPUS.rglob("*.index"))


@pytest.fixture
def in_arrays(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every bundle index held in arrays, as a large one is (a small one's columns are lists)."""
    monkeypatch.setattr(bundle_reader, "COMPACT_INDEX", -1)


def _rows(ckpt: formats.Checkpoint) -> list[SimpleNamespace]:
    """A row per tensor safetensors can name the dtype of (a key of ``DTYPES``)."""
    return [SimpleNamespace(key=k, value=e, shape=tuple(e.shape), dtype=e.dtype) for k, e in ckpt.items()
            if e.dtype in DTYPES and not e.raw.slices]


def test_the_corpus_has_bundles() -> None:
    assert len(BUNDLES) >= 20


@pytest.mark.parametrize("prefix", BUNDLES, ids=lambda p: p.split("corpus/")[-1])
def test_ranges_found_with_arrays_are_those_found_a_tensor_at_a_time(prefix: str, in_arrays: None) -> None:
    with formats.open_checkpoint(prefix) as ckpt:
        tensors = list(ckpt.values())
        for some in (tensors, tensors[::-2], tensors[1:]):
            want = BundleTensor.stored_ranges(some)
            got = BundleTensor.stored_range_columns(some)
            if want is None or None in want:
                assert got is None
                continue
            assert got is not None
            assert [c.dtype for c in got] == [np.int32, np.int64, np.int64, np.uint32]
            assert list(zip(*(c.tolist() for c in got))) == want


def test_ranges_are_found_with_arrays_only_where_the_index_is_held_in_arrays(tmp_path: Path) -> None:
    prefix = str(tmp_path / "ckpt")
    formats.write_checkpoint(prefix, {"a": np.arange(3, dtype=np.float32), "b": np.ones(2, np.int64)})
    with formats.open_checkpoint(prefix) as ckpt:  # (a small index: lists)
        tensors = list(ckpt.values())
        assert BundleTensor.stored_ranges(tensors) is not None
        assert BundleTensor.stored_range_columns(tensors) is None


def _write_both_ways(prefix: str, rows: list[SimpleNamespace], tmp_path: Path,
                     monkeypatch: pytest.MonkeyPatch) -> tuple[bytes, bytes, bool]:
    """The file written (from arrays where it can be) and the one written a tensor at a time; whether arrays were
    used."""
    used = []
    real = st_writer.write_copied
    monkeypatch.setattr(st_writer, "write_copied", lambda *a, **k: used.append(1) or real(*a, **k))
    first, second = tmp_path / "columns.safetensors", tmp_path / "placed.safetensors"
    report = st_writer.write(str(first), rows)
    assert report.verified and report.tensors == len(rows)
    with monkeypatch.context() as m:
        m.setattr(st_writer, "_copied_columns", lambda *a: None)
        again = st_writer.write(str(second), rows)
    assert (report.tensors, report.bytes) == (again.tensors, again.bytes)
    assert [s.key for s in report.contents] == [s.key for s in again.contents]
    data = first.read_bytes(), second.read_bytes()
    first.unlink()
    second.unlink()
    return data[0], data[1], bool(used)


@pytest.mark.parametrize("prefix", BUNDLES, ids=lambda p: p.split("corpus/")[-1])
def test_a_file_written_from_arrays_is_the_one_written_a_tensor_at_a_time(prefix: str, in_arrays: None,
                                                                          tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    with formats.open_checkpoint(prefix) as ckpt:
        rows = _rows(ckpt)
        if not rows:
            pytest.skip("no tensor safetensors names")
        stored = BundleTensor.stored_ranges([r.value for r in rows])
        every = stored is not None and None not in stored
        for label, some in [("in index order", rows), ("reversed", rows[::-1]), ("every other", rows[::2])]:
            columns, one_at_a_time, used = _write_both_ways(prefix, some, tmp_path, monkeypatch)
            assert columns == one_at_a_time, label
            assert used == every, label  # (from arrays exactly where every tensor lies unchanged)


def test_a_sharded_bundle_given_out_of_order_is_copied_a_file_at_a_time(tmp_path: Path, in_arrays: None,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Tensors of two data files given interleaved: the files in the order their first tensor is given, each
    file's tensors in the order they lie there (as the tensor-at-a-time writer orders them); one kernel copy a
    run of bytes that follow one another."""
    prefix = str(CORPUS / "tf2_mixed" / "sharded" / "ckpt")
    copies: list[tuple[int, int, int]] = []
    real = placed.copy_range
    monkeypatch.setattr(placed, "copy_range", lambda *a: (copies.append(a[2:]), real(*a))[1])
    with formats.open_checkpoint(prefix) as ckpt:
        rows = _rows(ckpt)
        shards = {r.value.raw.shard_id for r in rows}
        assert len(shards) == 2
        mixed = sorted(rows, key=lambda r: (hash(r.key) % 7, r.key))
        columns, one_at_a_time, used = _write_both_ways(prefix, mixed, tmp_path, monkeypatch)
    assert used and columns == one_at_a_time
    assert len(copies) >= 2


class _Input:
    """A copied tensor's source whose input is sound (its check finds nothing)."""

    def check(self) -> None:
        return None


@pytest.mark.parametrize("seed", range(30))
def test_the_read_back_of_copied_tensors_finds_what_each_read_alone_finds(tmp_path: Path, seed: int) -> None:
    """``check_copied`` reads neighbouring small tensors a block at a time (blocks found with arrays): the problems
    are those of reading each alone (``_problem``), for a file as written, with bytes changed, and cut short."""
    rng = random.Random(seed)
    sizes = [rng.choice([1, 4, 16, 300, 70_000, 1 << 16, 3 << 19]) for _ in range(rng.randrange(1, 300))]
    if seed % 3 == 0:  # tiny tensors of one size (checksummed together with arrays)
        sizes = [rng.choice([1, 4, 16, 64])] * len(sizes)
    data = rng.randbytes(sum(sizes))
    dst = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) + 40
    crcs = np.array([crc32c(data[a - 40:a - 40 + s]) for a, s in zip(dst.tolist(), sizes)], np.uint32)
    count = len(sizes)
    copied = placed.Copied(np.full(count, 3, np.int32), dst - 40, np.array(sizes, np.int64), crcs, dst,
                           range(count), lambda row: f"k{row}", lambda row: _Input())
    written = bytearray(bytes(40) + data)
    for _ in range(rng.randrange(3)):  # bytes changed on the way
        written[rng.randrange(len(written))] ^= 1 << rng.randrange(8)
    if rng.random() < 0.3:  # the file cut short
        del written[rng.randrange(len(written) + 1):]
    path = tmp_path / "out.bin"
    path.write_bytes(bytes(written))
    fd = os.open(path, os.O_RDONLY)
    try:
        alone = [(f"k{i}", p) for i in range(count) if (p := placed._problem(fd, copied.placed(i))) is not None]
    finally:
        os.close(fd)
    assert placed.check_copied(str(path), copied) == alone
    assert placed.check_copied(str(path), copied, jobs=2) == alone


def test_tensors_copied_from_arrays_are_one_kernel_copy_a_run(tmp_path: Path) -> None:
    """``write_copied`` copies each run of tensors whose bytes follow one another in one input file at once,
    ``progress`` told after each run."""
    source = tmp_path / "in.bin"
    source.write_bytes(bytes(range(256)) * 4)
    sizes = np.array([4, 4, 8, 16, 4], np.int64)
    src = np.array([0, 4, 100, 108, 500], np.int64)  # runs: 0-8, 100-124, 500-504
    dst = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    fd = os.open(source, os.O_RDONLY)
    copies: list[tuple[int, int, int]] = []
    told: list[tuple[int, int]] = []
    real = placed.copy_range
    try:
        placed.copy_range = lambda *a: (copies.append(a[2:]), real(*a))[1]  # type: ignore[assignment]
        copied = placed.Copied(np.full(5, fd, np.int32), src, sizes, np.zeros(5, np.uint32), dst, range(5),
                               str, lambda row: None)
        with open(tmp_path / "out.bin", "xb") as out:
            placed.write_copied(out, copied, lambda n, b: told.append((n, b)))
    finally:
        placed.copy_range = real  # type: ignore[assignment]
        os.close(fd)
    assert copies == [(8, 0, 0), (24, 100, 8), (4, 500, 32)]
    assert told == [(2, 8), (2, 24), (1, 4)]
    raw = (bytes(range(256)) * 4)
    assert (tmp_path / "out.bin").read_bytes() == raw[0:8] + raw[100:124] + raw[500:504]


def test_small_copied_tensors_are_read_back_a_block_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """10,000 tensors of 16 bytes (160 KB) read back with a ``pread`` of about a MiB each, not one a tensor."""
    count, size = 10_000, 16
    data = np.random.default_rng(7).integers(0, 256, count * size, np.uint8).tobytes()
    dst = np.arange(count, dtype=np.int64) * size
    crcs = np.array([crc32c(data[a:a + size]) for a in dst.tolist()], np.uint32)
    copied = placed.Copied(np.zeros(count, np.int32), dst, np.full(count, size, np.int64), crcs, dst, range(count),
                           str, lambda row: _Input())
    path = tmp_path / "out.bin"
    path.write_bytes(data)
    reads: list[int] = []
    real = os.pread
    monkeypatch.setattr(placed.os, "pread", lambda fd, n, at: reads.append(n) or real(fd, n, at))
    assert placed.check_copied(str(path), copied) == []
    assert reads == [count * size]
    crcs[4321] ^= 1
    assert placed.check_copied(str(path), copied) == [("4321", "copied bytes do not match their input's checksum")]


def test_many_tensors_find_their_ranges_with_arrays_importing_numpy(tmp_path: Path) -> None:
    """From ``RANGE_COLUMNS_FROM`` tensors numpy is imported to find their ranges with arrays (a tuple and two ints a
    tensor cost more than the import); below, where it is not imported, it is not imported for this."""
    import subprocess
    import sys

    from tests.installed import child_env, site_dirs

    prefix = str(tmp_path / "ckpt")
    formats.write_checkpoint(prefix, {f"v{i}": np.full(2, i, np.float32) for i in range(40)})
    program = (
        "import sys\n"
        "from formats.tf_bundle import checkpoint, reader\n"
        "reader.COMPACT_INDEX = -1\n"
        "checkpoint.RANGE_COLUMNS_FROM = int(sys.argv[2])\n"
        "import formats\n"
        "with formats.open_checkpoint(sys.argv[1]) as ckpt:\n"
        "    tensors = list(ckpt.values())\n"
        "    assert 'numpy' not in sys.modules\n"
        "    found = checkpoint.BundleTensor.stored_range_columns(tensors)\n"
        "    print(found is not None, 'numpy' in sys.modules)\n")
    env = child_env(PYTHONPATH=os.pathsep.join(site_dirs()))
    said = [subprocess.run([sys.executable, "-c", program, prefix, str(most)], capture_output=True, text=True,
                           env=env) for most in (40, 41)]
    assert [(done.returncode, done.stdout, done.stderr[-500:]) for done in said] == [
        (0, "True True\n", ""), (0, "False False\n", "")]
