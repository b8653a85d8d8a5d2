"""The bundle writer, byte by byte: SSTable layout, entries, string layout, atomicity and refusals."""
from __future__ import annotations

import os
import struct
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import formats
from formats.io import atomic as atomic_module
from formats.io.crc import crc32c, mask
from formats.core.sources import TensorValue
from formats.tf_bundle import writer as writer_module
from formats.tf_bundle.checkpoint import BundleCheckpoint
from formats.tf_bundle.encode import encode_entry, string_layout, variant_layout
from formats.tf_bundle.reader import BundleReader
from formats.io.sstable.block import parse_block
from formats.io.protowire import read_varint
from formats.io.sstable.table import read_table
from formats.io.sstable.writer import TableWriter, short_successor, shortest_separator
from formats.tf_bundle.writer import InvalidOutputError, OutputExistsError, OutputIsInputError, VerificationError

from .conftest import CORPUS
from .hostile import craft

DATA = ".data-00000-of-00001"


def _write(tmp_path: Path, tensors, **kw) -> str:
    prefix = str(tmp_path / "out" / "ckpt")
    formats.write_checkpoint(prefix, tensors, **kw)
    return prefix


# -- SSTable ---------------------------------------------------------------------------------------
def test_header_only_index_is_101_bytes_exactly(tmp_path):
    prefix = _write(tmp_path, {})
    index = Path(prefix + ".index").read_bytes()
    data_block = bytes.fromhex("000006" "08011a020801" "00000000" "01000000")
    meta_block = bytes.fromhex("00000000" "01000000")
    index_block = bytes.fromhex("000002" "0011" "00000000" "01000000")  # key "" -> handle (0, 17)
    expected = craft.with_trailer(data_block) + craft.with_trailer(meta_block) + craft.with_trailer(index_block)
    footer = bytes.fromhex("1608" "230d").ljust(40, b"\0") + bytes.fromhex("57fb808b247547db")
    assert index == expected + footer
    assert len(index) == 101
    assert Path(prefix + DATA).read_bytes() == b""


@pytest.mark.parametrize("start,limit,expected", [
    (b"the quick brown fox", b"the who", b"the r"),
    (b"abc1xyz", b"abc3", b"abc2"),
    (b"abc", b"abcd", b"abc"),            # a prefix is never shortened
    (b"ab\x01zz", b"ab\x02", b"ab\x01zz"),  # the next byte up would equal the limit
    (b"a\xffz", b"b", b"a\xffz"),           # 0xff cannot be incremented... but 'a'+1 == 'b' either
    (b"a\xff", b"c", b"b"),
])
def test_shortest_separator_matches_tensorflow(start, limit, expected):
    assert shortest_separator(start, limit) == expected
    assert start <= expected < limit


@pytest.mark.parametrize("key,expected", [(b"abc", b"b"), (b"\xff\xffa", b"\xff\xffb"), (b"\xff\xff", b"\xff\xff"),
                                          (b"", b"")])
def test_short_successor_matches_tensorflow(key, expected):
    assert short_successor(key) == expected


def test_block_boundary_uses_a_shortened_separator(tmp_path):
    path = tmp_path / "t.sst"
    with open(path, "wb") as f:
        table = TableWriter(f, block_size=16)
        table.add(b"the quick brown fox", b"x")  # fills the 16-byte block: flushed
        table.add(b"the who", b"y")
        table.finish()
    data = path.read_bytes()
    assert read_table(data, str(path)) == [(b"the quick brown fox", b"x"), (b"the who", b"y")]
    assert [k for k, _ in _index_block(data)] == [b"the r", b"u"]


