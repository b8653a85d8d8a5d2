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

from formats.concepts.object_graph import ChildRef, ObjectGraph, ObjectNode, SlotVariableRef
from formats.ops.convert.graph_build import checkpointed_nodes
from formats.ops.convert.plan import ERROR, Problem

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Container
    from typing import Any

__all__ = ["prune_graph"]


def prune_graph(graph: ObjectGraph, keys: list[str], kept: set[str]) -> tuple[ObjectGraph | None, list[Problem]]:
    """The graph of ``graph`` holding only the tensors ``kept`` of the stored ``keys``, or None and the
    problems that make it impossible."""
    problems: list[Problem] = []
    mapping = graph.map_keys(keys)
    attributes: dict[tuple[int, str], list[bool]] = {}
    for key, (node_id, attr) in mapping.items():
        attributes.setdefault((node_id, attr.name), []).append(key in kept)
    for (node_id, name), flags in attributes.items():
        if any(flags) and not all(flags):
            problems.append(Problem("graph", graph.path(node_id) or "", f"attribute {name!r} is stored as several "
                                    "tensors, and only some of them would be kept", ERROR))
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
    kept_ids = sorted(staying)  # pruned node i is graph node kept_ids[i]
    if pruned.keeps_paths_of(graph, kept_ids):  # the common case, decided without building paths
        return pruned, problems
    for new, old in enumerate(kept_ids):
        if pruned.path(new) != graph.path(old):
            problems.append(Problem("graph", graph.path(old) or "", f"the object would be found as "
                                    f"{pruned.path(new)!r} once other objects are left out; its keys name "
                                    f"{graph.path(old)!r}", ERROR))
    return (None if problems else pruned), problems


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
