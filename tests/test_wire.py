"""The hand-written BundleEntryProto decoder agrees with protobuf on every entry, fast path or not
(protobuf classes built from the .proto's descriptor: tests/proto_oracle.py)."""
from __future__ import annotations

import glob

from hypothesis import given
from hypothesis import strategies as st

from formats.io.sstable.table import read_table
from formats.tf_bundle.entry_wire import _fast_entry, decode_entry, decode_header

from .conftest import CORPUS
from .proto_oracle import oracle


def _reference(value: bytes):
    e = oracle("BundleEntryProto").FromString(value)
    slices = [[(x.start, x.length if x.HasField("length") else -1) for x in s.extent] for s in e.slices]
    return (e.dtype, tuple(d.size for d in e.shape.dim), e.shape.unknown_rank, e.shard_id, e.offset, e.size,
            e.crc32c, slices)


def test_every_corpus_entry_decodes_like_protobuf():
    count = fast = 0
    for index in glob.glob(str(CORPUS / "**/*.index"), recursive=True):
        pairs = read_table(open(index, "rb").read(), index)
        assert decode_header(pairs[0][1])[:2] == (oracle("BundleHeaderProto").FromString(pairs[0][1]).num_shards, 0)
        for _, value in pairs[1:]:
            assert decode_entry(value) == _reference(value)
            count += 1
            fast += _fast_entry(value) is not None
    assert count > 250 and fast > count * 0.9  # TF's layout takes the fast path


_int64 = st.integers(-(2 ** 63), 2 ** 63 - 1)


@given(dtype=st.integers(-(2 ** 31), 2 ** 31 - 1), dims=st.lists(_int64, max_size=5), shard=st.integers(0, 2 ** 31 - 1),
       offset=_int64, size=_int64, crc=st.integers(0, 2 ** 32 - 1),
       slices=st.lists(st.lists(st.tuples(_int64, st.one_of(st.none(), _int64)), max_size=3), max_size=3),
       unknown=st.booleans(), name=st.text(max_size=4))
def test_generated_entries_decode_like_protobuf(dtype, dims, shard, offset, size, crc, slices, unknown, name):
    e = oracle("BundleEntryProto")(dtype=dtype, shard_id=shard, offset=offset, size=size, crc32c=crc)
    for i, d in enumerate(dims):
        e.shape.dim.add(size=d, name=name if i == 0 else "")
    e.shape.unknown_rank = unknown
    for s in slices:
        proto = e.slices.add()
        for start, length in s:
            ext = proto.extent.add(start=start)
            if length is not None:
                ext.length = length
    value = e.SerializeToString()
    assert decode_entry(value) == _reference(value)
