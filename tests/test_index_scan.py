"""Issue 38: a large index's blocks found with arrays (formats/io/sstable/scan.py) and its values' fields walked with
arrays (formats/tf_bundle/entry_arrays.py) give what the entry-by-entry path gives - the same pairs, the same columns,
the same refusal in the same words - and fall back to it for anything laid out otherwise. The oracles: ``parse_block``
a pair at a time, ``IndexColumns`` fed pairs, and protobuf's own decoder (tests/proto_oracle.py)."""
from __future__ import annotations

import glob
import random
import struct
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formats.core.errors import CorruptCheckpointError
from formats.io.sstable import scan, table as table_module
from formats.io.sstable.block import parse_block
from formats.io.sstable.scan import scan_block
from formats.io.sstable.table import read_table
from formats.io.sstable.writer import _Block
from formats.tf_bundle import reader as reader_module
from formats.tf_bundle.columns import IndexColumns
from formats.tf_bundle.entry_arrays import value_fields
from formats.tf_bundle.reader import BundleReader

from .conftest import CORPUS
from .hostile import craft
from .proto_oracle import oracle


def _built(pairs: list[tuple[bytes, bytes]], interval: int = 16) -> bytes:
    b = _Block(interval)
    for key, value in pairs:
        b.add(key, value)
    return b.finish()


def _scanned_pairs(block: bytes) -> list[tuple[bytes, bytes]] | None:
    found = scan_block(np, block)
    return None if found is None else [found.pair(i) for i in range(len(found))]


def _value(dtype: int = 1, dims: tuple[int, ...] = (4,), offset: int = 64, size: int = 16, crc: int = 7,
           shard: int = 0) -> bytes:
    e = oracle("BundleEntryProto")(dtype=dtype, shard_id=shard, offset=offset, size=size, crc32c=crc)
    for d in dims:
        e.shape.dim.add(size=d)
    return e.SerializeToString()


_keys = st.lists(st.binary(min_size=0, max_size=300), min_size=1, max_size=200, unique=True).map(sorted)


@settings(max_examples=200, deadline=None)
@given(keys=_keys, interval=st.sampled_from([1, 2, 16, 64]), seed=st.integers(0, 2 ** 32))
def test_a_block_scanned_gives_the_pairs_parse_block_gives(keys, interval, seed):
    """Keys of 0-300 bytes (two-byte varints, long shared prefixes), values of 0-300 bytes, restart points every
    1-64 entries (TensorFlow's 16): the scan's pairs are parse_block's, byte for byte."""
    rng = random.Random(seed)
    pairs = [(k, rng.randbytes(rng.choice([0, 5, 40, 200, 300]))) for k in keys]
    block = _built(pairs, interval)
    assert _scanned_pairs(block) == [(k, bytes(v)) for k, v in parse_block(block)] == pairs


def test_runs_longer_than_the_scan_takes_are_left_to_parse_block():
    pairs = [(b"k%05d" % i, b"v") for i in range(200)]
    assert _scanned_pairs(_built(pairs, scan.MAX_RUN)) == pairs
    assert scan_block(np, _built(pairs, scan.MAX_RUN + 1)) is None  # (parse_block reads it)
    assert [(k, bytes(v)) for k, v in parse_block(_built(pairs, scan.MAX_RUN + 1))] == pairs


def _restarted(block: bytes, restarts: list[int]) -> bytes:
    """``block`` with its restart array replaced by ``restarts``."""
    count = int.from_bytes(block[-4:], "little")
    entries = block[:len(block) - 4 - 4 * count]
    return entries + struct.pack(f"<{len(restarts) + 1}I", *restarts, len(restarts))


