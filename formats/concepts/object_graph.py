"""The object graph of a TF2 checkpoint: the objects that wrote it, and which key belongs to which.

An object-based checkpoint stores a serialized ``TrackableObjectGraph`` under
``_CHECKPOINTABLE_OBJECT_GRAPH``. Node 0 is the root (the ``tf.train.Checkpoint``);
edges are attribute names (``net``, ``l1``, ``kernel``). A node's path is the
breadth-first path from the root (first path found wins, TensorFlow's rule), with
each local name escaped (``.`` -> ``..`` then ``/`` -> ``.S``) and joined by ``/``.
Keys are ``<path>/.ATTRIBUTES/<escaped attribute name>``, and for slot variables
``<variable path>/.OPTIMIZER_SLOT/<optimizer path>/<slot name>/.ATTRIBUTES/...``.

:func:`~formats.concepts.object_graph_codec.decode_object_graph` gives an :class:`ObjectGraph` that
mirrors the proto field by field, in order, and
:func:`~formats.concepts.object_graph_codec.encode_object_graph` writes it back byte for byte;
:meth:`ObjectGraph.map_keys` ties stored keys to ``(node, attribute)`` and :func:`label_keys` gives
every key its TF1 name and role. A graph read from a checkpoint is held as columns over its bytes
(:mod:`formats.concepts.object_graph_columns`; a node per object would cost a few hundred bytes and
microseconds each, and a graph has two per variable): its checks, traversal and optimizers are computed on
arrays (:mod:`formats.concepts.object_graph_table`), paths are built when asked for, and an
:class:`ObjectNode` only for the nodes a caller reads (``graph.nodes[i]``).

A graph is bounded by what its file holds: objects deeper than :data:`MAX_NESTING` below the root, or
paths (one per edge, as every command builds them) adding up to more than :data:`MAX_PATH_BYTES`, are
refused; every walk is iterative.
"""
from __future__ import annotations


from _bisect import bisect_left  # bisect's C half, without its module
from _collections_abc import Mapping  # collections.abc's, without the collections package

from formats.core.records import field, record
from formats.core.arrays import sorted_unique
from formats.core.errors import CorruptCheckpointError
from formats.concepts.entry_label import EntryLabel
from formats.concepts.optimizers import parse_keras_slot
from formats.concepts.object_graph_table import edge_owners, ints, item_view, nodes_with
from formats.core.model import OBJECT_GRAPH_KEY, Role
from formats.core.natural import ascending
from formats.core.object_keys import (ATTRIBUTES, MAX_NESTING, OPTIMIZER_SLOT, VARIABLE_VALUE, attribute_key, chain_path,
                                      escape_local_name, slot_variable_key, split_path, unescape_local_name)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence
    from typing import Any

__all__ = ["OBJECT_GRAPH_KEY", "ATTRIBUTES", "VARIABLE_VALUE", "OPTIMIZER_SLOT", "escape_local_name", "unescape_local_name",
           "split_path", "chain_path", "attribute_key", "slot_variable_key", "ChildRef", "Attribute", "SlotVariableRef",
           "RegisteredSaver", "ObjectNode", "ObjectGraph", "EntryLabel", "KeyMap", "KeyLabels", "label_keys", "MAX_NESTING",
           "MAX_PATH_BYTES", "keras3_optimizer"]

_MARKER = f"/{ATTRIBUTES}/"
MAX_PATH_BYTES = 64 << 20
"""The object paths of a graph (one per edge, as every command builds them) may not exceed this many bytes."""


@record(frozen=True, slots=True)
class ChildRef:
    """An edge: the child ``node_id`` under attribute ``local_name``."""

    node_id: int
    local_name: str


@record(frozen=True, slots=True)
class Attribute:
    """A ``SerializedTensor``: attribute ``name``, the TF1-style ``full_name`` and its ``checkpoint_key``."""

    name: str
    full_name: str
    checkpoint_key: str
    optional_restore: bool = False


@record(frozen=True, slots=True)
class SlotVariableRef:
    """On an optimizer node: the slot ``slot_name`` of node ``original_variable_node_id`` is node ``slot_variable_node_id``."""

    original_variable_node_id: int
    slot_name: str
    slot_variable_node_id: int


@record(frozen=True, slots=True)
class RegisteredSaver:
    """A node saved by a registered saver (``name``) rather than through attributes."""

    name: str
    object_name: str


@record(slots=True)
class ObjectNode:
    """One ``TrackableObject``: the proto's fields, in order, plus its ``id`` (index in the graph).

    ``note`` says what the object is when the graph knows more than its tensors (a SavedModel's
    functions and signatures); ``ckpt ls --tree`` shows an object with a note even if it holds no tensor.
    """

    id: int
    children: list[ChildRef] = field(default_factory=list)
    attributes: list[Attribute] = field(default_factory=list)
    slot_variables: list[SlotVariableRef] = field(default_factory=list)
    registered_saver: RegisteredSaver | None = None
    has_checkpoint_values: bool | None = None
    note: str = ""


