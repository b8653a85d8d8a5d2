"""Crafted hostile bundles and state files: each is a clean CheckpointError (or a listed problem)."""
from __future__ import annotations

import os
import struct

import numpy as np
import pytest

import formats
from formats.io.crc import crc32c, mask
from formats.core.errors import (CheckpointNotFoundError, ChecksumError, CorruptCheckpointError,
                            UnsupportedError)
from formats.ops.compare.verify import verify_checkpoint

from .craft import block, bundle, entry, header, table, varint, with_trailer

FLOAT, STRING, INT64 = 1, 7, 9


def _problems(prefix):
    with formats.open_checkpoint(prefix) as ckpt:
        return [(p.where, p.message) for p in verify_checkpoint(ckpt).problems]


def test_offset_past_the_data(tmp_path):
    data = np.arange(4, dtype="<f4").tobytes()
    prefix = bundle(tmp_path, "c", [(b"w", entry(FLOAT, [4], offset=1000, size=16, data=data))], data)
    assert _problems(prefix) == [("w", "bytes [1000, 1016) run past the end of c.data-00000-of-00001 (16 bytes): "
                                       "truncated?")]
    with formats.open_checkpoint(prefix) as ckpt, pytest.raises(CorruptCheckpointError, match="runs past the end"):
        ckpt["w"].read()


def test_overlapping_entries(tmp_path):
    data = np.arange(8, dtype="<f4").tobytes()
    prefix = bundle(tmp_path, "c", [(b"a", entry(FLOAT, [6], 0, 24, data[:24])),
                                    (b"b", entry(FLOAT, [4], 16, 16, data[16:]))], data)
    assert _problems(prefix) == [("b", "bytes [16, 32) overlap 'a' in c.data-00000-of-00001")]


@pytest.mark.parametrize("shape", [[2 ** 62, 2 ** 62], [10 ** 12], [3, 0, 2 ** 63 - 1]])
def test_absurd_shapes_with_tiny_data(tmp_path, shape):
    data = b"\x00" * 16
    prefix = bundle(tmp_path, "c", [(b"w", entry(FLOAT, shape, 0, 16, data))], data)
    with formats.open_checkpoint(prefix) as ckpt:
        assert ckpt["w"].shape == tuple(shape) and ckpt["w"].nbytes == 16
        with pytest.raises(CorruptCheckpointError, match="16 bytes stored, but shape"):
            ckpt["w"].read()


def test_verify_names_stored_bytes_that_cannot_hold_the_shape(tmp_path):
    data = b"\x00" * 16
    prefix = bundle(tmp_path, "c", [(b"w", entry(FLOAT, [10 ** 12], 0, 16, data))], data)
    assert _problems(prefix) == [("w", "tensor 'w': 16 bytes stored, but shape [1000000000000] of float32 needs "
                                       "4000000000000")]
    with formats.open_checkpoint(prefix) as ckpt:
        assert ckpt["w"].problem() == "tensor 'w': 16 bytes stored, but shape [1000000000000] of float32 needs " \
                                      "4000000000000"


OVERSTATED = [["convert", "-o", "out.safetensors", "--to", "safetensors"], ["convert", "-o", "out.npz", "--to", "npz"],
              ["convert", "-o", "out/ckpt", "--to", "tf-object"], ["extract", "-o", "out.npz"],
              ["extract", "-o", "out"], ["extract", "w", "-o", "out.npy"]]


def _overstated_bundle(directory):
    data = b"\x00" * 8
    prefix = bundle(directory, "c", [(b"w", entry(FLOAT, [1 << 50], 0, 4, data[:4])),
                                     (b"v", entry(FLOAT, [1], 4, 4, data[4:]))], data)
    return prefix, (f"{prefix}.index: tensor 'w': 4 bytes stored, but shape [{1 << 50}] of float32 needs "
                    f"{4 << 50}")


def _overstated_npz(directory):
    import io
    import zipfile

    path = directory / "c.npz"
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": (1 << 50,)})
    value = io.BytesIO()
    np.save(value, np.zeros(1, "<f4"))
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("w.npy", header.getvalue() + b"\x00" * 4)
        archive.writestr("v.npy", value.getvalue())
    return path, f"{path}: w: w.npy declares shape [{1 << 50}] of float32 ({4 << 50:,} bytes) but stores 4 bytes"