def test_restart_points_every_16_entries(tmp_path):
    path = tmp_path / "t.sst"
    pairs = [(b"key%03d" % i, b"v") for i in range(40)]
    with open(path, "wb") as f:
        table = TableWriter(f)
        for k, v in pairs:
            table.add(k, v)
        table.finish()
    data = path.read_bytes()
    assert read_table(data, str(path)) == pairs
    [(_, handle)] = _index_block(data)
    offset, pos = read_varint(handle, 0, len(handle))
    size, _ = read_varint(handle, pos, len(handle))
    restarts = struct.unpack_from("<4I", data, offset + size - 16)
    assert restarts[-1] == 3 and restarts[0] == 0  # entries 0, 16 and 32 start afresh
    assert data[offset + restarts[1]] == 0 and data[offset + restarts[1] - 1] != 0


def _index_block(data: bytes) -> list[tuple[bytes, bytes]]:
    footer = data[-48:]
    _, pos = read_varint(footer, 0, 40)
    _, pos = read_varint(footer, pos, 40)
    offset, pos = read_varint(footer, pos, 40)
    size, _ = read_varint(footer, pos, 40)
    return parse_block(data[offset:offset + size])


def test_many_blocks_read_back(tmp_path):
    path = tmp_path / "t.sst"
    pairs = [(b""), *[f"k/{i:06d}".encode() for i in range(20000)]]
    with open(path, "wb") as f:
        table = TableWriter(f)
        for k in pairs:
            table.add(k, b"value-" + k * 3)
        size = table.finish()
    data = path.read_bytes()
    assert size == len(data)
    assert [k for k, _ in read_table(data, str(path))] == pairs
    assert len(data) > 2 * 256 * 1024  # several 256 KiB blocks


def test_keys_must_strictly_increase(tmp_path):
    with open(tmp_path / "t.sst", "wb") as f:
        table = TableWriter(f)
        table.add(b"b", b"")
        with pytest.raises(ValueError, match="strictly increasing"):
            table.add(b"a", b"")
        with pytest.raises(ValueError, match="strictly increasing"):
            table.add(b"b", b"")


# -- entries and layouts ---------------------------------------------------------------------------
def test_string_scalar_layout_and_entry_crc(tmp_path):
    prefix = _write(tmp_path, {"s": b"abc"})
    assert Path(prefix + DATA).read_bytes() == bytes.fromhex("03633f7f28616263")
    raw = BundleReader(prefix).entries[b"s"]
    assert (raw.dtype, raw.shape, raw.offset, raw.size, raw.crc32c) == (7, (), 0, 8, 0x199AD1C3)


def test_entry_bytes_follow_tensorflow_field_order_and_defaults():
    crc = mask(crc32c(b"\0" * 24))
    assert encode_entry(1, (2, 3), 0, 24, crc) == bytes.fromhex("0801" "1208" "12020802" "12020803" "2818" "35") + \
        struct.pack("<I", crc)
    assert encode_entry(9, (), 40, 8, 0x01020304) == bytes.fromhex("0809" "1200" "2028" "2808" "3504030201")
    assert encode_entry(1, (0, 7), 4, 0, mask(0)) == bytes.fromhex("0801" "1206" "1200" "12020807" "2004" "35d8ea82a2")
    # multi-byte varints (BERT's dims, offsets past 2**32, a second shard), checked by hand
    assert encode_entry(1, (30522, 768), 1 << 32, 93763584, 1, 3) == bytes.fromhex(
        "0801" "120b" "120408baee01" "1203088006" "1803" "2080808080" "10" "2880f0da2c" "3501000000")


def test_empty_tensors(tmp_path):
    prefix = _write(tmp_path, {"e": np.zeros((0, 7), np.float32), "s": np.array([], dtype=object),
                               "v": TensorValue(np.empty((0,), dtype=object), "variant")})
    entries = BundleReader(prefix).entries
    assert (entries[b"e"].size, entries[b"e"].crc32c) == (0, 0xA282EAD8)
    assert (entries[b"v"].size, entries[b"v"].crc32c) == (0, 0xA282EAD8)
    # an empty string tensor still stores its (empty) length checksum, as WriteStringTensor does
    assert entries[b"s"].size == 4 and entries[b"s"].crc32c == mask(crc32c(struct.pack("<I", mask(0))))
    assert Path(prefix + DATA).read_bytes() == struct.pack("<I", mask(0))


