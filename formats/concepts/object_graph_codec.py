"""The ``TrackableObjectGraph`` of a TF2 checkpoint on the wire: :func:`decode_object_graph` gives an
:class:`~formats.concepts.object_graph.ObjectGraph` that mirrors the proto field by field, in order, and
:func:`encode_object_graph` writes nodes back byte for byte as TensorFlow does (both with
:mod:`formats.concepts.proto`, no protobuf runtime).

Decoding is bounded by the bytes it is given: the nodes and their children, attributes and slot
variables are counted before any is built, and a graph holding more than one of them per
:data:`BYTES_PER_ITEM` bytes (beyond the first :data:`FREE_ITEMS`) is refused. A real graph holds more
than four bytes for each (every object but the root is some object's child, a reference of seven bytes
or more: TensorFlow's graph of 20,000 empty modules holds 7.8), while an empty node is two bytes that
would otherwise cost a few hundred bytes of memory.
"""
from __future__ import annotations

from _io import BytesIO  # io's, without the io package's Python half
from itertools import compress

from formats.core.names import safe_text
from formats.core.errors import CorruptCheckpointError
from formats.core.model import OBJECT_GRAPH_KEY
from formats.io.protowire import encode_varint

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Container, Iterable, Iterator, Sequence
    from typing import Any

    from formats.concepts.object_graph import ObjectGraph, ObjectNode

__all__ = ["decode_object_graph", "encode_object_graph", "encode_graph_columns", "checkpointed_nodes", "checkpointed_columns", "NodeMarks",
           "BYTES_PER_ITEM", "FREE_ITEMS", "SMALL_GRAPH_BYTES"]

BYTES_PER_ITEM = 4
"""A graph may hold one node, child, attribute or slot variable per this many bytes..."""
_ITEM_FIELDS = (1, 2, 3)  # TrackableObject.children, .attributes, .slot_variables
FREE_ITEMS = 1 << 16
"""...beyond this many."""
SMALL_GRAPH_BYTES = 1 << 16
"""A graph of at most this many bytes is decoded node by node, without numpy: it costs less than numpy's import
(issue 24 #7); a larger one into columns (:mod:`formats.concepts.object_graph_columns`)."""


def decode_object_graph(data: bytes | memoryview, source: str = "") -> ObjectGraph:
    """Parse a serialized ``TrackableObjectGraph``; CorruptCheckpointError naming ``source`` if it is not
    one, or if it holds more objects than its size justifies (see the module doc)."""
    from formats.concepts.object_graph import ObjectGraph  # (the graph's model: not for encoding one)
    from formats.concepts.proto.messages import TRACKABLE_OBJECT, decode
    from formats.io.protowire import LEN, WireError, iter_fields

    view = memoryview(data)
    fast = _columns_graph(view, source) if len(view) > SMALL_GRAPH_BYTES else None
    if fast is None:
        fast = _fast_graph(view, source)
    if fast is not None:
        return fast
    try:
        _check_size(view, source)
        nodes: list[ObjectNode] = []
        for number, wire, value in iter_fields(view):
            if number == 1 and wire == LEN:  # another wire type is an unknown field, skipped as protobuf does
                nodes.append(_node(len(nodes), decode(TRACKABLE_OBJECT, value)))  # type: ignore[arg-type]
    except WireError as exc:
        raise CorruptCheckpointError(source, f"the object graph ({OBJECT_GRAPH_KEY}) does not parse: {exc}") from None
    return ObjectGraph(nodes, source)


def _columns_graph(view: memoryview, source: str) -> ObjectGraph | None:
    """The graph decoded into columns (:func:`~formats.concepts.object_graph_columns.decode_columns`), its
    nodes built on demand; None when it needs a slower decoder, or when its nodes and their items outnumber
    what the bytes justify (:func:`_check_size`'s bound), which the generic decoder then refuses in its own words."""
    from formats.concepts.object_graph import ObjectGraph
    from formats.concepts.object_graph_columns import decode_columns

    data = view.obj if isinstance(view.obj, bytes) and view.nbytes == len(view.obj) else view.tobytes()
    columns = decode_columns(data)
    if columns is None:
        return None
    items = columns.count + len(columns.child_id) + len(columns.attr_optional) + len(columns.slot_id)
    if items > FREE_ITEMS + len(view) // BYTES_PER_ITEM:
        return None
    return ObjectGraph.from_columns(columns, source)


