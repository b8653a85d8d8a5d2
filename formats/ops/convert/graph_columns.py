"""An object graph grown as columns: :class:`GraphColumns`, what ``convert --to tf-object`` builds (issue 38).

:class:`~formats.ops.convert.graph_build.GraphBuilder` holds a :class:`~formats.concepts.object_graph.ObjectNode`
per object, with a :class:`~formats.concepts.object_graph.ChildRef` per edge and an
:class:`~formats.concepts.object_graph.Attribute` per variable: at 100,000 tensors 200,000 nodes made by
400,000 calls before a byte is encoded. Here a node is its position in two lists (its local name and its
parent), an attribute its position in four, and slot variables are kept by optimizer;
:meth:`GraphColumns.encode` writes the graph from them with
:func:`~formats.concepts.object_graph_codec.encode_graph_columns`, each node's children and attributes made as
it is written, byte for byte what :func:`~formats.concepts.object_graph_codec.encode_object_graph` writes of the
same nodes (:meth:`GraphColumns.to_nodes` makes them, for that comparison and any caller that wants objects).

The methods are :class:`GraphBuilder`'s, with its numbering (breadth-first, children in name order, then the
nodes made later in the order they are asked for); :meth:`GraphColumns.grow` takes names that are all valid
UTF-8 (a caller with others uses :class:`GraphBuilder`, which shows them as their safe text).
"""
from __future__ import annotations

from _bisect import bisect_left, bisect_right  # bisect's C half, without its module
from itertools import islice

from formats.core.object_keys import ATTRIBUTES, PATHS_KEPT, VARIABLE_VALUE, chain_path, escape_local_name
from formats.concepts.object_graph_codec import encode_graph_columns
from formats.core.names import safe_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence
    from typing import Any

    from formats.concepts.object_graph import ObjectNode

__all__ = ["GraphColumns"]


