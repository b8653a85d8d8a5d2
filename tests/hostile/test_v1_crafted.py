"""Crafted hostile V1 checkpoints: each is a clean CheckpointError, or a problem `verify` lists."""
from __future__ import annotations

import json
import os
import re
import shutil
import tracemalloc

import numpy as np
import pytest

import formats
from formats.core.errors import (CheckpointNotFoundError, ChecksumError, CorruptCheckpointError, NotACheckpointError,
                                 UnsupportedError)
from formats.io.sstable.table import read_table
from formats.ops.compare.verify import verify_checkpoint

from ..conftest import CORPUS
from .craft import table
from .craft_v1 import (FLOAT, FULL, INT32, VARIANT, floats, ld, meta_value, packed_varints, saved_slice, simple,
                       slice_key, slice_meta, v1_file, flip_value_byte)

ADAM = CORPUS / "tf1_v1_adam" / "model.ckpt-1"


def _problems(path):
    with formats.open_checkpoint(path) as ckpt:
        return [(p.where, p.message) for p in verify_checkpoint(ckpt).problems]


def _partitioned(tmp_path, slices, shape=(4,), values=None):
    """One float tensor 'w' of ``shape`` stored as ``slices``, each slice holding its own right count."""
    stored = []
    for extents in slices:
        n = int(np.prod([dim if length == FULL else length for (_, length), dim in zip(extents, shape)]))
        stored.append((slice_key(b"w", extents), saved_slice(b"w", extents, floats(values or range(n)))))
    return v1_file(tmp_path / "model.ckpt", [slice_meta(b"w", FLOAT, shape, slices)], stored)


def test_crafted_keys_match_tensorflow():
    """craft_v1's OrderedCode agrees with the keys TensorFlow wrote in the corpus."""
    keys = {key for key, _ in read_table(ADAM.read_bytes(), str(ADAM))}
    assert slice_key(b"input_layer/embedding/weights", [(11, 11), (0, 7)]) in keys
    assert slice_key(b"global_step", []) in keys


@pytest.mark.parametrize("keep", [0.5, 0.9, -1, -8, 20])
def test_truncated_file(tmp_path, keep, run_cli):
    data = ADAM.read_bytes()
    cut = tmp_path / "model.ckpt-1"
    cut.write_bytes(data[:int(len(data) * keep)] if isinstance(keep, float) else data[:keep])
    expected = ("file is 20 bytes, shorter than the 48-byte footer" if keep == 20 else
                "bad magic number (not a TensorFlow V1 table file, or truncated)")
    with pytest.raises(CorruptCheckpointError) as caught:
        formats.open_checkpoint(cut)
    assert str(caught.value) == f"{cut}: corrupt V1 table: {expected}"
    result = run_cli("ls", cut)
    assert result.exit_code == 3 and f"model.ckpt-1: corrupt V1 table: {expected}" in result.output


def test_bad_block_checksum_is_listed_by_verify_and_refused_on_read(tmp_path, run_cli):
    path = simple(tmp_path / "model.ckpt", b"w", FLOAT, [3], floats([1.5, 2.5, 3.5]), one_block_each=True)
    path.write_bytes(flip_value_byte(path.read_bytes(), np.asarray([1.5, 2.5, 3.5], "<f4").tobytes()))
    with formats.open_checkpoint(path) as ckpt:  # the meta entry's block is intact: listing works
        assert list(ckpt) == ["w"] and ckpt["w"].shape == (3,)
        with pytest.raises(ChecksumError, match=r"data block at offset \d+: checksum mismatch"):
            ckpt["w"].read()
    problems = _problems(path)
    assert [where for where, _ in problems] == ["model.ckpt", "w"]
    assert re.fullmatch(r"corrupt V1 table: data block at offset \d+: checksum mismatch \(stored 0x[0-9a-f]{8}, "
                        r"computed 0x[0-9a-f]{8}\)", problems[0][1])
    result = run_cli("verify", path)
    assert result.exit_code == 1 and "checksum mismatch" in result.output