def _fast_graph(view: memoryview, source: str) -> ObjectGraph | None:
    """The graph decoded node by node with :func:`~formats.concepts.object_graph_wire.fast_node`, or None when
    any node needs the generic decoder - or when the nodes and their items outnumber what the bytes justify
    (:func:`_check_size`'s bound, checked after each node: at most one node's worth is built beyond it), which
    the generic decoder then refuses in its own words."""
    from formats.concepts.object_graph import ObjectGraph
    from formats.concepts.object_graph_wire import fast_node, node_spans

    spans = node_spans(view)
    if spans is None or len(spans) > FREE_ITEMS + len(view) // BYTES_PER_ITEM:
        return None
    data = view.obj if isinstance(view.obj, bytes) and view.nbytes == len(view.obj) else view.tobytes()
    allowed = FREE_ITEMS + len(view) // BYTES_PER_ITEM
    items = 0
    nodes: list[ObjectNode] = []
    for start, stop in spans:
        node = fast_node(len(nodes), data, start, stop)
        if node is None:
            return None
        items += 1 + len(node.children) + len(node.attributes) + len(node.slot_variables)
        if items > allowed:
            return None
        nodes.append(node)
    return ObjectGraph(nodes, source)


def _check_size(view: memoryview, source: str) -> None:
    """Refuse before building anything when the nodes and their fields outnumber what the bytes justify."""
    from formats.io.protowire import LEN, iter_fields

    allowed = FREE_ITEMS + len(view) // BYTES_PER_ITEM
    items = 0
    for number, wire, value in iter_fields(view):
        if number == 1 and wire == LEN:
            items += 1 + sum(1 for field, _, _ in iter_fields(value) if field in _ITEM_FIELDS)  # type: ignore[arg-type,misc]
        if items > allowed:
            raise CorruptCheckpointError(source, f"the object graph ({OBJECT_GRAPH_KEY}) holds more than "
                                         f"{allowed:,} objects and references in {len(view):,} bytes: too many "
                                         "to be real")


def _node(index: int, p: dict[str, Any]) -> ObjectNode:
    from formats.concepts.object_graph import Attribute, ChildRef, ObjectNode, RegisteredSaver, SlotVariableRef

    node = ObjectNode(
        id=index,
        children=[ChildRef(c["node_id"], c["local_name"]) for c in p["children"]],
        attributes=[Attribute(a["name"], a["full_name"], a["checkpoint_key"], a["optional_restore"])
                    for a in p["attributes"]],
        slot_variables=[SlotVariableRef(s["original_variable_node_id"], s["slot_name"], s["slot_variable_node_id"])
                        for s in p["slot_variables"]])
    saver = p["registered_saver"]
    if saver is not None:
        node.registered_saver = RegisteredSaver(saver["name"], saver["object_name"])
    if p["has_checkpoint_values"] is not None:
        node.has_checkpoint_values = p["has_checkpoint_values"]["value"]
    return node


class NodeMarks:
    """Node ids marked with a byte each (``id in marks``), as a set of them would say: no int object a node (a set
    of 10^5 node ids held 14 MB)."""

    __slots__ = ("_marks",)

    def __init__(self, marks: bytes) -> None:
        self._marks = marks

    def __contains__(self, node: object) -> bool:
        return type(node) is int and 0 <= node < len(self._marks) and self._marks[node] == 1

    def __iter__(self) -> Iterator[int]:
        return compress(range(len(self._marks)), self._marks)

    def __len__(self) -> int:
        return self._marks.count(1)

    @property
    def marks(self) -> bytes:
        """A byte a node: 1 marked, 0 not."""
        return self._marks