class ObjectGraph:
    """The decoded graph: ``nodes`` (node 0 is the root) and paths, breadth-first.

    ``what`` names the graph in errors (``object graph``, ``SavedObjectGraph``); ``source`` is its file. The
    graph works on arrays (:mod:`formats.concepts.object_graph_table`): ``nodes`` given as objects are put
    into them, and a graph decoded into columns (:meth:`from_columns`) builds a node only when asked for it
    (``nodes[i]``) and a path only when asked for one.
    """

    def __init__(self, nodes: Sequence[ObjectNode], source: str = "", what: str = "object graph",
                 table: Any = None) -> None:
        from formats.concepts.object_graph_table import NodeTable

        self.nodes = nodes
        self.source = source
        self.what = what
        if not len(nodes):
            raise CorruptCheckpointError(self.source, "the object graph has no nodes (no root)")
        self._table = table if table is not None else NodeTable(nodes)
        self._check_ids()
        self._traverse()
        self._paths: dict[int, str] = {0: ""}  # paths built so far
        self._names: list[str] | None = None  # every edge's local name, escaped
        self._stored_names: list[str] | None = None  # ... and as stored
        self._has_notes: bool | None = None
        self._aliases: dict[int, list[int]] | None = None  # node -> its further edges
        self._slot_map()
        self._optimizer_flags: Any = None  # per node: is_optimizer
        self._optimizer_of: Any = None  # per node: optimizer_of, -1 for None (_compact)
        self._keep_map = False  # whether the next map_keys keeps its map for the one after (keep_next_key_map)
        self._asked_alone = 0  # parent() answered without every name decoded (up to _FEW_ASKED)
        self._kept_map: tuple[list[str], KeyMap] | None = None

    @classmethod
    def from_columns(cls, columns: Any, source: str = "") -> ObjectGraph:
        """The graph of :class:`~formats.concepts.object_graph_columns.GraphColumns`, its nodes built on demand."""
        from formats.concepts.object_graph_table import LazyNodes

        return cls(LazyNodes(columns), source, table=columns)

    def node_copies(self) -> list[ObjectNode]:
        """Every node as a new :class:`ObjectNode` for the caller to change (its lists too): a graph decoded
        into columns builds them for the caller alone, and keeps none (a writer that rebuilds the graph holds
        one set of nodes, not two)."""
        from formats.concepts.object_graph_table import node_copies

        return node_copies(self.nodes)

    def _check_ids(self) -> None:
        from formats.concepts.object_graph_table import first_bad_reference

        bad = first_bad_reference(self._table)
        if bad is not None:
            raise CorruptCheckpointError(self.source, f"object graph node {bad[0]} refers to node {bad[1]}, but "
                                         f"there are {len(self.nodes)} nodes")

    def _traverse(self) -> None:
        # TensorFlow's breadth-first traversal: a node's path is fixed when it is first discovered.
        # Every edge makes a path (aliases too): their bytes and the depth are bounded.
        from formats.concepts.object_graph_table import walk

        found = walk(self._table, MAX_PATH_BYTES, MAX_NESTING)
        if found == "path":
            raise CorruptCheckpointError(self.source, f"the {self.what}'s object paths add up to more "
                                         f"than {MAX_PATH_BYTES >> 20} MiB")
        if found == "depth":
            raise CorruptCheckpointError(self.source, f"the {self.what} nests objects more than "
                                         f"{MAX_NESTING} deep")
        assert not isinstance(found, str)
        self._walk = found
        self._reached = found.reached
        self._parent: Any = None  # per node, as arrays (_compact), when paths are first asked for
        self._edge: Any = None

    def _slot_map(self) -> None:
        t = self._table
        self._slots: dict[int, int] = {}  # slot variable node -> its first reference
        self._slot_paths: dict[int, str] = {}  # slot variable node -> its path, built here
        self._slot_path_refs: dict[int, int] = {}  # slot variable node -> the reference its path is built from
        self._slot_names: list[str] = []
        if not len(t.slot_id):
            return
        owners = self._slot_owners = edge_owners(t.slot_ptr, t.count)
        names = self._slot_names = t.slot_names()  # every reference's slot name, decoded once (equal ones shared)
        reached = self._reached
        for k, (original, slot, owner) in enumerate(zip(ints(t.slot_original), ints(t.slot_id), owners)):
            self._slots.setdefault(slot, k)
            if not self._has_path(slot) and self._has_path(original):
                if reached[original] and reached[owner]:  # (most: built from two paths when asked for)
                    self._slot_path_refs[slot] = k
                else:  # (from another slot's path, or none: built now, in the references' order)
                    self._slot_paths[slot] = slot_variable_key(self.path(original) or "", self.path(owner) or "",
                                                               names[k])

    def _has_path(self, node_id: int) -> bool:
        return bool(self._reached[node_id]) or node_id in self._slot_path_refs or node_id in self._slot_paths

    def _slot_path(self, node_id: int) -> str | None:
        """The path of a slot variable (None for another node): built from its variable's and its optimizer's
        paths, both reachable nodes', when first asked for (a string per slot at once was most of decoding a graph
        of slots)."""
        k = self._slot_path_refs.get(node_id)
        if k is None:
            return self._slot_paths.get(node_id)
        found = self._paths[node_id] = slot_variable_key(self.path(int(self._table.slot_original[k])) or "",
                                                        self.path(int(self._slot_owners[k])) or "",
                                                        self._slot_names[k])
        return found

    def __len__(self) -> int:
        return len(self.nodes)

    @property
    def root(self) -> ObjectNode:
        """Node 0."""
        return self.nodes[0]

    @property
    def table(self) -> Any:
        """The graph's arrays (:class:`~formats.concepts.object_graph_columns.GraphColumns` for a graph decoded into
        columns, else a :class:`~formats.concepts.object_graph_table.NodeTable` of its nodes)."""
        return self._table

    @property
    def traversal(self) -> Any:
        """TensorFlow's breadth-first traversal of the graph (:class:`~formats.concepts.object_graph_table.Walk`)."""
        return self._walk

    def primary_edges(self) -> tuple[Any, Any, list[str]]:
        """Per node the parent and the edge that gave it its path (-1: none), and every edge's escaped name."""
        return self._lists()

    def _lists(self) -> tuple[Any, Any, list[str]]:
        """The first parent and edge of every node and every edge's escaped name (built once)."""
        if self._parent is None or self._edge is None or self._names is None:
            self._parent = _compact(self._walk.parent)
            self._edge = _compact(self._walk.edge)
            self._names = [escape_local_name(n) if "." in n or "/" in n else n for n in self._child_names()]
        return self._parent, self._edge, self._names

    def path(self, node_id: int) -> str | None:
        """The node's escaped path (``""`` for the root, None when unreachable).

        Slot variables, which no node has as a child, get the path TensorFlow gives them:
        ``<variable path>/.OPTIMIZER_SLOT/<optimizer path>/<slot name>``.
        """
        known = self._paths.get(node_id)
        if known is not None:
            return known
        if not isinstance(node_id, int) or not 0 <= node_id < len(self.nodes) or not self._reached[node_id]:
            return self._slot_path(node_id)
        parent, edge, names = self._lists()
        return chain_path(node_id, self._paths, parent, edge, names.__getitem__)

    def forget_paths(self) -> None:
        """Let go of the paths :meth:`path` has built (a string per node asked about: 34 MB at 100k objects); they
        are built again when asked for. For a caller done asking, such as a rename once its new paths are set."""
        self._paths = {0: ""}

    def keeps_paths_of(self, other: ObjectGraph, ids: Sequence[int]) -> bool:
        """Whether node ``i`` of this graph has the path ``other`` gives node ``ids[i]``, for every ``i`` (``ids``:
        an increasing renumbering, this graph node 0 as ``other``'s root). Decided from the first edges, with no
        path built: where node ``i`` is first reached from node ``j`` under the name that first reaches
        ``ids[i]`` from ``ids[j]``, its path is its parent's and that name in both graphs (the roots' are ``""``);
        only the other nodes (slot variables, unreachable ones, moved ones) are compared by path."""
        if isinstance(self._walk.parent, list) and isinstance(other._walk.parent, list):  # small tables: no numpy
            return self._keeps_small_paths_of(other, ids)
        import numpy as np

        old = np.asarray(ids, dtype=np.int64)
        if len(old) != len(self):
            return False
        parent = np.asarray(self._walk.parent, dtype=np.int64)
        renumbered = np.full(len(other) + 1, -2, dtype=np.int64)  # -1 (no parent) stays -1 through the last item
        renumbered[-1] = -1
        renumbered[old] = np.arange(len(old))
        same = (parent == renumbered[np.asarray(other._walk.parent, dtype=np.int64)[old]]) & (parent >= 0)
        both = np.flatnonzero(same)  # the same parent: the same name too? (names compared as arrays)
        names = np.asarray(self._child_names(), dtype=object)[np.asarray(self._walk.edge, dtype=np.int64)[both]]
        other_names = np.asarray(other._child_names(), dtype=object)[
            np.asarray(other._walk.edge, dtype=np.int64)[old[both]]]
        same[both[names != other_names]] = False
        same[0] = old[0] == 0  # the roots (path "")
        return all(self.path(i) == other.path(int(old[i])) for i in np.flatnonzero(~same).tolist())

    def _keeps_small_paths_of(self, other: ObjectGraph, ids: Sequence[int]) -> bool:
        """:meth:`keeps_paths_of` of two small tables' graphs, node by node in plain Python."""
        if len(ids) != len(self):
            return False
        parent, edge, names = self._walk.parent, self._walk.edge, self._child_names()
        other_parent, other_edge, other_names = other._walk.parent, other._walk.edge, other._child_names()
        new_id = {old: new for new, old in enumerate(ids)}
        for new, old in enumerate(ids):
            up, other_up = parent[new], other_parent[old]
            if new == 0:
                same = old == 0  # the roots (path "")
            else:
                same = up >= 0 and other_up >= 0 and new_id.get(other_up) == up and \
                    names[edge[new]] == other_names[other_edge[old]]
            if not same and self.path(new) != other.path(old):
                return False
        return True

    def aliases(self, node_id: int) -> list[str]:
        """Other paths reaching the node (one per further edge into it, in breadth-first order)."""
        if self._aliases is None:
            self._aliases = {}
            walked, child_id = self._walk, self._table.child_id
            if isinstance(child_id, list):  # a small table's, without numpy
                ids = [child_id[e] for e in ints(walked.aliases)]
            else:
                import numpy as np

                ids = np.asarray(child_id, dtype=np.int64)[np.asarray(walked.aliases, dtype=np.int64)].tolist()
            for e, child in zip(ints(walked.aliases), ids):
                self._aliases.setdefault(child, []).append(e)
        edges = self._aliases.get(node_id)
        if not edges:
            return []
        names = self._lists()[2]
        owner = self._walk.owner
        out = []
        for e in edges:
            prefix = self.path(int(owner[e]))
            out.append(f"{prefix}/{names[e]}" if prefix else names[e])
        return out

    def parent(self, node_id: int) -> tuple[int, str] | None:
        """``(parent id, local name)`` of the edge that gave the node its path (None for root/slots). Of a graph in
        columns whose names are not decoded yet, the first :data:`_FEW_ASKED` are answered from that edge alone
        (labelling keys asks it of the save counter: at 10^6 variables, two million names decoded for one)."""
        parent, edge, _ = self._parent, self._edge, self._names
        if parent is None or edge is None:
            columns = self._names_undecoded()
            if columns is not None and self._asked_alone < _FEW_ASKED:
                self._asked_alone += 1
                walk = self._walk
                if not isinstance(node_id, int) or not 0 < node_id < len(walk.parent) or walk.parent[node_id] < 0:
                    return None
                return int(walk.parent[node_id]), columns.child_name_of(int(walk.edge[node_id]))
            parent, edge, _ = self._lists()
        if not isinstance(node_id, int) or not 0 < node_id < len(parent) or parent[node_id] < 0:
            return None
        return parent[node_id], self._child_names()[edge[node_id]]

    def note(self, node_id: int) -> str:
        """What the node is, when the graph knows more than its tensors (:attr:`ObjectNode.note`)."""
        return self.nodes[node_id].note if self.has_notes() else ""

    def has_notes(self) -> bool:
        """Whether some node has a :meth:`note`."""
        if self._has_notes is None:
            self._has_notes = self._table.has_notes()
        return self._has_notes

    def reached_among(self, nodes: Iterable[int]) -> set[int]:
        """Those of ``nodes`` that an edge reaches from the root (a slot variable no edge reaches: a path of its
        own, no parent)."""
        reached = self._reached
        return {node for node in nodes if reached[node]}

    def aliased_or_optimizer(self) -> set[int]:
        """The nodes with other paths (:meth:`aliases`) or that look like optimizers (:meth:`is_optimizer`): found
        at once, for a walk that asks of every node."""
        self.aliases(0)  # (every node's other paths found at once)
        assert self._aliases is not None
        flags = self._optimizers()
        found = {node for node, edges in self._aliases.items() if edges}
        if isinstance(flags, list):  # (a small table's)
            found.update(node for node, flag in enumerate(flags) if flag)
        else:
            found.update(flags.nonzero()[0].tolist())
        return found

    def first_children(self, node_id: int) -> list[tuple[int, str]]:
        """``(child id, local name)`` of the node's edges that give the child its path: each an edge whose
        parent and name are those of :meth:`parent` for the child (for a walk over many nodes:
        :meth:`first_children_reader`). Of a graph in columns whose names are not decoded yet, only the names of
        this node's edges (and of its children's first edges) are (every command labelling keys asks this of the
        root: at 10^6 variables, two million names decoded and escaped for a few)."""
        t = self._names_undecoded()
        lo, hi = (int(t.child_ptr[node_id]), int(t.child_ptr[node_id + 1])) if t is not None else (0, 0)
        if t is None or hi - lo > _FEW_CHILDREN:  # (a node of many children: every name decoded at once costs less)
            return self.first_children_reader()(node_id)
        walk, name_of = self._walk, t.child_name_of
        found = []
        for e, c in zip(range(lo, hi), t.child_id[lo:hi].tolist()):
            if c and int(walk.parent[c]) == node_id:
                name, first = name_of(e), int(walk.edge[c])
                if first == e or name_of(first) == name:
                    found.append((c, name))
        return found

    def _names_undecoded(self) -> Any:
        """The graph's columns (:class:`~formats.concepts.object_graph_columns.GraphColumns`), while its edge names
        are not decoded yet, for a caller that needs a few (each read alone from the graph's bytes); else None."""
        t: Any = self._table
        if self._stored_names is not None or not hasattr(t, "child_name_of") or isinstance(t.child_id, list):
            return None
        return t

    def first_children_reader(self) -> Callable[[int], list[tuple[int, str]]]:
        """:meth:`first_children` as a function that reads the table's child columns through views made once (a
        walk over every node asks it a node: a slice of numpy arrays a node was most of its cost)."""
        t = self._table
        ptr, ids = (t.child_ptr, t.child_id) if isinstance(t.child_id, list) else \
            (item_view(t.child_ptr), item_view(t.child_id))
        parent, edge, _ = self._lists()
        names = self._child_names()

        def first_children(node_id: int) -> list[tuple[int, str]]:
            lo, hi = ptr[node_id], ptr[node_id + 1]
            if hi == lo:
                return []
            return [(c, names[e]) for e, c in zip(range(lo, hi), ids[lo:hi])
                    if c and parent[c] == node_id and names[edge[c]] == names[e]]

        return first_children

    def _child_names(self) -> list[str]:
        """Every edge's local name as stored (unescaped), built once."""
        if self._stored_names is None:
            self._stored_names = self._table.child_names()
        return self._stored_names

    def slot_of(self, node_id: int) -> tuple[int, SlotVariableRef] | None:
        """For a slot variable node: ``(optimizer node id, its SlotVariableRef)``; else None."""
        k = self._slots.get(node_id)
        if k is None:
            return None
        t = self._table
        return self._slot_owners[k], SlotVariableRef(int(t.slot_original[k]), self._slot_names[k], int(t.slot_id[k]))

    def slot_ref_reader(self) -> Callable[[int], tuple[int, int, str] | None]:
        """A function giving a slot variable node's ``(optimizer node id, original variable node id, slot name)`` of
        its first reference, as :meth:`slot_of` gives them (None for another node), read from the columns: for a
        caller asking about every slot, without a dictionary and a tuple a slot and a list of ints (11 MiB at 10^5
        slot variables, at the peak of labelling them)."""
        first, owners, names = self._slots.get, self._slot_owners if self._slots else [], self._slot_names
        column = self._table.slot_original
        originals = column if isinstance(column, list) else item_view(column)

        def slot_ref(node_id: int) -> tuple[int, int, str] | None:
            k = first(node_id)
            return None if k is None else (owners[k], originals[k], names[k])

        return slot_ref

    def local_name(self, node_id: int) -> str:
        """The unescaped name of the node's first edge (``root`` for node 0, the slot name for slots)."""
        if node_id == 0:
            return "root"
        parent = self.parent(node_id)
        if parent is not None:
            return parent[1]
        slot = self.slot_of(node_id)
        return slot[1].slot_name if slot else f"node {node_id}"

    def owners_named(self, name: str) -> list[int]:
        """The nodes with an edge of local name ``name``, ascending, each once (the names compared in C: no Python
        step an edge)."""
        table: Any = self._table
        if getattr(table, "child_name", None) is not None and not isinstance(self._walk.owner, list):
            return self._owners_named_in_columns(name, table)
        from itertools import compress

        names = self._child_names()
        owner = self._walk.owner
        return sorted({int(owner[e]) for e in compress(range(len(names)), map(name.__eq__, names))})

    def _owners_named_in_columns(self, name: str, table: Any) -> list[int]:
        """:meth:`owners_named` of a graph in columns, its names not decoded: the edges' stored bytes (valid
        UTF-8, checked as the graph was decoded) compared with the name's, a byte at a time on the edges still equal
        (at 10^6 objects, decoding every edge's name for this took 0.8 s and tens of MB a command kept)."""
        import numpy as np

        want = name.encode("utf-8", "surrogatepass")
        data = np.frombuffer(table.data, np.uint8)
        start = np.asarray(table.child_name[0], np.int64)
        edges = np.flatnonzero(np.asarray(table.child_name[1], np.int64) - start == len(want))
        for at, byte in enumerate(want):
            edges = edges[data[start[edges] + at] == byte]
        return sorted_unique(np.asarray(self._walk.owner)[edges]).tolist()

    def children_of(self, node_id: int) -> dict[str, int]:
        """The node's children by local name (the first edge of a name wins... as a dict built from them keeps
        the last: the same as ``{c.local_name: c.node_id for c in children}``)."""
        t = self._table
        lo, hi = int(t.child_ptr[node_id]), int(t.child_ptr[node_id + 1])
        return dict(zip(self._child_names()[lo:hi], ints(t.child_id[lo:hi])))

    def children(self, node_id: int) -> list[tuple[int, str]]:
        """``(child id, local name)`` of the node's edges, in order (no node built)."""
        t = self._table
        lo, hi = int(t.child_ptr[node_id]), int(t.child_ptr[node_id + 1])
        return list(zip(ints(t.child_id[lo:hi]), self._child_names()[lo:hi]))

    def slot_variables(self, node_id: int) -> list[SlotVariableRef]:
        """The node's slot variable references (no node built)."""
        t = self._table
        lo, hi = int(t.slot_ptr[node_id]), int(t.slot_ptr[node_id + 1])
        return [SlotVariableRef(o, n, s) for o, n, s in zip(ints(t.slot_original[lo:hi]), self._slot_names[lo:hi],
                                                            ints(t.slot_id[lo:hi]))]

    def slot_owners(self) -> list[int]:
        """The nodes that have slot variable references, in order (a small table's without numpy, whose import
        cost a small bundle's rename more than the rest of it)."""
        return nodes_with(self._table.slot_ptr)

    def child_count(self, node_id: int) -> int:
        """How many children the node has."""
        return int(self._table.child_ptr[node_id + 1] - self._table.child_ptr[node_id])

    def keep_next_key_map(self, keep: bool = True) -> None:
        """Keep the map the next :meth:`map_keys` makes for a call after it with the same keys, which takes it
        (``ls --tree`` maps its keys to label them, then to place them: at 10^6 keys, 1.2 s each); ``keep``
        False: keep none (and let go of one kept)."""
        self._keep_map, self._kept_map = keep, None

    def map_keys(self, keys: list[str]) -> KeyMap:
        """Stored key -> ``(node id, attribute)`` for every key some attribute accounts for (see
        :meth:`key_attributes`), in the order of ``keys``."""
        kept, self._kept_map = self._kept_map, None
        if kept is not None and kept[0] == keys:  # (the same strings: compared by identity first, in C)
            return kept[1]
        mapping = self._map_keys(keys)
        if self._keep_map:
            self._keep_map, self._kept_map = False, (keys, mapping)
        return mapping

    def _map_keys(self, keys: list[str]) -> KeyMap:
        t = self._table
        found, attributes = self.key_attributes(keys)
        ptr = t.attr_ptr
        if isinstance(ptr, list):  # a small table's, without numpy
            owners = edge_owners(ptr, t.count)
        else:  # 8 bytes an attribute (edge_owners' list of ints: 36)
            import numpy as np

            owners = _compact(np.repeat(np.arange(t.count), np.diff(ptr)))
        return KeyMap(found, owners, attributes)

    def key_attributes(self, keys: list[str]) -> tuple[KeyPositions, Sequence[Attribute]]:
        """Stored key -> the position of the attribute that accounts for it (among every node's attributes, in
        order), for every key some attribute accounts for, in the order of ``keys``; and those attributes (of a
        graph in columns, each made when asked for: :class:`~formats.concepts.object_graph_columns.AttributeRows`).

        A key equals an attribute's ``checkpoint_key``, or extends it: objects saved through
        ``_serialize_to_tensors`` append the escaped tensor name (``.../ITERATOR`` is stored as
        ``.../ITERATOR_STATE``). The longest matching ``checkpoint_key`` wins.
        """
        t = self._table
        found = KeyPositions(keys)
        at = found.at
        all_keys: list[str] = []  # every attribute's key: the caller's string where it is one of ``keys``
        n = 0  # the keys found
        for run in t.attr_key_runs():  # (a graph in columns decodes them a run at a time: at 10^6 attributes, no
            n += _find_keys(found, run, len(all_keys))  # 96 MB of strings and a 40 MB dictionary of them at once)
            if all_keys:
                all_keys += run
            else:
                all_keys = run  # (the first run's list itself: one run held already is not copied)
        rest = [i for i, key in enumerate(keys) if at[i] < 0 and _MARKER in key] if n < len(keys) else []
        if rest:  # keys extending some attribute's own (objects saved through _serialize_to_tensors)
            by_key = {ck: k for k, ck in enumerate(all_keys)}  # the last attribute of a key wins
            lengths: dict[str, list[int]] = {}  # "<path>/.ATTRIBUTES/" -> lengths of the checkpoint keys under it
            for ck in by_key:
                marker = ck.find(_MARKER)
                if marker >= 0:
                    lengths.setdefault(ck[:marker + len(_MARKER)], []).append(len(ck))
            for base, sizes in lengths.items():
                lengths[base] = sorted(set(sizes), reverse=True)
            for i in rest:  # only the lengths some checkpoint key has are tried: linear in the key
                key = keys[i]
                marker = key.find(_MARKER)
                candidates = lengths.get(key[:marker + len(_MARKER)], ())
                hit = next((by_key[key[:n]] for n in candidates if n < len(key) and key[:n] in by_key), None)
                if hit is not None:
                    at[i] = hit
                    n += 1
            del by_key
        found.found = n
        return found, t.attribute_rows(all_keys)

    def is_optimizer(self, node_id: int) -> bool:
        """Whether the node looks like an optimizer (see :func:`_looks_like_optimizer`)."""
        return bool(self._optimizers()[node_id])

    def _optimizers(self) -> Any:
        """Per node whether it looks like an optimizer, all at once: the nodes that own slot variables or have
        both children ``_iterations`` and ``_variables``, and those of the nodes with a child ``iter`` that
        :func:`_looks_like_optimizer` says are."""
        if self._optimizer_flags is None:
            t = self._table
            flags: Any
            if isinstance(t.slot_ptr, list):  # a small table's: a list, no numpy
                flags = [False] * t.count
                for node in nodes_with(t.slot_ptr):
                    flags[node] = True
            else:
                import numpy as np

                flags = np.diff(t.slot_ptr) > 0
            for node in set(self.owners_named("_iterations")).intersection(self.owners_named("_variables")):
                flags[node] = True
            for node in self.owners_named("iter"):
                flags[node] = flags[node] or _looks_like_optimizer(self, node)
            self._optimizer_flags = flags
        return self._optimizer_flags

    def optimizer_of(self, node_id: int) -> int | None:
        """The optimizer node on the node's first path (itself included), if any: found for every node at once,
        a level of the traversal at a time."""
        if self._optimizer_of is None and isinstance(self._optimizers(), list):  # a small table's: no numpy
            flags, parent = self._optimizers(), self._walk.parent
            found_up = [node if flag else -1 for node, flag in enumerate(flags)]
            for level in self._walk.levels:
                for node in level:
                    if not flags[node]:
                        found_up[node] = found_up[parent[node]]
            self._optimizer_of = found_up
        if self._optimizer_of is None:
            import numpy as np

            flags = self._optimizers()
            nearest = np.where(flags, np.arange(len(flags)), -1)
            parent = np.asarray(self._walk.parent, dtype=np.int64)
            for level in (np.asarray(lv, dtype=np.int64) for lv in self._walk.levels):
                nearest[level] = np.where(flags[level], level, nearest[parent[level]])
            self._optimizer_of = _compact(nearest)
        found = self._optimizer_of[node_id]
        return None if found < 0 else found


