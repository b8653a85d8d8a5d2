"""Issue 14 #18: allocations far beyond what the file holds - a Snappy block declaring tens of MB, an
object graph of millions of empty nodes, a string tensor padded to its longest element - are refused
or bounded, with one line naming the file. The big cases run in a child process with an address-space
limit (tests/hostile/limits.py), so a regression fails the case instead of the machine."""
from __future__ import annotations

import struct
import zipfile

import numpy as np
import pytest

import formats
from formats.ops.inspect.extract import extract
from formats.concepts.object_graph_codec import BYTES_PER_ITEM, FREE_ITEMS
from formats.core.errors import CorruptCheckpointError
from formats.io.sstable.snappy import MAX_BLOCK, SnappyError, decompress

from .craft import bundle, entry, graph_node, header, object_bundle, string_tensor, table, varint
from .limits import MiB, assert_clean, run_limited

STRING = 7


# -- Snappy ---------------------------------------------------------------------------------------------
def _copies(total: int, offset: int = 60) -> bytes:
    """A Snappy block: a 60-byte literal, then 64-byte copies (3 bytes each) ``offset`` back, ``total`` bytes out."""
    out = bytearray(varint(total)) + bytes([59 << 2]) + bytes(range(60))
    made = 60
    while made < total:
        size = min(64, total - made)
        out += bytes([((size - 1) << 2) | 2]) + struct.pack("<H", offset)
        made += size
    return bytes(out)


def test_snappy_index_block_declaring_20_mb_is_refused(tmp_path, run_cli):
    (tmp_path / "c.index").write_bytes(table([(b"", header())], data_block=_copies(20 << 20), kind=1))
    result = run_cli("ls", tmp_path / "c")
    assert result.exit_code == 3
    assert result.stderr == (f"ckpt: error: {tmp_path / 'c.index'}: corrupt index: data block at offset 0: bad Snappy "
                             f"data (declared length 20,971,520 is beyond the {MAX_BLOCK:,} bytes a block may hold)\n")


def test_snappy_declaring_more_than_its_bytes_can_encode():
    with pytest.raises(SnappyError, match="declared length 1,000 is impossible for 13 compressed bytes"):
        decompress(varint(1000) + bytes([3 << 2]) + b"abcd" + bytes([1 | (7 << 2), 4]) * 3)