def test_string_lengths_above_127_use_multibyte_varints():
    pieces, crc = string_layout([b"x" * 300, b""])
    assert pieces[0] == bytes.fromhex("ac02" "00")
    expected = crc32c(struct.pack("<II", 300, 0))
    assert pieces[1] == struct.pack("<I", mask(expected))
    assert crc == crc32c(b"x" * 300, crc32c(pieces[1], expected))


def test_variant_layout_checksums_each_element():
    pieces, crc = variant_layout([b"ab", b"c"])
    c1 = crc32c(b"ab", crc32c(struct.pack("<Q", 2)))
    c1x = crc32c(struct.pack("<I", mask(c1)), c1)
    c2 = crc32c(b"c", crc32c(struct.pack("<Q", 1), c1x))
    assert pieces == [b"\x02", b"ab", struct.pack("<I", mask(c1)), b"\x01", b"c", struct.pack("<I", mask(c2))]
    assert crc == crc32c(struct.pack("<I", mask(c2)), c2)


def test_data_in_given_order_index_sorted(tmp_path):
    prefix = _write(tmp_path, [("z", np.int32(1)), ("a", np.int64(2)), ("m/x", np.float32([1, 2]))])
    r = BundleReader(prefix)
    assert list(r.entries) == [b"a", b"m/x", b"z"]
    assert [(k, e.offset, e.size) for k, e in r.entries.items()] == [(b"a", 4, 8), (b"m/x", 12, 8), (b"z", 0, 4)]
    assert Path(prefix + DATA).read_bytes() == struct.pack("<iqff", 1, 2, 1.0, 2.0)


def test_object_graph_is_stored_as_string_scalar_last(tmp_path):
    graph = (CORPUS / "seed_keras2" / "easy_checkpoint.index").read_bytes()[:50]  # any bytes will do
    prefix = _write(tmp_path, {"v": np.float32(3)}, object_graph=graph)
    with formats.open_checkpoint(prefix) as ckpt:
        assert ckpt.format == "tf-object"
        assert ckpt["_CHECKPOINTABLE_OBJECT_GRAPH"].read()[()] == graph
        assert ckpt["_CHECKPOINTABLE_OBJECT_GRAPH"].raw.offset == 4


def test_a_written_object_graph_is_compared_as_it_is_read_back(tmp_path, monkeypatch):
    """The read-back compares one stored string with what was meant a buffer at a time (no copy of an object graph
    of 130 MB at 10^6 objects); a difference, a length or a damaged stored byte is each caught."""
    from formats.core.errors import ChecksumError

    graph = np.random.default_rng(5).bytes(3 << 20)  # three read buffers
    prefix = _write(tmp_path, {"v": np.float32(3)}, object_graph=graph)
    with formats.open_checkpoint(prefix) as ckpt:
        entry = ckpt["_CHECKPOINTABLE_OBJECT_GRAPH"]
        tracemalloc.start()
        try:
            assert entry.element_equals(graph) is True
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 256 << 10  # (elements() holds the 3 MiB)
        assert entry.element_equals(graph[:-1] + bytes([graph[-1] ^ 1])) is False
        assert entry.element_equals(graph[:-1]) is False and entry.element_equals(graph + b"x") is False
        assert ckpt["v"].element_equals(b"\0\0\x40\x40") is None  # not a string: the caller reads elements
        raw = entry.raw
    with open(prefix + DATA, "r+b") as f:  # a stored byte of the graph flipped, past the first buffer
        f.seek(raw.offset + raw.size - 5)
        byte = f.read(1)
        f.seek(raw.offset + raw.size - 5)
        f.write(bytes([byte[0] ^ 0xFF]))
    with formats.open_checkpoint(prefix) as ckpt:
        with pytest.raises(ChecksumError, match="checksum"):
            ckpt["_CHECKPOINTABLE_OBJECT_GRAPH"].element_equals(graph)

    real = writer_module.string_layout

    def flipped(values):  # the graph written with its last byte changed, under a checksum of what was written
        changed = [v[:-1] + bytes([v[-1] ^ 1]) for v in values]
        return real(changed)

    monkeypatch.setattr(writer_module, "string_layout", flipped)
    with pytest.raises(VerificationError, match=r"'_CHECKPOINTABLE_OBJECT_GRAPH': values differ, first at element 0"):
        _write(tmp_path / "again", {"v": np.float32(3)}, object_graph=graph)


