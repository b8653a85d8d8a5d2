"""The messages of a V1 checkpoint (``tensorflow/core/util/saved_tensor_slice.proto``), decoded with the
wire primitives (the ``VersionDef`` inside with the schema API, :mod:`formats.concepts.proto.messages`):

* ``SavedTensorSlices`` - every value of the table: ``meta``=1 (under the empty key) or ``data``=2;
* ``SavedTensorSliceMeta`` - ``tensor``=1 (repeated ``SavedSliceMeta``), ``versions``=2 (``VersionDef``);
* ``SavedSliceMeta`` - ``name``=1, ``shape``=2 (``TensorShapeProto``), ``type``=3 (DataType),
  ``slice``=4 (repeated ``TensorSliceProto``: the slices stored, in this file);
* ``SavedSlice`` - ``name``=1, ``slice``=2, ``data``=3 (a ``TensorProto`` holding only its ``*_val`` field).
"""
from __future__ import annotations

from formats.concepts.proto.messages import VERSION_DEF, decode
from formats.concepts.slice_key import Extent
from formats.concepts.tensor_proto import decode_shape, decode_slice
from formats.core.records import field, record
from formats.io.protowire import Buffer, WireError, last_int, messages, parse_fields, signed

__all__ = ["SliceMeta", "FileMeta", "decode_file_meta", "decode_saved_slice", "is_meta_value"]


@record
class SliceMeta:
    """One ``SavedSliceMeta``: a tensor's name, DataType number, shape and the slices one file stores."""

    name: bytes
    dtype: int
    shape: tuple[int, ...]
    slices: list[list[Extent]] = field(default_factory=list)


@record
class FileMeta:
    """The meta entry of one file: its tensors and ``VersionDef``."""

    tensors: list[SliceMeta]
    producer: int = 0
    min_consumer: int = 0
    bad_consumers: tuple[int, ...] = ()


def is_meta_value(value: Buffer) -> bool:
    """Whether a table value starts like a ``SavedTensorSlices`` holding ``meta`` (cheap, for sniffing)."""
    return len(value) > 0 and value[0] == 0x0A


def decode_file_meta(value: Buffer) -> FileMeta:
    """The ``SavedTensorSlices`` under the empty key -> :class:`FileMeta`; raises WireError (or ValueError
    with a reason) when it is not one."""
    top = parse_fields(value)
    metas = messages(top, 1)
    if not metas:
        raise ValueError("the entry under the empty key holds no SavedTensorSliceMeta")
    meta = parse_fields(metas[-1])
    tensors = [_slice_meta(m) for m in messages(meta, 1)]
    versions = messages(meta, 2)
    v = decode(VERSION_DEF, bytes(versions[-1]) if versions else b"")  # the last one, as before
    return FileMeta(tensors, v["producer"], v["min_consumer"], tuple(v["bad_consumers"]))


def _slice_meta(data: Buffer) -> SliceMeta:
    f = parse_fields(data)
    names = messages(f, 1)
    shapes = messages(f, 2)
    shape, unknown_rank = decode_shape(shapes[-1]) if shapes else ((), False)
    name = bytes(names[-1]) if names else b""
    if unknown_rank:
        raise ValueError(f"tensor {_text(name)!r} has an unknown rank")
    if any(d < 0 for d in shape):
        raise ValueError(f"tensor {_text(name)!r} has a negative dimension in shape {list(shape)}")
    return SliceMeta(name, signed(last_int(f, 3)), shape, [decode_slice(s) for s in messages(f, 4)])


def decode_saved_slice(value: Buffer) -> tuple[bytes, list[Extent], Buffer]:
    """A ``SavedTensorSlices`` holding ``data`` -> (name, extents, the ``TensorProto`` bytes)."""
    top = parse_fields(value)
    data = messages(top, 2)
    if not data:
        raise WireError("the entry holds no SavedSlice")
    f = parse_fields(data[-1])
    names, slices, tensors = messages(f, 1), messages(f, 2), messages(f, 3)
    extents = decode_slice(slices[-1]) if slices else []
    return (bytes(names[-1]) if names else b""), extents, (tensors[-1] if tensors else b"")


def _text(name: bytes) -> str:
    return name.decode("utf-8", "surrogateescape")
