"""Bundle indexes written entry by entry for tests of index readers: thousands of tensors of many dtypes
and shapes, keys long, non-ASCII or full of characters JSON escapes, values as TensorFlow encodes them
and a few encoded otherwise (fields reordered, repeated). Data files are sparse files of the right size."""
from __future__ import annotations

import os
import random
from pathlib import Path

from formats.io.sstable.writer import TableWriter
from formats.io.protowire import bytes_field, fixed32_field, varint_field
from formats.tf_bundle.encode import encode_entry, encode_header, encode_shape

DTYPES = (1, 2, 3, 7, 9, 10, 14, 19, 21, 200)
"""float, double, int32, string, int64, bool, bfloat16, half, variant, and a number no DataType has."""
SHAPES = ((), (0,), (4,), (3, 4), (0, 5), (70000, 1024), (2, 3, 4, 5), (1 << 40,), (127, 128, 129))
NAMES = ("kernel", "bias", "gamma", "beta", "embeddings", "m", "v", 'quote"d', "back\\slash", "tab\there",
         "ctl\x01x", "caf\u00e9", "\u4e2d\u6587", "emoji\U0001F600", "x" * 150)


def reordered_entry(dtype: int, shape: tuple[int, ...], offset: int, size: int, crc: int, shard: int) -> bytes:
    """A BundleEntryProto with its fields in reverse order and the dtype written twice (the last wins)."""
    return (fixed32_field(6, crc) + varint_field(5, size) + varint_field(4, offset) + varint_field(3, shard)
            + bytes_field(2, encode_shape(shape)) + varint_field(1, 99) + varint_field(1, dtype))


def make_entries(count: int, seed: int = 19, shards: int = 3, object_graph: bool = False,
                 odd_every: int = 97) -> list[tuple[bytes, bytes]]:
    """``count`` (key, value) pairs sorted by key; every ``odd_every``-th value is encoded unusually."""
    rng = random.Random(seed)
    keys = {f"model/layer_{i:05d}/{rng.choice(NAMES)}".encode() for i in range(count - int(object_graph))}
    if object_graph:
        keys.add(b"_CHECKPOINTABLE_OBJECT_GRAPH")
    offsets = [0] * shards
    pairs = []
    for i, key in enumerate(sorted(keys)):
        dtype, shape = rng.choice(DTYPES), rng.choice(SHAPES)
        shard = rng.randrange(shards)
        size = 0 if 0 in shape else rng.choice((4, 16, 1000, 4096, 123457, 1 << 33))
        crc = 0 if i % 211 == 5 else rng.getrandbits(32)
        offset = offsets[shard]
        offsets[shard] += size
        encode = reordered_entry if i % odd_every == 3 else encode_entry
        pairs.append((key, encode(dtype, shape, offset, size, crc, shard)))
    return pairs


def write_bundle(prefix: Path, pairs: list[tuple[bytes, bytes]], shards: int = 3, block_size: int = 4096,
                 data_files: bool = True) -> str:
    """Write ``prefix.index`` holding ``pairs`` under a header of ``shards`` data files (written as sparse
    files, long enough for every entry, unless ``data_files`` is False); return the prefix."""
    from formats.tf_bundle.reader import data_file_name, parse_entry

    prefix.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{prefix}.index", "wb") as out:
        writer = TableWriter(out, block_size=block_size)
        writer.add(b"", encode_header(num_shards=shards))
        for key, value in pairs:
            writer.add(key, value)
        writer.finish()
    if data_files:
        ends = [0] * shards
        for key, value in pairs:
            e = parse_entry(key, value, "test")
            if not e.slices and 0 <= e.shard_id < shards:
                ends[e.shard_id] = max(ends[e.shard_id], e.offset + e.size)
        for shard, end in enumerate(ends):
            with open(data_file_name(str(prefix), shard, shards), "wb") as f:
                f.truncate(end)
    return str(prefix)


def index_bytes(prefix: str) -> int:
    """Size of the prefix's index file."""
    return os.path.getsize(prefix + ".index")