def test_numpy_layouts_are_canonicalised(tmp_path):
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    sources = {"fortran": np.asfortranarray(base), "strided": base[:, ::2], "big": base.astype(">f4"),
               "bool": np.array([True, False]), "c64": np.array([1 + 2j], np.complex64),
               "text": np.array(["é", "ab"]), "bytes": np.array([b"a", b"bc"])}
    prefix = _write(tmp_path, sources, chunk=16)
    with formats.open_checkpoint(prefix) as ckpt:
        np.testing.assert_array_equal(ckpt["fortran"].read(), base)
        np.testing.assert_array_equal(ckpt["strided"].read(), base[:, ::2])
        assert ckpt["big"].dtype == "float32" and ckpt["big"].read().tobytes() == base.tobytes()
        assert ckpt["bool"].read().tolist() == [True, False]
        assert ckpt["c64"].read().tobytes() == struct.pack("<ff", 1, 2)
        assert ckpt["text"].read().tolist() == ["é".encode(), b"ab"]
        assert ckpt["bytes"].read().tolist() == [b"a", b"bc"]


def test_big_endian_bundle_is_rewritten_little_endian(tmp_path):
    values = np.array([1.5, -2.0, 3.25], dtype=">f4")
    data = values.tobytes()
    src = craft.bundle(tmp_path, "be", [(b"w", craft.entry(1, [3], 0, len(data), data))], data, big_endian=True)
    with formats.open_checkpoint(src) as ckpt:
        prefix = _write(tmp_path, ckpt)
    assert Path(prefix + DATA).read_bytes() == values.astype("<f4").tobytes()
    assert BundleReader(prefix).header.big_endian is False


def test_partitioned_variable_is_written_whole(tmp_path):
    src = CORPUS / "tf1_partitioned" / "model.ckpt-200"
    with formats.open_checkpoint(src) as ckpt:
        prefix = _write(tmp_path, ckpt)
        whole = ckpt["input_layer/embedding/weights"].read()
    raw = BundleReader(prefix).entries[b"input_layer/embedding/weights"]
    assert not raw.slices and raw.shape == whole.shape and raw.size == whole.nbytes
    assert len(BundleReader(prefix).entries) == 11  # no slice keys


def test_bad_keys_are_refused(tmp_path):
    with pytest.raises(ValueError, match="reserved for the bundle header"):
        _write(tmp_path, {"": np.int32(1)})
    with pytest.raises(ValueError, match="duplicate key 'a'"):
        _write(tmp_path, [("a", np.int32(1)), ("a", np.int32(2))])
    with pytest.raises(ValueError, match="duplicate key '_CHECKPOINTABLE_OBJECT_GRAPH'"):
        _write(tmp_path, {"_CHECKPOINTABLE_OBJECT_GRAPH": b"x"}, object_graph=b"y")
    assert os.listdir(tmp_path) == []  # the directory created for the output is removed again
    (tmp_path / "out").mkdir()
    with pytest.raises(InvalidOutputError, match="output is a directory"):
        formats.write_checkpoint(tmp_path / "out", {"a": np.int32(1)})
    with pytest.raises(InvalidOutputError, match="output is a directory"):
        formats.write_checkpoint(str(tmp_path) + os.sep, {"a": np.int32(1)})
    with pytest.raises(InvalidOutputError, match="ends in a path separator, so it names a directory"):
        formats.write_checkpoint(str(tmp_path / "new") + os.sep, {"a": np.int32(1)})
    assert sorted(os.listdir(tmp_path)) == ["out"]


