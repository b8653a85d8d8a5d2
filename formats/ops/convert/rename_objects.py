"""Renaming the objects of an object-based checkpoint: the object graph rebuilt under new edge paths.

See :mod:`formats.ops.convert.rename` for what the rules do to edges, keys, slot variables and
``full_name``s; :func:`formats.ops.convert.rename.plan_rename` hands object-based checkpoints to
:class:`ObjectRename` (kept apart so that renaming a name-based checkpoint imports none of the graph model).
"""
from __future__ import annotations

from _collections import deque  # type: ignore[import-not-found]  # collections' C class, without the package
from _collections_abc import Sequence  # collections.abc's, without the collections package

from formats.concepts.object_graph import (ATTRIBUTES, OBJECT_GRAPH_KEY, OPTIMIZER_SLOT, Attribute, ChildRef,
                                           ObjectGraph, ObjectNode, attribute_key, chain_path,
                                           escape_local_name, slot_variable_key, unescape_local_name)
from formats.core.model import Checkpoint
from formats.core.object_keys import PATHS_KEPT
from formats.concepts.object_graph_arrays import GraphArrays, TextColumn, encode_graph_arrays
from formats.concepts.object_graph_codec import NodeMarks, checkpointed_columns
from formats.concepts.object_graph_columns import attribute_fields
from formats.concepts.object_graph_table import int_view
from formats.ops.convert.graph_build import encode_object_graph
from formats.ops.convert.plan import WARNING, ConversionPlan, ConvertOptions, Problem
from formats.ops.rules import RuleSet

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ObjectRename"]

Edge = tuple[int, int, str]  # (parent id, child id, local name)


class ObjectRename:
    """Rebuilds an object graph under new edge paths (see the module docstring)."""

    def __init__(self, source: Checkpoint, options: ConvertOptions, plan: ConversionPlan) -> None:
        self.source, self.plan, self.options = source, plan, options
        self.rules: RuleSet = options.rules
        self.graph: ObjectGraph = source.object_graph
        self.nodes: list[ObjectNode] = []  # the rebuilt graph (see run)
        self.new_paths: dict[int, str] = {0: ""}
        self.by_path: dict[str, int] = {"": 0}
        self.named: dict[tuple[int, str], int] = {}  # (parent, local name) -> child of the rebuilt graph
        self.broken = False
        self.moved = False  # whether an edge leaves its parent (for an object made, too): see _check_paths
        self._refused: dict[str, tuple[str, Problem]] = {}  # old path refused -> its new path, the problem saying so

    def run(self) -> None:
        """Rename edges, rebuild the graph, check it, and add one row per key: in place (:class:`_InPlace`) when
        every edge renamed keeps its parent and nothing is amiss, else by rebuilding every node."""
        if _InPlace(self).run():
            return
        self.nodes = self.graph.node_copies()  # the graph's own nodes are not built (a graph in columns)
        for node in self.nodes:
            node.children = []
        edges = self._edges()
        renamed = [self._rename(e) for e in edges]  # each edge's new path, in the edges' order (None: unchanged)
        self._count_refused()
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
        """The edge's new path, None when no rule changes it; a problem when it is not a valid path. An object
        below one whose new path is refused, following it (``net/l1`` -> ``.ATTRIBUTES/l1`` under ``net`` ->
        ``.ATTRIBUTES``), is counted in that one's problem rather than given its own (a renamed model of 10^5
        variables printed 2 * 10^5 lines saying the same)."""
        old = self._old_path(edge)
        new = self.rules.apply(old)
        if new == old:
            return None
        problem = _path_problem(new)
        if problem:
            head, _, last = old.rpartition("/")
            above = self._refused.get(head) if head else None
            if above is not None and new == f"{above[0]}/{last}":
                self._refused[old] = (new, above[1])
            else:
                self._refused[old] = (new, self.plan.add("graph", old, f"{old!r} -> {new!r}: {problem}"))
            self.broken = True
        return new

    def _count_refused(self) -> None:
        """Say in each refused path's problem how many objects below it follow it (see :meth:`_rename`)."""
        paths: dict[int, list[Any]] = {}  # each problem -> [it, the refused paths it stands for]
        for _, problem in self._refused.values():
            paths.setdefault(id(problem), [problem, 0])[1] += 1
        for problem, count in paths.values():
            if count > 1:
                problem.message += f" (and {count - 1} object{'s' if count > 2 else ''} under it)"
        self._refused = {}

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


