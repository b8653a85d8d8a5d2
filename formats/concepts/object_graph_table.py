"""What :class:`~formats.concepts.object_graph.ObjectGraph` computes over every node, on arrays: the checks of
node ids, TensorFlow's breadth-first traversal (a level of the graph at a time, with numpy) and the items a
graph holds, for a graph decoded into :class:`~formats.concepts.object_graph_columns.GraphColumns` or given as
:class:`~formats.concepts.object_graph.ObjectNode` objects (:class:`NodeTable` puts those into the same arrays).

A table of at most :data:`SMALL_NODES` nodes given as objects is ``small``: its arrays are lists (:func:`ints`
reads either as a list), and its checks and traversal run in plain Python, which costs less than importing numpy (issue 24 #7: verifying
an object-based bundle imports no numpy). Both give the same results (``tests/test_object_graph_columns.py``).
"""
from __future__ import annotations

from _collections_abc import Sequence  # collections.abc's, without the collections package (verify's start-up)
from itertools import accumulate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any, overload

# Nodes, attributes and the columns are typed Any here: formats.concepts.object_graph imports this module, and
# this module none of the graph's (no cycle among the siblings).

__all__ = ["NodeTable", "LazyNodes", "Walk", "walk", "first_bad_reference", "edge_owners", "nodes_with", "ints", "int_view", "item_view", "node_copies", "SMALL_NODES"]

SMALL_NODES = 4096
"""A table of at most this many nodes is ``small`` (see the module doc)."""


class NodeTable:
    """Nodes given as objects, in the arrays :class:`GraphColumns` has (the same methods): their children and
    slot variables as they are when the graph is made, their attributes and notes as they are when asked for."""

    def __init__(self, nodes: Sequence[Any]) -> None:
        from operator import attrgetter  # map() over attrgetter and len: no Python call per node or edge

        self.nodes = nodes
        self.count = len(nodes)
        self.small = self.count <= SMALL_NODES
        children = list(map(attrgetter("children"), nodes))
        slot_lists = list(map(attrgetter("slot_variables"), nodes))
        edges = [c for kids in children for c in kids]
        slots = [s for refs in slot_lists for s in refs]
        self._names = list(map(attrgetter("local_name"), edges))
        self.child_id = self._ints(list(map(attrgetter("node_id"), edges)))
        self.child_ptr = self._ints(_ptr(list(map(len, children))))
        self.slot_ptr = self._ints(_ptr(list(map(len, slot_lists))))
        self.slot_original = self._ints(list(map(attrgetter("original_variable_node_id"), slots)))
        self.slot_id = self._ints(list(map(attrgetter("slot_variable_node_id"), slots)))
        self._slot_names = list(map(attrgetter("slot_name"), slots))

    def _ints(self, values: list[int]) -> Any:
        """``values`` as this table's integer arrays are: a list when small, else numpy int64."""
        if self.small:
            return values
        import numpy as np

        return np.array(values, np.int64)

    def child_names(self) -> list[str]:
        return self._names

    def child_path_lengths(self) -> Any:
        # escaped, a name grows by a character per "." (as "..") and per "/" (as ".S")
        lengths = list(map(len, self._names))
        for i, name in enumerate(self._names):
            if "." in name or "/" in name:
                lengths[i] += name.count(".") + name.count("/")
        return self._ints(lengths)

    @property
    def attr_ptr(self) -> Any:
        """Read from the nodes when asked for: a caller may give nodes their attributes after the graph is made
        (a SavedModel's variables get theirs from their paths)."""
        from operator import attrgetter

        return self._ints(_ptr(list(map(len, map(attrgetter("attributes"), self.nodes)))))

    def attr_keys(self) -> list[str]:
        return [a.checkpoint_key for n in self.nodes for a in n.attributes]

    def attr_key_runs(self) -> Iterator[list[str]]:
        """:meth:`attr_keys`, as one run (their strings are held)."""
        return iter((self.attr_keys(),))

    def attributes(self, keys: list[str] | None = None) -> list[Any]:
        return [a for n in self.nodes for a in n.attributes]

    def attribute_rows(self, keys: list[str]) -> list[Any]:
        return self.attributes(keys)

    def has_notes(self) -> bool:
        return any(n.note for n in self.nodes)

    def slot_names(self) -> list[str]:
        return self._slot_names

    def node(self, index: int) -> Any:
        return self.nodes[index]


