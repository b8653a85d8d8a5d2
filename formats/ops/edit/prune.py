"""An object graph cut down to the tensors an edit keeps, still the graph TensorFlow would have written.

A node stays when it keeps a value (an attribute whose tensor is kept, or a kept slot variable), when
it is on the path of one that does, or when it never had a value and its parent stays (a layer
without weights): the optimizer of a checkpoint whose optimizer state is left out goes with everything
under it. Attributes of tensors left out, edges to nodes that go and slot references whose
variable or slot goes are removed; the remaining nodes are renumbered in their old order and
``has_checkpoint_values`` is filled again as TensorFlow fills it. Every object keeps its path (the
first breadth-first one, which is what keys are made of); a node whose path would change is a
problem, reported before anything is written. Nodes saved by a registered saver stay as they are.
"""
from __future__ import annotations

from _collections import deque  # type: ignore[import-not-found]  # collections' C half, without the package (start-up)

from _collections_abc import Sequence  # collections.abc's, without the collections package (start-up)

from formats.concepts.object_graph import Attribute, ChildRef, ObjectGraph, ObjectNode, SlotVariableRef
from formats.core.arrays import sorted_unique
from formats.concepts.object_graph_arrays import GraphArrays, TextColumn, encode_graph_arrays
from formats.concepts.object_graph_codec import NodeMarks, checkpointed_columns
from formats.ops.convert.graph_build import checkpointed_nodes, encode_object_graph
from formats.ops.convert.plan import ERROR, Problem

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Collection, Container, Mapping
    from typing import Any

__all__ = ["prune_graph"]


def prune_graph(graph: ObjectGraph, keys: list[str], dropped: Collection[str],
                decoded: bool = True) -> tuple[ObjectGraph | None, bytes | None, list[Problem]]:
    """The graph of ``graph`` holding only the tensors of the stored ``keys`` not ``dropped`` (the keys an edit
    leaves out: most edits leave out few, and a set of the kept ones was 32 MB at 10^6) and its serialized bytes, or
    None, None and the problems that make it impossible. A graph decoded into columns is pruned on them
    (:class:`_ColumnPrune`); any other, or one it does not take, node by node. ``decoded=False``: only the bytes
    are wanted, and the pruned graph may be None beside them (a graph pruned on its columns is not decoded again
    when its paths are checked on the arrays)."""
    done = _ColumnPrune(graph).run(keys, dropped, decoded)
    if done is not None:
        return done
    pruned, problems = _prune_nodes(graph, keys, dropped)
    if pruned is None:
        return None, None, problems
    return pruned, encode_object_graph(pruned.nodes), problems


def _prune_nodes(graph: ObjectGraph, keys: list[str], dropped: Collection[str]
                 ) -> tuple[ObjectGraph | None, list[Problem]]:
    """:func:`prune_graph` node by node: the nodes copied, cut down and renumbered."""
    problems: list[Problem] = []
    mapping = graph.map_keys(keys)
    attributes: dict[tuple[int, str], list[bool]] = {}
    for key, (node_id, attr) in mapping.items():
        attributes.setdefault((node_id, attr.name), []).append(key not in dropped)
    for (node_id, name), flags in attributes.items():
        if any(flags) and not all(flags):
            problems.append(_split_attribute(graph, node_id, name))
    keep_attr = {pair for pair, flags in attributes.items() if any(flags)}
    del mapping, attributes  # each step lets go of what it alone needed: the peak is the graph checked below
    candidates = graph.node_copies()  # the graph's own nodes are not built (a graph in columns)
    before = checkpointed_nodes(candidates)
    _keep_only(candidates, keep_attr)
    del keep_attr
    staying = _staying(graph, candidates, before)
    del before
    nodes = _renumbered(candidates, staying)  # (uses the copies up)
    del candidates
    if problems:
        return None, problems
    pruned = ObjectGraph(nodes, graph.source)
    problems = _moved(pruned, graph, sorted(staying))  # (pruned node i is the i-th staying one)
    return (None if problems else pruned), problems