class _InPlace:
    """The usual rename, done on the graph's columns: every edge a rule renames keeps its parent (``--map
    model=net``, ``--map net/l1=net/dense``), so the graph keeps its shape - the same nodes, edges and order - and
    only local names change, with the paths below them, the ``checkpoint_key`` s they give and the keys. Each node
    is made when it is encoded and let go (no copy of every node, edge and attribute held while the graph is
    rebuilt: at 10^5 objects, about 150 MB), byte for byte what rebuilding every node writes.

    One move is done in place too, a graft: every edge of the root moved under the same new path ``P`` (``--add-prefix
    P``), which the rebuilding does by making an object a segment of ``P`` (ids after the graph's, each the only
    child of the one before, the first the root's only child) and attaching the root's edges, in their order, to
    the last; every other edge keeps its parent, and TensorFlow's breadth-first walk reaches every object by the
    same edge as before, ``P``'s objects first (:meth:`_grafted`). And its opposite, a lift: every path strictly
    under an object's ``S`` losing it (``--strip-prefix S``), which moves that object's edges, in their order, to
    the end of the root's; made in place where TensorFlow's walk of the lifted graph reaches every object by the
    same edge as before and the root's edges keep distinct names (:meth:`_stripped`).

    Anything else - an edge moved or an object made otherwise, a path that is not one, two edges of one parent
    under one name, a graph not decoded into columns, a key of an object no path reaches - is left to
    :class:`ObjectRename`'s rebuilding, which says what is wrong: :meth:`run` then returns False having changed
    nothing."""

    def __init__(self, rename: ObjectRename) -> None:
        self.rename, self.graph, self.rules = rename, rename.graph, rename.rules
        self.new_local: dict[int, str] = {}  # edge -> its new local name (unescaped), for the edges renamed
        self.paths: dict[int, str] = {0: ""}  # node -> its new path, as lately asked for (a node with children;
        # the root's: the graft's path, under which its edges now lie - :meth:`path` gives the root's own, "")
        self.graft = ""  # the new path of the objects the root's edges lead to (a graft), "" when they stay
        self.lifted: tuple[int, Any] | None = None  # a lift: the node whose edges now leave the root, the new edges
        self._parents: bytes | None = None  # per node: 1 when it has children
        self._edges: tuple[Any, Any, list[str]] | None = None  # the graph's primary edges, once asked for

    def run(self) -> bool:
        """Plan the rename in place; False (the plan untouched) when it is not one."""
        from formats.concepts.object_graph_columns import GraphColumns

        table = self.graph.table
        if not isinstance(table, GraphColumns) or not self._rename_edges(table) or not self._distinct(table):
            return False
        source, plan = self.rename.source, self.rename.plan
        keys = sorted(k for k in source if k != OBJECT_GRAPH_KEY)
        mapping = self.graph.map_keys(keys)  # (first: the graph's attributes then hold these keys, not copies)
        owners, reached = mapping.owners, self.graph.traversal.reached
        for k in mapping.by_position:
            if k < 0 or not reached[owners[k]] and self.node_path(owners[k]) is None:
                return False  # (a key no attribute accounts for, or of an object no path reaches: the rebuilding
                # says what becomes of it)
        encoded = self._encode(table, mapping.attributes)
        if encoded is None:
            return False
        plan.object_graph, new_keys = encoded
        made = self.graft.split("/") if self.graft else []
        for depth in range(1, len(made) + 1):  # (as the rebuilding says so, the shallowest first)
            path = "/".join(made[:depth])
            plan.add("new-object", path, f"new object {path!r} created as a parent", WARNING)
        checkpoint_key = mapping.checkpoint_key
        news = []  # each key's new key, as ObjectRename._rows plans them (every k found above)
        for key, k in zip(keys, mapping.by_position):
            new = new_keys[k]  # (the string the graph was written with: the row holds it, not a copy)
            suffix = key[len(checkpoint_key(k)):]
            news.append(new + suffix if suffix else new)
        del encoded, new_keys, mapping, owners, reached, table
        self._let_go()
        for key, new in zip(keys, news):
            entry = source[key]
            plan.add_row(key, new, entry, entry.shape, entry.dtype, "" if new != key else "unchanged")
        return True

    def _let_go(self) -> None:
        """Let go of the old graph before a row is made per key: the new one is written, and nothing else asks for
        the old (at 10^6 objects its bytes, columns and traversal were 160-200 MB, held while the rows were made:
        the peak)."""
        self.paths, self._edges, self._parents = {0: ""}, None, None
        self.graph = self.rename.graph = None  # type: ignore[assignment]
        self.rename.source.forget_object_graph()

    def _rename_edges(self, table: Any) -> bool:
        """Each edge's new local name where a rule renames its path to another last segment; False when a renamed
        edge would leave its parent, its new path is not one, or an edge leaves an object no path reaches. The
        edges are taken a level of the traversal at a time, so that the new path of each one's parent is known;
        with ``--map`` rules only, just the edges whose path is a rule's (:meth:`_ruled_edges`)."""
        import numpy as np

        graph, apply = self.graph, self.rules.apply
        walk = graph.traversal
        if not bool(np.asarray(walk.reached)[np.asarray(walk.owner)].all()):
            return False  # (the rebuilding leaves such edges out)
        _, primary, names = graph.primary_edges()
        stored = table.child_names()
        prefix = self._added_prefix(table, names)
        lift = self._stripped(table, primary, names) if prefix is None else None
        ruled = self._ruled_edges(table, primary, names) if prefix is None and lift is None else None
        if prefix is not None:  # every path under one new one: a graft, no edge renamed, no path to ask about
            self.graft = self.paths[0] = prefix
        elif lift is not None:  # every path under one object's lifted to the root: no edge renamed either
            if not isinstance(lift, tuple):
                return False
            self.lifted = lift
        elif ruled is not None:
            for old, owner, e in ruled:
                new = apply(old)
                if new != old and not self._renamed(e, new, self.path(owner), stored):
                    return False
        else:
            ptr = table.child_ptr
            top = range(int(ptr[0]), int(ptr[1]))  # the root's edges: a path each, its local name
            news = [apply(names[e]) for e in top]
            heads = {new.rpartition("/")[0] for new in news}
            if len(heads) == 1 and "" not in heads and _path_problem(graft := heads.pop()) is None:
                self.graft = self.paths[0] = graft  # every one moved under one new path
            for e, new in zip(top, news):
                if new != names[e] and not self._renamed(e, new, self.graft, stored):
                    return False
            for level in walk.levels:
                for owner in map(int, level):
                    lo, hi = int(ptr[owner]), int(ptr[owner + 1])
                    if lo == hi:
                        continue
                    prefix, here = graph.path(owner), self.path(owner)
                    for e in range(lo, hi):
                        old = f"{prefix}/{names[e]}" if prefix else names[e]
                        new = apply(old)
                        if new != old and not self._renamed(e, new, here, stored):
                            return False  # (an edge whose path stays follows its parent, renamed or not)
        graph.forget_paths()  # (the old paths: a string an object, not needed again)
        return True

    def _renamed(self, e: int, new: str, here: str, stored: list[str]) -> bool:
        """Note edge ``e``'s new local name where its new path ``new`` (not its old one) gives it another; False when
        ``new`` is not a path or not one under its parent's new path ``here``."""
        if _path_problem(new) is not None:
            return False
        head, _, last = new.rpartition("/")
        if head != here:
            return False  # the edge would leave its parent
        local = unescape_local_name(last)
        if escape_local_name(local) != last:
            return False
        if local != stored[e]:
            self.new_local[e] = local
        return True

    def _added_prefix(self, table: Any, names: list[str]) -> str | None:
        """``P`` where the first rule is ``--add-prefix P`` (a path) and the root has edges, none of them of an empty
        name: that rule then gives every path ``P/<path>``, each a path (an escaped segment is valid but for an
        empty name), so every edge keeps its name and the root's move under ``P``; None otherwise."""
        rules = self.rules.rules
        prefix = rules[0].old.strip("/") if rules and rules[0].kind == "add-prefix" else ""
        if not prefix or _path_problem(prefix) is not None or int(table.child_ptr[1]) == 0 or "" in names:
            return None
        self.rules.apply(names[0])  # (the rule is used, as asking about every path would say)
        return prefix

    def _stripped(self, table: Any, primary: Any, names: list[str]) -> tuple[int, Any] | bool | None:
        """A lift, where the one rule is ``--strip-prefix S`` and ``S`` is an object's path: every path strictly under
        ``S`` loses it, so that object's edges (in their order) move to the root, after the root's own, and every
        other edge stays where it is, named as it was (an escaped segment is valid but for an empty name). As the
        rebuilding does, planned in place when TensorFlow's breadth-first walk of the lifted graph reaches every
        object by the same edge as before (:meth:`_lift_arrays`), and no two of the root's edges share a name.
        ``(the object, the lifted graph's arrays)``; False where the lift is not made in place (the rebuilding
        says why); None where the rules are not one such rule."""
        rules = self.rules.rules
        if len(rules) != 1 or rules[0].kind != "strip-prefix" or "" in names:
            return None
        stripped = rules[0].old.strip("/")
        if not stripped or _path_problem(stripped) is not None:
            return None
        ptr, child = int_view(table.child_ptr), int_view(table.child_id)
        node = 0
        for segment in stripped.split("/"):  # (the object at that path: by the edges that gave each its path)
            node = next((child[e] for e in range(ptr[node], ptr[node + 1])
                         if names[e] == segment and primary[child[e]] == e), -1)
            if node < 0:
                return None  # (no object there: the rule matches nothing, and the graph stays as it is)
        lo, hi = ptr[node], ptr[node + 1]
        if lo == hi:
            return None
        if node == 0 or len({*names[ptr[0]:ptr[1]], *names[lo:hi]}) != ptr[1] - ptr[0] + hi - lo:
            return False
        self.rules.apply(f"{stripped}/{names[lo]}")  # (the rule is used, as asking about every path would say)
        arrays = self._lift_arrays(table, node)
        return False if arrays is None else (node, arrays)

    def _lift_arrays(self, table: Any, node: int) -> tuple[Any, Any, Any, Any] | None:
        """``(child_ptr, child_id, order, owner)`` of the graph with ``node``'s edges moved to the end of the root's
        (``order``: each new edge's old one; ``owner``: each new edge's node, as the walk found it), where TensorFlow's walk of it reaches every object by the same edge
        as before (but ``node``'s children, by the same edge from the root); else None."""
        import numpy as np

        from formats.concepts.object_graph_table import walk

        ptr = np.asarray(table.child_ptr, dtype=np.int64)
        top, lo, hi, edges = int(ptr[1]), int(ptr[node]), int(ptr[node + 1]), int(ptr[-1])
        order = np.concatenate([np.arange(top), np.arange(lo, hi), np.arange(top, lo), np.arange(hi, edges)])
        moved = ptr.copy()
        moved[1:node + 1] += hi - lo
        lengths = table.child_path_lengths()
        lifted = _Edges(table.count, moved, np.asarray(table.child_id)[order], np.asarray(lengths)[order])
        found = walk(lifted, 1 << 62, 1 << 30)
        if isinstance(found, str):
            return None
        old = self.graph.traversal
        place = np.empty(edges, np.int64)
        place[order] = np.arange(edges)
        reached = np.asarray(old.reached)
        want = np.where(reached, place[np.maximum(np.asarray(old.edge), 0)], -1)
        want[0] = -1
        if not np.array_equal(np.asarray(found.reached), reached) or not np.array_equal(found.edge, want):
            return None
        return moved, lifted.child_id, order, found.owner

    def _ruled_edges(self, table: Any, primary: Any, names: list[str]) -> list[tuple[str, int, int]] | None:
        """With ``--map`` rules only (none of the root, no edge of an empty name), the edges whose path is some
        rule's OLD, as ``(path, owner, edge)``, shallowest first; None otherwise (every edge's path is then asked).

        Every other edge follows its parent: a rule that matches a path but not its parent's path has that path as
        its OLD, so the first rule that matches an edge's path is the one that matched its parent's (which moves
        both alike) unless the path is a rule's OLD; and the rules that match some path first are those that match
        some rule's OLD first (:meth:`RuleSet.unused` says the same). A path under a renamed one keeps its escaped
        segments, each a valid one but for an empty name, so nothing below a renamed edge can be refused."""
        olds = []
        for rule in self.rules.rules:
            old = rule.old.strip("/")
            if rule.kind != "map" or not old:
                return None
            olds.append(old)
        if "" in names:
            return None
        ptr, child = int_view(table.child_ptr), int_view(table.child_id)
        found = []
        for old in sorted(set(olds), key=lambda p: p.count("/")):
            *heads, last = old.split("/")
            owners = [0]  # the nodes whose path is the segments so far (two, where two edges of a node share a name)
            for segment in heads:
                owners = [child[e] for o in owners for e in range(ptr[o], ptr[o + 1])
                          if names[e] == segment and primary[child[e]] == e]
            found += [(old, o, e) for o in owners for e in range(ptr[o], ptr[o + 1]) if names[e] == last]
        return found

    def _encode(self, table: Any, attributes: Sequence[Attribute]) -> tuple[bytes, list[str]] | None:
        """The renamed graph's bytes, byte for byte what :func:`encode_object_graph` writes of the renamed nodes:
        each node's children under their new local names, its attributes under the keys of its new path (their
        ``full_name`` renamed too with ``rename_full_names``), its slot variables and ``has_checkpoint_values`` as
        they were; written from the columns with numpy (:func:`encode_graph_arrays`), the strings that stay taken
        from the graph's own bytes. ``attributes``: every attribute by position (:attr:`KeyMap.attributes`). With
        the bytes, each attribute's key in the renamed graph (the rows' new keys). None when a new string cannot be
        written as UTF-8 (the rebuilding then says what becomes of it)."""
        import numpy as np

        t, node_path, path_of, reached = table, self.node_path, self.path, self.graph.traversal.reached
        apply = self.rules.apply if self.rename.options.rename_full_names else None
        attr_ptr = int_view(t.attr_ptr)
        attr_names, keys, full_name = attribute_fields(attributes)
        new_keys = list(keys)  # (an attribute of an object no path reaches keeps its key, and its full name)
        fulls: list[str] = []  # with rename_full_names: every attribute's full name, renamed where it has a path
        for i in np.flatnonzero(np.diff(t.attr_ptr) > 0).tolist():
            lo, hi = attr_ptr[i], attr_ptr[i + 1]
            path = path_of(i) if reached[i] else node_path(i)
            if path is not None:
                for k in range(lo, hi):
                    new_keys[k] = attribute_key(path, attr_names[k])
            if apply is not None:
                fulls += (map(full_name, range(lo, hi)) if path is None else
                          (apply(full) if full else full for full in map(full_name, range(lo, hi))))
        try:
            extra = {e: local.encode("utf-8") for e, local in self.new_local.items()}
        except UnicodeEncodeError:
            return None
        key_texts = TextColumn.of_strings(new_keys)
        full_texts = TextColumn.of_spans(t.data, t.attr_full) if apply is None else TextColumn.of_strings(fulls)
        if key_texts is None or full_texts is None:
            return None
        if self.graft:
            grafted = self._grafted(t, extra)
            if grafted is None:
                return None
            child_ptr, child_id, child_names, attr_ptr, slot_ptr, valued = grafted
        elif self.lifted is not None:
            child_ptr, child_id, order, owner = self.lifted[1]
            attr_ptr, slot_ptr = t.attr_ptr, t.slot_ptr
            child_names = TextColumn.of_spans(t.data, t.child_name, order)  # (no edge renamed by a lift)
            valued = _marks(attr_ptr, slot_ptr, owner, child_id).marks
        else:
            child_ptr, child_id, attr_ptr, slot_ptr = t.child_ptr, t.child_id, t.attr_ptr, t.slot_ptr
            child_names, valued = TextColumn.of_spans(t.data, t.child_name, extra=extra), _valued(self.graph).marks
        data = encode_graph_arrays(GraphArrays(
            child_ptr, child_id, child_names, attr_ptr, TextColumn.of_spans(t.data, t.attr_name), full_texts,
            key_texts, t.attr_optional, slot_ptr, t.slot_original, TextColumn.of_spans(t.data, t.slot_name), t.slot_id,
            valued))
        return None if data is None else (data, new_keys)

    def _grafted(self, t: Any, extra: dict[int, bytes]) -> tuple[Any, Any, TextColumn, Any, Any, bytes] | None:
        """The graph's edges and nodes with the graft made (see the class docstring): the root's one edge, to the
        first new object; every other node's edges, as they were; each new object's edge to the next; the last one's,
        the root's old edges in their order. As ``(child_ptr, child_id, child names, attr_ptr, slot_ptr, valued)``,
        ``extra`` (old edge -> its new local name) placed where its edge now is; None when a new object's name
        cannot be written as UTF-8."""
        import numpy as np

        try:
            made = [unescape_local_name(segment).encode("utf-8") for segment in self.graft.split("/")]
        except UnicodeEncodeError:
            return None
        k, n = len(made), int(t.count)
        ptr = np.asarray(t.child_ptr, dtype=np.int64)
        top, edges = int(ptr[1]), int(ptr[-1])  # the root's edges are 0:top
        last = n + k - 1  # the new object the root's edges now leave

        def place(e: int) -> int:  # an old edge's position in the grafted graph
            return e - top + 1 if e >= top else edges - top + k + e

        names = {0: made[0], **{edges - top + j: made[j] for j in range(1, k)},
                 **{place(e): raw for e, raw in extra.items()}}
        order = np.concatenate([[0], np.arange(top, edges), np.zeros(k - 1, np.int64), np.arange(top)])
        child_id = np.concatenate([[n], np.asarray(t.child_id)[top:], np.arange(n + 1, n + k), t.child_id[:top]])
        child_ptr = np.concatenate([[0], ptr[1:] - top + 1, edges - top + 1 + np.arange(1, k), [edges + k]])
        attr_ptr = np.concatenate([t.attr_ptr, np.full(k, t.attr_ptr[-1])])
        slot_ptr = np.concatenate([t.slot_ptr, np.full(k, t.slot_ptr[-1])])
        owner = np.concatenate([[0], np.asarray(self.graph.traversal.owner)[top:], np.arange(n, last),
                                np.full(top, last)])
        return (child_ptr, child_id, TextColumn.of_spans(t.data, t.child_name, order, names), attr_ptr, slot_ptr,
                _marks(attr_ptr, slot_ptr, owner, child_id).marks)  # (the new objects: no attribute, no slot)

    def _distinct(self, table: Any) -> bool:
        """Whether every node's edges have distinct local names once renamed (the rebuilding merges or refuses
        two of one name)."""
        ptr = table.child_ptr.tolist()
        names, new_local = table.child_names(), self.new_local
        for node in range(len(ptr) - 1):
            lo, hi = ptr[node], ptr[node + 1]
            if hi - lo > 1:
                here = [new_local.get(e, names[e]) for e in range(lo, hi)] if new_local else names[lo:hi]
                if len(set(here)) != hi - lo:
                    return False
        return True

    def path(self, node: int) -> str:
        """The node's new path (the root's: ""), from the edges that gave it and its parents their paths."""
        if not node:
            return ""  # (``paths`` holds, for the root, the path its edges now lie under)
        paths = self.paths
        known = paths.get(node)
        if known is not None:
            return known
        edges = self._edges
        if edges is None:
            edges = self._edges = self._primary_edges()
        parent, edge, _ = edges
        if not (self._parents or self._has_children())[node]:  # a leaf's path (a variable's) is made, not kept
            up = parent[node]  # (the root's path is known: every other reached node has a parent)
            prefix = paths.get(up)
            if prefix is None:
                prefix = self.path(up)
            name = self._segment(edge[node])
            return f"{prefix}/{name}" if prefix else name
        return chain_path(node, paths, parent, edge, self._segment, PATHS_KEPT)  # (every parent's: 100 MB at 10^6)

    def _primary_edges(self) -> tuple[Any, Any, list[str]]:
        """The graph's primary edges (:meth:`ObjectGraph.primary_edges`), the children of a lifted node given the
        root as their parent (their paths lose the stripped prefix)."""
        parent, edge, names = self.graph.primary_edges()
        if self.lifted is not None:
            from array import array

            table = self.graph.table
            node, ptr, child_id = self.lifted[0], int_view(table.child_ptr), int_view(table.child_id)
            parent = array("q", parent)
            for e in range(ptr[node], ptr[node + 1]):
                child = child_id[e]
                if edge[child] == e:
                    parent[child] = 0
        return parent, edge, names

    def _segment(self, e: int) -> str:
        """Edge ``e``'s new local name, escaped (:meth:`path` has asked for the graph's edges first)."""
        local = self.new_local.get(e)
        return self._edges[2][e] if local is None else escape_local_name(local)  # type: ignore[index]

    def _has_children(self) -> bytes:
        """Per node whether it has a child (a byte a node, made once)."""
        import numpy as np

        self._parents = (np.diff(self.graph.table.child_ptr) > 0).tobytes()
        return self._parents

    def node_path(self, node: int) -> str | None:
        """The new path of a node a path reaches, or of a slot variable of such a variable and optimizer."""
        if self.graph.traversal.reached[node]:
            return self.path(node)
        slot = self.graph.slot_of(node)
        if slot is None:
            return None
        owner, ref = slot
        if not self.graph.traversal.reached[ref.original_variable_node_id] or not self.graph.traversal.reached[owner]:
            return None
        return slot_variable_key(self.path(ref.original_variable_node_id), self.path(owner), ref.slot_name)


