"""Issue 38: the bundle writer's work per tensor (``rename``, ``edit``, ``convert`` between layouts write through
it). Operations are counted, not seconds (``tests/call_counts.py``): the Python calls of the layout plan, the
take-over of whole data files, the index and the read-back, on name-based bundles of 10,000 and 40,000 tiny
tensors. Linear work makes four times the calls at four times the tensors; and each part stays within a few
calls per tensor (the layout once made an index entry and ran every check per tensor; the read-back made a
tensor object per key and looked each up by bisection)."""
from __future__ import annotations

import os
from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formats import open_checkpoint, write_checkpoint
from formats.core.errors import VerificationError
from formats.tf_bundle.layout import Placed, plan_layout

from tests.call_counts import calls_of
from tests.scale_bundles import name_based

SIZES = (10_000, 40_000)
SLACK = 1.15
"""Calls at 4N may be at most this many times four times those at N (linear: 1; N log N would be 1.15 only
from a few calls per tensor up)."""


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    folder = tmp_path_factory.mktemp("writer_scale")
    return [name_based(folder, n) for n in SIZES]


def _renamed(prefix: str, out: str) -> tuple[list[tuple[str, object]], object]:
    source = open_checkpoint(prefix)
    return [("net" + key[len("model"):], entry) for key, entry in source.items()], source


def _check_linear(counts: list[int], per_tensor: float, what: str) -> None:
    small, large = counts
    assert large <= SLACK * 4 * small, f"{what}: calls {counts} grow faster than the tensors"
    assert large <= per_tensor * SIZES[1] + 2000, f"{what}: {large} calls for {SIZES[1]} tensors"


def test_the_layout_plan_grows_linearly_and_makes_no_entry_per_tensor(bundles):
    counts = []
    for prefix in bundles:
        with open_checkpoint(prefix) as source:
            sources = list(source.values())
            layout, calls = calls_of(plan_layout, sources)
            assert len(layout.files) == 1 and len(layout.placed) == len(sources)
            assert layout.files[0].rows == range(len(sources))  # index order: the rows in order, a range (no int a row)
            assert layout.files[0].positions == range(len(sources))
        counts.append(calls)
    _check_linear(counts, 14, "plan_layout")  # aab6fec: 27 calls per tensor


@pytest.mark.parametrize("link", [False, True])
def test_a_rename_written_and_read_back_grows_linearly(bundles, tmp_path, link):
    """The whole write of a rename (layout, kernel copy or hard link, entries, index, read-back) on one thread."""
    counts = []
    for i, prefix in enumerate(bundles):
        out = str(tmp_path / f"out{i}" / "ckpt-1")
        pairs, source = _renamed(prefix, out)
        with source:
            report, calls = calls_of(partial(write_checkpoint, out, pairs, inputs=[source], jobs=1, link=link))
        assert report.verified and report.tensors == SIZES[i]
        counts.append(calls)
    _check_linear(counts, 85, f"write_checkpoint (link={link})")  # aab6fec: 139-146 calls per tensor
    with open_checkpoint(str(tmp_path / "out0" / "ckpt-1")) as written:  # what was meant: an independent read
        assert len(written) == SIZES[0]
        assert written["net/layer_42/unit_7/w"].read().tolist() == [4207.0] * 4


def test_the_tensors_not_taken_over_are_found_from_the_mask():
    placed = Placed(10, [0, 1, 2, 5, 9])
    assert list(placed.others(10)) == [3, 4, 6, 7, 8]
    assert list(placed.others(13)) == [3, 4, 6, 7, 8, 10, 11, 12]  # beyond the mask: none taken over
    assert list(placed.others(4)) == [3]
    assert list(Placed().others(3)) == [0, 1, 2]
    assert len(placed) == 5 and 5 in placed and 6 not in placed and 10 not in placed and -1 not in placed
    assert placed.unplaced(10) == bytes([0, 0, 0, 1, 1, 0, 1, 1, 1, 0])
    assert placed.unplaced(12) == bytes([0, 0, 0, 1, 1, 0, 1, 1, 1, 0, 1, 1]) and placed.unplaced(2) == b"\0\0"


@pytest.mark.parametrize("seed", range(200))
def test_the_tensors_not_taken_over_are_those_not_in_placed(seed):
    """Runs of the mask at a time (``others``) and a byte a position (``unplaced``): the positions ``in`` says."""
    import random

    rng = random.Random(seed)
    size = rng.randrange(0, 40)
    placed = Placed(size, [p for p in range(size) if rng.random() < rng.random()])
    for count in (0, size, size + rng.randrange(5), rng.randrange(size + 1)):
        expected = [p for p in range(count) if p not in placed]
        assert list(placed.others(count)) == expected
        assert placed.unplaced(count) == bytes(p not in placed for p in range(count))