_FEW_CHILDREN = 1 << 12
"""Children of a node whose names :meth:`ObjectGraph.first_children` decodes one by one (more: all of them)."""
_FEW_ASKED = 1 << 12
"""Asks :meth:`ObjectGraph.parent` answers from the node's edge alone before it decodes every name at once."""


def _compact(values: Any) -> Any:
    """An integer array as an ``array.array`` of int64: indexed as fast as a list, 8 bytes an item, not 36."""
    if isinstance(values, list):  # a small table's (formats.concepts.object_graph_table)
        return values
    from array import array

    return array("q", values.astype("int64").tobytes())


def _looks_like_optimizer(graph: ObjectGraph, node_id: int) -> bool:
    """An optimizer is a node that owns slot variables, a Keras optimizer (children ``_iterations`` and
    ``_variables``), or a legacy Keras optimizer (a child ``iter`` whose full name ends in ``/iter``)."""
    t = graph._table
    if t.slot_ptr[node_id + 1] > t.slot_ptr[node_id]:
        return True
    names = graph.children_of(node_id)
    if "_iterations" in names and "_variables" in names:
        return True
    it = names.get("iter")
    return it is not None and any(a.full_name.endswith("/iter") for a in graph.nodes[it].attributes)


def _join(prefix: str, segment: str) -> str:
    return f"{prefix}/{segment}" if prefix else segment


