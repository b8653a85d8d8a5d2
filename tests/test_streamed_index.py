"""A large local index is read a block at a time (:class:`formats.tf_bundle.datafile.IndexFile`), not whole: the
same entries and the same errors as the index read whole, its descriptor closed, and what it holds bounded."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from formats import write_checkpoint
from formats.core.errors import CheckpointError
from formats.tf_bundle import datafile
from formats.tf_bundle.reader import BundleReader

from tests.conftest import CORPUS
from tests.memory import traced


def _bundles() -> list[str]:
    return sorted(str(p)[: -len(".index")] for p in CORPUS.rglob("*.index"))


def _columns(prefix: str) -> tuple:
    reader = BundleReader(prefix)
    try:
        e = reader.entries
        return (reader.header, list(e.keys), list(e.kind), list(e.offset), list(e.crc), e.kinds, e.slices)
    finally:
        reader.close()


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc")
def test_every_corpus_index_reads_the_same_a_block_at_a_time(monkeypatch):
    prefixes = _bundles()
    assert len(prefixes) >= 20
    whole = [_columns(p) for p in prefixes]
    monkeypatch.setattr(datafile, "STREAMED_INDEX", 0)  # every index read by pieces
    before = _fds()
    assert [_columns(p) for p in prefixes] == whole
    assert _fds() == before  # each descriptor closed


@pytest.fixture(scope="module")
def large(tmp_path_factory) -> str:
    """A bundle whose index is larger than STREAMED_INDEX (about 160,000 tensors)."""
    prefix = str(tmp_path_factory.mktemp("streamed") / "ckpt")
    n = 160_000
    write_checkpoint(prefix, ((f"layer_{i // 1000}/unit_{i % 1000}/w", np.full(2, i, np.float32)) for i in range(n)),
                     verify=False)
    assert os.path.getsize(prefix + ".index") > datafile.STREAMED_INDEX
    return prefix


def test_a_large_index_is_read_by_pieces_and_not_held_whole(large, monkeypatch):
    reads: list[int] = []
    pread = os.pread

    def counted(fd, n, at):  # type: ignore[no-untyped-def]
        reads.append(n)
        return pread(fd, n, at)

    monkeypatch.setattr(datafile.os, "pread", counted)
    reader, _, peak = traced(lambda: BundleReader(large))
    try:
        assert len(reader.entries.keys) == 160_000
        assert reader.entries.keys[123] == sorted(f"layer_{i // 1000}/unit_{i % 1000}/w".encode()
                                                  for i in range(160_000))[123]
    finally:
        reader.close()
    size = os.path.getsize(large + ".index")
    assert sum(reads) >= size - 48 and max(reads) < size // 8  # every block read (ckpt writes blocks of 256 KiB)
    monkeypatch.setattr(datafile, "STREAMED_INDEX", 1 << 40)  # the same index read whole
    _, _, whole_peak = traced(lambda: BundleReader(large).close())
    assert peak < whole_peak - size * 3 // 4  # the index's bytes were not held


@pytest.mark.parametrize("damage, message", [
    (lambda data: data[:-1], "bad magic number"),
    (lambda data: data[:4096] + bytes([data[4096] ^ 0xFF]) + data[4097:], "checksum mismatch"),
    (lambda data: data[:len(data) // 2] + data[-48:], "runs past the end of the table"),
])
def test_a_damaged_large_index_is_refused_as_the_whole_one_is(large, tmp_path, monkeypatch, damage, message):
    data = Path(large + ".index").read_bytes()
    prefix = str(tmp_path / "ckpt")
    Path(prefix + ".index").write_bytes(damage(data))
    errors = []
    for limit in (0, 1 << 40):  # by pieces, then whole
        monkeypatch.setattr(datafile, "STREAMED_INDEX", limit)
        with pytest.raises(CheckpointError) as caught:
            BundleReader(prefix)
        errors.append(str(caught.value))
    assert errors[0] == errors[1] and message in errors[0] and prefix + ".index" in errors[0]