# -- atomicity and refusals ------------------------------------------------------------------------
def test_failure_while_writing_the_index_leaves_nothing(tmp_path, monkeypatch):
    def boom(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer_module, "_write_index", boom)
    with pytest.raises(OSError, match="No space left"):
        _write(tmp_path, {"a": np.arange(1000)})
    assert not (tmp_path / "out").exists()  # nor the directory created for it


def test_failure_in_a_source_midway_leaves_nothing(tmp_path, corpus_copy):
    src = corpus_copy("tf1_adam") / "model.ckpt-200"
    data = Path(str(src) + DATA)
    blob = bytearray(data.read_bytes())
    blob[-1] ^= 0xFF  # the last tensor in the data file is damaged
    data.write_bytes(bytes(blob))
    with formats.open_checkpoint(src) as ckpt:
        with pytest.raises(formats.ChecksumError, match="global_step"):
            _write(tmp_path, ckpt)
    assert not (tmp_path / "out").exists()  # nor the directory created for it


def test_failed_index_rename_removes_the_renamed_data_file(tmp_path, monkeypatch):
    real = os.replace
    calls = []

    def replace(a, b):
        calls.append(b)
        if str(b).endswith(".index"):
            raise PermissionError(13, "Permission denied")
        real(a, b)

    def renameat2(a, b, flags):  # the index of a new output is put in place exclusively (RENAME_NOREPLACE)
        return replace(a, b) is not None

    monkeypatch.setattr(writer_module.os, "replace", replace)
    monkeypatch.setattr(atomic_module, "_renameat2", renameat2)
    with pytest.raises(PermissionError):
        _write(tmp_path, {"a": np.int32(1)})
    assert [os.path.basename(c) for c in calls] == ["ckpt" + DATA, "ckpt.index"]
    assert not (tmp_path / "out").exists()  # nor the directory created for it


def test_verification_catches_a_bad_copy(tmp_path, monkeypatch):
    real = writer_module._copy_fixed

    def corrupting(out, source, chunk, h):
        pos = out.tell()
        size, _ = real(out, source, chunk, h)
        out.seek(pos)
        out.write(b"\x7f")  # damage the first byte, then claim a consistent checksum
        out.seek(pos + size)
        out.flush()
        with open(out.name, "rb") as f:
            f.seek(pos)
            return size, crc32c(f.read(size))

    monkeypatch.setattr(writer_module, "_copy_fixed", corrupting)
    with pytest.raises(VerificationError, match=r"'w': values differ, first at element 0 of 4") as info:
        _write(tmp_path, {"w": np.zeros(4, np.float32)})
    assert [(m.key, m.kind) for m in info.value.report.mismatches] == [("w", "value")]
    assert not (tmp_path / "out").exists()  # nor the directory created for it
    monkeypatch.setattr(writer_module, "_copy_fixed", corrupting)
    prefix = _write(tmp_path, {"w": np.zeros(4, np.float32)}, verify=False)  # --no-verify trusts the copy
    assert Path(prefix + DATA).read_bytes()[0] == 0x7F


def test_existing_output_is_refused_unless_forced(tmp_path):
    prefix = _write(tmp_path, {"a": np.int32(1)})
    before = Path(prefix + ".index").read_bytes()
    with pytest.raises(OutputExistsError, match="output checkpoint exists"):
        formats.write_checkpoint(prefix, {"b": np.int32(2)})
    assert Path(prefix + ".index").read_bytes() == before
    formats.write_checkpoint(prefix, {"b": np.int32(2)}, force=True)
    with formats.open_checkpoint(prefix) as ckpt:
        assert list(ckpt) == ["b"]
    assert sorted(os.listdir(tmp_path / "out")) == ["ckpt" + DATA, "ckpt.index"]


