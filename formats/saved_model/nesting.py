"""How deep the messages of a ``saved_model.pb`` nest, as protobuf counts it, and whether TensorFlow parses it.

TensorFlow reads ``saved_model.pb`` with protobuf, which refuses a message nested more than
:data:`PROTOBUF_DEPTH_LIMIT` levels below the top one (a ``SavedModel``). ckpt reads such files (it walks
only what it needs, iteratively), so :func:`nesting_refusal` measures the nesting of the recursive messages
that can grow without bound - ``StructuredValue`` (function signatures and specs) and ``TensorInfo``
(composite tensors of serving signatures) - along every path from the top, following :data:`SCHEMA`
(TensorFlow's field numbers, checked against its descriptors by the interop tests). The ``graph_def`` is not
walked.
"""
from __future__ import annotations

from formats.io.protowire import LEN, WireError, iter_fields

__all__ = ["PROTOBUF_DEPTH_LIMIT", "SCHEMA", "nesting_depth", "nesting_refusal"]

PROTOBUF_DEPTH_LIMIT = 100
"""protobuf's default recursion limit: sub-messages nested at most this deep below the top message parse."""

_SV = "StructuredValue"
_SHAPE = "TensorShapeProto"
SCHEMA: dict[str, dict[int, str]] = {
    "SavedModel": {2: "MetaGraphDef"},
    "MetaGraphDef": {5: "SignatureDefEntry", 7: "SavedObjectGraph"},
    "SignatureDefEntry": {2: "SignatureDef"},
    "SignatureDef": {1: "TensorInfoEntry", 2: "TensorInfoEntry", 4: "TensorProtoEntry"},
    "TensorInfoEntry": {2: "TensorInfo"},
    "TensorProtoEntry": {2: "TensorProto"},
    "TensorInfo": {3: _SHAPE, 4: "CooSparse", 5: "CompositeTensor"},
    "CompositeTensor": {1: "TypeSpecProto", 2: "TensorInfo"},
    "SavedObjectGraph": {1: "SavedObject", 2: "ConcreteFunctionsEntry"},
    "SavedObject": {6: "SavedFunction", 8: "SavedBareConcreteFunction"},
    "SavedFunction": {2: "FunctionSpec"},
    "SavedBareConcreteFunction": {4: "FunctionSpec"},
    "FunctionSpec": {1: _SV, 5: _SV},
    "ConcreteFunctionsEntry": {2: "SavedConcreteFunction"},
    "SavedConcreteFunction": {3: _SV, 4: _SV},
    _SV: {1: "NoneValue", 31: _SHAPE, 33: "TensorSpecProto", 34: "TypeSpecProto", 35: "BoundedTensorSpecProto",
          51: "ListValue", 52: "TupleValue", 53: "DictValue", 54: "NamedTupleValue", 55: "TensorProto",
          56: "TensorProto"},
    "ListValue": {1: _SV},
    "TupleValue": {1: _SV},
    "DictValue": {1: "FieldsEntry"},
    "FieldsEntry": {2: _SV},
    "NamedTupleValue": {2: "PairValue"},
    "PairValue": {2: _SV},
    "TypeSpecProto": {2: _SV},
    "TensorSpecProto": {2: _SHAPE},
    "BoundedTensorSpecProto": {2: _SHAPE, 4: "TensorProto", 5: "TensorProto"},
    "TensorProto": {2: _SHAPE},
    _SHAPE: {2: "Dim"},
}
"""Message type -> {field number: the message type it holds}; a type absent here is a leaf (counted, not walked)."""


def nesting_depth(data: memoryview | bytes, stop: int = PROTOBUF_DEPTH_LIMIT) -> int:
    """How many levels below the top ``SavedModel`` its deepest walked sub-message lies (the top is 0); the walk
    stops once ``stop`` is passed. Raises WireError when a walked message does not parse."""
    stack: list[tuple[memoryview | bytes, str, int]] = [(data, "SavedModel", 0)]
    deepest = 0
    while stack and deepest <= stop:
        raw, kind, depth = stack.pop()
        fields = SCHEMA[kind]
        for number, wire, value in iter_fields(raw):
            child = fields.get(number)
            if child is None or wire != LEN:
                continue
            deepest = max(deepest, depth + 1)
            if child in SCHEMA:
                stack.append((value, child, depth + 1))  # type: ignore[arg-type]
    return deepest


def nesting_refusal(data: memoryview | bytes) -> str | None:
    """Why TensorFlow's protobuf parser refuses a serialized ``SavedModel`` for its nesting, or None (also when
    it does not parse: reading it reports that)."""
    try:
        depth = nesting_depth(data)
    except WireError:
        return None
    if depth <= PROTOBUF_DEPTH_LIMIT:
        return None
    return (f"messages nest more than {PROTOBUF_DEPTH_LIMIT} levels deep (function or serving signatures): "
            "TensorFlow's protobuf parser refuses the file")
