"""The columnar index (formats/tf_bundle/columns.py) holds what protobuf decodes from every entry, whether a value
takes the learned fast path or is decoded in full, refuses what the reader refuses with the same words, and costs
bytes per tensor, not objects: the oracle is the protobuf runtime (tests/proto_oracle.py)."""
from __future__ import annotations

import glob
import tracemalloc

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from formats.core.errors import CorruptCheckpointError
from formats.io.sstable.table import read_table
from formats.tf_bundle import columns as columns_module
from formats.tf_bundle.columns import IndexColumns
from formats.tf_bundle.reader import BundleReader

from .conftest import CORPUS
from .proto_oracle import oracle


def _reference(value: bytes) -> tuple:
    """What protobuf decodes: (dtype, shape, shard_id, offset, size, crc32c, slices), as signed int64s."""
    e = oracle("BundleEntryProto").FromString(value)
    slices = [[(x.start, x.length if x.HasField("length") else -1) for x in s.extent] for s in e.slices]
    return (e.dtype, tuple(d.size for d in e.shape.dim), e.shard_id, e.offset, e.size, e.crc32c, slices)


def _row(columns: IndexColumns, i: int) -> tuple:
    e = columns.row(i)
    return (e.dtype, e.shape, e.shard_id, e.offset, e.size, e.crc32c, list(e.slices))


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def test_every_corpus_index_reads_as_protobuf_decodes_it():
    count = 0
    for index in glob.glob(str(CORPUS / "**/*.index"), recursive=True):
        pairs = read_table(open(index, "rb").read(), index)[1:]
        header = oracle("BundleHeaderProto").FromString(read_table(open(index, "rb").read(), index)[0][1])
        columns = IndexColumns(pairs, index, header.num_shards)
        assert columns.keys == [k for k, _ in pairs]
        for i, (key, value) in enumerate(pairs):
            assert _row(columns, i) == _reference(value), (index, key)
            assert columns[key] == columns.row(i) and key in columns
        count += len(pairs)
    assert count > 250


_offsets = st.one_of(st.integers(0, 127), st.integers(128, 2 ** 21), st.integers(2 ** 21 - 2, 2 ** 28 + 2),
                   st.integers(0, 2 ** 63 - 1))


@st.composite
def _values(draw: st.DrawFn) -> list[bytes]:
    """Entry values as TensorFlow writes them (a few kinds, many offsets and checksums), and, now and then, one
    the fast path must not take for one: a second offset or checksum field (the last wins), an unknown field, the
    fields in another order, an offset of 10 bytes (negative), a partitioned variable."""
    kinds = draw(st.lists(st.tuples(st.sampled_from([1, 2, 3, 9, 14, 19]),
                                    st.lists(st.integers(0, 300), max_size=3), st.integers(0, 3),
                                    st.integers(0, 5000)), min_size=1, max_size=4))
    values = []
    for _ in range(draw(st.integers(1, 40))):
        dtype, dims, shard, size = draw(st.sampled_from(kinds))
        offset, crc = draw(_offsets), draw(st.integers(0, 2 ** 32 - 1))
        e = oracle("BundleEntryProto")(dtype=dtype, shard_id=shard, offset=offset, size=size, crc32c=crc)
        for d in dims:
            e.shape.dim.add(size=d)
        value = e.SerializeToString()
        twist = draw(st.sampled_from(["none"] * 6 + ["offset again", "crc again", "unknown", "reorder", "negative",
                                                      "slices", "cut"]))
        if twist == "offset again":
            value = value[:-5] + b"\x20" + _varint(draw(_offsets)) + value[-5:]
        elif twist == "crc again":
            value += b"\x35" + draw(st.binary(min_size=4, max_size=4))
        elif twist == "unknown":
            value = value[:-5] + b"\x78" + _varint(draw(st.integers(0, 2 ** 20))) + value[-5:]
        elif twist == "reorder":
            value = value[-5:] + value[:-5]
        elif twist == "negative":
            value = value[:-5] + b"\x20" + _varint(-draw(st.integers(1, 2 ** 40))) + value[-5:]
        elif twist == "slices":
            s = e.slices.add()
            s.extent.add(start=0, length=1)
            value = e.SerializeToString()
        elif twist == "cut":
            value = value[:-1]
        values.append(value)
    return values