def test_slice_overlap(tmp_path):
    path = _partitioned(tmp_path, [[(0, 3)], [(2, 2)]])
    assert _problems(path) == [("w", "slices [0:3] and [2:4] overlap")]
    with formats.open_checkpoint(path) as ckpt, pytest.raises(CorruptCheckpointError, match="w': slices .* overlap"):
        ckpt["w"].read()


def test_two_dimensional_overlap_and_grid(tmp_path):
    grid = [[(0, 2), (0, 2)], [(0, 2), (2, 2)], [(2, 2), (0, 2)], [(2, 2), (2, 2)]]
    with formats.open_checkpoint(_partitioned(tmp_path, grid, (4, 4))) as ckpt:
        np.testing.assert_array_equal(ckpt["w"].read(), np.array([[0, 1, 0, 1], [2, 3, 2, 3]] * 2, "f4"))
    (tmp_path / "model.ckpt").unlink()
    bad = [[(0, 2), (0, 2)], [(0, 2), (1, 3)], [(2, 2), (0, 4)]]
    assert _problems(_partitioned(tmp_path, bad, (4, 4))) == [("w", "slices [0:2, 0:2] and [0:2, 1:4] overlap")]


@pytest.mark.parametrize("slices, message", [
    ([[(0, 2)]], "slices cover 2 of its 4 elements (a gap)"),
    ([[(2, 5)]], "slice [2:7] lies outside shape [4]"),
    ([[(0, 2), (0, 1)]], "slice [0:2, 0:1] has rank 2, the tensor rank 1"),
    ([[(1, FULL)]], "slice [:] has an extent without a length that does not start at 0"),
    ([], "no slice of it is stored"),
])
def test_slices_that_do_not_tile_the_shape(tmp_path, slices, message):
    stored = [(slice_key(b"w", s), saved_slice(b"w", s, floats([0.0, 1.0]))) for s in slices if len(s) == 1]
    path = v1_file(tmp_path / "model.ckpt", [slice_meta(b"w", FLOAT, [4], slices)], stored)
    assert _problems(path) == [("w", message)]
    with formats.open_checkpoint(path) as ckpt, pytest.raises(CorruptCheckpointError, match="tensor 'w': "):
        ckpt["w"].read()


@pytest.mark.parametrize("shape", [[2 ** 40], [2 ** 62, 2 ** 62], [2 ** 31, 2 ** 31]])
def test_huge_declared_shape_is_refused_before_allocating(tmp_path, shape):
    path = simple(tmp_path / "model.ckpt", b"w", FLOAT, shape, floats([1.0, 2.0, 3.0, 4.0]))
    with formats.open_checkpoint(path) as ckpt:
        assert ckpt["w"].shape == tuple(shape) and ckpt["w"].nbytes == int(np.prod(shape, dtype=object)) * 4
        tracemalloc.start()
        try:
            with pytest.raises(CorruptCheckpointError, match=r"slice \[:(, :)*\] needs \d+ values, but only 18 bytes"):
                ckpt["w"].read()
            assert tracemalloc.get_traced_memory()[1] < 1 << 20
        finally:
            tracemalloc.stop()


def test_bad_varint_in_the_meta_entry(tmp_path, run_cli):
    meta = ld(1, ld(1, b"\x0a\x01w\x18" + b"\xff" * 11))  # SavedSliceMeta{name: "w", type: <11-byte varint>}
    path = tmp_path / "model.ckpt"
    path.write_bytes(table([(b"", meta)]))
    with pytest.raises(CorruptCheckpointError, match="corrupt V1 meta entry: truncated or overlong varint"):
        formats.open_checkpoint(path)
    assert run_cli("ls", path).exit_code == 3


def test_bad_varint_in_packed_values(tmp_path):
    path = simple(tmp_path / "model.ckpt", b"i", INT32, [2], ld(7, b"\x05\x80"))
    with formats.open_checkpoint(path) as ckpt, \
            pytest.raises(CorruptCheckpointError, match="corrupt TensorProto .packed varints end in the middle"):
        ckpt["i"].read()