def test_blocks_laid_out_otherwise_are_not_scanned_and_parse_block_says_what_is_wrong():
    pairs = [(b"key%03d" % i, b"value") for i in range(40)]
    good = _built(pairs)
    count = int.from_bytes(good[-4:], "little")
    limit = len(good) - 4 - 4 * count
    restarts = list(struct.unpack(f"<{count}I", good[limit:len(good) - 4]))
    assert _scanned_pairs(good) == pairs
    second = 3 + len(pairs[0][0]) + len(pairs[0][1])  # (where entry 1 starts: it shares bytes with entry 0)
    # a restart point inside an entry, one at an entry sharing bytes, none at 0 (the first run unlisted, or one
    # starting inside an entry), out of order, past the entries
    not_scanned = [_restarted(good, [0, restarts[1] + 1]), _restarted(good, [0, second, restarts[1]]),
                   _restarted(good, restarts[1:]), _restarted(good, [3, restarts[1]]),
                   _restarted(good, [0, restarts[2], restarts[1]]), _restarted(good, [0, limit])]
    for block in not_scanned:
        assert scan_block(np, block) is None
        assert [(k, bytes(v)) for k, v in parse_block(block)] == pairs  # (parse_block reads them: not the array)
    one_run = _built(pairs, 64)  # (a restart point at 0 alone: its first entry's varints can be lengthened)
    for width in (5, 6):  # shared = 0 in 5 bytes (parse_block reads it) and in 6 (it does not)
        block = bytes([0x80] * (width - 1) + [0]) + one_run[1:]
        if width == 5:
            assert _scanned_pairs(block) == [(k, bytes(v)) for k, v in parse_block(block)] == pairs
        else:
            assert scan_block(np, block) is None
            with pytest.raises(ValueError, match="varint runs past its bounds"):
                parse_block(block)
    # damaged entries: the scan declines, parse_block names the problem
    for damaged, words in ((good[:limit - 3] + good[limit:], "runs past the end of its block"),
                           (bytes([0x80] * 7) + good[7:], "varint runs past its bounds"),
                           (b"\x05" + good[1:], "shares 5 bytes with a 0-byte previous key"),
                           (good[:-4] + struct.pack("<I", 10 ** 6), "restart points")):
        assert scan_block(np, damaged) is None
        with pytest.raises(ValueError, match=words):
            parse_block(damaged)


def test_keys_wider_than_parse_block_allows_are_not_scanned():
    """Each key sharing 60,000 bytes with the one before: the keys' bytes pass parse_block's bound, and the scan
    leaves the block to it (which names the bound)."""
    long_key = b"x" * 60_000
    pairs = [(long_key + b"%04d" % i, b"") for i in range(600)]
    block = _built(pairs, 64)
    assert scan_block(np, block) is None
    with pytest.raises(ValueError, match="would take more than"):
        parse_block(block)


def _walk(values: list[bytes]) -> tuple[bytes, object]:
    data = b"".join(values)
    ends = np.cumsum([len(v) for v in values])
    return data, value_fields(np, np.frombuffer(data, np.uint8), ends - [len(v) for v in values], ends)


def test_usual_values_give_protobufs_offset_and_crc_and_the_rest_are_left_whole():
    usual = [_value(), _value(offset=0), _value(offset=2 ** 63 - 1, crc=2 ** 32 - 1), _value(dims=()),
             _value(dims=(3, 300, 70_000), shard=2),
             _value()[:2] + b"\x20\x05" + _value(offset=0)[2:],  # the offset field first
             _value(offset=0)[:-5] + b"\x20\x07" + _value()[-5:],  # the offset field after the size
             b"\x08\x01\x08\x02" + _value(offset=9)[2:]]  # dtype twice (the last wins)
    unusual = [_value()[:-5] + b"\x20\x09" + _value()[-5:],  # two offset fields
               _value(offset=0)[:-5] + b"\x20" + b"\xff" * 9 + b"\x01" + _value()[-5:],  # a 10-byte offset
               _value()[-5:] + _value()[:-5],  # the CRC32C first
               _value() + b"\x35\x00\x00\x00\x00",  # a second CRC32C field
               _value()[:-5] + b"\x78\x01" + _value()[-5:],  # an unknown field
               _value()[:-1],  # cut
               b"\x35\x01\x02\x03",  # shorter than a CRC32C field
               b"\x12\x7f\x08\x01" + _value()[-5:],  # a shape longer than the value
               b"\x08\x01" * 12 + _value()[2:],  # more fields than the walk takes (its offset field the 14th)
               craft.entry(1, [2], slices=[[(0, 1)]])]  # a partitioned variable's slices
    data, fields = _walk(usual + unusual)
    assert fields.usual.tolist() == [True] * len(usual) + [False] * len(unusual)
    for i, value in enumerate(usual):
        e = oracle("BundleEntryProto").FromString(value)
        assert (int(fields.offsets[i]), int(fields.crcs[i])) == (e.offset, e.crc32c)
        rest = oracle("BundleEntryProto").FromString(data[sum(map(len, usual[:i])):fields.cut_starts[i]] +
                                                     data[fields.cut_stops[i]:fields.crc_starts[i]])
        assert (rest.dtype, list(rest.shape.dim), rest.shard_id, rest.size, rest.offset, rest.crc32c) == \
            (e.dtype, list(e.shape.dim), e.shard_id, e.size, 0, 0)  # the signature: all but offset and CRC32C