def label_keys(graph: ObjectGraph, keys: list[str]) -> KeyLabels:
    """Name and role of every key of an object-based checkpoint (a mapping of ``keys`` to their labels).

    Roles: ``slot`` for the optimizer's slot variables (from ``slot_variables``, or for Keras
    optimizers that keep slots in ``_variables`` from a full name ``<Optimizer>/<slot>/<variable
    full name>`` naming a model variable); ``iterator`` (attribute ``ITERATOR``);
    ``save_counter``; ``optimizer`` for everything else under an optimizer (hyperparameters,
    ``iter``/``_iterations``) and for variables whose full name is TF1 optimizer state
    (``global_step``, ``beta1_power``) or iterator state (the roles they have in a name-based checkpoint);
    ``variable`` for other ``VARIABLE_VALUE`` attributes;
    ``object_graph``; ``other`` (keys no attribute accounts for, or other attributes).
    """
    from formats.concepts.roles import may_not_be_variable

    mapping = graph.map_keys(keys)
    keras_slots = _keras_slots(graph, mapping)
    # Most keys are a model's variables: those are labelled here, without _label's questions one by one (the
    # same answer: no slot, not under an optimizer, not the save counter, no telling full name).
    graph.optimizer_of(0)  # the optimizer of every node, found at once
    under_optimizer, slots = graph._optimizer_of, graph._slots
    owners, name_of, full_of = mapping.owners, mapping.name, mapping.full_name
    var_keys = {owners[k]: key for key, k in mapping.positions() if name_of(k) == VARIABLE_VALUE} \
        if slots or keras_slots else {}  # (a slot's variable's key: none to find without slots)
    counters = {child for child, name in graph.first_children(0) if name == "save_counter"}
    value = VARIABLE_VALUE
    out = KeyLabels(keys, full_of, mapping.key_index)
    # the model's variables marked in out (on arrays for a graph in columns, else one by one); the others' positions
    others = _label_by_columns(graph, mapping, out, [*slots, *keras_slots, *counters])
    if others is None:
        others, plain = [], out.plain
        for i, (key, k) in enumerate(zip(keys, mapping.by_position)):
            if k >= 0:  # (-1: no attribute accounts for the key)
                node_id = owners[k]
                if name_of(k) == value and under_optimizer[node_id] < 0 and node_id not in slots and \
                        node_id not in keras_slots and node_id not in counters and key != OBJECT_GRAPH_KEY:
                    full = full_of(k)
                    if not full or not may_not_be_variable(full):
                        plain(i, node_id, k)
                        continue
            others.append(i)
    at, special = mapping.by_position, out.special
    slot_ref = graph.slot_ref_reader() if slots else None
    for i in others:  # labelled one by one, in the keys' order (no Attribute made)
        key, k = keys[i], at[i]
        ref = slot_ref(owners[k]) if slot_ref is not None and k >= 0 and key != OBJECT_GRAPH_KEY else None
        if ref is not None:  # (most of them in a graph of slots: the slot's reference known, asked of no node)
            special[key] = _slot_label(graph, full_of(k) or key, owners[k], name_of(k), ref[0], ref[1], ref[2],
                                       var_keys)
            continue
        special[key] = _label(graph, key, None if k < 0 else (owners[k], name_of(k), full_of(k)), var_keys,
                              keras_slots)
    return out