def _reader_refusal(values: list[bytes], num_shards: int = 4) -> str | None:
    """The message the reader gives for the first value it refuses (the per-entry decoder's words), or, when every
    one decodes, for the first stored in a data file the header does not declare (a value cut or twisted may say
    any shard), or None."""
    from formats.tf_bundle.reader import parse_entry

    outside = None
    for i, value in enumerate(values):
        try:
            e = parse_entry(b"k%05d" % i, value, "x.index")
        except CorruptCheckpointError as exc:
            return exc.message
        if outside is None and not e.in_shards(num_shards):
            outside = f"corrupt index: {e.name!r} is in data file {e.shard_id}, but the header declares {num_shards}"
    return outside


@settings(max_examples=300, deadline=None)
@given(values=_values())
@example(values=[b"\x08\x01\x18 x\x01 \x01(\x01"])  # (a twisted value whose bytes say data file 32 of 4)
def test_generated_indexes_read_as_protobuf_decodes_them(values):
    pairs = [(b"k%05d" % i, v) for i, v in enumerate(values)]
    refused = _reader_refusal(values)
    if refused is not None:
        with pytest.raises(CorruptCheckpointError) as caught:
            IndexColumns(pairs, "x.index", 4)
        assert caught.value.message == refused
        return
    columns = IndexColumns(pairs, "x.index", 4)
    assert len(columns) == len(values)
    for i, value in enumerate(values):
        assert _row(columns, i) == _reference(value)


def test_an_entry_in_an_undeclared_data_file_is_named_after_every_entry_decodes():
    e = oracle("BundleEntryProto")(dtype=1, shard_id=2, offset=0, size=4, crc32c=1)
    e.shape.dim.add(size=1)
    good = e.SerializeToString()
    pairs = [(b"a", good), (b"b", good)]
    with pytest.raises(CorruptCheckpointError) as caught:
        IndexColumns(pairs, "x.index", 2)
    assert caught.value.message == "corrupt index: 'a' is in data file 2, but the header declares 2"
    with pytest.raises(CorruptCheckpointError, match="not parseable"):  # a later entry that does not decode first
        IndexColumns(pairs + [(b"c", b"\x08")], "x.index", 2)


def test_entries_of_one_layout_are_decoded_in_full_once(monkeypatch):
    """Of 10,000 entries of two kinds, only the first of each goes through the per-entry decoder (and the check
    of its layout): the rest are read from their bytes (counted, not timed)."""
    values = []
    for i in range(10_000):
        e = oracle("BundleEntryProto")(dtype=1, shard_id=0, offset=i * 64, size=64 if i % 2 else 0, crc32c=i * 7919)
        e.shape.dim.add(size=16 if i % 2 else 0)
        values.append(e.SerializeToString())
    pairs = [(b"t%05d" % i, v) for i, v in enumerate(values)]
    calls = []
    decode = columns_module.parse_entry
    monkeypatch.setattr(columns_module, "parse_entry", lambda *a: calls.append(a[0]) or decode(*a))
    columns = IndexColumns(pairs, "x.index", 1)
    # the first entry (offset 0: proto3 leaves the field out, no layout to learn), then each of the two kinds
    # decoded and its layout checked once
    assert calls == [b"t00000", b"t00001", b"t00001", b"t00002", b"t00002"]
    assert [_row(columns, i) for i in (0, 1, 9_998, 9_999)] == [_reference(values[i]) for i in (0, 1, 9_998, 9_999)]