def _ptr(counts: list[int]) -> list[int]:
    """Where each node's items start, and the end of the last: 0 and the running sums of ``counts``."""
    return list(accumulate(counts, initial=0))


def ints(values: Any) -> list[int]:
    """A table's integer array (or a slice of it), small (a list) or not (numpy), as a list of ints."""
    return values if isinstance(values, list) else values.tolist()


def int_view(values: Any) -> Any:
    """A numpy column as 64-bit ints read one at a time (a view, not a list of int objects: 8 bytes an item, not
    36)."""
    import numpy as np

    return memoryview(np.ascontiguousarray(values, dtype=np.int64))  # type: ignore[arg-type]  # (numpy: a buffer)


def item_view(values: Any) -> Any:
    """A numpy column read one item at a time as it is stored (a view of its own array when contiguous: no copy)."""
    import numpy as np

    return memoryview(np.ascontiguousarray(values))  # type: ignore[arg-type]  # (numpy: a buffer)


def edge_owners(ptr: Any, count: int) -> list[int]:
    """The node of each item of a ``ptr`` array (each node ``i`` owns ``ptr[i]:ptr[i + 1]``), as a list."""
    if isinstance(ptr, list):
        return [i for i in range(count) for _ in range(ptr[i + 1] - ptr[i])]
    import numpy as np

    return np.repeat(np.arange(count), np.diff(ptr)).tolist()


def nodes_with(ptr: Any, least: int = 1) -> list[int]:
    """The nodes owning at least ``least`` items of a ``ptr`` array (each node ``i`` owns ``ptr[i]:ptr[i + 1]``),
    in order, as a list (a small table's without numpy)."""
    if isinstance(ptr, list):
        return [i for i in range(len(ptr) - 1) if ptr[i + 1] - ptr[i] >= least]
    import numpy as np

    return np.flatnonzero(np.diff(ptr) >= least).tolist()


class LazyNodes(Sequence):  # of ObjectNode
    """The nodes of decoded columns, each an :class:`ObjectNode` built when first asked for and kept (a caller
    may annotate it)."""

    def __init__(self, columns: Any) -> None:
        self._columns = columns
        self._built: dict[int, Any] = {}  # the nodes built one by one...
        self._all: list[Any] | None = None  # ...or all of them

    def __len__(self) -> int:
        return self._columns.count

    if TYPE_CHECKING:
        @overload
        def __getitem__(self, index: int) -> Any: ...
        @overload
        def __getitem__(self, index: slice) -> list[Any]: ...

    def __getitem__(self, index: int | slice) -> Any | list[Any]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        if self._all is not None:
            return self._all[index]
        node = self._built.get(index)
        if node is None:
            node = self._built[index] = self._columns.node(index)
        return node

    def copies(self) -> list[Any]:
        """Every node as a new :class:`ObjectNode` the caller may change (its lists too), none of them kept
        here: built from the columns, or copied from the node this sequence built before (a caller may have
        annotated it)."""
        if self._all is not None:
            return [_copy(node) for node in self._all]
        nodes = self._columns.all_nodes()
        for i, node in self._built.items():
            nodes[i] = _copy(node)
        return nodes

    def __iter__(self) -> Iterator[Any]:
        if self._all is None:  # a caller walking every node: all built at once (those built before kept)
            nodes = self._columns.all_nodes()
            for i, node in self._built.items():
                nodes[i] = node
            self._all, self._built = nodes, {}
        return iter(self._all)


def _copy(node: Any) -> Any:
    """A new node of ``node``'s fields, with new lists (their items shared)."""
    return type(node)(node.id, list(node.children), list(node.attributes), list(node.slot_variables),
                      node.registered_saver, node.has_checkpoint_values, node.note)


