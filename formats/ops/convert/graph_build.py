"""Building a ``TrackableObjectGraph``: nodes as :mod:`formats.concepts.object_graph` models them, encoded as TF does.

:class:`GraphBuilder` grows a graph from the root (node 0): objects by path, attributes,
slot variables on an optimizer node. :func:`encode_object_graph` serializes a node list
field by field like TensorFlow's ``_fill_object_graph_proto``, filling
``has_checkpoint_values`` the way ``_add_has_checkpoint_values`` does: a node has values when
it has attributes, slot variables or a registered saver, or when any child does.
"""
from __future__ import annotations

from collections.abc import Iterable

from formats.concepts.object_graph import ATTRIBUTES, Attribute, ChildRef, ObjectNode, SlotVariableRef, escape_local_name

__all__ = ["GraphBuilder", "encode_object_graph", "checkpointed_nodes", "VARIABLE_VALUE"]

VARIABLE_VALUE = "VARIABLE_VALUE"


def checkpointed_nodes(nodes: list[ObjectNode]) -> set[int]:
    """Ids of nodes that have checkpoint values themselves or through a descendant."""
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


def encode_object_graph(nodes: list[ObjectNode], fill_has_values: bool = True) -> bytes:
    """Serialize ``nodes`` (node i must have id i) as a ``TrackableObjectGraph`` message."""
    from formats.concepts.proto.tfckpt_bundle_pb2 import TrackableObjectGraph

    proto = TrackableObjectGraph()
    valued = checkpointed_nodes(nodes) if fill_has_values else set()
    for index, node in enumerate(nodes):
        if node.id != index:
            raise ValueError(f"node {index} has id {node.id}")
        p = proto.nodes.add()
        for ref in node.children:
            p.children.add(node_id=ref.node_id, local_name=ref.local_name)
        for attr in node.attributes:
            p.attributes.add(name=attr.name, full_name=attr.full_name, checkpoint_key=attr.checkpoint_key,
                             optional_restore=attr.optional_restore)
        for slot in node.slot_variables:
            p.slot_variables.add(original_variable_node_id=slot.original_variable_node_id,
                                 slot_name=slot.slot_name, slot_variable_node_id=slot.slot_variable_node_id)
        if node.registered_saver is not None:
            p.registered_saver.name = node.registered_saver.name
            p.registered_saver.object_name = node.registered_saver.object_name
        if fill_has_values:
            p.has_checkpoint_values.value = node.id in valued
        elif node.has_checkpoint_values is not None:
            p.has_checkpoint_values.value = node.has_checkpoint_values
    return bytes(proto.SerializeToString())


class GraphBuilder:
    """Grows an object graph: :meth:`object` by path, :meth:`variable`, :meth:`slot` on an optimizer."""

    def __init__(self) -> None:
        self.nodes: list[ObjectNode] = [ObjectNode(0)]
        self.paths: dict[int, str] = {0: ""}
        self._by_path: dict[str, int] = {"": 0}

    def new_node(self) -> int:
        """A new node with no edge to it (a slot variable, for instance)."""
        self.nodes.append(ObjectNode(len(self.nodes)))
        return len(self.nodes) - 1

    def child(self, parent: int, local_name: str) -> int:
        """The child of ``parent`` named ``local_name`` (unescaped), created if absent."""
        for ref in self.nodes[parent].children:
            if ref.local_name == local_name:
                return ref.node_id
        node = self.new_node()
        self.nodes[parent].children.append(ChildRef(node, local_name))
        path = _join(self.paths[parent], escape_local_name(local_name))
        self.paths[node] = path
        self._by_path.setdefault(path, node)
        return node

    def object(self, segments: Iterable[str]) -> int:
        """The node at the path of unescaped ``segments`` from the root, creating missing objects."""
        node = 0
        for segment in segments:
            node = self.child(node, segment)
        return node

    def find(self, path: str) -> int | None:
        """The node with escaped ``path``, if any."""
        return self._by_path.get(path)

    def variable(self, node: int, full_name: str, attribute: str = VARIABLE_VALUE) -> str:
        """Give ``node`` an attribute (a variable's value); returns its checkpoint key."""
        key = f"{self.paths[node]}/{ATTRIBUTES}/{escape_local_name(attribute)}"
        self.nodes[node].attributes.append(Attribute(attribute, full_name, key))
        return key

    def slot(self, optimizer: int, variable: int, slot_name: str, full_name: str) -> str:
        """A slot variable ``slot_name`` of ``variable`` owned by ``optimizer``; returns its key."""
        node = self.new_node()
        self.nodes[optimizer].slot_variables.append(SlotVariableRef(variable, slot_name, node))
        path = f"{self.paths[variable]}/.OPTIMIZER_SLOT/{self.paths[optimizer]}/{escape_local_name(slot_name)}"
        self.paths[node] = path
        key = f"{path}/{ATTRIBUTES}/{VARIABLE_VALUE}"
        self.nodes[node].attributes.append(Attribute(VARIABLE_VALUE, full_name, key))
        return key

    def encode(self) -> bytes:
        """The serialized graph."""
        return encode_object_graph(self.nodes)


def _join(prefix: str, segment: str) -> str:
    return f"{prefix}/{segment}" if prefix else segment