@pytest.mark.parametrize("craft", [_overstated_bundle, _overstated_npz], ids=["bundle", "npz"])
@pytest.mark.parametrize("command", OVERSTATED, ids=[" ".join(c[i] for i in (0, -1)) for c in OVERSTATED])
def test_a_write_sized_from_an_overstated_shape_names_the_corrupt_input(tmp_path, run_cli, monkeypatch, command,
                                                                       craft):
    """An entry declaring 4 PiB in 4 stored bytes: the writers size their output from the declared shapes, which
    no disk holds; the error is the corrupt entry (exit 3), as ``verify`` says, not a full disk (exit 4)."""
    source, message = craft(tmp_path)
    out = tmp_path / "o"
    out.mkdir()
    monkeypatch.chdir(out)
    result = run_cli(command[0], source, *command[1:])
    assert (result.exit_code, result.stdout, result.stderr) == (3, "", f"ckpt: error: {message}\n")
    assert os.listdir(out) == []


def test_huge_string_tensor_with_tiny_data(tmp_path):
    data = b"\x01a" + b"\x00" * 6
    prefix = bundle(tmp_path, "c", [(b"s", entry(STRING, [10 ** 12], 0, 8, data))], data)
    with formats.open_checkpoint(prefix) as ckpt, pytest.raises(CorruptCheckpointError, match="cannot fit"):
        ckpt["s"].read()


def test_string_lengths_exceeding_the_bytes(tmp_path):
    lengths = struct.pack("<I", 100)
    body = varint(100) + struct.pack("<I", mask(crc32c(lengths))) + b"abc"
    prefix = bundle(tmp_path, "c", [(b"s", entry(STRING, [], 0, len(body), body))], body)
    with formats.open_checkpoint(prefix) as ckpt, pytest.raises(CorruptCheckpointError,
                                                                match="add up to 100 bytes, 3 are stored"):
        ckpt["s"].read()


def test_unknown_dtype_is_listed_and_unreadable(tmp_path):
    prefix = bundle(tmp_path, "c", [(b"q", entry(99, [2], 0, 8, b"\x00" * 8))], b"\x00" * 8)
    with formats.open_checkpoint(prefix) as ckpt:
        assert ckpt["q"].dtype == "unknown(99)"
        with pytest.raises(UnsupportedError, match="dtype unknown\\(99\\)"):
            ckpt["q"].read()
    assert _problems(prefix) == [("q", "tensor 'q' has dtype unknown(99), which has no array counterpart")]


def test_restart_array_out_of_range(tmp_path):
    raw = bytearray(block([(b"", header()), (b"a", entry(FLOAT, [0]))]))
    raw[-4:] = struct.pack("<I", 2 ** 31)
    (tmp_path / "c.index").write_bytes(table([(b"a", b"")], data_block=bytes(raw)))
    with pytest.raises(CorruptCheckpointError, match="claims 2147483648 restart points"):
        formats.open_checkpoint(tmp_path / "c")


def test_varint_that_never_ends(tmp_path):
    prefix = tmp_path / "c"
    (tmp_path / "c.index").write_bytes(table([(b"", header()), (b"w", b"\x08" + b"\xff" * 30)]))
    with pytest.raises(CorruptCheckpointError, match="entry for b'w' is not parseable"):
        formats.open_checkpoint(prefix)


def test_entry_running_past_its_block(tmp_path):
    raw = varint(0) + varint(1) + varint(10 ** 6) + b"k" + struct.pack("<II", 0, 1)
    (tmp_path / "c.index").write_bytes(table([(b"k", b"")], data_block=raw))
    with pytest.raises(CorruptCheckpointError, match="runs past the end of its block"):
        formats.open_checkpoint(tmp_path / "c")


def test_header_claiming_a_billion_shards(tmp_path):
    (tmp_path / "c.index").write_bytes(table([(b"", header(num_shards=10 ** 9))]))
    with pytest.raises(CorruptCheckpointError, match="header claims 1000000000 data files"):
        formats.open_checkpoint(tmp_path / "c")


def test_shard_id_out_of_range(tmp_path):
    prefix = bundle(tmp_path, "c", [(b"w", entry(FLOAT, [1], 0, 4, b"\x00" * 4, shard=5))], b"\x00" * 4)
    with pytest.raises(CorruptCheckpointError, match="is in data file 5, but the header declares 1"):
        formats.open_checkpoint(prefix)


def test_partitioned_variable_with_missing_or_wrong_slices(tmp_path):
    data = np.arange(4, dtype="<f4").tobytes()
    full = entry(FLOAT, [4, 1], slices=[[(0, 2), (0, -1)], [(2, 2), (0, -1)]])
    prefix = bundle(tmp_path, "c", [(b"p", full)], data)
    with formats.open_checkpoint(prefix) as ckpt, pytest.raises(CorruptCheckpointError, match="has no entry"):
        ckpt["p"].read()
    outside = entry(FLOAT, [4, 1], slices=[[(3, 5), (0, -1)]])
    prefix = bundle(tmp_path, "d", [(b"p", outside)], data)
    with formats.open_checkpoint(prefix) as ckpt, pytest.raises(CorruptCheckpointError,
                                                                match="lies outside shape|has no entry"):
        ckpt["p"].read()


