"""Hostile indexes read by the compact listing (formats/tf_bundle/index_listing.py), which ``ckpt ls`` uses for an
index of 1 MiB or more: it either lists exactly what opening the bundle lists or declines (None), and the
bundle is then opened and reports the problem; never an exception of its own, a hang or a runaway
allocation."""
from __future__ import annotations

import random
import struct
import tracemalloc
from pathlib import Path

import pytest

import formats
from formats.io.crc import crc32c, mask
from formats.io.sstable.table import Table
from formats.ops.inspect.summary import summarise
from formats.tf_bundle.format import COMPACT_FROM
from formats.tf_bundle.index_listing import compact_listing

from ..bundle_index import make_entries, write_bundle
from .craft import header, table, varint
from .limits import MiB, assert_clean, run_limited
from .test_mutation import _mutate

CASES = 400


def test_keys_sharing_ever_more_of_the_previous_key_in_a_large_index(tmp_path):
    """260,000 five-byte entries, each key one byte longer than the last: 34 GB of keys from 1.3 MB."""
    body = bytearray(varint(0) + varint(0) + varint(len(header())) + header())
    for length in range(260_000):
        body += varint(length) + varint(1) + varint(0) + b"a"
    body += struct.pack("<II", 0, 1)
    (tmp_path / "c.index").write_bytes(table([(b"", b"")], data_block=bytes(body)))
    assert len(body) > COMPACT_FROM
    tracemalloc.start()
    try:
        assert compact_listing(str(tmp_path / "c")) is None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * len(body) + 64 * len(body) // 2  # the index, and keys no longer than the bound allows
    outcome = run_limited("ls", tmp_path / "c", memory=512 * MiB)
    assert_clean(outcome, 3, f"{tmp_path / 'c.index'}: corrupt index: the keys of a {len(body):,}-byte block would "
                 f"take more than {32 * len(body) + (1 << 20):,} bytes")


def _rows(prefix: str):
    with formats.open_checkpoint(prefix) as ckpt:
        summary = summarise(ckpt)
    return [(r.key, r.dtype, r.shape, r.nbytes) for r in summary.rows], summary.format, summary.total_tensors


def _mutated_blocks(data: bytes, rng: random.Random) -> bytes:
    """One data block's contents mutated in place, its trailer's checksum made to match again."""
    blocks = Table(data, "x").blocks
    ref = rng.choice(blocks)
    content = bytearray(data[ref.offset:ref.offset + ref.size])
    mutated = _mutate(bytes(content), rng)[:ref.size].ljust(ref.size, b"\x00")
    out = bytearray(data)
    out[ref.offset:ref.offset + ref.size] = mutated
    kind = bytes([out[ref.offset + ref.size]])
    out[ref.offset + ref.size + 1:ref.offset + ref.size + 5] = struct.pack("<I", mask(crc32c(kind, crc32c(mutated))))
    return bytes(out)


@pytest.mark.parametrize("behind_checksums", [True, False], ids=["blocks", "files"])
def test_mutated_indexes_list_as_opened_or_decline(tmp_path: Path, behind_checksums: bool) -> None:
    prefix = write_bundle(tmp_path / "src" / "ckpt-1", make_entries(1500, seed=5), block_size=2048)
    pristine = Path(prefix + ".index").read_bytes()
    rng = random.Random(1922 + behind_checksums)
    listed = declined = 0
    for case in range(CASES):
        data = _mutated_blocks(pristine, rng) if behind_checksums else _mutate(pristine, rng)
        Path(prefix + ".index").write_bytes(data)
        listing = compact_listing(prefix)
        if listing is None:
            declined += 1
            continue
        listed += 1
        rows, fmt, total = _rows(prefix)  # the bundle opens: the compact listing must say the same
        assert ([(k, *kind) for k, kind in listing.rows()], listing.format, listing.total_tensors) == \
            (rows, fmt, total), f"case {case}"
    assert declined > CASES // 20 and listed > (CASES // 20 if behind_checksums else 0)  # both outcomes occur