def _columns(pairs: list[tuple[bytes, bytes]], num_shards: int, scanned: bool) -> IndexColumns:
    """The columns of ``pairs`` fed as pairs, or as blocks of TensorFlow's layout scanned (blocks of 97 entries)."""
    if not scanned:
        return IndexColumns(pairs, "x.index", num_shards)
    blocks = []
    for i in range(0, len(pairs), 97):
        found = scan_block(np, _built(pairs[i:i + 97]))
        assert found is not None
        blocks.append(found)
    return IndexColumns((), "x.index", num_shards, blocks=blocks)


def test_scanned_blocks_fill_list_columns_too():
    """A small index's columns are lists (a large one's arrays): scanned blocks fill either."""
    pairs = [(b"t%05d" % i, _value(offset=64 * i, crc=i + 1)) for i in range(500)]
    found = scan_block(np, _built(pairs))
    assert found is not None
    lists = IndexColumns((), "x.index", 1, compact=False, blocks=[found])
    assert isinstance(lists.offset, list) and isinstance(lists.kind, list)
    _same(lists, IndexColumns(pairs, "x.index", 1))


def _same(a: IndexColumns, b: IndexColumns) -> None:
    assert a.texts == b.texts and a.kinds == b.kinds and a.slices == b.slices
    assert (list(a.kind), list(a.offset), list(a.crc), a._text_order) == (list(b.kind), list(b.offset),
                                                                          list(b.crc), b._text_order)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2 ** 32), count=st.integers(1, 400), twisted=st.floats(0, 0.3))
def test_scanned_blocks_give_the_columns_and_refusals_pairs_give(seed, count, twisted):
    """Keys (some not UTF-8) and values of a few kinds, some twisted (another field order, a second offset, an
    unknown field, slices, a negative offset, cut, another data file): the columns, or the refusal's words, as fed
    pair by pair."""
    rng = random.Random(seed)
    kinds = [(rng.choice([1, 2, 9, 19]), tuple(rng.randrange(0, 300) for _ in range(rng.randrange(0, 3))),
              rng.choice([0, 0, 0, 1, 5]), rng.randrange(0, 5000)) for _ in range(rng.randrange(1, 5))]
    keys = sorted({bytes(rng.choice(b"ab/_\xc3\xa9\xff") for _ in range(rng.randrange(1, 12))) for _ in range(count)})
    pairs = []
    for key in keys:
        dtype, dims, shard, size = rng.choice(kinds)
        value = _value(dtype, dims, rng.choice([0, 100, 2 ** 30, 2 ** 62]), size, rng.randrange(2 ** 32), shard)
        if rng.random() < twisted:
            value = rng.choice([value[-5:] + value[:-5], value[:-5] + b"\x20\x03" + value[-5:],
                                value[:-5] + b"\x78\x01" + value[-5:], value[:-1], craft.entry(1, [2], 8, 8, slices=[[(0, 1)]]),
                                value[:-5] + b"\x20" + b"\xff" * 9 + b"\x01" + value[-5:]])
        pairs.append((key, value))
    outcomes = []
    listed = scan.LISTED
    for scanned, at_once in ((False, listed), (True, listed), (True, 7)):  # (7: a block's entries listed in parts)
        scan.LISTED = at_once
        try:
            outcomes.append(_columns(pairs, 4, scanned))
        except CorruptCheckpointError as exc:
            outcomes.append(exc.message)
        finally:
            scan.LISTED = listed
    if isinstance(outcomes[0], str):
        assert outcomes[1] == outcomes[2] == outcomes[0]
    else:
        _same(outcomes[0], outcomes[1])
        _same(outcomes[0], outcomes[2])