def test_value_count_that_does_not_match_the_extent(tmp_path):
    path = simple(tmp_path / "model.ckpt", b"w", FLOAT, [4], floats([1, 2, 3, 4, 5]))
    with formats.open_checkpoint(path) as ckpt, \
            pytest.raises(CorruptCheckpointError, match=r"slice \[:\] holds 5 values, its extent needs 4"):
        ckpt["w"].read()


def test_missing_or_mislabelled_slice_entry(tmp_path):
    meta = [slice_meta(b"a", FLOAT, [1], [[(0, FULL)]]), slice_meta(b"b", FLOAT, [1], [[(0, FULL)]])]
    wrong = saved_slice(b"b", [(0, FULL)], floats([1.0]))  # stored under a's key
    path = v1_file(tmp_path / "model.ckpt", meta, [(slice_key(b"a", [(0, FULL)]), wrong)])
    with formats.open_checkpoint(path) as ckpt:
        with pytest.raises(CorruptCheckpointError, match=r"tensor 'a': slice \[:\]: the entry holds \[:\] of 'b'"):
            ckpt["a"].read()
        with pytest.raises(CorruptCheckpointError, match=r"tensor 'b': slice \[:\] has no entry in the table"):
            ckpt["b"].read()


def test_dtype_without_values_is_listed_and_unreadable(tmp_path):
    path = simple(tmp_path / "model.ckpt", b"v", VARIANT, [1], b"")
    with formats.open_checkpoint(path) as ckpt:
        assert ckpt["v"].dtype == "variant"
        with pytest.raises(UnsupportedError, match="dtype variant, which V1 checkpoints cannot hold"):
            ckpt["v"].read()


def test_newer_checkpoint_version_is_unsupported(tmp_path):
    path = simple(tmp_path / "model.ckpt", b"w", FLOAT, [1], floats([1.0]), min_consumer=2)
    with pytest.raises(UnsupportedError, match="readers of checkpoint version 2 or later"):
        formats.open_checkpoint(path)


def test_table_without_meta_entry_is_not_a_v1_checkpoint(tmp_path):
    path = tmp_path / "model.ckpt"
    path.write_bytes(table([(b"w", b"\x0a\x00")]))
    with pytest.raises(NotACheckpointError, match="TensorFlow table but not a V1 checkpoint"):
        formats.open_checkpoint(path)


def test_shards_that_disagree_on_a_shape(tmp_path):
    for i, dims in enumerate(([2], [3])):
        simple(tmp_path / f"m-{i:05d}-of-00002", b"w", FLOAT, dims, floats([0.0] * dims[0]),
               slices=[[(0, 1)]] if i == 0 else [[(1, 1)]])
    with pytest.raises(CorruptCheckpointError, match=r"'w' is declared with shape \[3\]"):
        formats.open_checkpoint(tmp_path / "m-?????-of-00002")


def test_missing_shard_is_named(tmp_path, run_cli):
    for name in ("model.ckpt-00000-of-00003", "model.ckpt-00002-of-00003", "checkpoint"):
        shutil.copyfile(CORPUS / "tf1_v1_sharded" / name, tmp_path / name)
    with pytest.raises(CheckpointNotFoundError, match="model.ckpt-00001-of-00003: shard 2 of 3 of V1 checkpoint "
                                                      r"model.ckpt-\?\?\?\?\?-of-00003 is missing"):
        formats.open_checkpoint(tmp_path / "model.ckpt-?????-of-00003")
    result = run_cli("ls", tmp_path / "model.ckpt-00000-of-00003")
    assert result.exit_code == 3 and "shard 2 of 3" in result.output
    rows = json.loads(run_cli("ls", "--json", tmp_path).output)["checkpoints"]  # listed, with what is wrong
    missing = "shard 2 of 3 of V1 checkpoint model.ckpt-?????-of-00003 is missing"
    assert [(r["path"], r["latest"], r["error"]) for r in rows] == [
        (str(tmp_path / "model.ckpt-?????-of-00003"), True, missing)]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_and_device_in_a_run_directory_do_not_hang(tmp_path, run_cli):
    shutil.copyfile(ADAM, tmp_path / "model.ckpt-1")
    os.mkfifo(tmp_path / "model.ckpt-2")
    os.symlink("/dev/zero", tmp_path / "model.ckpt-3")
    result = run_cli("ls", "--json", tmp_path)
    assert result.exit_code == 0, result.output
    assert '"path": "' + str(tmp_path / "model.ckpt-1") + '"' in result.output
    assert "model.ckpt-2" not in result.output and "model.ckpt-3" not in result.output
    with pytest.raises(CorruptCheckpointError, match="not a regular file"):
        from formats.tf_v1.reader import V1Reader

        V1Reader([str(tmp_path / "model.ckpt-3")])


