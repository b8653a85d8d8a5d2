"""The TensorFlow messages ckpt reads and writes, declared once, with one decoder and one encoder.

Each :class:`MessageType` lists its fields (number, name, kind) as ``tfckpt_bundle.proto`` beside
this module does; the field numbers are TensorFlow's (``tensor_bundle.proto``,
``tensor_shape.proto``, ``tensor_slice.proto``, ``versions.proto``, ``tensor.proto``,
``variant.proto``, ``trackable_object_graph.proto``). :func:`decode` and :func:`encode` follow
protobuf's rules, so they agree with a generated protobuf module byte for byte:

- decoding: the last value of a singular scalar wins; the occurrences of a singular message
  field must each parse and are merged (as if their bytes were concatenated); a field whose wire type differs from its
  declaration is an unknown field, and unknown fields are skipped; ``string`` fields must be
  UTF-8 and nested messages must parse, else :class:`~formats.io.protowire.WireError`
  (where protobuf raises ``DecodeError``); repeated numbers are read packed or not.
- encoding: fields in number order; proto3 scalars equal to their default are left out; a
  message field, or a scalar with presence (``optional``/oneof), is written whenever it is set
  (not None), even when it holds the default; repeated numbers are written packed.

Decoded messages are plain dicts holding every declared field: an absent singular message (or
scalar with presence) is None, repeated fields are lists.
"""
from __future__ import annotations


from formats.core.names import safe_text
from formats.core.records import record
from formats.io.protowire import (FIXED32, LEN, VARINT, WireError, bytes_field, encode_varint, iter_fields,
                                         read_varint, signed, tag)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

__all__ = ["Field", "MessageType", "decode", "encode", "TENSOR_SHAPE", "TENSOR_SLICE", "VERSION_DEF", "BUNDLE_HEADER",
           "BUNDLE_ENTRY", "TENSOR", "VARIANT_TENSOR_DATA", "BOOL_VALUE", "REGISTERED_SAVER",
           "TRACKABLE_OBJECT", "TRACKABLE_OBJECT_GRAPH"]

_MASK64 = 0xFFFFFFFFFFFFFFFF
_WIRE = {"int32": VARINT, "int64": VARINT, "uint32": VARINT, "uint64": VARINT, "bool": VARINT,
         "fixed32": FIXED32, "string": LEN, "bytes": LEN, "message": LEN}
_DEFAULTS: dict[str, Any] = {"string": "", "bytes": b"", "bool": False}


@record(frozen=True)
class Field:
    """One declared field. ``kind`` is a protobuf scalar type (enums are ``int32``) or ``message``
    (then ``message`` names its type); ``presence`` marks proto3 ``optional``/oneof scalars."""

    number: int
    name: str
    kind: str
    repeated: bool = False
    message: MessageType | None = None
    presence: bool = False

    @property
    def default(self) -> Any:
        """The decoded value of an absent field."""
        if self.repeated:
            return []
        if self.kind == "message" or self.presence:
            return None
        return _DEFAULTS.get(self.kind, 0)


class MessageType:
    """A message type: its full ``name`` and its fields, kept in number order."""

    def __init__(self, name: str, fields: Iterable[Field]) -> None:
        self.name = name
        self.fields = tuple(sorted(fields, key=lambda f: f.number))
        self.by_number = {f.number: f for f in self.fields}
        self.by_name = {f.name: f for f in self.fields}
        self.writing = tuple((f, f.default, _how_written(f), tag(f.number, _WIRE.get(f.kind, VARINT)))
                             for f in self.fields)
        """Per field, in number order: the field, its default, how :func:`encode` writes it, and its tag."""

    def __repr__(self) -> str:
        return f"<MessageType {self.name}>"


# -- decoding ----------------------------------------------------------------------------------
def _scalar(field: Field, value: int | bytes | bytearray | memoryview) -> Any:
    kind = field.kind
    if kind == "int32":
        low = int(value) & 0xFFFFFFFF
        return low - (1 << 32) if low >= 1 << 31 else low
    if kind == "int64":
        return signed(int(value))
    if kind == "uint32":
        return int(value) & 0xFFFFFFFF
    if kind == "bool":
        return value != 0
    if kind == "string":
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise WireError(f"field {field.name!r} is not valid UTF-8") from None
    if kind == "bytes":
        return bytes(value)
    return value  # uint64, fixed32