def _split_attribute(graph: ObjectGraph, node_id: int, name: str) -> Problem:
    return Problem("graph", graph.path(node_id) or "", f"attribute {name!r} is stored as several tensors, and only "
                   "some of them would be kept", ERROR)


def _moved(pruned: ObjectGraph, graph: ObjectGraph, kept_ids: Any) -> list[Problem]:
    """A problem for each object of ``pruned`` (node ``i`` is ``graph``'s ``kept_ids[i]``) found by another path
    than in ``graph``."""
    if pruned.keeps_paths_of(graph, kept_ids):  # the common case, decided without building paths
        return []
    problems = []
    for new, old in enumerate(map(int, kept_ids)):
        if pruned.path(new) != graph.path(old):
            problems.append(Problem("graph", graph.path(old) or "", f"the object would be found as "
                                    f"{pruned.path(new)!r} once other objects are left out; its keys name "
                                    f"{graph.path(old)!r}", ERROR))
    return problems


class _ColumnPrune:
    """:func:`prune_graph` on a graph decoded into columns: what stays worked out on arrays a node, edge,
    attribute or slot reference each, and each staying node made as it is encoded and let go - no copy of every
    node, and no renumbered second set of them, held (at 10^5 objects, about 70 MB). Byte for byte what pruning
    node by node writes (a test compares them). A graph not in columns, or with two attributes of one name on a
    node, is left to the pruning node by node (:meth:`run` returns None)."""

    def __init__(self, graph: ObjectGraph) -> None:
        self.graph = graph

    def run(self, keys: list[str], dropped: Collection[str],
            decoded: bool = True) -> tuple[ObjectGraph | None, bytes | None, list[Problem]] | None:
        """The pruned graph, its bytes and the problems (as :func:`prune_graph`); None when not taken. Every object's
        path is checked on the arrays (:meth:`_paths_kept`); only where that cannot tell, or the graph is asked for
        (``decoded``), are the bytes decoded again (at 10^6 objects 3 s and 110 MB of an edit's peak)."""
        from formats.concepts.object_graph_columns import GraphColumns

        graph = self.graph
        if not isinstance(graph.table, GraphColumns):
            return None  # (a small graph: decoded node by node, pruned so, with no numpy)
        from formats.concepts.object_graph_codec import decode_object_graph

        found, attributes = graph.key_attributes(keys)
        chosen = self._attributes_kept(found, attributes, dropped)
        if chosen is None or isinstance(chosen, list):
            return None if chosen is None else (None, None, chosen)
        del found
        self.keep_attr = chosen
        valued = self._plan()
        data = self._encode(valued)
        if data is None:
            return None  # (pruned node by node)
        del self.keep_attr
        paths_kept = self._paths_kept()
        del self.keep_edge, self.keep_slot, self.new_id
        if paths_kept and not decoded:
            return None, data, []
        pruned = decode_object_graph(data, graph.source)
        problems = [] if paths_kept else _moved(pruned, graph, self.order)
        return (None, None, problems) if problems else (pruned, data, problems)

    def _paths_kept(self) -> bool:
        """Whether every staying object keeps its path, decided on the arrays. The pruned graph keeps, in their
        order, every edge between staying nodes, so TensorFlow's traversal of it reaches each staying node the
        graph's reaches by the same first edge, at the same depth and in the same order, exactly when each such
        node's first edge is kept (a level at a time: the edges into a node from the level above are some of the
        graph's, in its order, its first among them) - so under the same name, its path its parent's and that name
        in both. Each slot variable reached by no edge must take its path from the same slot reference in both
        (:func:`_slot_path_refs`), from an owner reached by an edge. False where they differ, or where the check
        cannot tell: then the pruned graph is decoded and its paths compared (:func:`_moved`)."""
        import numpy as np

        graph, t, order, new_id = self.graph, self.graph.table, self.order, self.new_id
        if not len(order) or order[0] != 0:  # (the root stays, as node 0)
            return False
        old_reached = np.asarray(graph.traversal.reached, bool)
        reached = old_reached[order]  # (the pruned graph's, when every first edge below is kept)
        if not bool(self.keep_edge[np.asarray(graph.traversal.edge)[order[reached][1:]]].all()):
            return False
        kept_slots = np.flatnonzero(self.keep_slot)
        slot_original, slot_id = _ints_of(np, t.slot_original), _ints_of(np, t.slot_id)
        old_nodes, old_refs = _slot_path_refs(np, old_reached, slot_original, slot_id)
        new_nodes, new_refs = _slot_path_refs(np, reached, new_id[slot_original[kept_slots]],
                                              new_id[slot_id[kept_slots]])
        staying = new_id[old_nodes] >= 0  # (a slot variable that goes has no path to keep)
        owner = np.repeat(np.arange(t.count), np.diff(_ints_of(np, t.slot_ptr)))
        return (np.array_equal(new_id[old_nodes[staying]], new_nodes)
                and np.array_equal(old_refs[staying], kept_slots[new_refs])
                and bool(old_reached[owner[old_refs[staying]]].all()))

    def _encode(self, valued: NodeMarks) -> bytes | None:
        """The pruned graph's bytes, byte for byte what :func:`encode_object_graph` writes of the pruned nodes: each
        staying node renumbered, with its kept attributes as they were, its edges to staying nodes and its slot
        references whose variable and slot stay; written from the columns with numpy (:func:`encode_graph_arrays`),
        the items kept taken in their order (a staying node's are its own, and the nodes keep theirs), their strings
        from the graph's own bytes: the keys too (a graph in columns holds its attributes' keys as stored, valid
        UTF-8: a list of them encoded again was 0.5 s and 60 MB of an edit of 10^6). None: an id past what
        :func:`encode_graph_arrays` writes."""
        import numpy as np

        t = self.graph.table
        kept_edges, kept_attrs, kept_slots = (np.flatnonzero(keep) for keep in (self.keep_edge, self.keep_attr,
                                                                                 self.keep_slot))
        order, new_id = self.order, self.new_id
        return encode_graph_arrays(GraphArrays(
            _kept_ptr(np, t.child_ptr, self.keep_edge, order), new_id[np.asarray(t.child_id, np.int64)[kept_edges]],
            TextColumn.of_spans(t.data, t.child_name, kept_edges), _kept_ptr(np, t.attr_ptr, self.keep_attr, order),
            TextColumn.of_spans(t.data, t.attr_name, kept_attrs), TextColumn.of_spans(t.data, t.attr_full, kept_attrs),
            TextColumn.of_spans(t.data, t.attr_key, kept_attrs), np.asarray(t.attr_optional, bool)[kept_attrs],
            _kept_ptr(np, t.slot_ptr, self.keep_slot, order),
            new_id[np.asarray(t.slot_original, np.int64)[kept_slots]], TextColumn.of_spans(t.data, t.slot_name,
                                                                                             kept_slots),
            new_id[np.asarray(t.slot_id, np.int64)[kept_slots]], valued.marks))

    def _attributes_kept(self, found: Mapping[str, int], attributes: Sequence[Attribute],
                         dropped: Collection[str]) -> Any:
        """Per attribute whether it stays (some key of it is not ``dropped``: ``found`` gives each key's
        attribute); the problems when an attribute would keep some of its keys and not others; None when two
        attributes of a node share a name (pruning node by node keeps or drops them together)."""
        import numpy as np

        graph = self.graph
        attr_ptr = _ints_of(np, graph.table.attr_ptr)
        if not _distinct_names(attr_ptr, attributes):
            return None
        at = np.fromiter(found.values(), np.int64, len(found))
        taken = ~np.fromiter(map(dropped.__contains__, found), bool, len(found)) if dropped else \
            np.ones(len(found), bool)
        keep_attr = np.zeros(len(attributes), bool)
        keep_attr[at[taken]] = True
        left_out = np.zeros(len(attributes), bool)  # (per attribute: some key of it dropped)
        left_out[at[~taken]] = True
        split = keep_attr & left_out
        if split.any():  # in the order their first keys come
            owner = np.repeat(np.arange(graph.table.count), np.diff(attr_ptr))
            first = dict.fromkeys(k for k in at.tolist() if split[k])
            return [_split_attribute(graph, int(owner[k]), attributes[k].name) for k in first]
        return keep_attr

    def _plan(self) -> NodeMarks:
        """What stays (:attr:`order`: the staying nodes; :attr:`new_id`, :attr:`keep_edge`, :attr:`keep_slot`),
        from the attributes kept; the pruned graph's nodes that have values."""
        import numpy as np

        graph, t = self.graph, self.graph.table
        n = t.count
        attr_ptr, slot_ptr = _ints_of(np, t.attr_ptr), _ints_of(np, t.slot_ptr)
        running = np.concatenate(([0], np.cumsum(self.keep_attr)))
        has_attr = running[attr_ptr[1:]] > running[attr_ptr[:-1]]
        del running
        slot_original, slot_id = _ints_of(np, t.slot_original), _ints_of(np, t.slot_id)
        keep_slot = has_attr[slot_original] & has_attr[slot_id]
        slot_owner = np.repeat(np.arange(n), np.diff(slot_ptr))
        own = has_attr | (np.bincount(slot_owner[keep_slot], minlength=n) > 0)
        before = checkpointed_columns((np.diff(attr_ptr) > 0) | (np.diff(slot_ptr) > 0), graph.traversal.owner,
                                      t.child_id)
        staying = self._staying(own, np.frombuffer(before.marks, bool))
        del before
        order = np.flatnonzero(staying)
        new_id = np.full(n, -1, np.int64)
        new_id[order] = np.arange(len(order))
        child_id = _ints_of(np, t.child_id)
        edge_owner = np.asarray(graph.traversal.owner, dtype=np.int64)
        keep_edge = staying[edge_owner] & staying[child_id]
        keep_slot &= staying[slot_original] & staying[slot_id]
        kept_edges = np.flatnonzero(keep_edge)
        self.order, self.new_id, self.keep_edge, self.keep_slot = order, new_id, keep_edge, keep_slot
        return checkpointed_columns(own[order], new_id[edge_owner[kept_edges]], new_id[child_id[kept_edges]])

    def _staying(self, own: Any, before: Any) -> Any:
        """Per node whether it stays (see :func:`_staying`): the root, the nodes ``own`` marks (keeping values) and
        every node up their first parents; then, a level of the traversal at a time, each node that had no values
        (``before``) whose first parent stays."""
        import numpy as np

        walk = self.graph.traversal
        parent = np.asarray(walk.parent, dtype=np.int64)
        staying = own.copy()
        staying[0] = True
        frontier = np.flatnonzero(own)
        while len(frontier):
            up = parent[frontier]
            up = up[up >= 0]
            frontier = sorted_unique(up[~staying[up]])
            staying[frontier] = True
        for level in walk.levels:
            level = np.asarray(level, dtype=np.int64)
            staying[level[~before[level] & staying[parent[level]]]] = True
        return staying