def checkpointed_nodes(nodes: Sequence[ObjectNode]) -> NodeMarks | set[int]:
    """Ids of nodes that have checkpoint values themselves (attributes, slot variables, a registered
    saver) or through a descendant: TensorFlow's ``_add_has_checkpoint_values``."""
    count = len(nodes)
    marked = bytearray(count)
    parent: list[int] = [-1] * count  # a node's first parent; the rest (rare) in ``more``
    more: dict[int, list[int]] = {}
    todo: list[int] = []
    for index, node in enumerate(nodes):
        if node.id != index:
            return _checkpointed_nodes(nodes)  # ids not positions: the general walk
        if node.attributes or node.slot_variables or node.registered_saver is not None:
            marked[index] = 1
            todo.append(index)
        for child in node.children:
            cid = child.node_id
            if not 0 <= cid < count:
                return _checkpointed_nodes(nodes)
            if parent[cid] < 0:
                parent[cid] = index
            elif parent[cid] != index:
                more.setdefault(cid, []).append(index)
    while todo:
        cid = todo.pop()
        up = parent[cid]
        if up >= 0 and not marked[up]:
            marked[up] = 1
            todo.append(up)
        for up in more.get(cid, ()):
            if not marked[up]:
                marked[up] = 1
                todo.append(up)
    return NodeMarks(bytes(marked))


def checkpointed_columns(own: Any, owner: Any, child: Any) -> NodeMarks:
    """:func:`checkpointed_nodes` of a graph as arrays: ``own`` per node whether it has checkpoint values itself,
    ``owner`` and ``child`` the two ends of every edge; the nodes marked and every node above one by any edge."""
    import numpy as np

    marked = np.array(own, dtype=bool)
    owner, child = np.asarray(owner), np.asarray(child)
    while True:
        up = owner[marked[child]]
        fresh = up[~marked[up]]
        if not len(fresh):
            break
        marked[fresh] = True
    return NodeMarks(marked.astype(np.uint8).tobytes())


def _checkpointed_nodes(nodes: Sequence[ObjectNode]) -> set[int]:
    """:func:`checkpointed_nodes` for nodes whose ids are not their positions, or with children outside them."""
    parents: dict[int, set[int]] = {}
    marked = {n.id for n in nodes if n.attributes or n.slot_variables or n.registered_saver is not None}
    for node in nodes:
        for child in node.children:
            parents.setdefault(child.node_id, set()).add(node.id)
    todo = list(marked)
    while todo:
        for parent in parents.pop(todo.pop(), ()):
            if parent not in marked:
                marked.add(parent)
                todo.append(parent)
    return marked


