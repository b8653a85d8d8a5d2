"""``saved_model.pbtxt``: a SavedModel in protobuf's text format, read through the binary decoder.

The text is tokenised and the fields ckpt reads (the same ones :mod:`formats.saved_model.proto`
and :mod:`formats.saved_model.objects` decode: tags, signatures, the object graph and its
function signatures) are re-encoded to the wire format by the field numbers of
:data:`SCHEMA`; every other field (``graph_def``, ``saver_def``, collections) is parsed and
dropped. Nesting is limited to :data:`~formats.io.protowire.MAX_DEPTH` and the file to
:data:`MAX_TEXT_BYTES`.
"""
from __future__ import annotations

import codecs
import re
import sys

from formats.io.protowire import encode_varint
from formats.core import dtypes
from formats.core.errors import CorruptCheckpointError
from formats.io.protowire import MAX_DEPTH
from formats.saved_model.proto import SavedModelProto, decode_saved_model, map_regular_file

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["read_text_saved_model", "text_to_wire", "SCHEMA", "MAX_TEXT_BYTES"]

MAX_TEXT_BYTES = 256 << 20

Field = tuple[int, str, str]  # number, kind (int, string, bool, enum, message), message type
SCHEMA: dict[str, dict[str, Field]] = {
    "SavedModel": {"saved_model_schema_version": (1, "int", ""), "meta_graphs": (2, "message", "MetaGraphDef")},
    "MetaGraphDef": {"meta_info_def": (1, "message", "MetaInfoDef"),
                     "signature_def": (5, "message", "SignatureDefEntry"),
                     "object_graph_def": (7, "message", "SavedObjectGraph")},
    "MetaInfoDef": {"tags": (4, "string", ""), "tensorflow_version": (5, "string", "")},
    "SignatureDefEntry": {"key": (1, "string", ""), "value": (2, "message", "SignatureDef")},
    "SignatureDef": {"inputs": (1, "message", "TensorInfoEntry"), "outputs": (2, "message", "TensorInfoEntry"),
                     "method_name": (3, "string", "")},
    "TensorInfoEntry": {"key": (1, "string", ""), "value": (2, "message", "TensorInfo")},
    "TensorInfo": {"name": (1, "string", ""), "dtype": (2, "enum", ""), "tensor_shape": (3, "message", "Shape"),
                   "coo_sparse": (4, "message", "CooSparse")},
    "CooSparse": {"values_tensor_name": (1, "string", "")},
    "Shape": {"dim": (2, "message", "Dim"), "unknown_rank": (3, "bool", "")},
    "Dim": {"size": (1, "int", ""), "name": (2, "string", "")},
    "SavedObjectGraph": {"nodes": (1, "message", "SavedObject"),
                         "concrete_functions": (2, "message", "ConcreteFunctionEntry")},
    "SavedObject": {"children": (1, "message", "ObjectReference"), "slot_variables": (3, "message", "SlotRef"),
                    "user_object": (4, "message", "SavedUserObject"), "asset": (5, "message", "Empty"),
                    "function": (6, "message", "SavedFunction"), "variable": (7, "message", "SavedVariable"),
                    "bare_concrete_function": (8, "message", "SavedBareConcreteFunction"),
                    "constant": (9, "message", "Empty"), "resource": (10, "message", "Empty"),
                    "saveable_objects": (11, "message", "NameEntry"), "captured_tensor": (12, "message", "Empty")},
    "ObjectReference": {"node_id": (1, "int", ""), "local_name": (2, "string", "")},
    "SlotRef": {"original_variable_node_id": (1, "int", ""), "slot_name": (2, "string", ""),
                "slot_variable_node_id": (3, "int", "")},
    "SavedUserObject": {"identifier": (1, "string", "")},
    "SavedFunction": {"concrete_functions": (1, "string", "")},
    "SavedBareConcreteFunction": {"concrete_function_name": (1, "string", "")},
    "SavedVariable": {"dtype": (1, "enum", ""), "shape": (2, "message", "Shape"), "name": (6, "string", "")},
    "NameEntry": {"key": (1, "string", ""), "value": (2, "message", "Empty")},
    "ConcreteFunctionEntry": {"key": (1, "string", ""), "value": (2, "message", "SavedConcreteFunction")},
    "SavedConcreteFunction": {"canonicalized_input_signature": (3, "message", "StructuredValue"),
                              "output_signature": (4, "message", "StructuredValue")},
    "StructuredValue": {"tensor_spec_value": (33, "message", "TensorSpec"),
                        "type_spec_value": (34, "message", "TypeSpec"),
                        "bounded_tensor_spec_value": (35, "message", "TensorSpec"),
                        "list_value": (51, "message", "ListValue"), "tuple_value": (52, "message", "ListValue"),
                        "dict_value": (53, "message", "DictValue"),
                        "named_tuple_value": (54, "message", "NamedTupleValue")},
    "TensorSpec": {"name": (1, "string", ""), "shape": (2, "message", "Shape"), "dtype": (3, "enum", "")},
    "TypeSpec": {"type_state": (2, "message", "StructuredValue")},
    "ListValue": {"values": (1, "message", "StructuredValue")},
    "DictValue": {"fields": (1, "message", "StructuredValueEntry")},
    "StructuredValueEntry": {"key": (1, "string", ""), "value": (2, "message", "StructuredValue")},
    "NamedTupleValue": {"name": (1, "string", ""), "values": (2, "message", "PairValue")},
    "PairValue": {"key": (1, "string", ""), "value": (2, "message", "StructuredValue")},
    "Empty": {},
}
"""Message type -> field name -> (number, kind, message type): the fields of TensorFlow's protos ckpt reads."""