class GraphColumns:
    """Grows an object graph held as columns: :meth:`grow` from names, :meth:`object` by path,
    :meth:`child`, :meth:`variable`, :meth:`slot` on an optimizer, :meth:`encode`.

    A node is a position in two lists - its local name (the edge's to it; ``""`` for the root and slot variables,
    the names shared: ``unit_0`` once however many layers have one) and its parent (-1: none) - and each attribute
    a position in four; paths are made when asked for (a few kept: :data:`~formats.core.object_keys.PATHS_KEPT`),
    children found from the parents: the nodes :meth:`grow` makes, breadth-first, are numbered in their parents'
    order, so a node's children are a run of them (found by bisection), then those :meth:`child` added later, in
    order. At 10^5 variables this holds some 8 MB where a path, a child list and an attribute tuple a node held
    57 MB."""

    def __init__(self) -> None:
        self.names: list[str] = [""]  # node -> the local name of the edge to it, unescaped
        self.parent: list[int] = [-1]  # node -> its parent (-1: the root, a slot variable)
        self._grown = 1  # the nodes made by grow() (their parents never decrease), the root among them
        self._later: dict[int, list[int]] = {}  # parent -> the children child() added after grow()
        self.attr_node: list[int] = []  # per attribute: its node, name, full name and checkpoint key
        self.attr_name: list[str] = []
        self.attr_full: list[str] = []
        self.attr_key: list[str] = []
        self.slot_variables: dict[int, list[tuple[int, str, int]]] = {}  # optimizer -> (variable, slot name, node)
        self._slots: dict[int, tuple[int, int, str]] | None = None  # slot node -> (variable, optimizer, slot name)
        self._named: dict[int, dict[str, int]] = {}  # parent -> local name -> child, made when child() asks
        self._paths: dict[int, str] = {0: ""}  # paths made lately (cleared past PATHS_KEPT)
        self._share: dict[str, str] = {}  # each local name to the first string equal to it

    def __len__(self) -> int:
        return len(self.parent)

    def new_node(self) -> int:
        """A new node with no edge to it (a slot variable, for instance)."""
        self.names.append("")
        self.parent.append(-1)
        return len(self.parent) - 1

    def child(self, parent: int, local_name: str) -> int:
        """The child of ``parent`` named ``local_name`` (shown as its safe text), created if absent."""
        local_name = safe_text(local_name)
        named = self._named.get(parent)
        if named is None:
            named = self._named[parent] = {}
            for node in self.child_ids(parent):
                named.setdefault(self.names[node], node)
        found = named.get(local_name)
        if found is not None:
            return found
        node = self.new_node()
        self.names[node] = self._share.setdefault(local_name, local_name)
        self.parent[node] = parent
        named[local_name] = node
        self._later.setdefault(parent, []).append(node)
        return node

    def grow(self, names: list[str]) -> list[int]:
        """Create the objects of ``names`` (paths of unescaped segments joined by ``/``, all valid UTF-8; one that
        starts with NUL is the single segment after it) under the root of a graph that has no other node yet, and
        return each name's node. The nodes :meth:`GraphBuilder.grow` makes of the tree of the names - breadth-first,
        children in name order - found without the tree: in the names sorted segment by segment, the objects of
        one depth come in their breadth-first order (their parents' order, then their names'), each where a name's
        segments first differ from the last name's. A dictionary an object was 27 MB at 10^5 names, and a map of
        them to their nodes 20 MB more."""
        if len(self.parent) != 1:
            raise ValueError("grow() builds a graph from its root only")

        if any("\0" in name[1:] for name in names):  # (a name with NUL inside: its segments compared as tuples)
            keys: list[Any] = [(name[1:],) if name[:1] == "\0" else tuple(name.split("/")) for name in names]
        else:  # NUL below every character: the same order as the segments', one string a name
            keys = [name[1:] if name[:1] == "\0" else name.replace("/", "\0") for name in names]
        order = sorted(range(len(names)), key=keys.__getitem__)
        del keys
        share = self._share.setdefault
        by_depth: list[tuple[list[str], list[int]]] = []  # per depth: its objects' names and parents (by position)
        current: list[int] = []  # per depth: the position of the object the last name passed through
        depth_of, position_of = [0] * len(names), [0] * len(names)
        last: list[str] = []
        deepest = last_size = 0
        for i in order:  # (a few calls a name: a million names)
            name = names[i]
            mine = [name[1:]] if name[:1] == "\0" else name.split("/")
            size = len(mine)
            same, most = 0, size if size < last_size else last_size
            while same < most and mine[same] == last[same]:
                same += 1
            for depth in range(same, size):
                if depth == deepest:
                    by_depth.append(([], []))
                    current.append(0)
                    deepest += 1
                objects, parents = by_depth[depth]
                parents.append(current[depth - 1] if depth else 0)
                current[depth] = len(objects)
                objects.append(share(mine[depth], mine[depth]))
            depth_of[i], position_of[i] = size - 1, current[size - 1]
            last, last_size = mine, size
        start = [1]  # the first node of each depth
        for objects, parents in by_depth:
            start.append(start[-1] + len(objects))
            base = start[-3] if len(start) > 2 else 0
            self.names += objects
            before, node = -1, -1
            for p in parents:  # (a parent's number made once for its run of children)
                if p != before:
                    before, node = p, base + p
                self.parent.append(node)
        self._grown = len(self.parent)
        return [start[d] + p for d, p in zip(depth_of, position_of)]

    def object(self, segments: Iterable[str]) -> int:
        """The node at the path of unescaped ``segments`` from the root, creating missing objects."""
        node = 0
        for segment in segments:
            node = self.child(node, segment)
        return node

    def find(self, path: str) -> int | None:
        """The first object with escaped ``path`` (not a slot variable), if any."""
        node = 0
        for segment in path.split("/") if path else ():
            node = next((c for c in self.child_ids(node) if escape_local_name(self.names[c]) == segment), -1)
            if node < 0:
                return None
        return node

    def child_ids(self, node: int) -> list[int]:
        """The children of ``node``, in order."""
        grown = self._grown
        lo = bisect_left(self.parent, node, 1, grown)
        hi = bisect_right(self.parent, node, lo, grown)
        later = self._later.get(node)
        return list(range(lo, hi)) + later if later else list(range(lo, hi))

    def has_children(self, node: int) -> bool:
        """Whether ``node`` has a child."""
        at = bisect_left(self.parent, node, 1, self._grown)
        return at < self._grown and self.parent[at] == node or node in self._later

    def path(self, node: int) -> str:
        """The node's escaped path (a slot variable's: its key's prefix)."""
        paths = self._paths
        known = paths.get(node)
        if known is not None:
            return known
        if self.parent[node] < 0:
            variable, optimizer, slot_name = self._slot(node)
            return f"{self.path(variable)}/.OPTIMIZER_SLOT/{self.path(optimizer)}/{escape_local_name(slot_name)}"
        return chain_path(node, paths, self.parent, range(len(self.parent)), self._segment,  # (a node's edge: itself)
                          PATHS_KEPT)

    def _segment(self, node: int) -> str:
        """The escaped local name of the edge to ``node``."""
        name = self.names[node]
        return escape_local_name(name) if "." in name or "/" in name else name

    def _slot(self, node: int) -> tuple[int, int, str]:
        if self._slots is None or node not in self._slots:
            self._slots = {slot: (variable, optimizer, name) for optimizer, refs in self.slot_variables.items()
                           for variable, name, slot in refs}
        return self._slots[node]

    @property
    def paths(self) -> list[str]:
        """Every node's path (made now: for a caller that wants them all)."""
        return [self.path(i) for i in range(len(self))]

    def variable(self, node: int, full_name: str, attribute: str = VARIABLE_VALUE) -> str:
        """Give ``node`` an attribute (a variable's value); returns its checkpoint key."""
        key = f"{self.path(node)}/{ATTRIBUTES}/{escape_local_name(attribute)}"
        self.attr_node.append(node)
        self.attr_name.append(attribute)
        self.attr_full.append(full_name)
        self.attr_key.append(key)
        return key

    def slot(self, optimizer: int, variable: int, slot_name: str, full_name: str) -> str:
        """A slot variable ``slot_name`` of ``variable`` owned by ``optimizer``; returns its key."""
        slot_name = safe_text(slot_name)
        node = self.new_node()
        self.slot_variables.setdefault(optimizer, []).append((variable, slot_name, node))
        if self._slots is not None:
            self._slots[node] = (variable, optimizer, slot_name)
        return self.variable(node, full_name)

    def encode(self) -> bytes:
        """The serialized graph (``has_checkpoint_values`` set as TensorFlow sets it)."""
        return encode_graph_columns(len(self), _children_by_node(self), _attributes_by_node(self), self.slot_variables,
                                    self._valued())

    def _valued(self) -> bytearray:
        """1 for a node with checkpoint values of its own or through a descendant (each node has one parent)."""
        parent = self.parent
        marked = bytearray(len(parent))
        for todo in (self.attr_node, self.slot_variables):
            for node in todo:
                while node >= 0 and not marked[node]:
                    marked[node] = 1
                    node = parent[node]
        return marked

    def to_nodes(self) -> list[ObjectNode]:
        """The graph as :class:`~formats.concepts.object_graph.ObjectNode` s (``has_checkpoint_values`` unset)."""
        from formats.concepts.object_graph import Attribute, ChildRef, ObjectNode, SlotVariableRef

        return [ObjectNode(i, [ChildRef(c, name) for c, name in kids or ()],
                           [Attribute(*a) for a in attributes or ()],
                           [SlotVariableRef(*s) for s in self.slot_variables.get(i, ())])
                for i, (kids, attributes) in enumerate(zip(_children_by_node(self), _attributes_by_node(self)))]