def _label_by_columns(graph: ObjectGraph, mapping: KeyMap, out: KeyLabels, excluded: list[int]) -> list[int] | None:
    """:func:`label_keys`' loop over the keys for a graph in columns: the keys that are model variables - a
    ``VARIABLE_VALUE`` attribute of a node that is not under an optimizer, not ``excluded`` (slot variables, Keras
    slots, save counters), not the object graph's key, whose full name is empty or ends in no segment
    :func:`~formats.concepts.roles.may_not_be_variable` knows - marked in ``out`` at once on arrays; the positions
    of the other keys returned (labelled one by one by the caller). None for a graph that is not in columns (a
    small one's lists: the loop, without numpy).

    A full name may tell another role only when it ends in one of the names the roles know or is one of their
    keys, each at least two bytes long: only the full names whose last two bytes end one of those are decoded
    and asked (the loop decoded and asked every one: about a microsecond a key)."""
    attributes, owners, under = mapping.attributes, mapping.owners, graph._optimizer_of
    columns = getattr(attributes, "columns", None)  # (AttributeRows': a graph in columns)
    if columns is None or isinstance(owners, list) or isinstance(under, list) or under is None:
        return None
    import numpy as np

    from formats.concepts.roles import may_not_be_variable, telling_names

    rows: Any = attributes
    stops = np.asarray(columns.attr_full[1])
    data = np.frombuffer(columns.data, dtype=np.uint8)
    # each full name's last two bytes (of a shorter one, bytes before it: a candidate is only asked, below)
    two = data[stops - 2].astype(np.int32) << 8 | data[stops - 1]
    ends = sorted({name[-2] << 8 | name[-1] for name in (t.encode() for t in telling_names())})
    node_out = np.asarray(under) >= 0  # by node: under an optimizer, or excluded
    if excluded:
        node_out[np.asarray(excluded, dtype=np.int64)] = True
    owner = np.asarray(owners)
    telling = np.zeros(len(stops), dtype=bool)
    ending = np.zeros(1 << 16, dtype=bool)  # (not numpy.isin: for a few values it imports numpy.ma, 1.3 MiB)
    ending[ends] = True
    may_tell = ending[two] & ~node_out[owner]  # (a node left out is labelled one by one whatever its name)
    for k in np.flatnonzero(may_tell).tolist():  # (decoded and asked: the few that may tell)
        telling[k] = may_not_be_variable(rows.full_name(k))
    del two, may_tell
    plain_attr = np.fromiter(map(VARIABLE_VALUE.__eq__, rows.names), dtype=bool, count=len(rows.names))
    plain_attr &= ~telling  # by attribute: a VARIABLE_VALUE whose full name tells no other role
    at_all = np.asarray(mapping.by_position)
    graph_key = mapping.key_index.find(OBJECT_GRAPH_KEY)
    others: list[int] = []
    for lo in range(0, len(at_all), _LABEL_RUN):  # a run of keys at a time (a few arrays of a run's size at most)
        at = at_all[lo:lo + _LABEL_RUN]
        has = np.flatnonzero(at >= 0)
        attr = at[has]
        node = owner[attr]
        ok = plain_attr[attr] & ~node_out[node]
        if lo <= graph_key < lo + len(at):
            ok &= has != graph_key - lo
        out.plain_all(has[ok] + lo, attr[ok], node[ok])
        plain = np.zeros(len(at), dtype=bool)
        plain[has[ok]] = True
        others += (np.flatnonzero(~plain) + lo).tolist()
    return others