def _packed(field: Field, data: bytes) -> list[Any]:
    values = []
    pos = 0
    while pos < len(data):
        if field.kind == "fixed32":
            if pos + 4 > len(data):
                raise WireError(f"truncated packed field {field.name!r}")
            values.append(int.from_bytes(data[pos:pos + 4], "little"))
            pos += 4
        else:
            raw, pos = read_varint(data, pos, len(data))
            values.append(_scalar(field, raw))
    return values


def decode(message: MessageType, data: bytes) -> dict[str, Any]:
    """Parse ``data`` as ``message``; :class:`WireError` where protobuf would raise ``DecodeError``."""
    out = {f.name: f.default for f in message.fields}
    merged: dict[Field, list[bytes]] = {}
    for number, wire, value in iter_fields(data):
        field = message.by_number.get(number)
        if field is None:
            continue
        if field.repeated and field.kind != "message" and wire == LEN and _WIRE[field.kind] != LEN:
            out[field.name].extend(_packed(field, value))  # type: ignore[arg-type]
        elif _WIRE[field.kind] != wire:
            continue  # a known number with another wire type is an unknown field
        elif field.kind == "message" and not field.repeated:
            merged.setdefault(field, []).append(value)  # type: ignore[arg-type]
        elif field.kind == "message":
            out[field.name].append(decode(field.message, value))  # type: ignore[arg-type]
        elif field.repeated:
            out[field.name].append(_scalar(field, value))
        else:
            out[field.name] = _scalar(field, value)
    for field, parts in merged.items():
        if len(parts) > 1:  # each occurrence must parse on its own; merging them = parsing the concatenation
            for part in parts:
                decode(field.message, part)  # type: ignore[arg-type]
        out[field.name] = decode(field.message, b"".join(parts))  # type: ignore[arg-type]
    return out


# -- encoding ----------------------------------------------------------------------------------
def _encode_one(field: Field, key: bytes, value: Any) -> bytes:
    """The field written with its value (``key``: its tag), whatever the value (presence is decided by the
    caller)."""
    kind = field.kind
    if kind == "message":
        body = encode(field.message, value)  # type: ignore[arg-type]
    elif kind == "string":
        body = safe_text(value).encode("utf-8")  # a proto string is UTF-8: a name as it is shown
    elif kind == "bytes":
        body = bytes(value)
    elif kind == "fixed32":
        return key + int(value).to_bytes(4, "little")
    else:
        return key + encode_varint(int(value) & _MASK64)
    return key + encode_varint(len(body)) + body


def _encode_packed(field: Field, values: list[Any]) -> bytes:
    if not values:
        return b""
    if field.kind == "fixed32":
        body = b"".join(int(v).to_bytes(4, "little") for v in values)
    else:
        body = b"".join(encode_varint(int(v) & _MASK64) for v in values)
    return bytes_field(field.number, body)


_EACH, _PACKED, _ALWAYS, _UNLESS_DEFAULT = range(4)


def _how_written(field: Field) -> int:
    """Repeated messages/strings: each item a field; other repeated: packed; messages and fields with
    presence: whenever set; other scalars: unless the default (proto3)."""
    if field.repeated:
        return _EACH if field.kind in ("message", "string", "bytes") else _PACKED
    return _ALWAYS if field.kind == "message" or field.presence else _UNLESS_DEFAULT


def encode(message: MessageType, values: dict[str, Any]) -> bytes:
    """Serialize ``values`` (field name -> value; missing names and None are unset) as ``message``."""
    if not values.keys() <= message.by_name.keys():
        raise ValueError(f"{message.name} has no field {min(set(values) - set(message.by_name))!r}")
    out = bytearray()
    for field, default, how, key in message.writing:
        value = values.get(field.name)
        if value is None:
            continue
        if how == _EACH:
            for item in value:
                out += _encode_one(field, key, item)
        elif how == _PACKED:
            out += _encode_packed(field, list(value))
        elif how == _ALWAYS or value != default:
            out += _encode_one(field, key, value)
    return bytes(out)


