"""A SavedModel's own object graph (``SavedObjectGraph``) as the :class:`ObjectGraph` every command reads.

TensorFlow's ``saved_object_graph.proto``: ``SavedObjectGraph`` holds ``nodes`` (field 1, node 0
the root) and ``concrete_functions`` (field 2, name -> ``SavedConcreteFunction``). Each
``SavedObject`` has ``children`` (1) and ``slot_variables`` (3), the same ``ObjectReference`` and
``SlotVariableReference`` messages a checkpoint's ``TrackableObjectGraph`` uses, and one kind:
``user_object`` (4), ``asset`` (5), ``function`` (6), ``variable`` (7, a ``SavedVariable`` with
its TF1-style ``name``), ``bare_concrete_function`` (8), ``constant`` (9), ``resource`` (10),
``captured_tensor`` (12); ``saveable_objects`` (11) names the tensors an object saves itself.

A variable's value is stored in ``variables/variables`` under ``<path>/.ATTRIBUTES/VARIABLE_VALUE``,
its path found breadth-first from the root exactly as for checkpoints, so the graph becomes an
:class:`~formats.concepts.object_graph.ObjectGraph` whose variables carry that attribute and
whose functions carry a ``note`` (what they take and return) for ``ckpt ls --tree``.
"""
from __future__ import annotations

from formats.concepts.object_graph import (VARIABLE_VALUE, Attribute, ChildRef, ObjectGraph, ObjectNode, SlotVariableRef,
                                           attribute_key)
from formats.concepts.signatures import TensorSpec, specs_text
from formats.core.errors import CorruptCheckpointError
from formats.core.records import field, record
from formats.io.protowire import MAX_DEPTH, Message, WireError, iter_fields
from formats.saved_model.proto import dtype_name, spec_shape

__all__ = ["SavedObject", "MAX_OBJECTS", "decode_saved_objects", "build_object_graph", "VARIABLE_VALUE",
           "variable_keys", "metric_keys", "KERAS_METRIC"]

MAX_OBJECTS = 1 << 17
"""More objects than this in one SavedModel is refused (a few bytes each could otherwise cost GBs)."""
MAX_EDGES = 1 << 19
"""More references between objects (children, slot variables) than this is refused."""
KERAS_METRIC = "_tf_keras_metric"
"""The ``SavedUserObject.identifier`` of a Keras metric (its ``total``/``count`` are state, not weights)."""
_KINDS = {4: "user_object", 5: "asset", 6: "function", 7: "variable", 8: "bare_concrete_function",
          9: "constant", 10: "resource", 12: "captured_tensor"}
_MAX_SPECS = 32        # tensor specs shown per function
_MAX_VISITS = 1 << 12  # StructuredValue messages walked per function


@record(slots=True)
class SavedObject:
    """One ``SavedObject``: its kind, edges, and what the kind says (variable spec, user object
    ``identifier``, concrete function names, saveable tensor names)."""

    kind: str = ""
    children: list[ChildRef] = field(default_factory=list)
    slot_variables: list[SlotVariableRef] = field(default_factory=list)
    identifier: str = ""
    variable: TensorSpec | None = None
    functions: tuple[str, ...] = ()
    saveables: tuple[str, ...] = ()


def decode_saved_objects(data: bytes, source: str) -> tuple[list[SavedObject], dict[str, memoryview]]:
    """The nodes and the concrete functions (name -> serialized ``SavedConcreteFunction``), decoded as
    they are read: at most :data:`MAX_OBJECTS` objects and :data:`MAX_EDGES` edges are ever made."""
    nodes: list[SavedObject] = []
    functions: dict[str, memoryview] = {}
    edges = 0
    try:
        for number, _, value in iter_fields(memoryview(data)):
            if number == 1 and isinstance(value, memoryview):
                if len(nodes) == MAX_OBJECTS:
                    raise CorruptCheckpointError(source, f"the SavedObjectGraph holds more than {MAX_OBJECTS:,} "
                                                 "objects")
                nodes.append(_saved_object(Message(value, max_fields=1 << 16)))
                edges += len(nodes[-1].children) + len(nodes[-1].slot_variables)
                if edges > MAX_EDGES:
                    raise CorruptCheckpointError(source, f"the SavedObjectGraph holds more than {MAX_EDGES:,} "
                                                 "references between objects")
            elif number == 2 and isinstance(value, memoryview):
                if len(functions) == MAX_OBJECTS:
                    raise CorruptCheckpointError(source, f"the SavedObjectGraph holds more than {MAX_OBJECTS:,} "
                                                 "functions")
                entry = Message(value, max_fields=16)
                views = entry.views(2)
                functions[entry.text(1)] = views[-1] if views else memoryview(b"")
            elif number in (1, 2):
                raise WireError(f"field {number} is a number where a message was expected")
    except (WireError, UnicodeDecodeError) as exc:
        raise CorruptCheckpointError(source, f"the SavedObjectGraph does not parse ({exc})") from None
    return nodes, functions


def _saved_object(msg: Message) -> SavedObject:
    node = SavedObject()
    node.children = [ChildRef(ref.int64(1), ref.text(2)) for ref in msg.messages(1, max_fields=16)]
    node.slot_variables = [SlotVariableRef(ref.int64(1), ref.text(2), ref.int64(3))
                           for ref in msg.messages(3, max_fields=16)]
    if msg.has(11):
        node.saveables = tuple(name for name, _ in msg.map_entries(11))
    for number, kind in _KINDS.items():
        body = msg.message(number, max_fields=1 << 16)
        if body is None:
            continue
        node.kind = kind
        if number == 4:
            node.identifier = body.text(1)
        elif number == 6:
            node.functions = tuple(body.texts(1))
        elif number == 8:
            node.functions = (body.text(1),)
        elif number == 7:
            node.variable = TensorSpec(body.text(6), dtype_name(body.int64(1)),
                                       spec_shape(body.message(2, max_fields=1 << 12)))
        break
    return node