_LABEL_RUN = 1 << 16
"""Keys labelled on arrays at a time (:func:`_label_by_columns`): a few arrays of this many, not of every key."""


def _find_keys(found: KeyPositions, keys: list[str], first: int) -> int:
    """Give each key of ``found`` that one of ``keys`` (the checkpoint keys of attributes ``first``,
    ``first + 1``, ...) is equal to the position of the last such attribute, and put the found key's own string in
    its place in ``keys`` (the attribute keeps the caller's string, not a copy: 10 MB at 10^5 keys); return how
    many keys were found that had no attribute before."""
    find, at, own = found.index.find, found.at, found.index.keys
    n = 0
    for k, key in enumerate(keys, first):
        i = find(key)
        if i >= 0:
            if at[i] < 0:
                n += 1
            at[i] = k
            keys[k - first] = own[i]
    return n


class KeyIndex:
    """The position of each of ``keys`` (strings, each once): by bisection when they ascend - the key found last,
    and the one after it, tried first (a key's questions come together, and keys in order) - else by a
    dictionary."""

    __slots__ = ("keys", "_at", "_last")

    def __init__(self, keys: list[str]) -> None:
        self.keys = keys
        self._at: dict[str, int] | None = None if keys and ascending(keys) else {k: i for i, k in enumerate(keys)}
        self._last = 0  # the position found last

    def find(self, key: str) -> int:
        """The position of ``key`` (a string) in :attr:`keys`, or -1."""
        if self._at is not None:
            return self._at.get(key, -1)
        keys, last = self.keys, self._last
        if keys[last] == key:
            return last
        if last + 1 < len(keys) and keys[last + 1] == key:
            self._last = last + 1
            return last + 1
        at = bisect_left(keys, key)
        if at < len(keys) and keys[at] == key:
            self._last = at
            return at
        return -1


class KeyPositions(Mapping[str, int]):
    """:meth:`ObjectGraph.key_attributes`' key -> the position of its attribute, for the keys an attribute
    accounts for, in the order of the keys: an attribute's position a key (:attr:`at`, -1 for none) found by the
    key's position (:class:`KeyIndex`), where a dictionary of them held some 70 bytes a key (70 MB at 10^6 keys)."""

    __slots__ = ("index", "at", "found")

    def __init__(self, keys: list[str]) -> None:
        self.index = KeyIndex(keys)
        self.at = memoryview(bytearray(b"\xff" * (8 * len(keys)))).cast("q")  # by the key's position
        self.found = 0  # how many keys have an attribute (set by the one who fills at)

    def get(self, key: object, default: Any = None) -> Any:  # (Mapping's, without its frame and exception)
        i = self.index.find(key) if type(key) is str else -1
        if i < 0:
            return default
        k = self.at[i]
        return default if k < 0 else k

    def __getitem__(self, key: str) -> int:
        k = self.get(key)
        if k is None:
            raise KeyError(key)
        return k

    def __contains__(self, key: object) -> bool:
        return self.get(key) is not None

    def __len__(self) -> int:
        return self.found

    def __iter__(self) -> Iterator[str]:
        return (key for key, k in zip(self.index.keys, self.at) if k >= 0)

    def items(self) -> Iterator[tuple[str, int]]:  # type: ignore[override]
        """``(key, its attribute's position)`` in the order of the keys."""
        return ((key, k) for key, k in zip(self.index.keys, self.at) if k >= 0)

    def values(self) -> Iterator[int]:  # type: ignore[override]
        """Each key's attribute's position, in the order of the keys."""
        return (k for k in self.at if k >= 0)