class _Edges:
    """A graph's edges as :func:`~formats.concepts.object_graph_table.walk` reads them (a lifted graph's, to walk)."""

    small = False

    def __init__(self, count: int, child_ptr: Any, child_id: Any, lengths: Any) -> None:
        self.count, self.child_ptr, self.child_id, self._lengths = count, child_ptr, child_id, lengths

    def child_path_lengths(self) -> Any:
        """Each edge's escaped local name's length."""
        return self._lengths


def _marks(attr_ptr: Any, slot_ptr: Any, owner: Any, child_id: Any) -> NodeMarks:
    """:func:`~formats.concepts.object_graph_codec.checkpointed_columns` of a graph as arrays: the nodes with
    attributes or slot variables (``attr_ptr``, ``slot_ptr``), and every node above one by any edge (``owner`` and
    ``child_id``: each edge's two ends)."""
    import numpy as np

    return checkpointed_columns((np.diff(attr_ptr) > 0) | (np.diff(slot_ptr) > 0), owner, child_id)


def _valued(graph: ObjectGraph) -> NodeMarks:
    """:func:`~formats.concepts.object_graph_codec.checkpointed_nodes` of a graph in columns (a renaming in place
    keeps its shape): the nodes with attributes or slot variables, and every node above one by any edge."""
    t = graph.table
    return _marks(t.attr_ptr, t.slot_ptr, graph.traversal.owner, t.child_id)


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
