"""TensorFlow's small shared messages, decoded with the wire primitives: ``TensorShapeProto`` and
``TensorSliceProto`` (``tensorflow/core/framework/tensor_shape.proto``, ``tensor_slice.proto``)."""
from __future__ import annotations

from formats.io.wire import Buffer, last_int, messages, parse_fields, signed

__all__ = ["decode_shape", "decode_slice"]


def decode_shape(data: Buffer) -> tuple[tuple[int, ...], bool]:
    """``TensorShapeProto`` -> (dims, unknown_rank)."""
    fields = parse_fields(data)
    dims = tuple(signed(last_int(parse_fields(d), 1)) for d in messages(fields, 2))
    return dims, bool(last_int(fields, 3))


def decode_slice(data: Buffer) -> list[tuple[int, int]]:
    """``TensorSliceProto`` -> one (start, length) per dimension; length -1 where the extent has none
    (the whole dimension)."""
    extents = []
    for extent in messages(parse_fields(data), 1):
        f = parse_fields(extent)
        extents.append((signed(last_int(f, 1)), signed(last_int(f, 2)) if 2 in f else -1))
    return extents