def test_an_open_reader_holds_bytes_per_tensor_not_objects(tmp_path):
    """20,000 entries: the reader keeps under 120 bytes per tensor (their keys included); a decoded object per
    entry, as before, took about 300."""
    import numpy as np

    from formats.tf_bundle.writer import write_checkpoint

    prefix = str(tmp_path / "ckpt")
    write_checkpoint(prefix, ((f"model/layer_{i // 100}/unit_{i % 100}/w", np.full(4, i, np.float32))
                              for i in range(20_000)))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        reader = BundleReader(prefix)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(reader.entries) == 20_000
    assert held / 20_000 < 120, held / 20_000


def _entry_value() -> bytes:
    e = oracle("BundleEntryProto")(dtype=1, shard_id=0, offset=64, size=4, crc32c=7)
    e.shape.dim.add(size=1)
    return e.SerializeToString()


# Sorted by their bytes; decoded with surrogateescape, the undecodable ones (b"a\xc3A", b"a\xf5") sort elsewhere
# among the texts (U+DCC3 after U+00E9, U+DCF5 before U+10000): the texts are then bisected by their bytes.
_MIXED = sorted([b"a", b"a\xc3A", b"a\xc3\xa9", b"a\xf0\x90\x80\x80", b"a\xf5", b"b/\xff", b"b/z", b"\xe2\x82\xac"])


@pytest.mark.parametrize("keys", [_MIXED, [k for k in _MIXED if k.decode("utf-8", "replace") == k.decode("utf-8",
                                                                                                       "ignore")]])
def test_keys_are_held_as_text_and_found_by_their_bytes(keys):
    assert any(not k.isascii() for k in keys)
    columns = IndexColumns([(k, _entry_value()) for k in keys], "x.index", 1)
    assert columns.texts == [k.decode("utf-8", "surrogateescape") for k in keys]
    assert columns.keys == keys and list(columns) == keys and [columns.keys[i] for i in range(len(keys))] == keys
    for order in (keys, keys[::-1], keys[1::2] + keys[::2]):  # in index order (the hint), and bisected
        assert [columns.find(k) for k in order] == [keys.index(k) for k in order]
        assert [columns.find_text(k.decode("utf-8", "surrogateescape")) for k in order] == \
            [keys.index(k) for k in order]
        assert [columns[k].key for k in order] == order
    for absent in (b"", b"a\xc3", b"a\xf4", b"b/\xfe", b"c", b"a\xf0\x90\x80\x81"):
        assert columns.find(absent) == -1 and absent not in columns
    assert columns.find_text("\ud800") == -1  # no bytes decode to it


def test_an_open_bundle_holds_each_key_once(tmp_path):
    """A bundle's keys are held once, as the text its tensors and its iteration give (the same string objects); the
    index keeps no bytes per key beside them (at a million keys: 112 MB a checkpoint)."""
    import numpy as np

    from formats import open_checkpoint
    from formats.tf_bundle.writer import write_checkpoint

    prefix = str(tmp_path / "ckpt")
    write_checkpoint(prefix, ((f"model/layer_{i // 100}/unit_{i % 100}/kernel_of_a_longer_name", np.zeros(1))
                              for i in range(20_000)))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        with open_checkpoint(prefix) as ckpt:
            keys = list(ckpt)
            held = tracemalloc.get_traced_memory()[0] - before
            texts = ckpt.reader.entries.texts
            assert all(a is b for a, b in zip(keys, texts)) and len(keys) == 20_000
            assert ckpt[keys[5]].key is keys[5] and ckpt.entries_of(keys[7:8])[0].key is keys[7]
    finally:
        tracemalloc.stop()
    import sys

    text_bytes = sum(map(sys.getsizeof, keys))  # the keys as text, held once: the columns' 24 bytes a row beside
    assert held < text_bytes + 20_000 * 40, (held - text_bytes) / 20_000
