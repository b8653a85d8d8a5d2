"""Issue 38: single-file writers at the speed of a copy (:mod:`formats.io.placed`). A safetensors file written
from a bundle has its tensors copied by the kernel, from arrays streamed; either way the bytes read back are
checked against the CRC32C of what was written, so a byte changed between writing and publishing is caught
(nothing takes the output's name), and a damaged input is reported as the input's fault. Oracles: numpy's own
values and the ``safetensors`` package's reader."""
from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from safetensors.numpy import load_file

import formats
from formats.core.errors import ChecksumError, VerificationError
from formats.io import placed
from formats.safetensors import writer as st_writer

VALUES = {"a/kernel": np.arange(24, dtype=np.float32).reshape(4, 6), "b/bias": np.arange(6, dtype=np.int64),
          "c/table": np.linspace(-1, 1, 300, dtype=np.float64).reshape(30, 10)}


def _bundle(tmp_path: Path) -> str:
    prefix = str(tmp_path / "src" / "ckpt-1")
    formats.write_checkpoint(prefix, VALUES)
    return prefix


def _rows(ckpt: formats.Checkpoint) -> list[SimpleNamespace]:
    return [SimpleNamespace(key=k, value=ckpt[k], shape=tuple(ckpt[k].shape), dtype=ckpt[k].dtype) for k in VALUES]


def _corrupting(monkeypatch: pytest.MonkeyPatch, key: str) -> None:
    """After the tensors are written (a tensor at a time, or from arrays: ``placed.Copied``), change one byte of
    ``key``'s bytes in the file (as a faulty disk or a buggy copy would), before the read-back."""
    real, real_copied = placed.write_placed, placed.write_copied

    def damaging(out, offset: int, then):  # type: ignore[no-untyped-def]
        def damage_then_read_back() -> None:
            with open(out.name, "r+b") as f:
                f.seek(offset)
                byte = f.read(1)
                f.seek(offset)
                f.write(bytes([byte[0] ^ 0x01]))
            if then is not None:
                then()

        return damage_then_read_back

    def write_then_damage(out, items, chunk=placed.CHUNK, progress=None, then=None, streamed=None):  # type: ignore[no-untyped-def]
        offset = next(i for i in items if i.key == key).offset
        real(out, items, chunk, progress, then=damaging(out, offset, then), streamed=streamed)

    def copy_then_damage(out, copied, progress=None, then=None):  # type: ignore[no-untyped-def]
        offset = int(copied.dst[next(i for i in range(len(copied)) if copied.key(int(copied.row[i])) == key)])
        real_copied(out, copied, progress, then=damaging(out, offset, then))

    monkeypatch.setattr(st_writer, "write_placed", write_then_damage)
    monkeypatch.setattr(st_writer, "write_copied", copy_then_damage)