def test_the_first_value_of_each_signature_is_decoded_in_full_once(monkeypatch):
    from formats.tf_bundle import columns as columns_module

    pairs = [(b"t%05d" % i, _value(1, (4,) if i % 2 else (8,), 64 * i, 16 if i % 2 else 32, i + 1))
             for i in range(1000)]
    calls = []
    decode = columns_module.parse_entry
    monkeypatch.setattr(columns_module, "parse_entry", lambda *a: calls.append(a[0]) or decode(*a))
    scanned = _columns(pairs, 1, True)
    # entry 0 (offset 0: no offset field; its signature is that of every later one of its kind), entry 1
    assert calls == [b"t00000", b"t00001"]
    _same(scanned, IndexColumns(pairs, "x.index", 1))


def _force_scans(monkeypatch) -> None:
    monkeypatch.setattr(reader_module, "SCANNED_INDEX", 0)
    monkeypatch.setattr(reader_module, "COMPACT_INDEX", 0)
    monkeypatch.setattr(table_module, "MIN_SCANNED", 0)


def test_every_corpus_index_opens_the_same_scanned(monkeypatch):
    indexes = sorted(glob.glob(str(CORPUS.parent / "**/*.index"), recursive=True))  # (TensorFlow's and others')
    assert len(indexes) > 80
    found = []
    for index in indexes:
        prefix = index[:-len(".index")]
        plain = BundleReader(prefix)
        with monkeypatch.context() as m:
            _force_scans(m)
            found = _counting_scans(m)
            scanned = BundleReader(prefix)
        assert found and all(x is not None for x in found), index  # (TensorFlow's blocks: every one scanned)
        assert scanned.header == plain.header
        _same(scanned.entries, plain.entries)
        assert scanned.entries.keys == [k for k, _ in read_table(open(index, "rb").read(), index)[1:]]


def _counting_scans(monkeypatch) -> list:
    """The blocks' scans from now on (each a ScannedBlock, or None where the scan declined)."""
    found: list = []
    real = table_module.scan_block
    monkeypatch.setattr(table_module, "scan_block", lambda np_, block: found.append(real(np_, block)) or found[-1])
    return found


def test_a_large_index_is_scanned_and_a_damaged_entry_named_as_before(tmp_path, monkeypatch):
    """An index of 30,000 entries in TensorFlow's blocks (written by ckpt's writer): scanned once numpy is imported;
    the same columns as the pairs; an entry made unreadable (a dimension of -1, its block rebuilt and checksummed)
    refused in the reader's words either way."""
    from formats.tf_bundle.writer import write_checkpoint

    prefix = str(tmp_path / "ckpt")
    write_checkpoint(prefix, ((f"model/layer_{i // 100}/unit_{i % 100}/w", np.full(i % 3 + 1, i, np.float32))
                              for i in range(30_000)))
    found = _counting_scans(monkeypatch)
    assert "numpy" in sys.modules
    scanned = BundleReader(prefix)
    assert len(found) > 1 and all(x is not None for x in found)
    with monkeypatch.context() as m:
        m.delitem(sys.modules, "numpy")
        plain = BundleReader(prefix)
    blocks = table_module.Table(open(prefix + ".index", "rb").read(), "x").blocks
    assert len(found) == sum(ref.size >= scan.MIN_SCANNED for ref in blocks) == len(blocks) - 1  # (the last: small)
    _same(scanned.entries, plain.entries)
    assert len(plain.entries) == 30_000
    data = open(prefix + ".index", "rb").read()
    key = b"model/layer_150/unit_50/w"
    table = table_module.Table(data, "x")
    raws = []
    for ref in table.blocks:
        raw = data[ref.offset:ref.offset + ref.size]
        pairs = [(k, bytes(v)) for k, v in parse_block(raw)]
        if any(k == key for k, _ in pairs):
            pairs = [(k, craft.entry(1, [-1], offset=64, size=12) if k == key else v) for k, v in pairs]
            raw = _built(pairs)
        raws.append(raw)
    rebuilt, _ = craft.blocks_table(raws, [r.separator for r in table.blocks])
    (tmp_path / "bad.index").write_bytes(rebuilt)
    (tmp_path / "bad.data-00000-of-00001").write_bytes((tmp_path / "ckpt.data-00000-of-00001").read_bytes())
    messages = []
    for keep_numpy in (True, False):
        with monkeypatch.context() as m:
            if not keep_numpy:
                m.delitem(sys.modules, "numpy")
            with pytest.raises(CorruptCheckpointError) as caught:
                BundleReader(str(tmp_path / "bad"))
            messages.append(caught.value.message)
    assert messages[0] == messages[1] == f"corrupt index: {key!r} has a negative dimension, offset or size"