class KeyMap(Mapping[str, "tuple[int, Attribute]"]):
    """:meth:`ObjectGraph.map_keys`: stored key -> ``(node id, attribute)``, each pair made when asked for from the
    attribute's position (a dictionary of pairs held 120 bytes a key: 12 MB at 10^5 keys). ``position(key)``,
    ``owners`` (each attribute's node), :meth:`name`, :meth:`full_name` and :meth:`checkpoint_key` answer by
    position, no attribute made."""

    __slots__ = ("_found", "owners", "_attributes", "name", "full_name", "checkpoint_key")

    def __init__(self, found: KeyPositions, owners: Sequence[int], attributes: Sequence[Attribute]) -> None:
        """``found``: key -> its attribute's position; ``owners``: each attribute's node; ``attributes``: them all."""
        self._found, self.owners, self._attributes = found, owners, attributes
        self.name: Callable[[int], str]  # the attribute's name, by position
        self.full_name: Callable[[int], str]  # its full name
        self.checkpoint_key: Callable[[int], str]  # its checkpoint key
        rows_full = getattr(attributes, "full_name", None)  # (AttributeRows: made from the columns)
        if rows_full is not None:
            self.name, self.full_name = attributes.names.__getitem__, rows_full  # type: ignore[attr-defined]
            self.checkpoint_key = attributes.keys.__getitem__  # type: ignore[attr-defined]
        else:
            self.name, self.full_name = (lambda k: attributes[k].name), (lambda k: attributes[k].full_name)
            self.checkpoint_key = lambda k: attributes[k].checkpoint_key

    @property
    def attributes(self) -> Sequence[Attribute]:
        """Every attribute of the graph by position (of a graph in columns, each made when asked for)."""
        return self._attributes

    def position(self, key: str) -> int | None:
        """The position of the attribute that accounts for ``key``; None for a key none does."""
        return self._found.get(key)

    @property
    def by_position(self) -> Sequence[int]:
        """By the position of each of the keys mapped, the position of the attribute that accounts for it; -1 for
        a key none does (read in the keys' order: no key looked up)."""
        return self._found.at

    @property
    def key_index(self) -> KeyIndex:
        """The positions of the keys mapped."""
        return self._found.index

    def index(self, key: str) -> int:
        """The position of the attribute that accounts for ``key``: KeyError for a key none does."""
        return self._found[key]

    def positions(self) -> Iterable[tuple[str, int]]:
        """``(key, its attribute's position)`` in the order of the keys."""
        return self._found.items()

    def __getitem__(self, key: str) -> tuple[int, Attribute]:
        k = self._found[key]
        return self.owners[k], self._attributes[k]

    def get(self, key: str, default: Any = None) -> Any:  # (Mapping's, without its frame and exception)
        k = self._found.get(key)
        return default if k is None else (self.owners[k], self._attributes[k])

    def __contains__(self, key: object) -> bool:
        return key in self._found

    def __iter__(self) -> Iterator[str]:
        return iter(self._found)

    def __len__(self) -> int:
        return len(self._found)

    def items(self) -> Iterator[tuple[str, tuple[int, Attribute]]]:  # type: ignore[override]
        """``(key, (node id, attribute))`` in the order of the keys, made as they go."""
        owners, attributes = self.owners, self._attributes
        return ((key, (owners[k], attributes[k])) for key, k in self._found.items())

    def values(self) -> Iterator[tuple[int, Attribute]]:  # type: ignore[override]
        """``(node id, attribute)`` in the order of the keys, made as they go."""
        owners, attributes = self.owners, self._attributes
        return ((owners[k], attributes[k]) for k in self._found.values())


class KeyLabels(Mapping[str, EntryLabel]):
    """Every key's :class:`EntryLabel`: a model variable's - most keys' - made when asked for from its node and
    its attribute's full name (read by the attribute's position), held as sixteen bytes a key (an
    :class:`EntryLabel` a key and a dictionary of them held some 170 bytes: 17 MB at 10^5 keys; an attribute and its
    full name 210 more); the others' (:attr:`special`) held. Keys are found by bisection when
    given in order, else by a dictionary."""

    def __init__(self, keys: list[str], full_name: Callable[[int], str], index: KeyIndex | None = None) -> None:
        """``full_name``: an attribute's full name by its position (:meth:`KeyMap.full_name`); ``index``: the
        positions of ``keys`` when found already (:attr:`KeyMap.key_index`)."""
        self._keys, self._full = keys, full_name
        # by the key's position: a model variable's attribute's position (-1: none) and its node
        self._attrs = memoryview(bytearray(b"\xff" * (8 * len(keys)))).cast("q")
        self._nodes = memoryview(bytearray(8 * len(keys))).cast("q")
        self._plain = 0  # how many keys are model variables
        self.special: dict[str, EntryLabel] = {}
        index = KeyIndex(keys) if index is None or index.keys is not keys else index
        self._position: Callable[[str], int] = index.find  # a key's position, or -1

    def plain(self, position: int, node_id: int, attribute: int) -> None:
        """The key at ``position`` is a model variable: the attribute at ``attribute`` of node ``node_id``."""
        self._plain += self._attrs[position] < 0
        self._attrs[position] = attribute
        self._nodes[position] = node_id

    def plain_all(self, positions: Any, attributes: Any, nodes: Any) -> None:
        """:meth:`plain` for every key at ``positions`` (integer arrays, of keys not marked yet), at once."""
        import numpy as np

        np.asarray(self._attrs)[positions] = attributes
        np.asarray(self._nodes)[positions] = nodes
        self._plain += len(positions)

    def _variable(self, key: object) -> tuple[int, int] | None:
        """The position of ``key`` and of its attribute when it is a model variable's (its label made when asked
        for)."""
        at = self._position(key) if type(key) is str else -1
        attr = self._attrs[at] if at >= 0 else -1
        return None if attr < 0 else (at, attr)

    def _made(self, key: str) -> EntryLabel | None:
        """The key's label (a model variable's made now), None for a key not labelled."""
        found = self.special.get(key)
        if found is not None:
            return found
        hit = self._variable(key)
        return None if hit is None else EntryLabel(self._full(hit[1]) or key, Role.VARIABLE, self._nodes[hit[0]],
                                                   VARIABLE_VALUE)

    def __getitem__(self, key: str) -> EntryLabel:
        found = self._made(key)
        if found is None:
            raise KeyError(key)
        return found

    def get(self, key: str, default: Any = None) -> Any:  # (Mapping's, without its frame and exception)
        found = self._made(key)
        return default if found is None else found

    def name_of(self, key: str) -> str:
        """The key's label's ``name`` (a model variable's made with no label): KeyError for a key not labelled."""
        found = self.special.get(key)
        if found is not None:
            return found.name
        hit = self._variable(key)
        if hit is None:
            raise KeyError(key)
        return self._full(hit[1]) or key

    def facts(self, key: str) -> EntryLabel | None:
        """The key's label but for its ``name``, ``node_id`` and ``attribute``, which are not all its own: a model
        variable's is one label shared by them all (asked for a role, no label is made); None for a key not
        labelled."""
        found = self.special.get(key)
        if found is not None:
            return found
        return _PLAIN if self._variable(key) is not None else None

    def names_of(self, keys: list[str]) -> list[str]:
        """:meth:`name_of` of each of ``keys`` (KeyError for one not labelled). A run of this mapping's own keys that
        are all model variables - what a bundle's tensors ask, a few thousand at a time - is read by position: no key
        is looked up (at 10^6 keys, 1 s of an export's provenance record went to finding each key again)."""
        attributes = self._plain_run(keys)
        if attributes is None:
            return list(map(self.name_of, keys))
        return [name or key for name, key in zip(map(self._full, attributes), keys)]

    def facts_of(self, keys: list[str]) -> list[EntryLabel | None]:
        """:meth:`facts` of each of ``keys``; a run of model variables' keys (see :meth:`names_of`) shares one
        label, asked of none."""
        return [_PLAIN] * len(keys) if self._plain_run(keys) is not None else list(map(self.facts, keys))

    def _plain_run(self, keys: list[str]) -> list[int] | None:
        """The attribute of each of ``keys`` when they are a run of this mapping's keys in their order (the same
        strings, or equal ones) and every one a model variable's (a key labelled one by one, or not at all, has
        none: -1); else None."""
        if not keys or type(keys[0]) is not str:
            return None
        first = self._position(keys[0])
        if first < 0 or self._keys[first:first + len(keys)] != keys:
            return None
        attributes = self._attrs[first:first + len(keys)].tolist()
        return attributes if min(attributes) >= 0 else None

    def __contains__(self, key: object) -> bool:
        return key in self.special or type(key) is str and self._position(key) >= 0

    def __iter__(self) -> Iterator[str]:
        special = self.special
        return (k for k, a in zip(self._keys, self._attrs) if a >= 0 or k in special)

    def __len__(self) -> int:
        return len(self.special) + self._plain


_PLAIN = EntryLabel("", Role.VARIABLE, None, VARIABLE_VALUE)
"""What :meth:`KeyLabels.facts` gives for every model variable."""