def node_copies(nodes: Sequence[Any]) -> list[Any]:
    """Every node of ``nodes`` (a list or :class:`LazyNodes`) as a new node the caller may change, with new lists;
    the nodes of :class:`LazyNodes` are built for the caller alone, not kept."""
    if isinstance(nodes, LazyNodes):
        return nodes.copies()
    return [_copy(node) for node in nodes]


def first_bad_reference(table: Any) -> tuple[int, int] | None:
    """``(node, id)`` of the first reference to a node the graph does not have, in the order the nodes and
    their children then slot variables hold them; None when every reference is in range."""
    if getattr(table, "small", False):
        return _first_bad_reference_small(table)
    import numpy as np

    n = table.count
    found: list[tuple[int, int, int]] = []  # (node, 0 child / 1 slot, position)
    bad = np.flatnonzero((table.child_id < 0) | (table.child_id >= n))
    if len(bad):
        edge = int(bad[0])
        found.append((int(np.searchsorted(table.child_ptr, edge, side="right")) - 1, 0, int(table.child_id[edge])))
    ids = np.stack([table.slot_original, table.slot_id], axis=1).reshape(-1)
    bad = np.flatnonzero((ids < 0) | (ids >= n))
    if len(bad):
        ref = int(bad[0]) // 2
        found.append((int(np.searchsorted(table.slot_ptr, ref, side="right")) - 1, 1, int(ids[bad[0]])))
    if not found:
        return None
    node, _, value = min(found)
    return node, value


class Walk:
    """TensorFlow's breadth-first traversal of a graph: per node the ``parent`` and the ``edge`` that first
    reached it (-1 for the root and unreachable nodes) and whether it was ``reached``; ``aliases`` the other
    edges, in the order the traversal meets them; ``owner`` the node each edge leaves; ``levels`` the nodes
    found at each depth below the root."""

    def __init__(self, parent: Any, edge: Any, reached: Any, aliases: Any, owner: Any, levels: list[Any]) -> None:
        self.parent, self.edge, self.reached, self.aliases, self.owner = parent, edge, reached, aliases, owner
        self.levels = levels


def walk(table: Any, max_path: int, max_depth: int) -> Walk | str:
    """The traversal of ``table``'s graph from node 0, a level at a time; or the words of its first violation
    of the bounds (the paths of all edges adding up to more than ``max_path`` characters, each counted with a
    separator; an object deeper than ``max_depth``), found in the order a node-by-node traversal finds it."""
    if getattr(table, "small", False):
        return _walk_small(table, max_path, max_depth)
    import numpy as np

    n = table.count
    ptr, ids = table.child_ptr, table.child_id
    # node and edge numbers, and each path's length (at most max_path), in 32 bits where they fit: a level of a
    # million edges holds a dozen arrays of its size
    lengths = table.child_path_lengths()
    fits_32 = max(n, len(ids), max_path, int(lengths.max(initial=0))) < 1 << 30  # sums of two stay below 2**31
    index = np.int32 if fits_32 else np.int64
    ptr, lengths = ptr.astype(index, copy=False), lengths.astype(index, copy=False)
    counts = np.diff(ptr)
    owner = np.repeat(np.arange(n, dtype=index), counts)
    reached = np.zeros(n, dtype=bool)
    reached[0] = True
    path_len = np.zeros(n, dtype=index)
    parent = np.full(n, -1, dtype=index)
    edge = np.full(n, -1, dtype=index)
    aliases: list[Any] = []
    levels: list[Any] = []
    frontier = np.zeros(1, dtype=index)
    total = 0
    depth = 0
    while len(frontier):
        many = counts[frontier]
        size = int(many.sum())
        if not size:
            break
        edges = np.repeat(ptr[frontier] - np.cumsum(many, dtype=index) + many, many) + np.arange(size, dtype=index)
        child = ids[edges]
        above = path_len[owner[edges]]
        plen = np.where(above > 0, above + 1 + lengths[edges], lengths[edges])
        del above
        running = total + np.cumsum(plen + 1, dtype=np.int64)
        found = _first_reaching(np, child, reached)
        over = np.flatnonzero(running > max_path)
        too_deep = depth + 1 > max_depth and len(found)
        if len(over) and (not too_deep or over[0] <= found[0]):
            return "path"
        if too_deep:
            return "depth"
        total = int(running[-1])
        new = child[found]  # (marked reached by _first_reaching)
        path_len[new] = plen[found]
        parent[new] = owner[edges[found]]
        edge[new] = edges[found]
        keep = np.ones(size, dtype=bool)
        keep[found] = False
        aliases.append(edges[keep])
        frontier = new
        levels.append(new)
        depth += 1
    return Walk(parent, edge, reached, np.concatenate(aliases) if aliases else np.zeros(0, index), owner, levels)