def test_undecodable_key_is_listed_safely(tmp_path, run_cli):
    data = b"\x00" * 4
    prefix = bundle(tmp_path, "c", [(b"\x00\xffbad\xfe", entry(FLOAT, [1], 0, 4, data))], data)
    result = run_cli("ls", prefix)
    assert result.exit_code == 0
    assert "\\xffbad\\xfe" in result.stdout
    result = run_cli("ls", "--json", prefix)
    assert result.exit_code == 0 and "\\\\xffbad\\\\xfe" in result.stdout


def test_bad_snappy_block(tmp_path):
    pairs = [(b"", header())]
    compressed = varint(10 ** 9) + b"\x00x"  # claims a gigabyte from three bytes
    (tmp_path / "c.index").write_bytes(table(pairs, data_block=compressed, kind=1))
    with pytest.raises(CorruptCheckpointError, match="bad Snappy data"):
        formats.open_checkpoint(tmp_path / "c")


def test_checksum_mismatch_names_key_file_and_both_crcs(tmp_path):
    data = np.arange(4, dtype="<f4").tobytes()
    prefix = bundle(tmp_path, "c", [(b"w", entry(FLOAT, [4], 0, 16, crc=mask(12345)))], data)
    with formats.open_checkpoint(prefix) as ckpt, pytest.raises(ChecksumError) as info:
        ckpt["w"].read()
    assert str(info.value) == (f"{prefix}.data-00000-of-00001: tensor 'w': checksum mismatch "
                               f"(index says 0x00003039, data gives {crc32c(data):#010x})")


@pytest.mark.parametrize("named", ["../../../etc/passwd", "checkpoint", ".", "/", "a\\\\b"])
def test_state_file_pointing_outside_or_at_itself(tmp_path, named):
    (tmp_path / "checkpoint").write_text(f'model_checkpoint_path: "{named}"\n')
    with pytest.raises(CheckpointNotFoundError, match="as the latest checkpoint, but"):
        formats.open_checkpoint(tmp_path)


@pytest.mark.parametrize("text", [b"\x00\x01garbage", b'model_checkpoint_path: "a\\x"', b"other: 1"])
def test_state_file_that_is_not_a_state_file(tmp_path, text):
    (tmp_path / "checkpoint").write_bytes(text)
    with pytest.raises(CorruptCheckpointError, match="not a checkpoint state file"):
        formats.open_checkpoint(tmp_path)


# -- positive cases that need crafting: big-endian bundles and Snappy-compressed blocks ----------

def test_big_endian_bundle_is_byte_swapped(tmp_path):
    values = np.array([[1.5, -2.0], [3.25, 4.0]], dtype=">f4")
    ints = np.array([1, -2, 3], dtype=">i8")
    data = values.tobytes() + ints.tobytes()
    prefix = bundle(tmp_path, "be", [(b"f", entry(FLOAT, [2, 2], 0, 16, data[:16])),
                                     (b"i", entry(INT64, [3], 16, 24, data[16:]))], data, big_endian=True)
    with formats.open_checkpoint(prefix) as ckpt:
        f, i = ckpt["f"].read(), ckpt["i"].read()
    assert f.dtype == np.dtype("<f4") and f.tolist() == [[1.5, -2.0], [3.25, 4.0]]
    assert i.tolist() == [1, -2, 3]


def _snappy_literal(data: bytes) -> bytes:
    out = bytearray(varint(len(data)))
    for start in range(0, len(data), 60):
        chunk = data[start:start + 60]
        out.append((len(chunk) - 1) << 2)
        out += chunk
    return bytes(out)


def test_snappy_compressed_index_blocks_are_read(tmp_path):
    data = np.arange(3, dtype="<f4").tobytes()
    pairs = [(b"", header()), (b"w", entry(FLOAT, [3], 0, 12, data))]
    (tmp_path / "c.index").write_bytes(table(pairs, data_block=_snappy_literal(block(pairs)), kind=1))
    (tmp_path / "c.data-00000-of-00001").write_bytes(data)
    with formats.open_checkpoint(tmp_path / "c") as ckpt:
        assert ckpt["w"].read().tolist() == [0.0, 1.0, 2.0]


def test_snappy_copies_are_decoded():
    from formats.io.sstable.snappy import decompress

    # "abcd" literal, then a copy of length 8 at offset 4 (1-byte-offset form), overlapping itself
    assert decompress(varint(12) + bytes([3 << 2]) + b"abcd" + bytes([(1 << 0) | ((8 - 4) << 2), 4])) == \
        b"abcdabcdabcd"


def test_trailer_helper_round_trips():
    assert with_trailer(b"x")[-5] == 0