def test_output_equal_to_an_input_is_refused_even_with_force(tmp_path, corpus_copy):
    src = corpus_copy("tf1_estimator") / "model.ckpt-200"
    before = Path(str(src) + ".index").read_bytes()
    with formats.open_checkpoint(src) as ckpt:
        with pytest.raises(OutputIsInputError, match="which is being read"):
            formats.write_checkpoint(src, ckpt, force=True)
        link = tmp_path / "link"
        link.symlink_to(src.parent)
        with pytest.raises(OutputIsInputError):
            formats.write_checkpoint(link / "model.ckpt-200", dict(ckpt), force=True)
        with pytest.raises(OutputIsInputError):  # from a one-shot iterator, found when reached
            formats.write_checkpoint(src, iter(ckpt.items()), force=True)
    with pytest.raises(OutputIsInputError):  # declared inputs (sources that are not bundle tensors)
        formats.write_checkpoint(src, {"x": np.int32(1)}, force=True, inputs=[str(src)])
    assert Path(str(src) + ".index").read_bytes() == before
    assert sorted(os.listdir(src.parent)) == sorted(p.name for p in (CORPUS / "tf1_estimator").iterdir())


def test_copy_streams_in_bounded_memory(tmp_path):
    big = np.random.default_rng(0).standard_normal((64 << 20) // 4, dtype=np.float32)  # 64 MiB
    src = _write(tmp_path, {"big": big}, verify=False)
    del big
    with formats.open_checkpoint(src) as ckpt:
        tracemalloc.start()
        formats.write_checkpoint(tmp_path / "copy" / "ckpt", ckpt, chunk=1 << 20)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak < 4 << 20, f"peak Python allocation {peak} bytes for a 64 MiB tensor"
    with BundleCheckpoint(str(tmp_path / "copy" / "ckpt")) as out:
        assert out["big"].nbytes == 64 << 20


def test_report_describes_the_write(tmp_path):
    prefix = str(tmp_path / "ckpt")
    report = formats.write_checkpoint(prefix, {"a": np.zeros(3, np.float64), "s": b"xyz"})
    assert report.to_json() == {
        "path": prefix, "format": "tf-name", "files": [prefix + ".index", prefix + DATA], "tensors": 2,
        "bytes": 24 + 8, "verified": True, "warnings": [],
        "contents": [{"key": "a", "stored_as": "a", "dtype": "float64", "stored_dtype": "float64", "shape": [3]},
                     {"key": "s", "stored_as": "s", "dtype": "string", "stored_dtype": "string", "shape": []}]}
    assert report.roundtrip is not None and report.roundtrip.tensors == 2


# -- state file ------------------------------------------------------------------------------------
def test_state_file_created_like_checkpoint_save(tmp_path):
    prefix = _write(tmp_path, {"a": np.int32(1)})
    state = formats.update_state_file(tmp_path / "out", prefix)
    assert (tmp_path / "out" / "checkpoint").read_text() == \
        'model_checkpoint_path: "ckpt"\nall_model_checkpoint_paths: "ckpt"\n'
    assert state.all_model_checkpoint_timestamps == []


def test_state_file_update_keeps_history_and_timestamps(corpus_copy):
    folder = corpus_copy("seed_keras2") / "tf_ckpts"
    formats.update_state_file(folder, folder / "ckpt-9", timestamp=1800000000.5)
    text = (folder / "checkpoint").read_text().splitlines()
    assert text[:4] == ['model_checkpoint_path: "ckpt-9"', 'all_model_checkpoint_paths: "ckpt-8"',
                        'all_model_checkpoint_paths: "ckpt-10"', 'all_model_checkpoint_paths: "ckpt-9"']
    assert text[4:] == ["all_model_checkpoint_timestamps: 1795310623.3866537",
                        "all_model_checkpoint_timestamps: 1795310623.5760653",
                        "all_model_checkpoint_timestamps: 1800000000.5",
                        "last_preserved_timestamp: 1795310620.8376298"]
    assert [n for n in os.listdir(folder) if n.startswith(".")] == []


def test_state_file_only_latest_and_absolute_outside(tmp_path, corpus_copy):
    folder = corpus_copy("seed_keras2") / "tf_ckpts"
    formats.update_state_file(folder, folder / "ckpt-10", keep_all=False)
    assert (folder / "checkpoint").read_text().startswith(
        'model_checkpoint_path: "ckpt-10"\nall_model_checkpoint_paths: "ckpt-10"\nall_model_checkpoint_timestamps: ')
    elsewhere = tmp_path / "other" / "ckpt"
    formats.update_state_file(folder, elsewhere, keep_all=False)
    assert f'model_checkpoint_path: "{elsewhere}"' in (folder / "checkpoint").read_text()


def test_progress_is_reported_after_each_tensor(tmp_path):
    import numpy as np

    from formats import write_checkpoint

    seen = []
    write_checkpoint(tmp_path / "p", {"a": np.zeros(3, np.float32), "b": np.zeros(5, np.int64)},
                     progress=lambda done, n: seen.append((done, n)))
    assert seen == [(12, 1), (52, 2)]


@pytest.mark.parametrize("link", [False, True])
def test_progress_counts_on_after_data_taken_over(tmp_path, link):
    """A rename takes the input's data file over whole and writes the new object graph fresh: the counts go on
    from the taken-over ones (they once restarted at one tensor, and with ``link`` at zero bytes)."""
    import shutil

    src = tmp_path / "src"
    shutil.copytree(CORPUS / "tf2_mixed/all_dtypes", src)
    seen: list[tuple[int, int]] = []
    result = formats.rename(src / "ckpt-1", tmp_path / "out" / "ckpt-1", ["typed/=kinds/"], link=link,
                            progress=lambda done, n: seen.append((done, n)))
    assert len(seen) == 2 and seen[0] < seen[1], seen
    assert seen[-1][1] == result.written.tensors


_boundaries = [0, 1, 0x7F, 0x80, 0x3FFF, 0x4000, 0x1FFFFF, 0x200000, 0xFFFFFFF, 0x10000000, (1 << 63) - 1]


@settings(max_examples=300, deadline=None)
@given(dtype=st.integers(0, 30), shape=st.lists(st.integers(0, 1 << 40), max_size=4),
       offset=st.one_of(st.sampled_from(_boundaries), st.integers(0, (1 << 63) - 1),
                        st.integers(0x200000 - 3, 0x10000000 + 3)),
       size=st.integers(0, 1 << 40), crc=st.integers(0, (1 << 32) - 1), shard=st.integers(0, 300))
def test_an_entry_is_what_protobuf_serializes(dtype, shape, offset, size, crc, shard):
    """Each offset's varint, of every length (a data file's first 2 MiB, 256 MiB, past them), and the fields
    around it, byte for byte as the protobuf runtime writes a BundleEntryProto (TensorFlow's own encoding)."""
    from formats.tf_bundle.encode import entry_parts, join_entry

    from .proto_oracle import oracle

    e = oracle("BundleEntryProto")(dtype=dtype, shard_id=shard, offset=offset, size=size, crc32c=crc)
    e.shape.SetInParent()
    for d in shape:
        e.shape.dim.add(size=d)
    expected = e.SerializeToString(deterministic=True)
    assert encode_entry(dtype, shape, offset, size, crc, shard) == expected
    assert join_entry(entry_parts(dtype, shape, shard, size), offset, crc) == expected