# -- the messages --------------------------------------------------------------------------------
def _f(number: int, name: str, kind: str, repeated: bool = False, message: MessageType | None = None,
       presence: bool = False) -> Field:
    return Field(number, name, "message" if message is not None else kind, repeated, message, presence)


TENSOR_SHAPE_DIM = MessageType("tensorflow.TensorShapeProto.Dim", [_f(1, "size", "int64"), _f(2, "name", "string")])
TENSOR_SHAPE = MessageType("tensorflow.TensorShapeProto", [
    _f(2, "dim", "", True, TENSOR_SHAPE_DIM), _f(3, "unknown_rank", "bool")])
TENSOR_SLICE_EXTENT = MessageType("tensorflow.TensorSliceProto.Extent", [
    _f(1, "start", "int64"), _f(2, "length", "int64", presence=True)])
TENSOR_SLICE = MessageType("tensorflow.TensorSliceProto", [_f(1, "extent", "", True, TENSOR_SLICE_EXTENT)])
VERSION_DEF = MessageType("tensorflow.VersionDef", [
    _f(1, "producer", "int32"), _f(2, "min_consumer", "int32"), _f(3, "bad_consumers", "int32", True)])
BUNDLE_HEADER = MessageType("tensorflow.BundleHeaderProto", [
    _f(1, "num_shards", "int32"), _f(2, "endianness", "int32"), _f(3, "version", "", message=VERSION_DEF)])
BUNDLE_ENTRY = MessageType("tensorflow.BundleEntryProto", [
    _f(1, "dtype", "int32"), _f(2, "shape", "", message=TENSOR_SHAPE), _f(3, "shard_id", "int32"),
    _f(4, "offset", "int64"), _f(5, "size", "int64"), _f(6, "crc32c", "fixed32"),
    _f(7, "slices", "", True, TENSOR_SLICE)])
TENSOR = MessageType("tensorflow.TensorProto", [  # only the fields ckpt looks at; the others are skipped
    _f(1, "dtype", "int32"), _f(2, "tensor_shape", "", message=TENSOR_SHAPE), _f(3, "version_number", "int32"),
    _f(4, "tensor_content", "bytes")])
VARIANT_TENSOR_DATA = MessageType("tensorflow.VariantTensorDataProto", [
    _f(1, "type_name", "string"), _f(2, "metadata", "bytes"), _f(3, "tensors", "", True, TENSOR)])
BOOL_VALUE = MessageType("google.protobuf.BoolValue", [_f(1, "value", "bool")])
REGISTERED_SAVER = MessageType("tensorflow.RegisteredSaver", [_f(1, "name", "string"), _f(2, "object_name", "string")])
OBJECT_REFERENCE = MessageType("tensorflow.TrackableObjectGraph.TrackableObject.ObjectReference", [
    _f(1, "node_id", "int32"), _f(2, "local_name", "string")])
SERIALIZED_TENSOR = MessageType("tensorflow.TrackableObjectGraph.TrackableObject.SerializedTensor", [
    _f(1, "name", "string"), _f(2, "full_name", "string"), _f(3, "checkpoint_key", "string"),
    _f(4, "optional_restore", "bool")])
SLOT_VARIABLE_REFERENCE = MessageType("tensorflow.TrackableObjectGraph.TrackableObject.SlotVariableReference", [
    _f(1, "original_variable_node_id", "int32"), _f(2, "slot_name", "string"), _f(3, "slot_variable_node_id", "int32")])
TRACKABLE_OBJECT = MessageType("tensorflow.TrackableObjectGraph.TrackableObject", [
    _f(1, "children", "", True, OBJECT_REFERENCE), _f(2, "attributes", "", True, SERIALIZED_TENSOR),
    _f(3, "slot_variables", "", True, SLOT_VARIABLE_REFERENCE), _f(4, "registered_saver", "", message=REGISTERED_SAVER),
    _f(5, "has_checkpoint_values", "", message=BOOL_VALUE)])
TRACKABLE_OBJECT_GRAPH = MessageType("tensorflow.TrackableObjectGraph", [_f(1, "nodes", "", True, TRACKABLE_OBJECT)])
