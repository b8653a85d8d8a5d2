"""An object graph grown as columns: :class:`GraphColumns`, what ``convert --to tf-object`` builds (issue 38).

:class:`~formats.ops.convert.graph_build.GraphBuilder` holds a :class:`~formats.concepts.object_graph.ObjectNode`
per object, with a :class:`~formats.concepts.object_graph.ChildRef` per edge and an
:class:`~formats.concepts.object_graph.Attribute` per variable: at 100,000 tensors 200,000 nodes made by
400,000 calls before a byte is encoded. Here a node is its position in a few lists: its children as
``(node, local name)`` pairs, its path, and (in dictionaries, for the nodes that have them) its attributes and
slot variables; :meth:`GraphColumns.encode` writes the graph from them with
:func:`~formats.concepts.object_graph_codec.encode_graph_columns`, byte for byte what
:func:`~formats.concepts.object_graph_codec.encode_object_graph` writes of the same nodes
(:meth:`GraphColumns.to_nodes` makes them, for that comparison and any caller that wants objects).

The methods are :class:`GraphBuilder`'s, with its numbering (breadth-first, children in name order, then the
nodes made later in the order they are asked for); :meth:`GraphColumns.grow` takes names that are all valid
UTF-8 (a caller with others uses :class:`GraphBuilder`, which shows them as their safe text).
"""
from __future__ import annotations

from formats.concepts.object_graph import ATTRIBUTES, VARIABLE_VALUE, escape_local_name
from formats.concepts.object_graph_codec import encode_graph_columns
from formats.core.names import safe_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from formats.concepts.object_graph import ObjectNode

__all__ = ["GraphColumns"]

_Kids = list[tuple[int, str]]


class GraphColumns:
    """Grows an object graph held as columns: :meth:`grow` a tree of names, :meth:`object` by path,
    :meth:`child`, :meth:`variable`, :meth:`slot` on an optimizer, :meth:`encode`."""

    def __init__(self) -> None:
        self.kids: list[_Kids | None] = [None]  # node -> its children (node, local name), None for none
        self.paths: list[str] = [""]  # node -> its escaped path (a slot variable's: its key's prefix)
        self.attributes: dict[int, list[tuple[str, str, str]]] = {}  # node -> (name, full_name, checkpoint_key)
        self.slot_variables: dict[int, list[tuple[int, str, int]]] = {}  # optimizer -> (variable, slot name, node)
        self._named: dict[int, dict[str, int]] = {}  # parent -> local name -> child, made when child() asks

    def __len__(self) -> int:
        return len(self.paths)

    def new_node(self, path: str = "") -> int:
        """A new node with no edge to it (a slot variable, for instance)."""
        self.kids.append(None)
        self.paths.append(path)
        return len(self.paths) - 1

    def child(self, parent: int, local_name: str) -> int:
        """The child of ``parent`` named ``local_name`` (shown as its safe text), created if absent."""
        local_name = safe_text(local_name)
        named = self._named.get(parent)
        if named is None:
            named = self._named[parent] = {}
            for node, name in self.kids[parent] or ():
                named.setdefault(name, node)
        found = named.get(local_name)
        if found is not None:
            return found
        prefix = self.paths[parent]
        escaped = escape_local_name(local_name)
        node = self.new_node(f"{prefix}/{escaped}" if prefix else escaped)
        named[local_name] = node
        kids = self.kids[parent]
        if kids is None:
            kids = self.kids[parent] = []
        kids.append((node, local_name))
        return node

    def grow(self, tree: dict[str, Any]) -> dict[int, int]:
        """Create the objects of ``tree`` (nested dicts of local names, all valid UTF-8) under the root of a graph
        that has no other node yet, breadth-first, children in name order; returns ``id(subtree) -> node`` for
        every subtree. The nodes :meth:`GraphBuilder.grow` makes, as columns."""
        if len(self.paths) != 1:
            raise ValueError("grow() builds a graph from its root only")
        kids, paths = self.kids, self.paths
        placed = {id(tree): 0}
        queue: list[tuple[int, dict[str, Any]]] = [(0, tree)]
        for node, children in queue:  # the list grows as it is walked: breadth-first
            prefix = paths[node]
            refs: _Kids = []
            kids[node] = refs
            for name in sorted(children):
                found = len(paths)
                kids.append(None)
                refs.append((found, name))
                escaped = escape_local_name(name) if "." in name or "/" in name else name
                paths.append(f"{prefix}/{escaped}" if prefix else escaped)
                subtree = children[name]
                placed[id(subtree)] = found
                if subtree:
                    queue.append((found, subtree))
        return placed

    def object(self, segments: Iterable[str]) -> int:
        """The node at the path of unescaped ``segments`` from the root, creating missing objects."""
        node = 0
        for segment in segments:
            node = self.child(node, segment)
        return node

    def find(self, path: str) -> int | None:
        """The first object with escaped ``path`` (not a slot variable), if any."""
        try:
            node = self.paths.index(path)
        except ValueError:
            return None
        return None if self._is_slot(node) else node

    def _is_slot(self, node: int) -> bool:
        return any(node == slot for slots in self.slot_variables.values() for _, _, slot in slots)

    def child_ids(self, node: int) -> list[int]:
        """The children of ``node``, in order."""
        return [child for child, _ in self.kids[node] or ()]

    def variable(self, node: int, full_name: str, attribute: str = VARIABLE_VALUE) -> str:
        """Give ``node`` an attribute (a variable's value); returns its checkpoint key."""
        key = f"{self.paths[node]}/{ATTRIBUTES}/{escape_local_name(attribute)}"
        found = self.attributes.get(node)
        if found is None:
            self.attributes[node] = [(attribute, full_name, key)]
        else:
            found.append((attribute, full_name, key))
        return key

    def slot(self, optimizer: int, variable: int, slot_name: str, full_name: str) -> str:
        """A slot variable ``slot_name`` of ``variable`` owned by ``optimizer``; returns its key."""
        slot_name = safe_text(slot_name)
        path = f"{self.paths[variable]}/.OPTIMIZER_SLOT/{self.paths[optimizer]}/{escape_local_name(slot_name)}"
        node = self.new_node(path)
        self.slot_variables.setdefault(optimizer, []).append((variable, slot_name, node))
        key = f"{path}/{ATTRIBUTES}/{VARIABLE_VALUE}"
        self.attributes[node] = [(VARIABLE_VALUE, full_name, key)]
        return key

    def encode(self) -> bytes:
        """The serialized graph (``has_checkpoint_values`` set as TensorFlow sets it)."""
        return encode_graph_columns(self.kids, self.attributes, self.slot_variables)

    def to_nodes(self) -> list[ObjectNode]:
        """The graph as :class:`~formats.concepts.object_graph.ObjectNode` s (``has_checkpoint_values`` unset)."""
        from formats.concepts.object_graph import Attribute, ChildRef, ObjectNode, SlotVariableRef

        return [ObjectNode(i, [ChildRef(c, name) for c, name in kids or ()],
                           [Attribute(*a) for a in self.attributes.get(i, ())],
                           [SlotVariableRef(*s) for s in self.slot_variables.get(i, ())])
                for i, kids in enumerate(self.kids)]