def test_a_key_lost_from_the_index_is_named_by_the_read_back_and_nothing_is_written(bundles, tmp_path, monkeypatch):
    """When the keys of the written index do not line up with the tensors written, each is looked up by its key:
    a key missing is named (and the output is not put in place)."""
    from formats.tf_bundle import writer

    table = writer._write_table

    def drop_one(f, shards, records, *rest):  # type: ignore[no-untyped-def]
        table(f, shards, [r for r in records if r.key != "net/layer_3/unit_4/w"], *rest)

    monkeypatch.setattr(writer, "_write_table", drop_one)
    out = tmp_path / "out"
    pairs, source = _renamed(bundles[0], str(out))
    with source, pytest.raises(VerificationError) as caught:
        write_checkpoint(str(out / "ckpt-1"), pairs, inputs=[source])
    assert "net/layer_3/unit_4/w" in str(caught.value)
    assert not out.exists() or not any(out.iterdir())


def test_a_copied_tensor_damaged_in_an_edit_is_named(bundles, tmp_path, monkeypatch):
    """An edit (a selection: tensors copied one by one, not a whole file): a tiny tensor's bytes changed on their
    way to the output fail the read-back, which names it."""
    from formats.tf_bundle import writer

    take, flush = writer._Run.take, writer._Run.flush  # tiny tensors adjacent in the input: copied in runs
    damaged: list[int] = []

    def noted(self, source, offset, shard, whole):  # type: ignore[no-untyped-def]
        size = take(self, source, offset, shard, whole)
        if size >= 0 and source.key == "model/layer_9/unit_9/w":  # (an edit keeps the input's keys)
            damaged.append(offset)
        return size

    def damage(self):  # type: ignore[no-untyped-def]
        flush(self)
        while damaged:
            self.out.flush()
            os.pwrite(self.out.fileno(), b"\xab", damaged.pop())

    monkeypatch.setattr(writer._Run, "take", noted)
    monkeypatch.setattr(writer._Run, "flush", damage)
    with open_checkpoint(bundles[0]) as source:
        pairs = [(k, e) for k, e in source.items() if not k.startswith("model/layer_0/")]
        with pytest.raises(VerificationError) as caught:
            write_checkpoint(str(tmp_path / "edit" / "ckpt-1"), pairs, inputs=[source])
    assert "model/layer_9/unit_9/w" in str(caught.value) and "checksum" in str(caught.value)


def test_a_run_of_stored_bytes_goes_to_disk_piece_by_piece_while_it_is_copied(tmp_path, monkeypatch):
    """``convert --to safetensors`` of a bundle: its tensors, adjacent in the data file, are one kernel copy, made
    ``EVERY`` bytes at a time, each piece handed to the background flusher as it is copied; the file reads back
    as the safetensors package writes the same tensors (an independent writer)."""
    from safetensors.numpy import load_file

    from formats.io import background_sync, placed

    values = {f"layer_{i}/w": np.arange(i * 1000, i * 1000 + 3000, dtype=np.float32).reshape(30, 100)
              for i in range(7)}
    prefix = str(tmp_path / "in" / "ckpt-1")
    write_checkpoint(prefix, values.items())
    monkeypatch.setattr(background_sync.BackgroundSync, "EVERY", 4096)
    copies: list[int] = []
    real_copy, real_wrote = placed.copy_range, background_sync.BackgroundSync.wrote
    monkeypatch.setattr(placed, "copy_range", lambda src, dst, n, a, b: (copies.append(n), real_copy(src, dst, n, a, b))[1])
    flushed: list[int] = []
    monkeypatch.setattr(background_sync.BackgroundSync, "wrote",
                        lambda self, n: (flushed.append(n), real_wrote(self, n))[1])
    out = str(tmp_path / "out.safetensors")
    from formats import verbs

    result = verbs.convert(prefix, out, to="safetensors")
    assert result.ok and result.written.verified
    total = 7 * 3000 * 4
    assert copies == [4096] * (total // 4096) + [total % 4096]
    assert flushed[:len(copies)] == copies
    loaded = load_file(out)
    assert sorted(loaded) == sorted(values)
    for key, value in values.items():
        np.testing.assert_array_equal(loaded[key], value)


@settings(max_examples=400, deadline=None)
@given(dtype=st.sampled_from([0, 1, 2, 7, 14, 19, 21]), shape=st.lists(st.integers(0, 1 << 33), max_size=4),
       offset=st.one_of(st.sampled_from([0, 1, 0x7F, 0x80, 0x3FFF, 0x4000, 0x1FFFFF, 0x200000]),
                        st.integers(0x4000, 0x200000), st.integers(0, 1 << 62)),
       size=st.integers(0, 1 << 40), crc=st.integers(0, 0xFFFFFFFF), shard=st.integers(0, 70000))
def test_an_entry_is_encoded_as_protobuf_serializes_it(dtype, shape, offset, size, crc, shard):
    """``encode_entry`` (its fields encoded once per kind, the offset's short varints written out) gives the
    bytes the protobuf runtime serializes for the same ``BundleEntryProto``, whatever the tuple or list."""
    from formats.tf_bundle.encode import encode_entry

    from tests.proto_oracle import oracle

    e = oracle("BundleEntryProto")(dtype=dtype, shard_id=shard, offset=offset, size=size, crc32c=crc)
    e.shape.SetInParent()
    for d in shape:
        e.shape.dim.add(size=d)
    expected = e.SerializeToString(deterministic=True)
    assert encode_entry(dtype, tuple(shape), offset, size, crc, shard) == expected
    assert encode_entry(dtype, list(shape), offset, size, crc, shard) == expected
