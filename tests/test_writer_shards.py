"""The bundle writer's ``shards``: data spread over ``prefix.data-0000k-of-0000N`` as TensorFlow's sharded saving."""
from __future__ import annotations

import os

import numpy as np
import pytest

from formats import open_checkpoint
from formats.core.errors import InvalidOutputError
from formats.tf_bundle.writer import write_checkpoint

TENSORS = [("a", np.arange(10, dtype=np.float32)), ("b", np.ones((3, 3))),
           ("c", np.array([b"x", b"yy"], dtype=object)), ("d", np.int64(5))]


def test_each_tensor_goes_to_its_data_file_and_the_header_counts_them(tmp_path):
    prefix = tmp_path / "ck"
    report = write_checkpoint(prefix, TENSORS, shards=[0, 1, 1, 3])
    names = [f"ck.data-0000{k}-of-00004" for k in range(4)]
    assert sorted(os.listdir(tmp_path)) == sorted(names + ["ck.index"])
    assert report.files == [str(prefix) + ".index"] + [str(tmp_path / n) for n in names]
    assert report.verified
    sizes = [os.path.getsize(tmp_path / n) for n in names]
    assert sizes == [40, 72 + len(b"x") + len(b"yy") + 2 + 4, 0, 8]  # c: two varint lengths, a masked crc
    with open_checkpoint(prefix) as ckpt:
        assert ckpt.metadata["num_shards"] == 4
        assert {k: e.raw.shard_id for k, e in ckpt.items()} == {"a": 0, "b": 1, "c": 1, "d": 3}
        assert {k: e.raw.offset for k, e in ckpt.items()} == {"a": 0, "b": 0, "c": 72, "d": 0}
        for key, value in TENSORS:
            assert np.array_equal(ckpt[key].read(), value)
        assert ckpt.problems() == []


def test_the_object_graph_takes_the_last_shard_number(tmp_path):
    prefix = tmp_path / "ck"
    write_checkpoint(prefix, TENSORS[:2], object_graph=b"", shards=[0, 0, 1])
    with open_checkpoint(prefix) as ckpt:
        assert ckpt.reader.entries[b"_CHECKPOINTABLE_OBJECT_GRAPH"].shard_id == 1


@pytest.mark.parametrize("shards, message", [
    ([1, 0, 1, 1], "never-decreasing"),
    ([0, 0, 0], "fewer shard numbers"),
    ([0, 0, 0, 0, 0], "more shard numbers"),
    ([0, -1, 0, 0], "integers from 0"),
])
def test_bad_shard_numbers_leave_nothing(tmp_path, shards, message):
    with pytest.raises(InvalidOutputError, match=message):
        write_checkpoint(tmp_path / "out" / "ck", TENSORS, shards=shards)
    assert not (tmp_path / "out").exists()