def test_a_scanned_block_whose_keys_are_out_of_order_is_refused_as_entries_refuses_it():
    pairs = [(b"model/unit_%05d/w" % i, _value(offset=64 * i)) for i in range(3000)]
    swapped = pairs[:1500] + [pairs[1501], pairs[1500]] + pairs[1502:]
    cases = ((pairs, pairs[-1][0], pairs), (swapped, pairs[-1][0], "key 1501 is out of order"),
             (pairs, pairs[-2][0], "key 2999 is out of order"))  # (the last key above the block's separator)
    for block_pairs, separator, expected in cases:
        raw = _built(block_pairs)
        assert len(raw) >= scan.MIN_SCANNED
        data, _ = craft.blocks_table([raw], [separator])
        outcomes = []
        for ask in (lambda t: t.entries(0), lambda t: t.scanned(0, np)):
            try:
                got = ask(table_module.Table(data, "x.index", "index"))
                outcomes.append([(k, bytes(v)) for k, v in got] if isinstance(got, list) else
                                [got.pair(i) for i in range(len(got))])
            except CorruptCheckpointError as exc:
                outcomes.append(exc.message)
        if isinstance(expected, str):
            expected = f"corrupt index: data block at offset 0: {expected}"
        assert outcomes == [expected, expected]


@pytest.mark.parametrize("n", [10, 3000], ids=["listed", "scanned"])
def test_keys_met_are_held_as_the_strings_given(tmp_path, n, monkeypatch):
    """``like`` (a writer's read-back): each key that is the next string given is held as that very string; a key
    that is not, or past the strings given, as its own decoded text - one string given a key, in order, either way
    (a small index's pairs, or a large one's scanned blocks)."""
    from formats.tf_bundle.checkpoint import BundleCheckpoint
    from tests.scale_bundles import name_based

    scanned = []
    real = IndexColumns._decode_scanned
    monkeypatch.setattr(IndexColumns, "_decode_scanned", lambda self, *a: scanned.append(1) or real(self, *a))
    prefix = name_based(tmp_path, n)
    plain = list(BundleReader(prefix).entries.texts)
    given = [("~" + text)[1:] for text in plain]  # equal, not the same objects
    assert all(a == b and a is not b for a, b in zip(given, plain))
    del scanned[:]
    texts = BundleCheckpoint(prefix, like=iter(given)).reader.entries.texts
    assert texts == plain and all(a is b for a, b in zip(texts, given))
    assert bool(scanned) == (n == 3000)
    other = list(given)
    other[7] = "model/not/a/key"
    texts = BundleCheckpoint(prefix, like=iter(other[:-5])).reader.entries.texts
    assert texts == plain
    assert [a is b for a, b in zip(texts, other)] == [i != 7 and i < n - 5 for i in range(n)]
