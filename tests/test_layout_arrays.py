"""Issue 38: ``verify`` checks a large index's byte ranges with arrays (``checkpoint._layout_arrays``): at 10^6
tensors a tuple a range was 130 MB and 1.5 s. The problems must be those the check a range at a time finds - the
same messages in the same order - on random layouts (overlaps, ties, ranges past a file's end, unordered rows,
partitioned variables' slices, several data files, a missing one, bytes after the last tensor), and on a real
bundle truncated, whose problems are worked out here from its sizes."""
from __future__ import annotations

import os
import random
from array import array

import pytest

from formats import open_checkpoint, verify
from formats.tf_bundle import checkpoint

from tests.scale_bundles import name_based


class _Columns:
    def __init__(self, kinds, kind, offset, slices, texts) -> None:
        self.kinds, self.kind, self.offset, self.slices, self.texts = kinds, kind, offset, slices, texts


class _Reader:
    """What the layout check reads of a bundle: its columns, data files (sizes, a missing one) and their bytes."""

    def __init__(self, columns, sizes, missing=(), tails=None) -> None:
        self.entries = columns
        self.data_paths = [f"/x/ckpt.data-{i:05d}-of-{len(sizes):05d}" for i in range(len(sizes))]
        self.sizes, self.missing, self.tails = sizes, {m: "missing" for m in missing}, tails or {}

    def file_size(self, shard):
        return self.sizes[shard]

    def peek(self, shard, start, n):
        return self.tails.get((shard, start), b"\x00" * n)[:n]


def _random_reader(rng: random.Random) -> _Reader:
    shards = rng.randrange(1, 4)
    kinds = [(1, (rng.randrange(1, 4),), rng.randrange(shards), rng.choice([0, 4, 8, 12, 16])) for _ in range(5)]
    kinds.append((1, (), -1, 4))  # (no data file: a kind left out)
    n = rng.randrange(0, 60)
    kind = [rng.randrange(len(kinds)) for _ in range(n)]
    offset, at = [], [0] * shards
    for k in kind:
        shard, size = kinds[k][2], kinds[k][3]
        if rng.random() < 0.15:  # (an overlap, a tie or a gap)
            offset.append(max(0, at[max(shard, 0)] + rng.randrange(-20, 8)))
        else:
            offset.append(at[max(shard, 0)])
        at[max(shard, 0)] = offset[-1] + size
    if rng.random() < 0.3:  # rows not in the order of their bytes
        order = list(range(n))
        rng.shuffle(order)
        kind, offset = [kind[i] for i in order], [offset[i] for i in order]
    slices = {i: [] for i in range(n) if rng.random() < 0.1}
    sizes = [max(0, end + rng.randrange(-12, 12)) for end in at]
    missing = [s for s in range(shards) if rng.random() < 0.1]
    columns = _Columns(kinds, array("I", kind), array("q", offset), slices, [f"key_{i}" for i in range(n)])
    return _Reader(columns, sizes, missing)


def _problems(found) -> list[tuple[str, str]]:
    return [(p.where, p.message) for p in found]


def test_ranges_checked_with_arrays_find_what_one_at_a_time_finds():
    rng = random.Random(38)
    said = {"past": 0, "overlap": 0, "after": 0, "none": 0}
    for case in range(2000):
        reader = _random_reader(rng)
        expected = _problems(checkpoint._layout_problems(reader, arrays=False))
        assert _problems(checkpoint._layout_arrays(reader)) == expected, case
        for key, word in (("past", "run past"), ("overlap", "overlap"), ("after", "after the last")):
            said[key] += any(word in m for _, m in expected)
        said["none"] += not expected
    assert min(said.values()) > 100, said