def _children_by_node(graph: GraphColumns) -> Iterator[list[tuple[int, str]] | None]:
    """Each node's children as ``(node, local name)`` pairs (None for none), made as the encoder walks the nodes."""
    names, parent, grown, later = graph.names, graph.parent, graph._grown, graph._later
    lo = 1  # the grown nodes' runs follow one another in their parents' order
    for node in range(len(parent)):
        hi = lo
        while hi < grown and parent[hi] == node:
            hi += 1
        more = later.get(node)
        if hi == lo and not more:
            yield None
            continue
        kids = list(zip(range(lo, hi), names[lo:hi]))
        if more:
            kids += [(c, names[c]) for c in more]
        lo = hi
        yield kids


def _attributes_by_node(graph: GraphColumns) -> Iterator[list[tuple[str, str, str]] | None]:
    """Each node's attributes, ``(name, full_name, checkpoint_key)`` in the order given (None for none), made as
    the encoder walks the nodes."""
    nodes = graph.attr_node
    order: Sequence[int] = range(len(nodes))  # given in their nodes' order (variables in key order): no list
    if not all(map(int.__le__, nodes, islice(nodes, 1, None))):
        order = sorted(order, key=nodes.__getitem__)  # (stable: a node's in the order given)
    names, fulls, keys = graph.attr_name, graph.attr_full, graph.attr_key
    at, count = 0, len(order)
    following = nodes[order[0]] if count else -1  # the next node that has attributes
    for node in range(len(graph)):
        if node != following:
            yield None
            continue
        mine = []
        while at < count and nodes[order[at]] == node:
            k = order[at]
            mine.append((names[k], fulls[k], keys[k]))
            at += 1
        following = nodes[order[at]] if at < count else -1
        yield mine