def _index_in_arrays(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every bundle index held in arrays, as a large one is: its tensors then written from arrays
    (``placed.Copied``)."""
    from formats.tf_bundle import reader

    monkeypatch.setattr(reader, "COMPACT_INDEX", -1)


def test_bundle_tensors_are_copied_and_read_back_as_numpy_wrote_them(tmp_path: Path) -> None:
    copied: list[str] = []
    real = placed.copy_range
    with formats.open_checkpoint(_bundle(tmp_path)) as ckpt:
        out = tmp_path / "out.safetensors"
        placed.copy_range = lambda *a: (copied.append(a[2]), real(*a))[1]  # type: ignore[assignment]
        try:
            report = st_writer.write(str(out), _rows(ckpt))
        finally:
            placed.copy_range = real  # type: ignore[assignment]
    assert report.verified and report.tensors == 3 and report.bytes == sum(v.nbytes for v in VALUES.values())
    assert sum(copied) == report.bytes  # every byte went through the kernel copy
    loaded = load_file(str(out))
    assert sorted(loaded) == sorted(VALUES)
    for key, value in VALUES.items():
        assert loaded[key].dtype == value.dtype and np.array_equal(loaded[key], value)


def test_arrays_are_streamed_and_read_back(tmp_path: Path) -> None:
    out = tmp_path / "arrays.safetensors"
    rows = [SimpleNamespace(key=k, value=v, shape=v.shape, dtype=str(v.dtype)) for k, v in VALUES.items()]
    report = st_writer.write(str(out), rows)
    assert report.verified and report.roundtrip is not None and report.roundtrip.tensors == 3
    loaded = load_file(str(out))
    assert all(np.array_equal(loaded[k], v) for k, v in VALUES.items())


@pytest.mark.parametrize("source", ["bundle", "bundle, index in arrays", "arrays"])
def test_a_byte_changed_before_publishing_fails_the_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          source: str) -> None:
    out = tmp_path / "out.safetensors"
    _corrupting(monkeypatch, "b/bias")
    if source == "bundle, index in arrays":
        _index_in_arrays(monkeypatch)
    expected = ("copied bytes do not match their input's checksum" if source.startswith("bundle")
                else "the bytes read back differ from the bytes written (CRC32C)")
    with formats.open_checkpoint(_bundle(tmp_path)) as ckpt:
        rows = _rows(ckpt) if source.startswith("bundle") else \
            [SimpleNamespace(key=k, value=v, shape=v.shape, dtype=str(v.dtype)) for k, v in VALUES.items()]
        with pytest.raises(VerificationError) as info:
            st_writer.write(str(out), rows)
    assert str(info.value) == f"{out}: verification failed: 'b/bias': {expected}"
    assert sorted(os.listdir(tmp_path)) == ["src"]  # nothing took the output's name, no temporary left


@pytest.mark.parametrize("index", ["lists", "arrays"])
def test_a_damaged_input_is_the_inputs_fault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, index: str) -> None:
    from formats.tf_bundle.checkpoint import BundleTensor

    if index == "arrays":
        _index_in_arrays(monkeypatch)
    prefix = _bundle(tmp_path)
    data = prefix + ".data-00000-of-00001"
    with open(data, "r+b") as f:  # the first tensor's first byte
        byte = f.read(1)
        f.seek(0)
        f.write(bytes([byte[0] ^ 0x01]))
    out = tmp_path / "out.safetensors"
    with formats.open_checkpoint(prefix) as ckpt:
        assert (BundleTensor.stored_range_columns(list(ckpt.values())) is not None) == (index == "arrays")
        with pytest.raises(ChecksumError) as info:
            st_writer.write(str(out), _rows(ckpt))
    assert data in str(info.value) and "a/kernel" in str(info.value)
    assert not out.exists() and sorted(os.listdir(tmp_path)) == ["src"]


def test_the_cli_writes_a_verified_copy(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "cli.safetensors"
    result = run_cli("convert", _bundle(tmp_path), "--to", "safetensors", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert result.output == f"wrote {out}: 3 tensors, 2.5 KiB (safetensors), verified\n"  # 2,544 bytes
    loaded = load_file(str(out))
    assert all(np.array_equal(loaded[k], v) for k, v in VALUES.items())


def test_the_writing_thread_writes_what_one_thread_would(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [SimpleNamespace(key=k, value=v, shape=v.shape, dtype=str(v.dtype)) for k, v in VALUES.items()]
    st_writer.write(str(tmp_path / "one.safetensors"), rows)
    monkeypatch.setattr(placed, "PIPELINE_BYTES", 0)  # a second thread writes from the first byte
    threads: list[object] = []
    real_init = placed.ThreadedSink.__init__
    monkeypatch.setattr(placed.ThreadedSink, "__init__", lambda self, sink: (threads.append(self), real_init(self, sink))[1])
    report = st_writer.write(str(tmp_path / "two.safetensors"), rows, progress=lambda b, t: None)
    assert len(threads) == 1 and report.verified
    assert (tmp_path / "one.safetensors").read_bytes() == (tmp_path / "two.safetensors").read_bytes()


def test_a_full_disk_in_the_writing_thread_fails_the_write_cleanly(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    monkeypatch.setattr(placed, "PIPELINE_BYTES", 0)

    def full(self, item, piece):  # type: ignore[no-untyped-def]
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(placed._Sink, "piece", full)
    rows = [SimpleNamespace(key=k, value=v, shape=v.shape, dtype=str(v.dtype)) for k, v in VALUES.items()]
    out = tmp_path / "full.safetensors"
    with pytest.raises(formats.OutputWriteError) as info:
        st_writer.write(str(out), rows)
    assert str(info.value) == f"{out}: No space left on device"
    assert os.listdir(tmp_path) == []  # no output, no temporary


def test_npz_reads_back_with_numpy_and_a_changed_byte_fails_the_write(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import zipfile

    from formats.npz import writer as npz_writer

    items = list(VALUES.items())
    good = tmp_path / "good.npz"
    report = npz_writer.write_npz(good, items)
    assert report.verified and report.roundtrip is not None and report.roundtrip.tensors == 3
    with np.load(good) as loaded:
        assert sorted(loaded.files) == sorted(VALUES) and all(np.array_equal(loaded[k], v) for k, v in VALUES.items())
    real = npz_writer._verify_npz

    def damage_then_verify(temp, *args):  # type: ignore[no-untyped-def]
        with zipfile.ZipFile(temp) as zf:
            info = zf.getinfo("b/bias.npy")
        from formats.io.zipped import stored_member_start

        at = stored_member_start(temp, info, os.path.getsize(temp)) + info.file_size - 1  # the last payload byte
        with open(temp, "r+b") as f:
            f.seek(at)
            byte = f.read(1)
            f.seek(at)
            f.write(bytes([byte[0] ^ 0x01]))
        return real(temp, *args)

    monkeypatch.setattr(npz_writer, "_verify_npz", damage_then_verify)
    bad = tmp_path / "bad.npz"
    with pytest.raises(VerificationError) as info:
        npz_writer.write_npz(bad, items)
    assert str(info.value) == f"{bad}: verification failed: 'b/bias': the bytes read back differ from the bytes " \
                              "written (CRC32C)"
    assert sorted(os.listdir(tmp_path)) == ["good.npz"]


def test_a_transposed_bundle_kernel_is_read_straight_and_checked(tmp_path: Path) -> None:
    from formats.ops.convert.hf.entries import MappedEntry

    prefix = _bundle(tmp_path)
    with formats.open_checkpoint(prefix) as ckpt:
        mapped = MappedEntry(ckpt["a/kernel"], "a.weight", (6, 4), "float32", ("transpose",))
        assert mapped.stored_range() is None  # the bytes move: streamed, not copied
        assert np.array_equal(mapped.read(), VALUES["a/kernel"].T)
        reshaped = MappedEntry(ckpt["c/table"], "c.weight", (300,), "float64", ("reshape",))
        assert reshaped.stored_range() == ckpt["c/table"].stored_range()  # the same bytes: copied by the kernel
    data = prefix + ".data-00000-of-00001"
    with open(data, "r+b") as f:  # a byte of a/kernel (the first tensor written)
        f.seek(5)
        byte = f.read(1)
        f.seek(5)
        f.write(bytes([byte[0] ^ 0x01]))
    with formats.open_checkpoint(prefix) as ckpt, pytest.raises(ChecksumError) as info:
        MappedEntry(ckpt["a/kernel"], "a.weight", (6, 4), "float32", ("transpose",)).read()
    assert data in str(info.value) and "a/kernel" in str(info.value)


def test_npz_members_written_by_a_second_thread_are_the_same_bytes(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from formats.npz import writer as npz_writer

    items = list(VALUES.items())
    npz_writer.write_npz(tmp_path / "one.npz", items)
    monkeypatch.setattr(npz_writer, "PIPELINE_BYTES", 0)  # every member through the writing thread
    report = npz_writer.write_npz(tmp_path / "two.npz", items)
    assert report.verified
    import zipfile

    with zipfile.ZipFile(tmp_path / "one.npz") as one, zipfile.ZipFile(tmp_path / "two.npz") as two:
        assert one.namelist() == two.namelist()  # (their timestamps may differ by a second)
        for name in one.namelist():
            assert one.read(name) == two.read(name) and one.getinfo(name).CRC == two.getinfo(name).CRC

    def full(self, item, data):  # type: ignore[no-untyped-def]
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(npz_writer._Summing, "piece", full)
    with pytest.raises(formats.OutputWriteError) as info:
        npz_writer.write_npz(tmp_path / "full.npz", items)
    assert str(info.value) == f"{tmp_path / 'full.npz'}: No space left on device"
    assert sorted(os.listdir(tmp_path)) == ["one.npz", "two.npz"]


def test_a_whole_bundle_in_any_order_is_one_page_aligned_kernel_copy(tmp_path: Path) -> None:
    import json
    import struct

    copied: list[tuple[int, int, int]] = []
    real = placed.copy_range
    out = tmp_path / "out.safetensors"
    with formats.open_checkpoint(_bundle(tmp_path)) as ckpt:
        rows = list(reversed(_rows(ckpt)))  # not the order of the data file
        placed.copy_range = lambda *a: (copied.append((a[2], a[3], a[4])), real(*a))[1]  # type: ignore[assignment]
        try:
            report = st_writer.write(str(out), rows)
        finally:
            placed.copy_range = real  # type: ignore[assignment]
    raw = out.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    assert copied == [(2544, 0, 8 + length)] and (8 + length) % 4096 == 0  # the whole data file, page-aligned
    header = json.loads(raw[8:8 + length])
    assert [k for k in header if k != "__metadata__"] == [r.key for r in rows]  # listed in the order given
    assert [s.key for s in report.contents] == [r.key for r in rows]
    loaded = load_file(str(out))
    assert all(loaded[k].dtype == v.dtype and np.array_equal(loaded[k], v) for k, v in VALUES.items())


def test_a_safetensors_export_asks_where_a_bundles_tensors_lie_once(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the stored bytes of a bundle's tensors lie is asked once, for all of them, from its index's columns
    (``BundleTensor.stored_ranges``), and the answer carried to the copy: not once a tensor to order the file and
    again to copy them (2 calls a tensor before; 10^5 tensors: a fifth of the export's CPU)."""
    from formats.tf_bundle.checkpoint import BundleTensor

    asked: dict[str, int] = {}
    real = placed.stored_unchanged
    real_ranges = BundleTensor.stored_ranges
    batches: list[int] = []

    def counting(source, dtype, size):  # type: ignore[no-untyped-def]
        asked[source.key] = asked.get(source.key, 0) + 1
        return real(source, dtype, size)

    def ranges(tensors):  # type: ignore[no-untyped-def]
        batches.append(len(tensors))
        return real_ranges(tensors)

    monkeypatch.setattr(placed, "stored_unchanged", counting)
    monkeypatch.setattr(BundleTensor, "stored_ranges", staticmethod(ranges))
    with formats.open_checkpoint(_bundle(tmp_path)) as ckpt:
        rows = _rows(ckpt)
        expected = [placed.stored_unchanged(r.value, r.dtype, r.value.nbytes) for r in rows]
        asked.clear()
        report = st_writer.write(str(tmp_path / "out.safetensors"), rows)
    assert report.verified
    assert asked == {} and batches == [len(VALUES)]
    assert all(where is not None for where in expected)  # every one copied as it lies, as asked one by one


@pytest.mark.parametrize("seed", range(40))
def test_the_read_back_of_runs_of_small_items_finds_what_each_read_alone_finds(tmp_path: Path, seed: int) -> None:
    """``check_placed`` reads adjacent small items a block at a time: the problems are those of reading each item
    alone (``_problem``), for a file as written, with bytes changed, and cut short."""
    import random

    from formats.io.crc import crc32c

    rng = random.Random(seed)
    sizes = [rng.choice([0, 1, 4, 16, 300, 70_000, 1 << 16]) for _ in range(rng.randrange(1, 300))]
    data = bytes(rng.getrandbits(8) for _ in range(sum(sizes)))
    items, offset = [], 0
    for i, size in enumerate(sizes):
        item = placed.Placed(f"k{i}", None, offset, size, "uint8")
        item.crc = crc32c(data[offset:offset + size])
        items.append(item)
        offset += size
    path = tmp_path / "out.bin"
    written = bytearray(data)
    for _ in range(rng.randrange(3)):  # bytes changed on the way
        if written:
            written[rng.randrange(len(written))] ^= 1 << rng.randrange(8)
    if rng.random() < 0.3:  # the file cut short
        del written[rng.randrange(len(written) + 1):]
    path.write_bytes(bytes(written))
    fd = os.open(path, os.O_RDONLY)
    try:
        alone = [(item.key, p) for item in items if (p := placed._problem(fd, item)) is not None]
    finally:
        os.close(fd)
    assert placed.check_placed(str(path), items) == alone
    assert placed.check_placed(str(path), items, jobs=2) == alone


def test_small_items_are_read_back_in_runs_of_neighbours() -> None:
    def item(key: str, offset: int, size: int, source: object = None) -> placed.Placed:
        return placed.Placed(key, source, offset, size, "uint8")

    spotted = SimpleNamespace(spot_check=lambda: None)
    items = [item("a", 0, 4), item("b", 4, 4), item("c", 8, 4), item("big", 12, 70_000), item("d", 70_012, 4),
             item("e", 70_016, 4), item("gap", 70_100, 4), item("spot", 70_104, 4, spotted), item("f", 70_108, 0)]
    assert [[i.key for i in unit] for unit in placed._units(items)] == \
        [["a", "b", "c"], ["big"], ["d", "e"], ["gap"], ["spot"], ["f"]]
    many = [item(f"k{i}", i * 1024, 1024) for i in range(2048)]  # 2 MiB: two blocks
    assert [len(unit) for unit in placed._units(many)] == [1024, 1024]
