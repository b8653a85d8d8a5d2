"""Hand decoding of the two bundle messages on the listing hot path, ``BundleEntryProto`` and
``BundleHeaderProto``: every entry of a million-tensor index goes through here, and opening a bundle
imports neither a protobuf runtime nor the schema API (:mod:`formats.concepts.proto.messages`, which
declares the same messages; ``tests/test_wire.py`` checks both against protobuf). Field numbers match
``formats/concepts/proto/tfckpt_bundle.proto``; unknown fields are skipped. The generic wire primitives
live in :mod:`formats.io.protowire`.
"""
from __future__ import annotations

from formats.concepts.tensor_proto import decode_shape, decode_slice
from formats.core.errors import CorruptCheckpointError
from formats.core.value_tuples import ValueTuple
from formats.io.protowire import WireError, last_int, messages, parse_fields, read_varint, signed

__all__ = ["WireError", "decode_entry", "decode_header", "BundleHeader", "RawEntry", "parse_entry", "parse_header"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from formats.concepts.slice_key import Extent


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


# -- the checked entries ---------------------------------------------------------------------------
MAX_SHARDS = 1 << 20


class BundleHeader(ValueTuple):
    """The ``BundleHeaderProto`` stored under the empty key."""

    num_shards: int
    big_endian: bool
    producer: int
    min_consumer: int
    bad_consumers: tuple[int, ...] = ()


class RawEntry(ValueTuple):
    """One decoded ``BundleEntryProto``; ``slices`` is non-empty for a partitioned variable (a namedtuple:
    cheap to build for an index of a million entries)."""

    key: bytes
    dtype: int
    shape: tuple[int, ...]
    shard_id: int
    offset: int
    size: int
    crc32c: int
    slices: Sequence[list[Extent]] = ()

    def in_shards(self, num_shards: int) -> bool:
        """Whether the entry's bytes are in one of ``num_shards`` data files (or it needs none: it is
        empty, or partitioned into slices stored as entries of their own)."""
        return bool(self.slices) or not self.size or 0 <= self.shard_id < num_shards

    @property
    def name(self) -> str:
        """The key as text (undecodable bytes kept via surrogateescape, so it round-trips)."""
        return self.key.decode("utf-8", "surrogateescape")


def parse_header(value: bytes | memoryview, path: str) -> BundleHeader:
    """The bundle header entry's value decoded and checked (CorruptCheckpointError naming ``path``)."""
    try:
        num_shards, endianness, producer, min_consumer, bad = decode_header(value)
    except WireError as exc:
        raise CorruptCheckpointError(path, f"corrupt index: header entry is not a BundleHeaderProto ({exc})") from None
    if not 0 <= num_shards <= MAX_SHARDS:
        raise CorruptCheckpointError(path, f"corrupt index: header claims {num_shards} data files")
    if endianness not in (0, 1):
        raise CorruptCheckpointError(path, f"corrupt index: unknown endianness {endianness}")
    return BundleHeader(num_shards, endianness == 1, producer, min_consumer, bad)


def parse_entry(key: bytes, value: bytes | memoryview, path: str) -> RawEntry:
    """One index entry's value decoded and checked (CorruptCheckpointError naming ``path``)."""
    try:
        dtype, shape, unknown_rank, shard, offset, size, crc, slices = decode_entry(value)
    except WireError as exc:
        raise CorruptCheckpointError(path, f"corrupt index: entry for {key!r} is not parseable ({exc})") from None
    if unknown_rank:
        raise CorruptCheckpointError(path, f"corrupt index: {key!r} has an unknown rank")
    if (shape and min(shape) < 0) or offset < 0 or size < 0:
        raise CorruptCheckpointError(path, f"corrupt index: {key!r} has a negative dimension, offset or size")
    return RawEntry(key, dtype, shape, shard, offset, size, crc, slices)