def encode_object_graph(nodes: Sequence[ObjectNode], fill_has_values: bool = True,
                        valued: Container[int] | None = None) -> bytes:
    """Serialize ``nodes`` (node i must have id i) as a ``TrackableObjectGraph``, byte for byte as
    TensorFlow's ``_fill_object_graph_proto`` does. With ``fill_has_values`` every node's
    ``has_checkpoint_values`` is set from :func:`checkpointed_nodes`; otherwise as the nodes hold it.

    Written field by field with the tags of :mod:`formats.concepts.proto.messages` (what its generic
    ``encode`` would write), a node at a time in one loop: small varints from a table, the names that
    repeat (local names, attribute and slot names) encoded once each, every node's pieces joined once.

    ``valued``: the ids of the nodes that have checkpoint values, when the caller knows them - then ``nodes`` is
    walked once (a sequence that makes each node as it is reached, for instance), their ids taken as given."""
    if valued is None:
        for index, node in enumerate(nodes):
            if node.id != index:
                raise ValueError(f"node {index} has id {node.id}")
        valued = checkpointed_nodes(nodes) if fill_has_values else None
    t = _tags()
    v = _varints(len(nodes))
    small = len(v)
    node_tag, child_tag, id_tag, attr_tag, slot_tag = (t["nodes"], t["children"], t["node_id"], t["attributes"],
                                                       t["slot_variables"])
    full_tag, key_tag, restore_tag = t["full_name"], t["checkpoint_key"], t["optional_restore"]
    has_tag = t["has_checkpoint_values"]
    yes, no = _framed(has_tag, _int(t["value"], True)), _framed(has_tag, b"")
    local_names: dict[str, bytes] = {}  # name -> its whole field: names repeat across a graph
    attr_names: dict[str, bytes] = {}
    out = BytesIO()  # every node's field written straight into it (no bytes object a node: 50 MB at 10^5 nodes)
    write = out.write
    for node in nodes:
        body = bytearray()
        for c in node.children:
            n, local = c.node_id, c.local_name
            name = local_names.get(local)
            if name is None:
                name = local_names[local] = _text(t["local_name"], local)
            item = (id_tag + (v[n] if 0 <= n < small else _varint(n)) if n else b"") + name
            body += child_tag + v[len(item)] + item if len(item) < small else _framed(child_tag, item)
        for a in node.attributes:
            local = a.name
            name = attr_names.get(local)
            if name is None:
                name = attr_names[local] = _text(t["name"], local)
            item = name + _utf8_field(full_tag, a.full_name) + _utf8_field(key_tag, a.checkpoint_key)
            if a.optional_restore:
                item += _int(restore_tag, a.optional_restore)
            body += attr_tag + v[len(item)] + item if len(item) < small else _framed(attr_tag, item)
        for s in node.slot_variables:
            body += _framed(slot_tag, _int(t["original_variable_node_id"], s.original_variable_node_id)
                            + _text(t["slot_name"], s.slot_name)
                            + _int(t["slot_variable_node_id"], s.slot_variable_node_id))
        saver = node.registered_saver
        if saver is not None:
            body += _framed(t["registered_saver"], _text(t["name"], saver.name)
                            + _text(t["object_name"], saver.object_name))
        has_values = node.has_checkpoint_values if valued is None else node.id in valued
        if has_values is True:
            body += yes
        elif has_values is False:
            body += no
        elif has_values is not None:
            body += _framed(has_tag, _int(t["value"], has_values))
        write(node_tag + (v[len(body)] if len(body) < small else encode_varint(len(body))) + body)
    return out.getvalue()  # (the buffer itself: no copy of the graph)


def encode_graph_columns(count: int, kids: Iterable[Sequence[tuple[int, str]] | None],
                         attributes: Iterable[Sequence[tuple[str, str, str]] | None],
                         slot_variables: dict[int, list[tuple[int, str, int]]], valued: Sequence[int]) -> bytes:
    """:func:`encode_object_graph` of a graph of ``count`` nodes held as columns
    (:class:`~formats.ops.convert.graph_columns.GraphColumns`): node i's children, the i-th of ``kids``
    (``(node, local name)`` pairs, valid UTF-8, or None), its attributes, the i-th of ``attributes``
    (``(name, full_name, checkpoint_key)``, or None), its slot variables (``(variable, slot name, slot node)``),
    ``has_checkpoint_values`` where ``valued[i]`` (as TensorFlow sets it: the node or one below it has values).
    No object per node: each node's fields are joined straight into one buffer, node ids of up to three bytes
    written without a call."""
    t = _tags()
    v = _varints(count)
    small = len(v)
    node_tag, child_tag, id_tag, attr_tag = t["nodes"], t["children"], t["node_id"], t["attributes"]
    full_tag, key_tag, has_tag = t["full_name"], t["checkpoint_key"], t["has_checkpoint_values"]
    yes, no = _framed(has_tag, _int(t["value"], True)), _framed(has_tag, b"")
    local_tag, name_tag, slot_tag = t["local_name"], t["name"], t["slot_variables"]
    names: dict[str, bytes] = {}  # local or attribute name -> its whole field: names repeat across a graph
    out = BytesIO()
    write = out.write
    for i, (refs, mine) in enumerate(zip(kids, attributes)):
        body = b""
        if refs:
            for n, local in refs:
                name = names.get(local)
                if name is None:
                    raw = local.encode("utf-8")
                    name = names[local] = local_tag + v[len(raw)] + raw if 0 < len(raw) < small else \
                        _text(local_tag, local)
                if n < small:
                    item = id_tag + v[n] + name if n else name
                elif n < 1 << 21:
                    item = id_tag + bytes((n & 0x7F | 0x80, n >> 7 & 0x7F | 0x80, n >> 14)) + name
                else:
                    item = id_tag + _varint(n) + name
                body += child_tag + v[len(item)] + item if len(item) < small else _framed(child_tag, item)
        if mine:
            for attribute, full_name, key in mine:
                name = names.get("\0" + attribute)
                if name is None:
                    name = names["\0" + attribute] = _text(name_tag, attribute)
                if 0 < len(full_name) < small and 0 < len(key) < small and full_name.isascii() and key.isascii():
                    item = (name + full_tag + v[len(full_name)] + full_name.encode() + key_tag + v[len(key)]
                            + key.encode())
                else:
                    item = name + _utf8_field(full_tag, full_name) + _utf8_field(key_tag, key)
                body += attr_tag + v[len(item)] + item if len(item) < small else _framed(attr_tag, item)
        if i in slot_variables:
            for original, slot_name, slot in slot_variables[i]:
                body += _framed(slot_tag, _int(t["original_variable_node_id"], original)
                                + _text(t["slot_name"], slot_name) + _int(t["slot_variable_node_id"], slot))
        body += yes if valued[i] else no
        write(node_tag + (v[len(body)] if len(body) < small else encode_varint(len(body))) + body)
    return out.getvalue()  # (the buffer itself: no copy of the graph)


