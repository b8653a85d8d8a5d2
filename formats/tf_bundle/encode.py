"""Bytes TensorFlow writes into a bundle: header and entry protos, string and variant tensor layouts.

The two protos are encoded by hand exactly as TensorFlow's C++ ``SerializeAsString``
emits them (fields in number order, proto3 defaults omitted, ``shape`` always present).
The layouts follow ``WriteStringTensor`` and ``WriteVariantTensor`` in
``tensorflow/core/util/tensor_bundle/tensor_bundle.cc``.
"""
from __future__ import annotations

import struct

from formats.io.protowire import bytes_field as _message_field
from formats.io.protowire import encode_varint
from formats.io.protowire import varint_field as _varint_field
from formats.io.crc import crc32c, mask

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["HEADER", "encode_header", "encode_entry", "entry_parts", "join_entry", "string_layout", "variant_layout"]

_UINT32_MAX = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF


def encode_header(num_shards: int = 1, big_endian: bool = False, producer: int = 1, min_consumer: int = 0) -> bytes:
    """A ``BundleHeaderProto``; the defaults are what TensorFlow's ``BundleWriter`` writes."""
    version = _varint_field(1, producer) + _varint_field(2, min_consumer)
    return _varint_field(1, num_shards) + _varint_field(2, int(big_endian)) + _message_field(3, version)


HEADER = encode_header()
"""``08 01 1a 02 08 01``: one shard, little-endian, producer 1, min_consumer 0."""


def encode_shape(shape: Sequence[int]) -> bytes:
    """A ``TensorShapeProto`` body: one ``dim`` per dimension (a size of 0 is omitted inside it)."""
    return b"".join(_dim(d) for d in shape)


def _dim(size: int) -> bytes:
    """One ``dim`` field: ``12 <length> 08 <varint size>`` (``12 00`` for 0), written out as it is per tensor."""
    if size <= 0:
        return _message_field(2, _varint_field(1, size))
    body = encode_varint(size)
    return b"\x12" + _ONE_BYTE[len(body) + 1] + b"\x08" + body


def encode_entry(dtype: int, shape: Sequence[int], offset: int, size: int, masked_crc: int,
                 shard_id: int = 0) -> bytes:
    """A ``BundleEntryProto`` for a stored tensor, as ``BundleWriter::Add`` serializes it (fields 1-3 and 5, the
    same for every tensor of one dtype, shape, data file and size, encoded once per such kind)."""
    kind = (dtype, shape if type(shape) is tuple else tuple(shape), shard_id, size)
    parts = _KINDS.get(kind)
    if parts is None:
        parts = _kind_parts(*kind)
        if len(_KINDS) < 4096:  # a checkpoint's tensors are of a few kinds: each encoded once
            _KINDS[kind] = parts
    return join_entry(parts, offset, masked_crc)


def entry_parts(dtype: int, shape: Sequence[int], shard_id: int, size: int) -> tuple[bytes, bytes]:
    """The fields of an entry of this kind before its offset and between it and its CRC, for :func:`join_entry`
    (a caller making many entries of a few kinds keeps them by kind)."""
    return _kind_parts(dtype, tuple(shape), shard_id, size)


def join_entry(parts: tuple[bytes, bytes], offset: int, masked_crc: int) -> bytes:
    """The entry of a kind's ``parts`` (:func:`entry_parts`) at ``offset`` with ``masked_crc``."""
    head, tail = parts
    if 0 < offset < 0x4000:  # the one- and two-byte varints of the offsets of most small tensors, without a call
        head += b"\x20" + _ONE_BYTE[offset] if offset < 0x80 else bytes((0x20, offset & 0x7F | 0x80, offset >> 7))
    elif 0 < offset < 0x10000000:  # three or four bytes (the offsets of a data file's first 2 or 256 MiB)
        head += bytes((0x20, offset & 0x7F | 0x80, offset >> 7 & 0x7F | 0x80, offset >> 14)) if offset < 0x200000 \
            else bytes((0x20, offset & 0x7F | 0x80, offset >> 7 & 0x7F | 0x80, offset >> 14 & 0x7F | 0x80, offset >> 21))
    elif offset:
        head += b"\x20" + encode_varint(offset & _MASK64)
    return head + tail + _PACK_CRC(0x35, masked_crc) if masked_crc else head + tail


def _kind_parts(dtype: int, shape: tuple[int, ...], shard_id: int, size: int) -> tuple[bytes, bytes]:
    """The fields of an entry before its offset (dtype, shape, data file) and between it and its CRC (size)."""
    shape_body = encode_shape(shape)
    head = b"".join((b"\x08" + encode_varint(dtype & _MASK64) if dtype else b"",
                     b"\x12" + encode_varint(len(shape_body)), shape_body,
                     b"\x18" + encode_varint(shard_id & _MASK64) if shard_id else b""))
    return head, b"\x28" + encode_varint(size & _MASK64) if size else b""


_PACK_CRC = struct.Struct("<BI").pack
_KINDS: dict[tuple[int, tuple[int, ...], int, int], tuple[bytes, bytes]] = {}


_ONE_BYTE = [bytes((i,)) for i in range(0x80)]


def string_layout(values: Sequence[bytes]) -> tuple[list[bytes], int]:
    """The pieces of a DT_STRING tensor (varint64 lengths, masked length checksum, bytes) and its CRC.

    The CRC (unmasked) covers each length as uint32 LE (uint64 LE above 4 GiB), then the
    four stored checksum bytes, then the string bytes: what the entry's ``crc32c`` masks.
    """
    lengths = bytearray()
    crc = 0
    for value in values:
        n = len(value)
        lengths += encode_varint(n)
        crc = crc32c(struct.pack("<I", n) if n <= _UINT32_MAX else struct.pack("<Q", n), crc)
    checksum = struct.pack("<I", mask(crc))
    crc = crc32c(checksum, crc)
    for value in values:
        crc = crc32c(value, crc)
    return [bytes(lengths), checksum, *values], crc


def variant_layout(values: Sequence[bytes]) -> tuple[list[bytes], int]:
    """The pieces of a DT_VARIANT tensor (per element: varint64 length, bytes, masked CRC) and its CRC."""
    pieces: list[bytes] = []
    crc = 0
    for value in values:
        pieces.append(encode_varint(len(value)))
        crc = crc32c(struct.pack("<Q", len(value)), crc)
        pieces.append(value)
        crc = crc32c(value, crc)
        checksum = struct.pack("<I", mask(crc))
        pieces.append(checksum)
        crc = crc32c(checksum, crc)
    return pieces, crc
