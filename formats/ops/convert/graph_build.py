"""Building a ``TrackableObjectGraph``: nodes as :mod:`formats.concepts.object_graph` models them, encoded as TF does.

:class:`GraphBuilder` grows a graph from the root (node 0): objects by path, attributes,
slot variables on an optimizer node; :meth:`GraphBuilder.encode` serializes it with
:func:`formats.concepts.object_graph_codec.encode_object_graph` (re-exported here).
"""
from __future__ import annotations


from formats.concepts.object_graph import ATTRIBUTES, VARIABLE_VALUE, Attribute, ChildRef, ObjectNode, SlotVariableRef, escape_local_name
from formats.concepts.object_graph_codec import checkpointed_nodes, encode_object_graph
from formats.core.names import safe_text

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

__all__ = ["GraphBuilder", "encode_object_graph", "checkpointed_nodes", "VARIABLE_VALUE"]


class GraphBuilder:
    """Grows an object graph: :meth:`object` by path, :meth:`variable`, :meth:`slot` on an optimizer."""

    def __init__(self) -> None:
        self.nodes: list[ObjectNode] = [ObjectNode(0)]
        self.paths: dict[int, str] = {0: ""}
        self._by_path: dict[str, int] = {"": 0}
        self._children: dict[tuple[int, str], int] = {}  # (parent, local name) -> child: a lookup, not a scan

    def new_node(self) -> int:
        """A new node with no edge to it (a slot variable, for instance)."""
        self.nodes.append(ObjectNode(len(self.nodes)))
        return len(self.nodes) - 1

    def child(self, parent: int, local_name: str) -> int:
        """The child of ``parent`` named ``local_name`` (unescaped), created if absent. A name that is not valid
        UTF-8 is given as it is shown (:func:`~formats.core.names.safe_text`): a graph's names are proto strings."""
        found = self._children.get((parent, local_name))  # a valid name is its own safe text: no re-encoding
        if found is not None:
            return found
        local_name = safe_text(local_name)
        found = self._children.get((parent, local_name))
        if found is not None:
            return found
        node = self.new_node()
        self._children[parent, local_name] = node
        self.nodes[parent].children.append(ChildRef(node, local_name))
        path = _join(self.paths[parent], escape_local_name(local_name))
        self.paths[node] = path
        self._by_path.setdefault(path, node)
        return node

    def grow(self, tree: dict[str, Any], parent: int = 0) -> dict[int, int]:
        """Create the objects of ``tree`` (nested dicts of local names) under ``parent`` breadth-first, children
        in name order (TensorFlow's numbering); returns ``id(subtree) -> node`` for every subtree. The same
        nodes as :meth:`child` called for each name in that order, without a call per name."""
        nodes, paths, by_path, known = self.nodes, self.paths, self._by_path, self._children
        placed = {id(tree): parent}
        queue: list[tuple[int, dict[str, Any]]] = [(parent, tree)]
        for node, children in queue:  # the list grows as it is walked: breadth-first, no pop(0) (quadratic)
            refs = nodes[node].children
            prefix = paths[node]
            for name in sorted(children):
                found = known.get((node, name))
                if found is None and not (name.isascii() or _plain(name)):
                    found = self.child(node, name)  # shown as its safe text
                if found is None:  # a new object: child() without its calls
                    found = len(nodes)
                    nodes.append(ObjectNode(found))
                    known[node, name] = found
                    refs.append(ChildRef(found, name))
                    escaped = escape_local_name(name) if "." in name or "/" in name else name
                    path = f"{prefix}/{escaped}" if prefix else escaped
                    paths[found] = path
                    by_path.setdefault(path, found)
                subtree = children[name]
                placed[id(subtree)] = found
                queue.append((found, subtree))
        return placed

    def object(self, segments: Iterable[str]) -> int:
        """The node at the path of unescaped ``segments`` from the root, creating missing objects."""
        node = 0
        for segment in segments:
            node = self.child(node, segment)
        return node

    def find(self, path: str) -> int | None:
        """The node with escaped ``path``, if any."""
        return self._by_path.get(path)

    def child_ids(self, node: int) -> list[int]:
        """The children of ``node``, in order."""
        return [c.node_id for c in self.nodes[node].children]

    def path(self, node: int) -> str:
        """The node's escaped path (a slot variable's: its key's prefix)."""
        return self.paths[node]

    def has_children(self, node: int) -> bool:
        """Whether ``node`` has a child."""
        return bool(self.nodes[node].children)

    def variable(self, node: int, full_name: str, attribute: str = VARIABLE_VALUE) -> str:
        """Give ``node`` an attribute (a variable's value); returns its checkpoint key."""
        key = f"{self.paths[node]}/{ATTRIBUTES}/{escape_local_name(attribute)}"
        self.nodes[node].attributes.append(Attribute(attribute, full_name, key))
        return key

    def slot(self, optimizer: int, variable: int, slot_name: str, full_name: str) -> str:
        """A slot variable ``slot_name`` of ``variable`` owned by ``optimizer``; returns its key."""
        slot_name = safe_text(slot_name)
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


def _plain(name: str) -> bool:
    """Whether ``name`` is valid UTF-8 (its own :func:`~formats.core.names.safe_text`)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _join(prefix: str, segment: str) -> str:
    return f"{prefix}/{segment}" if prefix else segment