@pytest.mark.parametrize("offset", [1, 7, 60])
def test_snappy_copies_decode_as_the_format_says(offset):
    total = 4 << 20
    pattern = bytes(range(60))[-offset:]  # what a copy `offset` back repeats
    expected = bytes(range(60)) + (pattern * (total // offset + 1))[:total - 60]
    assert decompress(_copies(total, offset)) == expected


def test_snappy_copy_element_kinds():
    # literal "abcdefgh"; kind 1: 5 bytes 8 back; kind 2: 3 bytes 4 back; kind 3: 2 bytes 13 back
    block = (varint(18) + bytes([7 << 2]) + b"abcdefgh" + bytes([1 | (1 << 2), 8]) + bytes([2 | (2 << 2), 4, 0])
             + bytes([3 | (1 << 2), 13, 0, 0, 0]))
    assert decompress(block) == b"abcdefgh" + b"abcde" + b"bcd" + b"de"


# -- prefix-compressed keys ------------------------------------------------------------------------------
def test_keys_sharing_ever_more_of_the_previous_key(tmp_path):
    """40,000 five-byte entries, each key one byte longer than the last: 800 MB of keys from 200 KB."""
    body = bytearray(varint(0) + varint(0) + varint(len(header())) + header())
    for length in range(40_000):
        body += varint(length) + varint(1) + varint(0) + b"a"
    body += struct.pack("<II", 0, 1)
    (tmp_path / "c.index").write_bytes(table([(b"", b"")], data_block=bytes(body)))
    outcome = run_limited("ls", tmp_path / "c", memory=512 * MiB)
    assert_clean(outcome, 3, f"{tmp_path / 'c.index'}: corrupt index: the keys of a {len(body):,}-byte block would "
                 f"take more than {32 * len(body) + (1 << 20):,} bytes")


# -- the object graph -----------------------------------------------------------------------------------
@pytest.mark.parametrize("node, count", [(b"\x0a\x00", 3_000_000),  # 6 MB: 3M empty TrackableObjects
                                         (b"\x0a\x02\x0a\x00", 1_500_000)])  # each with an empty child reference
def test_object_graph_of_millions_of_empty_nodes(tmp_path, node, count):
    graph = node * count
    prefix = object_bundle(tmp_path, "c", graph)
    allowed = FREE_ITEMS + len(graph) // BYTES_PER_ITEM
    for args in (["ls", "--names"], ["ls", "--tree"], ["graph"]):
        assert_clean(run_limited(*args, prefix, memory=1024 * MiB), 3,
                     f"{prefix}.index: the object graph (_CHECKPOINTABLE_OBJECT_GRAPH) holds more than {allowed:,} "
                     f"objects and references in {len(graph):,} bytes: too many to be real")
    assert_clean(run_limited("ls", prefix, memory=1024 * MiB), 0)  # the keys alone need no graph


def test_object_graph_as_large_as_its_bytes_allow(tmp_path, run_cli):
    nodes = [graph_node([(i, f"n{i}") for i in range(1, 2001)])] + [graph_node() for _ in range(2000)]
    prefix = object_bundle(tmp_path, "c", nodes, [(b"w", [1], b"\x00" * 4)])
    with formats.open_checkpoint(prefix) as ckpt:
        graph = ckpt.object_graph
        assert len(graph) == 2001 and graph.path(2000) == "n2000"


# -- string tensors as .npy ------------------------------------------------------------------------------
def _strings(tmp_path, values):
    data, crc = string_tensor(values)
    return bundle(tmp_path, "c", [(b"s", entry(STRING, [len(values)], 0, len(data), crc=crc))], data)


def test_string_tensor_whose_fixed_width_form_the_file_does_not_justify(tmp_path):
    values = [b""] * 300_000
    values[0] = b"x" * 8000  # 300,000 x 8,000 bytes = 2.4 GB as S8000, from 308 KB
    prefix = _strings(tmp_path, values)
    out = tmp_path / "out"
    line = assert_clean(run_limited("extract", prefix, "-o", out / "s.npz", memory=1024 * MiB), 4,
                        f"ckpt: error: {prefix}.index: tensor 's': string tensor of 300,000 elements would take "
                        "2,400,000,000 bytes as .npy fixed-width bytes (each padded to the longest, 8,000 bytes) "
                        "for 308,000 bytes of data")
    assert line and not out.exists()
    assert_clean(run_limited("extract", prefix, "-o", out / "s.npz", "--allow-pickle", memory=1024 * MiB), 0)
    with np.load(out / "s.npz", allow_pickle=True) as npz:
        got = npz["s"]
    assert got.dtype == object and got.shape == (300_000,) and got[0] == b"x" * 8000 and got[1:].tolist() == [b""] * 299_999
    refused = run_limited("convert", prefix, "-o", out / "c.npz", "--to", "npz", memory=1024 * MiB)
    assert_clean(refused, 1)
    assert not (out / "c.npz").exists()
    converted = run_limited("convert", prefix, "-o", out / "c.npz", "--to", "npz", "--skip-unreadable",
                            memory=1024 * MiB)
    assert_clean(converted, 0)
    assert "warning: unsupported: s: string tensor of 300,000 elements would take 2,400,000,000 bytes" in \
        converted.stdout
    with zipfile.ZipFile(out / "c.npz") as zf:
        assert zf.namelist() == ["__ckpt_provenance__.npy"]


def test_wide_string_tensor_the_file_justifies_is_written_fixed_width_in_chunks(tmp_path):
    values = [b"%05d" % i for i in range(20_000)] + [b"y" * 3000]  # 60 MB as S3000, within the allowance
    prefix = _strings(tmp_path, values)
    with formats.open_checkpoint(prefix) as ckpt:
        report = extract(ckpt, [], tmp_path / "s.npy")
    assert report.verified and report.contents[0].stored_dtype == "|S3000"
    got = np.load(tmp_path / "s.npy")
    assert got.dtype == np.dtype("S3000") and got.tolist() == values


def test_string_tensor_with_tiny_data_is_refused_before_allocating(tmp_path):
    data = b"\x01a" + b"\x00" * 6
    prefix = bundle(tmp_path, "c", [(b"s", entry(STRING, [10 ** 12], 0, 8, data))], data)
    with formats.open_checkpoint(prefix) as ckpt, pytest.raises(CorruptCheckpointError, match="cannot fit"):
        ckpt["s"].read()
