"""Build small V1 checkpoints byte by byte (independent of ckpt's reader): protobuf fields by hand,
OrderedCode slice keys for small numbers, and SSTables with one block per entry when asked."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .craft import block, table, varint, with_trailer

FLOAT, DOUBLE, INT32, UINT8, INT16, INT8, STRING, COMPLEX64, INT64, BOOL = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
QINT8, QUINT8, QINT32, BFLOAT16, QINT16, QUINT16, UINT16, COMPLEX128, HALF = 11, 12, 13, 14, 15, 16, 17, 18, 19
RESOURCE, VARIANT, UINT32, UINT64 = 20, 21, 22, 23
FULL = -1  # an extent without a length: the whole dimension


def ld(number: int, payload: bytes) -> bytes:
    """A length-delimited field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def vi(number: int, value: int) -> bytes:
    """A varint field (negative numbers as 64-bit two's complement, as protobuf writes int32/int64)."""
    return varint(number << 3) + varint(value & 0xFFFFFFFFFFFFFFFF)


def shape_proto(dims: Sequence[int]) -> bytes:
    return b"".join(ld(2, vi(1, d)) for d in dims)


def slice_proto(extents: Sequence[tuple[int, int]]) -> bytes:
    out = b""
    for start, length in extents:
        ext = (vi(1, start) if start else b"") + (vi(2, length) if length != FULL else b"")
        out += ld(1, ext)
    return out


def slice_meta(name: bytes, dtype: int, shape: Sequence[int], slices: Sequence[Sequence[tuple[int, int]]]) -> bytes:
    return ld(1, name) + ld(2, shape_proto(shape)) + vi(3, dtype) + b"".join(ld(4, slice_proto(s)) for s in slices)


def meta_value(tensors: Sequence[bytes], producer: int = 1, min_consumer: int = 0) -> bytes:
    """``SavedTensorSlices{meta{tensor..., versions}}``."""
    versions = vi(1, producer) + (vi(2, min_consumer) if min_consumer else b"")
    return ld(1, b"".join(ld(1, t) for t in tensors) + ld(2, versions))


def _signed(value: int) -> bytes:
    """OrderedCode's SignedNumIncreasing for |value| < 8192."""
    x = ~value if value < 0 else value
    if x < 64:
        return bytes([0x80 ^ (value & 0xFF)])
    assert x < 8192, "craft_v1 encodes small numbers only"
    raw = bytearray((value % (1 << 16)).to_bytes(2, "big"))
    raw[0] ^= 0xC0
    return bytes(raw)


def slice_key(name: bytes, extents: Sequence[tuple[int, int]]) -> bytes:
    """``EncodeTensorNameSlice``: 0, the escaped name, the rank, then (start, length) per dimension."""
    escaped = bytes(b for c in name for b in ((0x00, 0xFF) if c == 0 else (0xFF, 0x00) if c == 0xFF else (c,)))
    rank = bytes([1, len(extents)]) if extents else b"\x00"
    return b"\x00" + escaped + b"\x00\x01" + rank + b"".join(_signed(s) + _signed(n) for s, n in extents)


def saved_slice(name: bytes, extents: Sequence[tuple[int, int]], tensor: bytes) -> bytes:
    """``SavedTensorSlices{data{name, slice, data}}``."""
    return ld(2, ld(1, name) + ld(2, slice_proto(extents)) + ld(3, tensor))


def floats(values: Sequence[float]) -> bytes:
    """A ``TensorProto`` with packed ``float_val``."""
    return ld(5, np.asarray(values, "<f4").tobytes())


def packed_varints(number: int, values: Sequence[int]) -> bytes:
    """A ``TensorProto`` with one packed varint field (int_val=7, int64_val=10, bool_val=11, half_val=13...)."""
    return ld(number, b"".join(varint(v & 0xFFFFFFFFFFFFFFFF) for v in values))


def multi_block_table(pairs: list[tuple[bytes, bytes]]) -> bytes:
    """An SSTable with one data block per entry (so a damaged value leaves the others readable)."""
    out = bytearray()
    index = []
    for key, value in sorted(pairs):
        raw = block([(key, value)])
        index.append((key, varint(len(out)) + varint(len(raw))))
        out += with_trailer(raw)
    meta_offset = len(out)
    meta = block([])
    out += with_trailer(meta)
    index_offset = len(out)
    index_block = block(index)
    out += with_trailer(index_block)
    footer = varint(meta_offset) + varint(len(meta)) + varint(index_offset) + varint(len(index_block))
    out += footer + bytes(40 - len(footer)) + bytes.fromhex("57fb808b247547db")
    return bytes(out)


def v1_file(path: Path, tensors: Sequence[bytes], values: Sequence[tuple[bytes, bytes]],
            one_block_each: bool = False, **meta: int) -> Path:
    """Write a V1 file: the meta entry for ``tensors`` plus ``values`` (key, SavedTensorSlices)."""
    pairs = sorted([(b"", meta_value(tensors, **meta)), *values])
    path.write_bytes(multi_block_table(pairs) if one_block_each else table(pairs))
    return path


def simple(path: Path, name: bytes, dtype: int, shape: Sequence[int], tensor: bytes,
           slices: Sequence[Sequence[tuple[int, int]]] | None = None, **kw: object) -> Path:
    """A V1 file holding one tensor stored as one slice (the whole tensor unless ``slices`` says otherwise;
    every declared slice gets ``tensor`` as its values)."""
    slices = [[(0, FULL)] * len(shape)] if slices is None else slices
    values = [(slice_key(name, s), saved_slice(name, s, tensor)) for s in slices]
    return v1_file(path, [slice_meta(name, dtype, shape, slices)], values, **kw)  # type: ignore[arg-type]


def flip_value_byte(data: bytes, needle: bytes) -> bytes:
    """``data`` with one byte of the first occurrence of ``needle`` flipped (to break a block's CRC)."""
    at = data.index(needle) + len(needle) // 2
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1:]