def _first_reaching(np: Any, child: Any, reached: Any) -> Any:
    """The positions in ``child`` (a level's edges, in traversal order) of the first edge to each node not
    ``reached`` yet, sorted; those nodes are marked reached. Found a run of :data:`_LEVEL_RUN` edges at a time
    (a sort's temporaries of a run's size, not of a level of millions: a node met in an earlier run is reached)."""
    found = []
    for lo in range(0, len(child), _LEVEL_RUN):
        run = child[lo:lo + _LEVEL_RUN]
        fresh = np.flatnonzero(~reached[run])
        if len(fresh):
            _, first = np.unique(run[fresh], return_index=True)
            here = np.sort(fresh[first])
            reached[run[here]] = True
            found.append(here + lo)
    return np.concatenate(found) if found else np.zeros(0, np.int64)


_LEVEL_RUN = 1 << 18
"""Edges of a level whose first edges to new nodes are found at a time (see :func:`_first_reaching`)."""


def _first_bad_reference_small(table: Any) -> tuple[int, int] | None:
    """:func:`first_bad_reference` of a small table, node by node."""
    n = table.count
    child_ptr, child_id, slot_ptr = table.child_ptr, table.child_id, table.slot_ptr
    original, slot_id = table.slot_original, table.slot_id
    for node in range(n):
        for e in range(child_ptr[node], child_ptr[node + 1]):
            if not 0 <= child_id[e] < n:
                return node, child_id[e]
        for k in range(slot_ptr[node], slot_ptr[node + 1]):
            for value in (original[k], slot_id[k]):
                if not 0 <= value < n:
                    return node, value
    return None


def _walk_small(table: Any, max_path: int, max_depth: int) -> Walk | str:
    """:func:`walk` of a small table in plain Python: the same levels, bounds and results, as lists
    (``reached`` a bytearray)."""
    n = table.count
    ptr, ids = table.child_ptr, table.child_id
    lengths = table.child_path_lengths()
    owner = edge_owners(ptr, n)
    reached = bytearray(n)
    reached[0] = 1
    path_len = [0] * n
    parent = [-1] * n
    edge = [-1] * n
    aliases: list[int] = []
    levels: list[Any] = []
    frontier = [0]
    total = 0
    depth = 0
    while frontier:
        edges = [e for f in frontier for e in range(ptr[f], ptr[f + 1])]
        if not edges:
            break
        new: list[int] = []  # the nodes this level reaches first, in the order of their first edge
        first = -1  # the position in ``edges`` of the first of them
        over = -1  # ... and of the edge whose path passes ``max_path``
        running = total
        for i, e in enumerate(edges):  # an edge's owner is of the frontier: nothing this level reaches
            above = path_len[owner[e]]
            plen = above + 1 + lengths[e] if above > 0 else lengths[e]
            running += plen + 1
            if over < 0 and running > max_path:
                over = i
            child = ids[e]
            if reached[child]:
                aliases.append(e)
                continue
            reached[child] = 1
            path_len[child], parent[child], edge[child] = plen, owner[e], e
            if first < 0:
                first = i
            new.append(child)
        too_deep = depth + 1 > max_depth and bool(new)
        if over >= 0 and (not too_deep or over <= first):
            return "path"
        if too_deep:
            return "depth"
        total = running
        frontier = new
        levels.append(new)
        depth += 1
    return Walk(parent, edge, reached, aliases, owner, levels)