def _kept_ptr(np: Any, items_ptr: Any, keep: Any, order: Any) -> Any:
    """The CSR of the items ``keep`` marks over the staying nodes ``order`` (a node that goes keeps none: the kept
    items before a staying node's first are those of the ones before it)."""
    running = np.concatenate(([0], np.cumsum(keep)))
    return np.append(running[np.asarray(items_ptr)[order]], running[-1])


def _slot_path_refs(np: Any, reached: Any, original: Any, slot: Any) -> tuple[Any, Any]:
    """The slot variables reached by no edge that get a path, in increasing order, and for each the slot reference
    (a position in ``original``/``slot``) it takes it from, as an object graph's ``_slot_map`` gives them: the
    first, in order, whose variable has a path by then (reached, or a slot variable given its path before)."""
    if bool(reached[original].all()):  # (every variable reached: the first reference, of those to unreached slots)
        refs = np.flatnonzero(~reached[slot])
        nodes, first = np.unique(slot[refs], return_index=True)
        return nodes, refs[first]
    has = reached.copy()
    taken: dict[int, int] = {}
    for k, (o, s) in enumerate(zip(original.tolist(), slot.tolist())):
        if not has[s] and has[o]:
            has[s] = True
            taken[s] = k
    nodes = np.array(sorted(taken), np.int64)
    return nodes, np.array([taken[n] for n in nodes.tolist()], np.int64)


