"""Build small bundles byte by byte for hostile-input tests (independent of ckpt's own writer)."""
from __future__ import annotations

import struct
from pathlib import Path

from formats.io.crc import crc32c, mask
from formats.concepts.proto.messages import BUNDLE_ENTRY, BUNDLE_HEADER, encode


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def block(pairs: list[tuple[bytes, bytes]], restarts: list[int] | None = None) -> bytes:
    """A block with no prefix compression (a restart at every entry unless ``restarts`` is given)."""
    body = bytearray()
    offsets = []
    for key, value in pairs:
        offsets.append(len(body))
        body += varint(0) + varint(len(key)) + varint(len(value)) + key + value
    restarts = offsets if restarts is None else restarts
    for r in restarts or [0]:
        body += struct.pack("<I", r)
    body += struct.pack("<I", len(restarts or [0]))
    return bytes(body)


def with_trailer(data: bytes, kind: int = 0) -> bytes:
    return data + bytes([kind]) + struct.pack("<I", mask(crc32c(data + bytes([kind]))))


def table(pairs: list[tuple[bytes, bytes]], data_block: bytes | None = None, kind: int = 0) -> bytes:
    """An SSTable holding ``pairs`` in one data block (or ``data_block`` verbatim)."""
    raw = block(pairs) if data_block is None else data_block
    return blocks_table([raw], [pairs[-1][0] if pairs else b""], kind)[0]


def blocks_table(raws: list[bytes], separators: list[bytes], kind: int = 0) -> tuple[bytes, list[int]]:
    """An SSTable of the data blocks ``raws`` (verbatim) under the index keys ``separators``, and each data block's
    offset."""
    out = bytearray()
    handles, offsets = [], []
    for raw in raws:
        offsets.append(len(out))
        handles.append(varint(len(out)) + varint(len(raw)))
        out += with_trailer(raw, kind)
    meta_offset = len(out)
    meta = block([])
    out += with_trailer(meta)
    index_offset = len(out)
    index = block(list(zip(separators, handles)))
    out += with_trailer(index)
    footer = varint(meta_offset) + varint(len(meta)) + varint(index_offset) + varint(len(index))
    out += footer + bytes(40 - len(footer)) + bytes.fromhex("57fb808b247547db")
    return bytes(out), offsets


def header(num_shards: int = 1, big_endian: bool = False) -> bytes:
    return encode(BUNDLE_HEADER, {"num_shards": num_shards, "endianness": 1 if big_endian else 0,
                                  "version": {"producer": 1}})


def entry(dtype: int, shape: list[int], offset: int = 0, size: int = 0, data: bytes | None = None,
          crc: int | None = None, shard: int = 0, slices: list[list[tuple[int, int]]] | None = None) -> bytes:
    if crc is None and data is not None:
        crc = mask(crc32c(data))
    return encode(BUNDLE_ENTRY, {
        "dtype": dtype, "shard_id": shard, "offset": offset, "size": size, "crc32c": crc or 0,
        "shape": {"dim": [{"size": d} for d in shape]} if shape else None,
        "slices": [{"extent": [{"start": start, "length": length if length >= 0 else None} for start, length in s]}
                   for s in slices or []]})


def bundle(directory: Path, name: str, entries: list[tuple[bytes, bytes]], data: bytes = b"",
           num_shards: int = 1, big_endian: bool = False) -> Path:
    """Write ``name.index`` (header + entries, keys sorted) and one data file; return the prefix."""
    prefix = directory / name
    pairs = [(b"", header(num_shards, big_endian))] + sorted(entries)
    Path(f"{prefix}.index").write_bytes(table(pairs))
    for shard in range(num_shards if num_shards < 16 else 1):
        Path(f"{prefix}.data-{shard:05d}-of-{num_shards:05d}").write_bytes(data if shard == 0 else b"")
    return prefix


def string_tensor(values: list[bytes]) -> tuple[bytes, int]:
    """A DT_STRING tensor's bytes as a bundle stores them (varint lengths, masked CRC32C of the lengths
    as uint32, the bytes) and the masked CRC32C its entry holds."""
    lengths = b"".join(varint(len(v)) for v in values)
    crc = 0
    for v in values:
        crc = crc32c(struct.pack("<I", len(v)), crc)
    checksum = struct.pack("<I", mask(crc))
    crc = crc32c(checksum, crc)
    for v in values:
        crc = crc32c(v, crc)
    return lengths + checksum + b"".join(values), mask(crc)


def graph_node(children: list[tuple[int, str]] = (), attributes: list[tuple[str, str, str]] = ()) -> dict:
    """A ``TrackableObject``: ``(node id, local name)`` children, ``(name, full name, checkpoint key)`` attributes."""
    return {"children": [{"node_id": i, "local_name": n} for i, n in children],
            "attributes": [{"name": a, "full_name": f, "checkpoint_key": k} for a, f, k in attributes]}


def object_bundle(directory: Path, name: str, graph: bytes | list[dict],
                  tensors: list[tuple[bytes, list[int], bytes]] = ()) -> Path:
    """A bundle holding the object graph ``graph`` (serialized, or nodes for :func:`graph_node`) and
    float32 ``(key, shape, little-endian bytes)`` tensors."""
    from formats.concepts.proto.messages import TRACKABLE_OBJECT_GRAPH

    if not isinstance(graph, bytes):
        graph = encode(TRACKABLE_OBJECT_GRAPH, {"nodes": graph})
    data, crc = string_tensor([graph])
    entries = [(b"_CHECKPOINTABLE_OBJECT_GRAPH", entry(7, [], 0, len(data), crc=crc))]
    for key, shape, raw in tensors:
        entries.append((key, entry(1, shape, len(data), len(raw), raw)))
        data += raw
    return bundle(directory, name, entries, data)