def test_meta_with_a_negative_dimension(tmp_path):
    path = v1_file(tmp_path / "model.ckpt", [slice_meta(b"w", FLOAT, [-3], [[(0, FULL)]])], [])
    with pytest.raises(CorruptCheckpointError, match=r"'w' has a negative dimension in shape \[-3\]"):
        formats.open_checkpoint(path)


def test_empty_meta_is_an_empty_checkpoint(tmp_path):
    path = tmp_path / "model.ckpt"
    path.write_bytes(table([(b"", meta_value([]))]))
    with formats.open_checkpoint(path) as ckpt:
        assert ckpt.format == "tf-v1" and len(ckpt) == 0 and ckpt.problems() == []


def test_packed_ints_stored_as_int_val_keep_their_low_bits(tmp_path):
    path = simple(tmp_path / "model.ckpt", b"i", INT32, [3], packed_varints(7, [-1, 2 ** 31 - 1, -(2 ** 31)]))
    with formats.open_checkpoint(path) as ckpt:
        np.testing.assert_array_equal(ckpt["i"].read(), np.array([-1, 2 ** 31 - 1, -(2 ** 31)], "i4"))


def test_rank_beyond_numpy(tmp_path):
    path = simple(tmp_path / "model.ckpt", b"w", FLOAT, [1] * 65, floats([1.0]))
    with formats.open_checkpoint(path) as ckpt:
        assert ckpt["w"].shape == (1,) * 65
        with pytest.raises(UnsupportedError, match="rank 65; numpy arrays have at most 64 dimensions"):
            ckpt["w"].read()


# -- what TensorFlow's V1 reader refuses (issue 24, item 23; tests/interop/test_loader_refusals_tf.py asks it) ----

def test_dtypes_tensorflows_v1_reader_refuses_are_loader_refusals(tmp_path, run_cli):
    path = simple(tmp_path / "h.ckpt", b"h", 19, [2], packed_varints(13, [0x3C00, 0x4000]))  # float16 1.0, 2.0
    with formats.open_checkpoint(path) as ckpt:
        assert ckpt["h"].read().tolist() == [1.0, 2.0]  # ckpt reads it all the same
        assert [tuple(p) for p in ckpt.loader_refusals()] == [
            ("h", "dtype float16: TensorFlow's V1 reader (tf.train.load_checkpoint) refuses it "
                  "(\"Data type not supported\")")]
    assert run_cli("verify", path).exit_code == 1
    assert run_cli("verify", "--allow-loader-refusals", path).exit_code == 0


def test_a_name_that_is_not_utf8_is_a_loader_refusal(tmp_path, run_cli):
    path = simple(tmp_path / "n.ckpt", b"w\xff", FLOAT, [2], floats([1.0, 2.0]))
    result = run_cli("verify", "--json", path)
    assert result.exit_code == 1
    assert json.loads(result.stdout)["loader_refusals"] == [
        {"where": "w\\xff", "message": "the name is not UTF-8: TensorFlow's V1 reader cannot parse the file's metadata "
                                        "(protobuf string fields are UTF-8) and refuses the whole file"}]


def test_what_tensorflows_v1_reader_takes_is_no_refusal(tmp_path):
    with formats.open_checkpoint(simple(tmp_path / "f.ckpt", b"w", FLOAT, [2], floats([1.0, 2.0]))) as ckpt:
        assert ckpt.loader_refusals() == []
