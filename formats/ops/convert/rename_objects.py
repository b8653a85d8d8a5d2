"""Renaming the objects of an object-based checkpoint: the object graph rebuilt under new edge paths.

See :mod:`formats.ops.convert.rename` for what the rules do to edges, keys, slot variables and
``full_name``s; :func:`formats.ops.convert.rename.plan_rename` hands object-based checkpoints to
:class:`ObjectRename` (kept apart so that renaming a name-based checkpoint imports none of the graph model).
"""
from __future__ import annotations

from _collections import deque  # type: ignore[import-not-found]  # collections' C class, without the package

from formats.concepts.object_graph import (ATTRIBUTES, OBJECT_GRAPH_KEY, OPTIMIZER_SLOT, Attribute, ChildRef,
                                           ObjectGraph, ObjectNode, attribute_key, escape_local_name, slot_variable_key, unescape_local_name)
from formats.core.model import Checkpoint
from formats.ops.convert.graph_build import encode_object_graph
from formats.ops.convert.plan import WARNING, ConversionPlan, ConvertOptions
from formats.ops.rules import RuleSet

__all__ = ["ObjectRename"]

Edge = tuple[int, int, str]  # (parent id, child id, local name)


class ObjectRename:
    """Rebuilds an object graph under new edge paths (see the module docstring)."""

    def __init__(self, source: Checkpoint, options: ConvertOptions, plan: ConversionPlan) -> None:
        self.source, self.plan, self.options = source, plan, options
        self.rules: RuleSet = options.rules
        self.graph: ObjectGraph = source.object_graph
        self.nodes = self.graph.node_copies()  # the graph's own nodes are not built (a graph in columns)
        for node in self.nodes:
            node.children = []
        self.new_paths: dict[int, str] = {0: ""}
        self.by_path: dict[str, int] = {"": 0}
        self.named: dict[tuple[int, str], int] = {}  # (parent, local name) -> child of the rebuilt graph
        self.broken = False
        self.moved = False  # whether an edge leaves its parent (for an object made, too): see _check_paths

    def run(self) -> None:
        """Rename edges, rebuild the graph, check it, and add one row per key."""
        edges = self._edges()
        renamed = [self._rename(e) for e in edges]  # each edge's new path, in the edges' order (None: unchanged)
        if self.broken:
            return
        self._assign_paths(edges, renamed)
        if self.broken:
            return
        for edge, new in zip(edges, renamed):
            self._attach(edge, new)
        del edges, renamed  # what only the rebuilding needed goes before the graph is encoded (the peak)
        self.named, self.by_path = {}, {}
        self.graph.forget_paths()  # the old paths (a string per object) too: the rest asks for few or none
        if self.broken:
            return
        self._slot_paths()
        self._retarget_attributes()
        if self.moved:
            self._check_paths()
        self.new_paths = {}
        if not self.broken:
            self.plan.object_graph = encode_object_graph(self.nodes)
            self._rows()

    def _edges(self) -> list[Edge]:
        """Every edge reachable from the root, breadth-first (TensorFlow's traversal order)."""
        edges, seen, queue = [], {0}, deque([0])
        while queue:
            current = queue.popleft()
            for child, local in self.graph.children(current):
                edges.append((current, child, local))
                if child not in seen:
                    seen.add(child)
                    queue.append(child)
        return edges

    def _old_path(self, edge: Edge) -> str:
        parent = self.graph.path(edge[0]) or ""
        segment = escape_local_name(edge[2])
        return f"{parent}/{segment}" if parent else segment

    def _rename(self, edge: Edge) -> str | None:
        """The edge's new path, None when no rule changes it; a problem when it is not a valid path."""
        old = self._old_path(edge)
        new = self.rules.apply(old)
        if new == old:
            return None
        problem = _path_problem(new)
        if problem:
            self.plan.add("graph", old, f"{old!r} -> {new!r}: {problem}")
            self.broken = True
        return new

    def _assign_paths(self, edges: list[Edge], renamed: list[str | None]) -> None:
        """Each node's new path, from the edge that gave it its path (its primary edge)."""
        for (parent, child, local), new in zip(edges, renamed):
            if child in self.new_paths or self.graph.parent(child) != (parent, local):
                continue
            if new is None:
                base = self.new_paths.get(parent, self.graph.path(parent) or "")
                new = f"{base}/{escape_local_name(local)}" if base else escape_local_name(local)
            self.new_paths[child] = new
            other = self.by_path.setdefault(new, child)
            if other != child:
                self.plan.add("collision", new, f"{self.graph.path(other)!r} and {self.graph.path(child)!r} would "
                              f"both become {new!r}")
                self.broken = True

    def _attach(self, edge: Edge, new: str | None) -> None:
        parent, child, local = edge
        if new is not None:
            prefix, _, last = new.rpartition("/")
            resolved = self._resolve(prefix)
            if resolved != parent:  # an object made for the path is a new parent too
                self.moved = True
            parent, local = resolved, unescape_local_name(last)
        clash = self.named.get((parent, local))
        if clash is None:
            self._add_child(parent, child, local)
        elif clash != child:
            where = self.new_paths.get(parent, "")
            self.plan.add("collision", f"{where}/{escape_local_name(local)}".lstrip("/"),
                          f"two objects would be the child {local!r} of {where or 'the root'!r}: "
                          f"{self.graph.path(clash)!r} and {self.graph.path(child)!r}")
            self.broken = True

    def _add_child(self, parent: int, child: int, local: str) -> None:
        """An edge ``parent -> child`` named ``local`` in the rebuilt graph, indexed by name."""
        self.nodes[parent].children.append(ChildRef(child, local))
        self.named[parent, local] = child

    def _resolve(self, path: str) -> int:
        """The node at new ``path``, creating empty objects for missing segments."""
        found = self.by_path.get(path)
        if found is not None:
            return found
        prefix, _, last = path.rpartition("/")
        parent = self._resolve(prefix)
        node = len(self.nodes)
        self.nodes.append(ObjectNode(node))
        self._add_child(parent, node, unescape_local_name(last))
        self.new_paths[node] = path
        self.by_path[path] = node
        self.plan.add("new-object", path, f"new object {path!r} created as a parent", WARNING)
        return node

    def _slot_paths(self) -> None:
        for owner in self.graph.slot_owners():
            for ref in self.graph.slot_variables(owner):
                slot = ref.slot_variable_node_id
                var = self.new_paths.get(ref.original_variable_node_id)
                opt = self.new_paths.get(owner)
                if slot not in self.new_paths and var is not None and opt is not None:
                    self.new_paths[slot] = slot_variable_key(var, opt, ref.slot_name)

    def _retarget_attributes(self) -> None:
        rename_full = self.options.rename_full_names
        for node in self.nodes[:len(self.graph)]:
            path = self.new_paths.get(node.id)
            if path is None:
                continue
            node.attributes = [Attribute(a.name, self.rules.apply(a.full_name) if rename_full and a.full_name
                                         else a.full_name, attribute_key(path, a.name), a.optional_restore)
                               for a in node.attributes]

    def _check_paths(self) -> None:
        """The rebuilt graph must give every object the path it was meant to get. Asked only when an edge moved to
        another parent or an object was made: else the rebuilt graph has the old one's edges, in the same order,
        only some local names changed (none clashing: :meth:`_attach`), so the breadth-first walk TensorFlow takes
        reaches every object by the same edge as before, and its path is its parent's new path and that edge's new
        name, the path :meth:`_assign_paths` gave it (at 100k objects the check built 200k paths again)."""
        rebuilt = ObjectGraph(self.nodes, self.source.path)
        new_paths = self.new_paths
        for node_id in sorted(new_paths):  # (the ids alone: not a pair a node, 12 MB at 100k objects)
            wanted = new_paths[node_id]
            got = rebuilt.path(node_id)
            if got != wanted:
                self.plan.add("graph", wanted, f"object {self.graph.path(node_id) or wanted!r} would be found as "
                              f"{got!r}, not {wanted!r}, after renaming (TensorFlow takes the first "
                              "breadth-first path)")
                self.broken = True

    def _rows(self) -> None:
        keys = sorted(k for k in self.source if k != OBJECT_GRAPH_KEY)
        mapping = self.graph.map_keys(keys)
        for key in keys:
            entry = self.source[key]
            hit = mapping.get(key)
            if hit is None:
                self.plan.add("fallback", key, "not described by the object graph; key kept", WARNING)
                self.plan.add_row(key, key, entry, entry.shape, entry.dtype, "kept")
                continue
            node_id, attr = hit
            new_attr = next(a for a in self.nodes[node_id].attributes if a.name == attr.name)
            new = new_attr.checkpoint_key + key[len(attr.checkpoint_key):]
            self.plan.add_row(key, new, entry, entry.shape, entry.dtype, "" if new != key else "unchanged")


def _path_problem(path: str) -> str | None:
    """Why ``path`` (escaped segments joined by ``/``) cannot be an object path, or None."""
    if not path:
        return "the path is empty"
    for segment in path.split("/"):
        if not segment:
            return "it has an empty segment"
        if segment in (ATTRIBUTES, OPTIMIZER_SLOT):
            return f"{segment} is reserved"
        try:
            unescape_local_name(segment)
        except ValueError:
            return f"segment {segment!r} is not a valid escaped name ('.' must be written '..')"
    return None