def _tags() -> dict[str, bytes]:
    """Field name -> tag bytes for the graph's messages (names are unique across them but for ``name``,
    which RegisteredSaver and SerializedTensor both number 1)."""
    global _TAGS
    if _TAGS is None:
        from formats.concepts.proto import messages as m

        tags: dict[str, bytes] = {}
        for message in (m.TRACKABLE_OBJECT_GRAPH, m.TRACKABLE_OBJECT, m.OBJECT_REFERENCE, m.SERIALIZED_TENSOR,
                        m.SLOT_VARIABLE_REFERENCE, m.REGISTERED_SAVER, m.BOOL_VALUE):
            for f, _, _, key in message.writing:
                if tags.setdefault(f.name, key) != key:  # pragma: no cover - the schema says otherwise
                    raise AssertionError(f"field {f.name!r} has two tags")
        _TAGS = tags
    return _TAGS


_TAGS: dict[str, bytes] | None = None


_VARINTS: tuple[bytes, ...] | None = None


def _varints(nodes: int) -> tuple[bytes, ...]:
    """The varints of 0 .. n - 1 (one or two bytes): lengths and most node ids, for a graph of ``nodes`` nodes (n
    from 128 up to 2**14 as the graph needs: all 16,384 of them cost 29 million instructions, three quarters of
    Python's own start-up, where a small graph uses a few dozen)."""
    global _VARINTS
    size = min(1 << 14, max(0x80, nodes))
    if _VARINTS is None or len(_VARINTS) < size:
        _VARINTS = tuple([bytes((i,)) for i in range(0x80)] + [bytes((i & 0x7F | 0x80, i >> 7))
                                                                for i in range(0x80, size)])
    return _VARINTS


def _varint(value: int) -> bytes:
    """The varint of a node id beyond the table (three bytes up to 2**21), as :func:`_int` writes it."""
    if 0 <= value < 1 << 21:
        return bytes((value & 0x7F | 0x80, value >> 7 & 0x7F | 0x80, value >> 14))
    return encode_varint(int(value) & 0xFFFFFFFFFFFFFFFF)


def _utf8_field(tag: bytes, value: str) -> bytes:
    """A string field (omitted when empty) - :func:`_text` without its calls when the text is valid UTF-8."""
    if not value:
        return b""
    try:
        raw = value.encode("utf-8")
    except UnicodeEncodeError:
        return _text(tag, value)
    return tag + encode_varint(len(raw)) + raw


def _framed(tag: bytes, body: bytes) -> bytes:
    return tag + encode_varint(len(body)) + body


def _text(tag: bytes, value: str) -> bytes:
    return _framed(tag, safe_text(value).encode("utf-8")) if value else b""  # proto strings are UTF-8


def _int(tag: bytes, value: int) -> bytes:
    return tag + encode_varint(int(value) & 0xFFFFFFFFFFFFFFFF) if value else b""