def build_object_graph(data: bytes, source: str) -> tuple[ObjectGraph, list[SavedObject]]:
    """The ``SavedObjectGraph`` as an :class:`ObjectGraph` (and its decoded nodes): variables carry their
    ``VARIABLE_VALUE`` attribute (full name from ``SavedVariable.name``), saveable objects their own
    attributes, and functions a note with their inputs and outputs."""
    saved, functions = decode_saved_objects(data, source)
    nodes = [ObjectNode(i, s.children, [], s.slot_variables) for i, s in enumerate(saved)]
    graph = ObjectGraph(nodes, source, "SavedObjectGraph")  # checks node ids, depth and path bytes
    for node, obj in zip(nodes, saved):
        path = graph.path(node.id)
        if path is None:
            continue
        if obj.variable is not None:
            node.attributes.append(Attribute(VARIABLE_VALUE, obj.variable.name, attribute_key(path, VARIABLE_VALUE)))
        node.attributes += [Attribute(name, "", attribute_key(path, name)) for name in obj.saveables]
    _annotate(nodes, saved, functions, source)
    return graph, saved


def variable_keys(graph: ObjectGraph, saved: list[SavedObject]) -> dict[str, TensorSpec]:
    """The key each reachable variable's value is stored under -> what the graph declares for it."""
    return {key: saved[node_id].variable for key, node_id in _variable_nodes(graph, saved)}  # type: ignore[misc]


def _annotate(nodes: list[ObjectNode], saved: list[SavedObject], functions: dict[str, memoryview],
              source: str) -> None:
    """Notes for functions and for concrete functions that are neither a function's trace nor a signature."""
    inner = {ref.node_id for obj in saved if obj.kind == "function" or obj.identifier == "signature_map"
             for ref in obj.children}
    for node, obj in zip(nodes, saved):
        if obj.kind == "function":
            traces = len(obj.functions)
            head = f"function ({traces} traces)" if traces > 1 else "function"
            node.note = _with_io(head, functions, obj.functions, source)
        elif obj.kind == "bare_concrete_function" and node.id not in inner:
            node.note = _with_io("concrete function", functions, obj.functions, source)
        elif obj.kind == "asset":
            node.note = "asset"


def _with_io(head: str, functions: dict[str, memoryview], names: tuple[str, ...], source: str) -> str:
    raw = functions.get(names[0]) if names else None
    if raw is None:
        return head
    try:
        concrete = Message(raw, max_fields=1 << 16)
        inputs = _specs(concrete.views(3), named=True)
        outputs = _specs(concrete.views(4), named=False)
    except (WireError, UnicodeDecodeError) as exc:
        raise CorruptCheckpointError(source, f"concrete function {names[0]!r} does not parse ({exc})") from None
    return f"{head}: {specs_text(inputs)} -> {specs_text(outputs)}"


def _specs(views: list[memoryview], named: bool) -> list[TensorSpec]:
    """The tensor specs of a ``StructuredValue`` in order (dict keys name them; ``named`` keeps the
    specs' own names too), at most :data:`_MAX_SPECS`, walking at most :data:`_MAX_VISITS` values."""
    out: list[TensorSpec] = []
    stack: list[tuple[memoryview, str, int]] = [(v, "", 0) for v in reversed(views)]
    visits = 0
    while stack and len(out) < _MAX_SPECS:
        raw, key, depth = stack.pop()
        visits += 1
        if depth > MAX_DEPTH or visits > _MAX_VISITS:
            raise WireError("a function signature nested too deeply")
        value = Message(raw, max_fields=1 << 12)
        spec = value.message(33, max_fields=64) or value.message(35, max_fields=64)
        if spec is not None:
            name = key or (spec.text(1) if named else "")
            out.append(TensorSpec(name, dtype_name(spec.int64(3)), spec_shape(spec.message(2, max_fields=1 << 12))))
            continue
        stack += reversed(_nested(value, key, depth + 1))
    return out


def _nested(value: Message, key: str, depth: int) -> list[tuple[memoryview, str, int]]:
    """The values inside a list, tuple, dict, named tuple or type spec (``StructuredValue`` 51-54, 34)."""
    out: list[tuple[memoryview, str, int]] = []
    for number in (51, 52):
        inner = value.message(number)
        if inner is not None:
            out += [(v, key, depth) for v in inner.views(1)]
    mapping = value.message(53)
    if mapping is not None:
        out += [(v, k, depth) for k, v in mapping.map_entries(1)]
    named = value.message(54)
    if named is not None:
        for pair in named.messages(2, max_fields=16):
            out += [(v, pair.text(1), depth) for v in pair.views(2)]
    type_spec = value.message(34)
    if type_spec is not None:
        out += [(v, key, depth) for v in type_spec.views(2)]
    return out


def metric_keys(graph: ObjectGraph, saved: list[SavedObject]) -> set[str]:
    """Keys of the variables that belong to a Keras metric (a ``_tf_keras_metric`` object on their path)."""
    out: set[str] = set()
    for key, node_id in _variable_nodes(graph, saved):
        current: int | None = node_id
        while current is not None:
            if saved[current].identifier == KERAS_METRIC:
                out.add(key)
                break
            parent = graph.parent(current)
            current = parent[0] if parent else None
    return out


def _variable_nodes(graph: ObjectGraph, saved: list[SavedObject]) -> list[tuple[str, int]]:
    return [(attribute_key(path, VARIABLE_VALUE), node_id) for node_id, obj in enumerate(saved)
            if obj.variable is not None and (path := graph.path(node_id)) is not None]

