"""Hand decoding of the two bundle messages on the listing hot path, ``BundleEntryProto`` and
``BundleHeaderProto``: every entry of a million-tensor index goes through here, and opening a bundle
imports neither a protobuf runtime nor the schema API (:mod:`formats.concepts.proto.messages`, which
declares the same messages; ``tests/test_wire.py`` checks both against protobuf). Field numbers match
``formats/concepts/proto/tfckpt_bundle.proto``; unknown fields are skipped. The generic wire primitives
live in :mod:`formats.io.protowire`.
"""
from __future__ import annotations

from formats.concepts.tensor_proto import decode_shape, decode_slice
from formats.io.protowire import WireError, last_int, messages, parse_fields, read_varint, signed

__all__ = ["WireError", "decode_entry", "decode_header"]


Entry = tuple[int, tuple[int, ...], bool, int, int, int, int, list[list[tuple[int, int]]]]


def _fast_shape(data: bytes | memoryview, pos: int, end: int) -> tuple[int, ...] | None:
    """Dims of a TensorShapeProto holding only ``dim { size }`` fields, or None for anything else."""
    dims = []
    while pos < end:
        if data[pos] != 0x12 or pos + 1 >= end:
            return None
        length = data[pos + 1]
        if length == 0:
            dims.append(0)
            pos += 2
            continue
        if data[pos + 2] != 0x08:
            return None
        if length == 2 and data[pos + 3] < 0x80:
            dims.append(data[pos + 3])
        elif length == 3 and data[pos + 4] < 0x80:
            dims.append((data[pos + 3] & 0x7F) | (data[pos + 4] << 7))
        else:
            if length >= 0x80:
                return None
            value, stop = read_varint(data, pos + 3, pos + 2 + length)
            if stop != pos + 2 + length or value >= 1 << 63:
                return None
            dims.append(value)
        pos += 2 + length
    return tuple(dims) if pos == end else None


_VARINT_TAGS = {0x08: 0, 0x18: 1, 0x20: 2, 0x28: 3}
_SHAPES: dict[bytes, tuple[int, ...]] = {}
"""Shape field bytes -> the shape, decoded once: an index of a million tensors holds a few thousand distinct
shapes, and each tensor of one shape shares one tuple."""
_MAX_SHAPES = 1 << 16


def _fast_entry(data: bytes | memoryview) -> Entry | None:
    """Straight-line decoding of the layout TensorFlow writes (fields 1-6, no slices, non-negative
    values); None sends anything else to the general decoder. Several times faster than it."""
    ints = [0, 0, 0, 0]  # dtype, shard_id, offset, size
    shape: tuple[int, ...] = ()
    crc = 0
    n = len(data)
    pos = 0
    try:
        while pos < n:
            tag = data[pos]
            slot = _VARINT_TAGS.get(tag)
            if slot is not None:
                b = data[pos + 1]
                if b < 0x80:
                    ints[slot] = b
                    pos += 2
                elif data[pos + 2] < 0x80:
                    ints[slot] = (b & 0x7F) | (data[pos + 2] << 7)
                    pos += 3
                elif data[pos + 3] < 0x80:
                    ints[slot] = (b & 0x7F) | ((data[pos + 2] & 0x7F) << 7) | (data[pos + 3] << 14)
                    pos += 4
                else:
                    value, pos = read_varint(data, pos + 1, n)
                    if value >= 1 << 63:
                        return None
                    ints[slot] = value
            elif tag == 0x35:
                if pos + 5 > n:
                    return None
                crc = int.from_bytes(data[pos + 1:pos + 5], "little")
                pos += 5
            elif tag == 0x12:
                length = data[pos + 1]
                if length >= 0x80 or pos + 2 + length > n:
                    return None
                field = bytes(data[pos + 2:pos + 2 + length])
                found = _SHAPES.get(field)
                if found is None:
                    found = _fast_shape(field, 0, length)
                    if found is None:
                        return None
                    if len(_SHAPES) < _MAX_SHAPES:
                        _SHAPES[field] = found
                shape = found
                pos += 2 + length
            else:
                return None
    except (IndexError, WireError):
        return None
    return ints[0], shape, False, ints[1], ints[2], ints[3], crc, []


def decode_entry(data: bytes | memoryview) -> Entry:
    """``BundleEntryProto`` -> (dtype, shape, unknown_rank, shard_id, offset, size, crc32c, slices)."""
    fast = _fast_entry(data)
    if fast is not None:
        return fast
    f = parse_fields(data)
    shapes = messages(f, 2)
    shape, unknown = decode_shape(b"".join(shapes)) if shapes else ((), False)
    slices = [decode_slice(s) for s in messages(f, 7)]
    return (signed(last_int(f, 1)), shape, unknown, signed(last_int(f, 3)), signed(last_int(f, 4)),
            signed(last_int(f, 5)), last_int(f, 6), slices)


def decode_header(data: bytes | memoryview) -> tuple[int, int, int, int, tuple[int, ...]]:
    """``BundleHeaderProto`` -> (num_shards, endianness, producer, min_consumer, bad_consumers)."""
    f = parse_fields(data)
    versions = messages(f, 3)
    v = parse_fields(b"".join(versions)) if versions else {}
    bad: list[int] = []
    for item in v.get(3, []):
        if isinstance(item, bytes):  # packed
            pos = 0
            while pos < len(item):
                value, pos = read_varint(item, pos, len(item))
                bad.append(signed(value))
        else:
            bad.append(signed(item))  # type: ignore[arg-type]
    return (signed(last_int(f, 1)), last_int(f, 2), signed(last_int(v, 1)), signed(last_int(v, 2)),
            tuple(bad))