def _ints_of(np: Any, values: Any) -> Any:
    """A column as int64 (positions index with it without a cast each time)."""
    return np.asarray(values, dtype=np.int64)


def _distinct_names(attr_ptr: Any, attributes: Sequence[Attribute]) -> bool:
    """Whether no node has two attributes of one name (pruning node by node keeps or drops them together)."""
    import numpy as np

    for node in np.flatnonzero(np.diff(attr_ptr) > 1).tolist():
        names = [a.name for a in attributes[int(attr_ptr[node]):int(attr_ptr[node + 1])]]
        if len(set(names)) != len(names):
            return False
    return True


def _keep_only(nodes: list[ObjectNode], keep_attr: set[tuple[int, str]]) -> None:
    """Leave each node (a copy of the graph's) only the attributes kept and the slot references whose slot and
    variable keep values."""
    for n in nodes:
        if n.attributes:
            n.attributes = [a for a in n.attributes if (n.id, a.name) in keep_attr]
    valued = {n.id for n in nodes if n.attributes}
    for node in nodes:
        if node.slot_variables:
            node.slot_variables = [ref for ref in node.slot_variables if ref.slot_variable_node_id in valued
                                   and ref.original_variable_node_id in valued]


def _staying(graph: ObjectGraph, nodes: list[ObjectNode], before: Container[int]) -> set[int]:
    """The root, nodes keeping values and the objects on their paths, and nodes that never had values
    (``before``: the nodes that had) whose first parent stays. (Values reached only through a second path - an
    alias - keep nothing.)"""
    staying = {0}
    for node in nodes:
        if node.attributes or node.slot_variables or node.registered_saver is not None:
            current: int | None = node.id
            while current is not None and current not in staying:
                staying.add(current)
                parent = graph.parent(current)
                current = parent[0] if parent else None
    queue = deque([0])
    seen = {0}
    while queue:
        current = queue.popleft()
        for child, local in graph.children(current):
            if child in seen:
                continue
            seen.add(child)
            queue.append(child)
            if child not in before and graph.parent(child) == (current, local) and current in staying:
                staying.add(child)
    return staying


def _renumbered(nodes: list[Any], staying: set[int]) -> list[ObjectNode]:
    """The staying nodes in their old order, numbered 0..n-1, with edges and slot references among them. Each of
    ``nodes`` (the caller's copies, used up) is let go once its new node is made, and those that go at once: the
    old and the new nodes are not all held together."""
    order = sorted(staying)
    new_id = {old: new for new, old in enumerate(order)}
    for i in range(len(nodes)):
        if i not in new_id:
            nodes[i] = None
    out = []
    for old in order:
        node = nodes[old]
        nodes[old] = None
        out.append(ObjectNode(new_id[old],
                              [ChildRef(new_id[c.node_id], c.local_name) for c in node.children
                               if c.node_id in new_id],
                              node.attributes,
                              [SlotVariableRef(new_id[s.original_variable_node_id], s.slot_name,
                                               new_id[s.slot_variable_node_id])
                               for s in node.slot_variables
                               if s.original_variable_node_id in new_id and s.slot_variable_node_id in new_id],
                              node.registered_saver, None, node.note))
    return out