def test_an_unreferenced_object_graph_after_the_last_tensor_is_no_problem_with_arrays():
    from formats.io.crc import crc32c, mask

    graph = b"g" * 10
    tail = bytes([len(graph)]) + mask(crc32c(len(graph).to_bytes(4, "little"))).to_bytes(4, "little") + graph
    columns = _Columns([(1, (1,), 0, 8)], array("I", [0, 0]), array("q", [0, 8]), {}, ["a", "b"])
    reader = _Reader(columns, [16 + len(tail)], tails={(0, 16): tail})
    assert checkpoint._layout_arrays(reader) == checkpoint._layout_problems(reader, arrays=False) == []
    reader.sizes = [17 + len(tail)]
    assert _problems(checkpoint._layout_arrays(reader)) == [("ckpt.data-00000-of-00001",
                                                             f"{1 + len(tail)} bytes after the last tensor")]


def test_ends_past_64_bits_are_checked_one_at_a_time():
    columns = _Columns([(1, (1,), 0, 1 << 61)], array("I", [0, 0]), array("q", [0, (1 << 62) + 5]), {}, ["a", "b"])
    reader = _Reader(columns, [100])
    assert _problems(checkpoint._layout_arrays(reader)) == [
        ("a", f"bytes [0, {1 << 61}) run past the end of ckpt.data-00000-of-00001 (100 bytes): truncated?"),
        ("b", f"bytes [{(1 << 62) + 5}, {(1 << 62) + 5 + (1 << 61)}) run past the end of ckpt.data-00000-of-00001 "
              "(100 bytes): truncated?")]


N = 6 * checkpoint.LAYOUT_ARRAYS_IMPORTED


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> str:
    return name_based(tmp_path_factory.mktemp("layout_arrays"), N)


def test_verify_of_a_large_truncated_bundle_names_every_tensor_cut(bundle, tmp_path, monkeypatch):
    """A bundle of 24,576 tensors of 16 bytes (checked with arrays: numpy is imported here) cut 100 bytes short: the
    last 7 tensors run past the end (the data file's size and each tensor's place known from how it was written)."""
    import shutil

    n = N
    used = []
    layout_arrays = checkpoint._layout_arrays
    monkeypatch.setattr(checkpoint, "_layout_arrays", lambda reader: used.append(1) or layout_arrays(reader))
    cut = tmp_path / "cut"
    shutil.copytree(os.path.dirname(bundle), cut)
    data = cut / "ckpt-1.data-00000-of-00001"
    size = os.path.getsize(data) - 100
    os.truncate(data, size)
    keys = [f"model/layer_{i // 100}/unit_{i % 100}/w" for i in range(n)]  # (the bytes in the order written)
    expected = [(key, f"bytes [{16 * i}, {16 * i + 16}) run past the end of ckpt-1.data-00000-of-00001 ({size} "
                 "bytes): truncated?") for i, key in enumerate(keys) if 16 * i + 16 > size]
    assert len(expected) == 7
    with open_checkpoint(str(cut / "ckpt-1")) as ckpt:
        assert not isinstance(ckpt.reader.entries.offset, list)
        arrays = _problems(ckpt.problems())
        assert used == [1]
        monkeypatch.setattr(checkpoint, "LAYOUT_ARRAYS_IMPORTED", 1 << 40)
        assert _problems(ckpt.problems()) == arrays == expected and used == [1]
    report = verify(str(cut / "ckpt-1"))
    assert not report.ok and [(p.where, p.message) for p in report.problems][:7] == expected


def test_a_name_based_verify_below_the_bound_does_not_import_numpy_for_its_ranges(bundle):
    """Where numpy is not imported yet, an index under :data:`LAYOUT_ARRAYS` rows has its ranges checked one at a
    time (numpy's import cost a name-based ``verify`` of 10^5 tensors more than the loop); the report is sound."""
    import subprocess
    import sys

    from tests.installed import child_env

    program = ("import sys; from formats import open_checkpoint\n"
               f"ckpt = open_checkpoint({bundle!r}); found = ckpt.problems()\n"
               "print(len(found), 'numpy' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True, env=child_env())
    assert done.stdout.split() == ["0", "False"]
