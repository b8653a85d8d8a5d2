"""A minimal protobuf wire-format decoder for the two messages on the listing hot path.

``BundleEntryProto`` and ``BundleHeaderProto`` are decoded by hand so that
``ckpt ls`` never imports the protobuf runtime (tens of milliseconds at start-up).
Field numbers match ``formats/concepts/proto/tfckpt_bundle.proto``; unknown fields are skipped.
The generic wire primitives live in :mod:`formats.io.wire`, the other messages (object graph,
variant payloads) in :mod:`formats.concepts.proto.messages`.
"""
from __future__ import annotations

from formats.io.wire import Fields, WireError, parse_fields
from formats.io.wire import last_int as _last_int
from formats.io.wire import messages as _messages
from formats.io.wire import read_varint as _varint
from formats.io.wire import signed as _signed

__all__ = ["WireError", "decode_entry", "decode_header", "Fields", "parse_fields"]


def decode_shape(data: bytes) -> tuple[tuple[int, ...], bool]:
    """``TensorShapeProto`` -> (dims, unknown_rank)."""
    fields = parse_fields(data)
    dims = tuple(_signed(_last_int(parse_fields(d), 1)) for d in _messages(fields, 2))
    return dims, bool(_last_int(fields, 3))


def _decode_slice(data: bytes) -> list[tuple[int, int]]:
    extents = []
    for extent in _messages(parse_fields(data), 1):
        f = parse_fields(extent)
        extents.append((_signed(_last_int(f, 1)), _signed(_last_int(f, 2)) if 2 in f else -1))
    return extents


Entry = tuple[int, tuple[int, ...], bool, int, int, int, int, list[list[tuple[int, int]]]]


def _fast_shape(data: bytes, pos: int, end: int) -> tuple[int, ...] | None:
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
            value, stop = _varint(data, pos + 3, pos + 2 + length)
            if stop != pos + 2 + length or value >= 1 << 63:
                return None
            dims.append(value)
        pos += 2 + length
    return tuple(dims) if pos == end else None


_VARINT_TAGS = {0x08: 0, 0x18: 1, 0x20: 2, 0x28: 3}


def _fast_entry(data: bytes) -> Entry | None:
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
                    value, pos = _varint(data, pos + 1, n)
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
                found = _fast_shape(data, pos + 2, pos + 2 + length)
                if found is None:
                    return None
                shape = found
                pos += 2 + length
            else:
                return None
    except (IndexError, WireError):
        return None
    return ints[0], shape, False, ints[1], ints[2], ints[3], crc, []


def decode_entry(data: bytes) -> Entry:
    """``BundleEntryProto`` -> (dtype, shape, unknown_rank, shard_id, offset, size, crc32c, slices)."""
    fast = _fast_entry(data)
    if fast is not None:
        return fast
    f = parse_fields(data)
    shapes = _messages(f, 2)
    shape, unknown = decode_shape(b"".join(shapes)) if shapes else ((), False)
    slices = [_decode_slice(s) for s in _messages(f, 7)]
    return (_signed(_last_int(f, 1)), shape, unknown, _signed(_last_int(f, 3)), _signed(_last_int(f, 4)),
            _signed(_last_int(f, 5)), _last_int(f, 6), slices)


def decode_header(data: bytes) -> tuple[int, int, int, int, tuple[int, ...]]:
    """``BundleHeaderProto`` -> (num_shards, endianness, producer, min_consumer, bad_consumers)."""
    f = parse_fields(data)
    versions = _messages(f, 3)
    v = parse_fields(b"".join(versions)) if versions else {}
    bad: list[int] = []
    for item in v.get(3, []):
        if isinstance(item, bytes):  # packed
            pos = 0
            while pos < len(item):
                value, pos = _varint(item, pos, len(item))
                bad.append(_signed(value))
        else:
            bad.append(_signed(item))  # type: ignore[arg-type]
    return (_signed(_last_int(f, 1)), _last_int(f, 2), _signed(_last_int(v, 1)), _signed(_last_int(v, 2)),
            tuple(bad))