def _label(graph: ObjectGraph, key: str, hit: tuple[int, str, str] | None, var_keys: dict[int, str],
           keras_slots: dict[int, tuple[int, str]]) -> EntryLabel:
    """The label of ``key``; ``hit``: the node, name and full name of the attribute that accounts for it (None:
    none does)."""
    if key == OBJECT_GRAPH_KEY:
        return EntryLabel(key, Role.OBJECT_GRAPH)
    if hit is None:
        return EntryLabel(key, "other")
    node_id, attribute, full_name = hit
    name = full_name or key
    opt_id: int | None
    slot = graph.slot_of(node_id)
    if slot is not None:
        opt_id, ref = slot
        return _slot_label(graph, name, node_id, attribute, opt_id, ref.original_variable_node_id, ref.slot_name,
                           var_keys)
    opt_id = graph.optimizer_of(node_id)
    if node_id in keras_slots:
        orig, slot_name = keras_slots[node_id]
        return _slot_label(graph, name, node_id, attribute, opt_id, orig, slot_name, var_keys)
    if attribute == "ITERATOR":
        return EntryLabel(name, Role.ITERATOR, node_id, attribute)
    if graph.parent(node_id) == (0, "save_counter"):  # its path is "save_counter" (no path built per key)
        return EntryLabel(name, Role.SAVE_COUNTER, node_id, attribute)
    if opt_id is not None:
        return EntryLabel(name, Role.OPTIMIZER, node_id, attribute, optimizer=graph.path(opt_id))
    if attribute != VARIABLE_VALUE:
        return EntryLabel(name, Role.OTHER, node_id, attribute)
    return EntryLabel(name, _by_name(full_name), node_id, attribute)


def _slot_label(graph: ObjectGraph, name: str, node_id: int, attribute: str, opt_id: int | None, orig: int,
                slot_name: str, var_keys: dict[int, str]) -> EntryLabel:
    """A slot variable's label: its variable's key (or path, for a variable with no key), its optimizer's path."""
    variable = var_keys.get(orig)
    return EntryLabel(name, Role.SLOT, node_id, attribute, graph.path(orig) if variable is None else variable,
                      graph.path(opt_id) if opt_id is not None else None, slot_name)


_ROLES_OF_NAMES: list[Any] = []  # formats.concepts.roles' classify_name and may_not_be_variable, once imported


def _by_name(full_name: str) -> Role:
    """A variable under no optimizer whose full name says it is optimizer state (``global_step``,
    ``beta1_power``) or iterator state (``.../ITERATOR_STATE``): a name-based checkpoint converted to
    object-based keeps them as plain variables; they keep the role they had there."""
    if not _ROLES_OF_NAMES:
        from formats.concepts.roles import classify_name, may_not_be_variable

        _ROLES_OF_NAMES[:] = [classify_name, may_not_be_variable]
    classify_name, may_not_be_variable = _ROLES_OF_NAMES
    if not full_name or not may_not_be_variable(full_name):
        return Role.VARIABLE
    role = classify_name(full_name).role
    return role if role in (Role.OPTIMIZER, Role.ITERATOR) else Role.VARIABLE


KERAS3_OPTIMIZER_LISTS = frozenset({"_variables", "_trainable_variables", "_trainable_variables_indices"})
"""A Keras 3 optimizer's children that are lists but not slots."""


def keras3_optimizer(graph: ObjectGraph, node_id: int) -> bool:
    """Whether the node is a Keras 3 optimizer (children ``_iterations``, ``_variables`` and
    ``_trainable_variables``: the variables it trains, in the order of its slot lists)."""
    return graph.child_count(node_id) >= 3 and {"_iterations", "_variables", "_trainable_variables"} <= \
        graph.children_of(node_id).keys()


def _keras3_slot_name(attribute: str) -> str:
    """A Keras 3 optimizer's slot list attribute as its slot name: ``_momentums`` -> ``momentum``,
    ``_velocities`` -> ``velocity``, ``_velocity_hats`` -> ``velocity_hat``."""
    name = attribute.lstrip("_")
    return name[:-3] + "y" if name.endswith("ies") else name[:-1] if name.endswith("s") else name


def _keras3_structural_slots(graph: ObjectGraph) -> dict[int, tuple[int, str]]:
    """Slot node -> (variable node, slot name) for Keras 3 optimizers, from the graph's structure: the
    ``i``-th entry of each slot list (``_momentums``, ``_velocities``) belongs to the ``i``-th of
    ``_trainable_variables``. Certain where names are not (Keras 3 names every ``Dense`` kernel of a
    model ``<model>/kernel``)."""
    out: dict[int, tuple[int, str]] = {}
    for index in graph.owners_named("_trainable_variables"):  # (not every node of three children or more: each layer)
        if not keras3_optimizer(graph, index):
            continue
        node = graph.nodes[index]
        lists = {c.local_name: graph.nodes[c.node_id] for c in node.children}
        trained = {c.local_name: c.node_id for c in lists["_trainable_variables"].children}
        for name, child in lists.items():
            if name in KERAS3_OPTIMIZER_LISTS or not name.startswith("_") or not child.children \
                    or child.attributes or any(c.local_name not in trained for c in child.children):
                continue
            for ref in child.children:
                if graph.nodes[ref.node_id].attributes and not graph.nodes[ref.node_id].children:
                    out.setdefault(ref.node_id, (trained[ref.local_name], _keras3_slot_name(name)))
    return out


def _keras_slots(graph: ObjectGraph, mapping: KeyMap) -> dict[int, tuple[int, str]]:
    """Slot node -> (variable node, slot name) for Keras optimizers (``Adam/m/net/dense/kernel``; Keras 3's
    from the graph's structure, :func:`_keras3_structural_slots`).

    Only nodes under an optimizer whose full name is ``<A>/<slot>/<rest>`` with ``rest`` the full
    name of exactly one model variable (a VARIABLE_VALUE not under any optimizer) count, and
    ``<slot>/<rest>`` with ``slot`` a tf-keras slot name of the optimizer table (an optimizer built
    outside ``apply_gradients`` names its slots ``m/dense/kernel``).
    """
    structural = _keras3_structural_slots(graph)
    graph.optimizer_of(0)  # (every node's optimizer, found at once)
    if max(graph._optimizer_of, default=-1) < 0:
        return structural  # no node under an optimizer: no candidate (without asking about every variable)
    owners, name_of, full_of = mapping.owners, mapping.name, mapping.full_name
    slots = graph._slots
    variables = [k for _, k in mapping.positions() if name_of(k) == VARIABLE_VALUE and
                 owners[k] not in slots and owners[k] not in structural]
    candidates = [(owners[k], full_of(k)) for k in variables if graph.optimizer_of(owners[k]) is not None]
    if not candidates:  # (no optimizer's variable: no model variable's full name to index)
        return structural
    model: dict[str, list[int]] = {}
    for k in variables:
        if graph.optimizer_of(owners[k]) is None:
            model.setdefault(full_of(k), []).append(owners[k])
    out: dict[int, tuple[int, str]] = {}
    for node_id, full_name in candidates:
        parts = full_name.split("/", 2)
        if len(parts) == 3 and parts[1] and len(model.get(parts[2], [])) == 1:
            out[node_id] = (model[parts[2]][0], parts[1])
            continue
        unprefixed = parse_keras_slot(full_name, model)
        if unprefixed is not None and unprefixed.optimizer is None and len(model[unprefixed.variable]) == 1:
            out[node_id] = (model[unprefixed.variable][0], unprefixed.slot)
    return out | structural