_TF_NAMES = {"float32": "DT_FLOAT", "float64": "DT_DOUBLE", "float16": "DT_HALF"}
_RUN = "*+" if sys.version_info >= (3, 11) else "*"
_TOKEN = re.compile(rb'(?P<space>\s+|#[^\n]*)|(?P<str>"[^"\\\n]R(?:\\.[^"\\\n]R)R"|\'[^\'\\\n]R(?:\\.[^\'\\\n]R)R\')'
                    rb'|(?P<punct>[{}<>\[\]:,;])|(?P<word>[A-Za-z0-9_.+\-]+)'.replace(b"R", _RUN.encode()))
"""Strings are matched by possessive runs (no backtracking state kept per character): linear time, and
memory bounded by the token whatever its length (a backtracking ``(a|b)*`` kept ~170 bytes a character).
Python 3.10 has no possessive quantifiers: there the same unrolled pattern keeps state per escape sequence
only (a run of plain characters is one state)."""
_CLOSE = {b"{": b"}", b"<": b">"}


def _enum(word: str) -> int:
    """A DataType by name (``DT_FLOAT``) or number."""
    for enum in range(1, 64):
        dt = dtypes.by_enum(enum)
        if dt is not None and _TF_NAMES.get(dt.name, "DT_" + dt.name.upper()) == word:
            return enum
    return int(word, 0)


def _varint(n: int) -> bytes:
    """A varint as protobuf writes it: negative numbers as their 64-bit two's complement."""
    return encode_varint(n & ((1 << 64) - 1))


class _Parser:
    """A recursive-descent reader of the text format that writes the wire format of known fields."""

    def __init__(self, text: bytes) -> None:
        self._tokens = self._tokenise(text)
        self._next = next(self._tokens, b"")

    @staticmethod
    def _tokenise(text: bytes) -> Iterator[bytes]:
        pos = 0
        while pos < len(text):
            match = _TOKEN.match(text, pos)
            if match is None:
                raise ValueError(f"unexpected character at byte {pos}")
            if match.lastgroup != "space":
                yield match.group()
            pos = match.end()

    def peek(self) -> bytes:
        return self._next

    def take(self) -> bytes:
        token = self._next
        if not token:
            raise ValueError("unexpected end of text")
        self._next = next(self._tokens, b"")
        return token

    def message(self, kind: str | None, close: bytes, depth: int) -> bytes:
        """Fields until ``close`` (``b""``: the end of the text), encoded when ``kind`` knows them."""
        if depth > MAX_DEPTH:
            raise ValueError("messages nested too deeply")
        out = bytearray()
        schema = SCHEMA.get(kind or "", {})
        while self.peek() != close:
            name = self.take()
            if name == b"[":  # an extension or Any type URL: skipped
                while self.take() != b"]":
                    pass
                spec = None
            else:
                spec = schema.get(name.decode("ascii", "replace")) if kind else None
            if self.peek() == b":":
                self.take()
            for value in self.values(spec, depth):
                if spec is not None:
                    out += value
            if self.peek() in (b",", b";"):
                self.take()
        if close:
            self.take()
        return bytes(out)

    def values(self, spec: Field | None, depth: int) -> Iterator[bytes]:
        if self.peek() != b"[":
            yield self.value(spec, depth)
            return
        self.take()
        while self.peek() != b"]":
            yield self.value(spec, depth)
            if self.peek() == b",":
                self.take()
        self.take()

    def value(self, spec: Field | None, depth: int) -> bytes:
        token = self.take()
        if token in _CLOSE:
            body = self.message(spec[2] if spec else None, _CLOSE[token], depth + 1)
            return self._field(spec, body) if spec else b""
        if token[:1] in (b'"', b"'"):
            raw = codecs.escape_decode(token[1:-1])[0]
            while self.peek()[:1] in (b'"', b"'"):  # adjacent strings concatenate
                raw += codecs.escape_decode(self.take()[1:-1])[0]
            return self._field(spec, raw) if spec else b""
        return self._scalar(spec, token.decode("ascii")) if spec else b""

    @staticmethod
    def _field(spec: Field, body: bytes) -> bytes:
        return _varint(spec[0] << 3 | 2) + _varint(len(body)) + body

    @staticmethod
    def _scalar(spec: Field, word: str) -> bytes:
        number, kind, _ = spec
        if kind == "bool":
            value = 1 if word in ("true", "True", "t", "1") else 0
        elif kind == "enum":
            value = _enum(word)
        else:
            value = int(word, 0)
        return _varint(number << 3) + _varint(value)


def text_to_wire(text: bytes, kind: str = "SavedModel") -> bytes:
    """The wire encoding of the fields of ``kind`` (a :data:`SCHEMA` type) that ``text`` sets."""
    return _Parser(text).message(kind, b"", 0)


def read_text_saved_model(path: str) -> SavedModelProto:
    """Read a ``saved_model.pbtxt`` (at most :data:`MAX_TEXT_BYTES`)."""
    data = map_regular_file(path, MAX_TEXT_BYTES, f"more than ckpt reads of a text SavedModel "
                            f"({MAX_TEXT_BYTES >> 20} MiB)")
    try:
        wire = text_to_wire(data)  # type: ignore[arg-type]
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptCheckpointError(path, f"not a SavedModel in protobuf text format ({exc})") from None
    return decode_saved_model(wire, path)
