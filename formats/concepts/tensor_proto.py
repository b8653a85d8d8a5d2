"""TensorFlow's small shared messages, decoded with the wire primitives: ``TensorShapeProto``,
``TensorSliceProto`` and the typed ``*_val`` fields of ``TensorProto``
(``tensorflow/core/framework/tensor_shape.proto``, ``tensor_slice.proto``, ``tensor.proto``).

numpy is imported only when values are decoded.
"""
from __future__ import annotations


from formats.core import dtypes
from formats.io.protowire import Buffer, Fields, Message, WireError, last_int, messages, parse_fields, signed

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

    import numpy as np

__all__ = ["decode_shape", "decode_slice", "value_field", "min_value_bytes", "decode_values"]

# DataType number -> (TensorProto field holding its values, how they are encoded) as TensorFlow's
# SaveTypeTraits / FromProtoField read them: small integers widened into int_val, float16 and
# bfloat16 as bit patterns in half_val, complex numbers as (real, imaginary) pairs.
_FIELDS: dict[int, tuple[int, str]] = {
    1: (5, "<f4"), 2: (6, "<f8"), 8: (9, "<c8"), 18: (12, "<c16"), 7: (8, "bytes"),
    3: (7, "varint"), 4: (7, "varint"), 5: (7, "varint"), 6: (7, "varint"), 17: (7, "varint"),
    11: (7, "varint"), 12: (7, "varint"), 13: (7, "varint"), 15: (7, "varint"), 16: (7, "varint"),
    9: (10, "varint"), 10: (11, "varint"), 19: (13, "varint"), 14: (13, "varint"), 22: (16, "varint"),
    23: (17, "varint"),
}
# The fewest bytes one element can take in its field (a packed varint is at least one byte; a
# string at least its tag and length byte): declared counts beyond bytes/this are impossible.
_MIN_BYTES = {"<f4": 4, "<f8": 8, "<c8": 8, "<c16": 16, "bytes": 2, "varint": 1}


def decode_shape(data: Buffer | Message) -> tuple[tuple[int, ...], bool]:
    """``TensorShapeProto`` -> (dims, unknown_rank); ``-1`` for an unknown dim. ``data`` is the serialized
    message, or a :class:`~formats.io.protowire.Message` already split with its field bound (a SavedModel's: each
    dim then holds at most 16 fields, and an unknown rank's dims are not read)."""
    if isinstance(data, Message):
        if data.flag(3):
            return (), True
        return tuple(dim.int64(1) for dim in data.messages(2, max_fields=16)), False
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


def value_field(dtype_enum: int) -> int | None:
    """The ``TensorProto`` field number that holds values of this DataType, or None when none does."""
    found = _FIELDS.get(dtype_enum)
    return found[0] if found else None


def min_value_bytes(dtype_enum: int) -> int:
    """The fewest bytes one element of this DataType takes in its ``*_val`` field."""
    return _MIN_BYTES[_FIELDS[dtype_enum][1]]


def decode_values(fields: Fields, dt: dtypes.DType) -> np.ndarray:
    """Every value in the ``*_val`` field of a parsed ``TensorProto`` for dtype ``dt``, as a flat array
    (an object array of bytes for strings). Packed and unpacked encodings are both read. A single packed
    float/double/complex field comes back as a view of its bytes: copy it before the buffer goes away."""
    import numpy as np

    number, kind = _FIELDS[dt.enum]
    if kind == "bytes":
        strings = messages(fields, number)
        out = np.empty(len(strings), dtype=object)
        out[:] = [bytes(s) for s in strings]
        return out
    base = _BASE[kind]
    parts = [_scalar(v, base) if isinstance(v, int) else _packed(v, base) for v in fields.get(number, [])]
    flat = parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else np.zeros(0, base)  # one: a view
    if kind == "varint":
        return _from_varints(flat, dt)
    if kind in ("<c8", "<c16"):
        if flat.size % 2:
            raise WireError("complex values come in (real, imaginary) pairs, found an odd count")
        return flat.view(kind)
    return flat


_BASE = {"<f4": "<f4", "<f8": "<f8", "<c8": "<f4", "<c16": "<f8", "varint": "<u8"}


def _scalar(value: int, base: str) -> np.ndarray:
    """One unpacked element: a varint, or the bits of a fixed32/fixed64 value."""
    import numpy as np

    if base == "<u8":
        return np.array([value], np.uint64)
    width = np.dtype(base).itemsize
    return np.frombuffer(value.to_bytes(8, "little")[:width], base)


def _packed(data: Buffer, base: str) -> np.ndarray:
    import numpy as np

    if base == "<u8":
        return _varints(data)
    width = np.dtype(base).itemsize
    if len(data) % width:
        raise WireError(f"packed field of {len(data)} bytes is not a whole number of {width}-byte values")
    return np.frombuffer(data, base)


def _varints(data: Buffer) -> np.ndarray:
    """A packed run of varints as uint64, decoded with array operations (no per-element Python loop)."""
    import numpy as np

    raw = np.frombuffer(data, np.uint8)
    if raw.size == 0:
        return np.zeros(0, np.uint64)
    if raw[-1] >= 0x80:
        raise WireError("packed varints end in the middle of a value")
    last = raw < 0x80
    if last.all():
        return raw.astype(np.uint64)
    ends = np.flatnonzero(last)
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    lengths = ends - starts + 1
    longest = int(lengths.max())
    if longest > 10:
        raise WireError("overlong varint in a packed field")
    out = np.zeros(ends.size, np.uint64)
    for k in range(longest):
        rows = np.flatnonzero(lengths > k)
        out[rows] |= (raw[starts[rows] + k] & 0x7F).astype(np.uint64) << np.uint64(7 * k)
    return out


def _from_varints(raw: np.ndarray, dt: dtypes.DType) -> Any:
    """uint64 varint values as ``dt``: integers keep their low bits (int_val holds int32s that TensorFlow
    casts down, and negative numbers as sign-extended 64-bit values), float16/bfloat16 are bit patterns."""
    import numpy as np

    if dt.name == "bool":
        return raw != 0
    width = dt.itemsize
    low = raw if width == 8 else raw & np.uint64((1 << (8 * width)) - 1)
    return low.astype(f"<u{width}").view(dt.numpy())
