"""A checkpoint as a tree (``ckpt ls --tree``), as data.

For an object-based checkpoint the tree is the object graph: each object at its
first breadth-first path, slot variables under the variable they belong to,
optimizers with their hyperparameters, shared objects once (their other paths in
``aliases``). Every other checkpoint (TF1 names, Keras HDF5 keys) is split on ``/``;
name-based slots (``kernel/Adam``) then land under their variable by themselves.

A :class:`TreeNode` row shows its own tensor (``key``/``dtype``/``shape``, ``own_nbytes``,
``own_parameters``) if it has one (a variable: its slots are its children);
``nbytes``/``parameters`` are always the totals of its whole subtree.

Every walk is iterative and the depth is bounded: a key split into more than :data:`MAX_TREE_DEPTH`
segments keeps the rest of the key as its last row's label, and an object tree nested deeper (slot
variables of slot variables) is refused, so any file gives a tree that renders and serializes.
"""
from __future__ import annotations

from formats.core.gc_pause import gc_paused

from formats.core.errors import CheckpointError, CorruptCheckpointError
from formats.core.compact_listing import NON_PARAMETER
from formats.core.model import OPTIMIZER_ROLES, Role
from formats.core.natural import natural_sorted
from formats.core.object_keys import ATTRIBUTES, MAX_NESTING
from formats.core.records import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from formats.core.model import Checkpoint, TensorEntry
    from formats.concepts.object_graph import KeyMap, ObjectGraph

__all__ = ["TreeNode", "CheckpointTree", "build_tree", "OPTIMIZER_ROLES", "MAX_TREE_DEPTH"]

MAX_TREE_DEPTH = MAX_NESTING + 8
"""Rows nest at most this deep: the graph's own limit plus a few levels of slots under variables."""


Own = tuple  # (dtype, shape, role, own_nbytes, own_parameters) of a row's own tensor: see TreeNode.own
Sums = tuple  # (nbytes, parameters, tensors) of a row's subtree: see TreeNode.sums

_NO_TENSOR: Own = (None, None, None, 0, 0)
_NOTHING: Sums = (0, 0, 0)


@record(slots=True)  # one per row: a dict per node cost more than its fields
class TreeNode:
    """One row: ``label``, its own tensor (``key`` etc., or None), a ``note``, other paths, children. A row
    without other paths or children holds the empty tuple, not a list of its own (most rows are leaves: two
    empty lists each were 20 MB at 100k rows); a row given one child holds a tuple of it, one given more a list.

    What a row says of its own tensor (``dtype``, ``shape``, ``role``, ``own_nbytes``, ``own_parameters``) is one
    tuple, ``own``, and its subtree's totals (``nbytes``, ``parameters``, ``tensors``) another, ``sums``: tuples
    shared by the rows that say the same (:func:`_shared`: a million tensors of a few shapes hold a few), where eight
    fields of their own were 64 bytes a row (128 MB for the two million rows of a million keys)."""

    label: str
    key: str | None = None
    note: str = ""
    aliases: Sequence[str] = ()
    children: Sequence[TreeNode] = ()
    own: Own = _NO_TENSOR
    sums: Sums = _NOTHING

    dtype = property(lambda self: self.own[0], lambda self, v: self._set_own(0, v), doc="Its tensor's dtype.")
    shape = property(lambda self: self.own[1], lambda self, v: self._set_own(1, v), doc="Its tensor's shape.")
    role = property(lambda self: self.own[2], lambda self, v: self._set_own(2, v), doc="Its tensor's role.")
    own_nbytes = property(lambda self: self.own[3], lambda self, v: self._set_own(3, v),
                          doc="Its own tensor's bytes.")
    own_parameters = property(lambda self: self.own[4], lambda self, v: self._set_own(4, v),
                              doc="Its own tensor's parameters (0 for a non-numeric dtype).")
    nbytes = property(lambda self: self.sums[0], lambda self, v: self._set_sum(0, v), doc="Its subtree's bytes.")
    parameters = property(lambda self: self.sums[1], lambda self, v: self._set_sum(1, v),
                          doc="Its subtree's parameters.")
    tensors = property(lambda self: self.sums[2], lambda self, v: self._set_sum(2, v), doc="Its subtree's tensors.")

    def _set_own(self, i: int, value: object) -> None:
        self.own = _shared((*self.own[:i], value, *self.own[i + 1:]))

    def _set_sum(self, i: int, value: object) -> None:
        self.sums = _shared((*self.sums[:i], value, *self.sums[i + 1:]))

    def total(self) -> None:
        """Recompute ``nbytes``/``parameters``/``tensors`` of this subtree from own tensors upwards."""
        order = self.nodes()
        order.reverse()  # children before their parent
        order.append(self)
        alone: dict[int, Sums] = {}  # id of a shared ``own`` -> the totals of a row of that tensor alone
        for node in order:
            children = node.children
            if node.key is None:
                if len(children) == 1:  # a scope of one row: its totals (the very tuple)
                    node.sums = children[0].sums
                    continue
                nbytes = parameters = tensors = 0
            else:
                own = node.own
                if not children:  # a tensor's row (most rows): its totals found by its facts' identity
                    sums = alone.get(id(own))
                    if sums is None:
                        sums = _shared((own[3], own[4], 1))
                        if len(alone) < _SHARED_FACTS:
                            alone[id(own)] = sums
                    node.sums = sums
                    continue
                nbytes, parameters, tensors = own[3], own[4], 1
            for child in children:
                sums = child.sums
                nbytes, parameters, tensors = nbytes + sums[0], parameters + sums[1], tensors + sums[2]
            node.sums = _shared((nbytes, parameters, tensors))

    def nodes(self) -> list[TreeNode]:
        """Every node under this one, depth first, parents before their children (as :meth:`walk` yields
        them, without the depth and flags)."""
        out: list[TreeNode] = []
        stack = list(reversed(self.children))
        while stack:
            node = stack.pop()
            out.append(node)
            if node.children:
                stack += node.children[::-1]
        return out

    def walk(self) -> Iterator[tuple[int, tuple[bool, ...], TreeNode]]:
        """Yield ``(depth, last-flags of each ancestor level, node)`` for the children, depth first."""
        stack: list[tuple[tuple[bool, ...], TreeNode]] = [((), self)]
        while stack:
            lasts, node = stack.pop()
            for i in range(len(node.children) - 1, -1, -1):  # pushed last to first: popped in order
                stack.append(((*lasts, i == len(node.children) - 1), node.children[i]))
            if node is not self:
                yield len(lasts) - 1, lasts, node

    def to_json(self) -> dict[str, object]:
        """A JSON-ready nested dict."""
        top = self.own_json()
        docs = {id(self): top}
        for _, _, node in self.walk():  # parents come before their children
            docs[id(node)] = node.own_json()
        for node in [self, *(n for _, _, n in self.walk())]:
            if node.children:
                docs[id(node)]["children"] = [docs[id(c)] for c in node.children]
        return top

    def own_json(self) -> dict[str, object]:
        """The row's document but for its ``children``."""
        doc: dict[str, object] = {"label": self.label}
        if self.key is not None:
            doc.update(key=self.key, dtype=self.dtype, shape=list(self.shape or ()), role=self.role)
        doc.update(nbytes=self.nbytes, parameters=self.parameters)
        if self.note:
            doc["note"] = self.note
        if self.aliases:
            doc["aliases"] = list(self.aliases)
        return doc


@record
class CheckpointTree:
    """The tree of one checkpoint; ``root`` is not shown, its children are the top rows."""

    path: str
    format: str
    root: TreeNode
    hidden: int = 0  # tensors left out (--no-optimizer, patterns)
    unmatched: list[str] = field(default_factory=list)  # patterns that matched no key

    def to_json(self) -> dict[str, object]:
        """``{"path", "format", "tensors", "nbytes", "parameters", "hidden", "tree": [...]}``."""
        return {**self.head_json(), "tree": [c.to_json() for c in self.root.children]}

    def head_json(self) -> dict[str, object]:
        """:meth:`to_json` but for its last field, ``tree`` (the rows)."""
        return {"path": self.path, "format": self.format, "tensors": self.root.tensors,
                "nbytes": self.root.nbytes, "parameters": self.root.parameters, "hidden": self.hidden}


@gc_paused
def build_tree(ckpt: Checkpoint, include_optimizer: bool = True, describe_variants: bool = True,
               patterns: list[str] | None = None) -> CheckpointTree:
    """The tree of ``ckpt``: the object graph when it has one, else its keys split on ``/``.

    ``include_optimizer=False`` leaves out slots and optimizer state (roles ``slot`` and
    ``optimizer``) and any object left empty by that; ``patterns`` keep only the keys they select
    (:func:`~formats.core.selection.select_keys`; those matching nothing are listed in ``unmatched``). ``describe_variants`` reads variant tensors (small: a dataset iterator's state) to name
    what they hold.
    """
    from formats.core.selection import select_keys

    _SHARED.clear()  # (the last tree's facts: not held by this one)
    selected, unmatched = select_keys(ckpt, patterns or ())
    graph = ckpt.object_graph
    everything = not patterns  # objects without tensors (functions) only when nothing is filtered
    if graph is None:  # the keys' entries a batch at a time (none held for the whole tree)
        keep = selected if include_optimizer else [
            key for key, entry in zip(selected, ckpt.entries_by_batch(selected)) if entry.role not in OPTIMIZER_ROLES]
        held: list[TreeNode] = []  # the rows of the keys, as _key_tree makes them (no walk of the tree to find them)
        root = _key_tree(keep, held)
        for node, entry in zip(held, ckpt.entries_by_batch([node.key for node in held])):  # type: ignore[misc]
            _fill(node, entry, describe_variants)
    else:  # each key's entry made once, a batch at a time (none held for the whole tree)
        graph.keep_next_key_map()  # (the keys are labelled with the map the tree places them by, when they agree)
        keep, facts, slot_facts, kinds = _graph_facts(ckpt, selected, include_optimizer, describe_variants)
        root = _graph_tree(graph, keep, facts, slot_facts, kinds, everything)
        graph.keep_next_key_map(False)
    if everything:
        root.children = [*root.children, *_signature_nodes(ckpt.metadata.get("signatures") or [])]
    root.total()
    _SHARED.clear()  # (the rows hold what they share)
    return CheckpointTree(ckpt.path, ckpt.format, root, hidden=len(ckpt) - len(keep), unmatched=unmatched)


def _shared(facts: tuple) -> tuple:
    """The tuple equal to ``facts`` that rows share (a row's ``own`` or ``sums``): the first of them given, up to
    :data:`_SHARED_FACTS` distinct ones; beyond them, ``facts`` itself."""
    try:
        found = _SHARED.get(facts)
    except TypeError:  # (a shape given as a list by some reader: not shared)
        return facts
    if found is not None:
        return found
    if len(_SHARED) < _SHARED_FACTS:
        _SHARED[facts] = facts
    return facts


_SHARED: dict[tuple, tuple] = {}
_SHARED_FACTS = 1 << 16
"""Distinct facts rows share a tuple of (more: each row its own); the pool is cleared by every :func:`build_tree`."""


def _fill(node: TreeNode, entry: TensorEntry, describe_variants: bool) -> None:
    own, notes = _facts(entry, describe_variants)
    node.own = own
    if notes is not None:
        _add_notes(node, notes)


def _facts(entry: TensorEntry, describe_variants: bool, role: str | None = None) -> tuple[Own, tuple[str, ...] | None]:
    """What a row says of its tensor: its ``own`` (a shared tuple), and the notes the tensor gives the row (None
    for a plain variable's: most rows). ``role``: the entry's, where the caller has asked already (a look-up of
    the key's label a call)."""
    dtype = entry.dtype
    if role is None:
        role = entry.role
    own = (dtype, entry.shape, role, entry.nbytes, 0 if dtype in NON_PARAMETER else entry.size)
    try:
        own = _SHARED.get(own) or _shared(own)  # (_shared, its usual case inline: no call)
    except TypeError:  # (a shape given as a list: not shared)
        pass
    if role == Role.VARIABLE and dtype != "variant":  # no note of its own (most rows)
        return own, None
    role_note = _role_note(entry)
    if dtype == "variant" and describe_variants:
        return own, (role_note, _variant_note(entry)) if role_note else (_variant_note(entry),)
    return own, _shared((role_note,)) if role_note else ()  # (a slot's note: one string for every slot of a name)


def _add_notes(node: TreeNode, notes: tuple[str, ...]) -> None:
    """The row's note: its tensor's ``notes``, then what the row said already."""
    node.note = "; ".join([*notes, node.note] if node.note else notes)


def _role_note(entry: TensorEntry) -> str:
    role = entry.role
    if role == Role.SLOT:
        slot, opt = entry.slot_name, entry.optimizer
        return f"slot {slot} of {opt}" if slot and opt else "optimizer slot"
    return _ROLE_NOTES.get(role, "")


_ROLE_NOTES: dict[str, str] = {Role.OPTIMIZER: "optimizer state", Role.ITERATOR: "iterator state",
                               Role.SAVE_COUNTER: "save counter", Role.OBJECT_GRAPH: "object graph"}


def _variant_note(entry: TensorEntry) -> str:
    from formats.concepts.variant import describe_variant

    try:
        return describe_variant(entry).text()
    except CheckpointError as exc:
        return f"unreadable: {exc.message}"


def _key_tree(keys: list[str], keyed: list[TreeNode] | None = None) -> TreeNode:
    """Keys split on ``/`` (at most :data:`MAX_TREE_DEPTH` levels: the rest of a longer key is one label);
    linear in the keys' length. ``keyed`` gets the row of each key as it is made."""
    root = TreeNode("")
    kids: dict[int, dict[str, TreeNode]] = {}  # a node's children by label, once it has two or more (a node with
    # one child, most often a variable's scope, looks at that child: no dictionary per node)
    path: list[tuple[str, TreeNode]] = []  # the last key's rows: (label, node)
    labels: dict[str, str] = {}  # one string per label (layer_0/dense, layer_1/dense...: "dense" once), up to a bound
    for key in natural_sorted(keys):  # numbers by value: vars/2 before vars/10
        parts = key.split("/", MAX_TREE_DEPTH - 1)
        depth, most = 0, min(len(parts), len(path))
        while depth < most and path[depth][0] == parts[depth]:  # the rows shared with the last key
            depth += 1
        del path[depth:]
        node = path[-1][1] if path else root
        for part in parts[depth:]:
            shared = labels.get(part)
            if shared is not None:
                part = shared
            elif len(labels) < _SHARED_LABELS:
                labels[part] = part
            children = node.children
            if not children:
                child = TreeNode(part)
                node.children = (child,)  # (a tuple of one: a list once it has two)
            elif len(children) == 1:
                child = children[0]
                if child.label != part:
                    child = TreeNode(part)
                    kids[id(node)] = {children[0].label: children[0], part: child}
                    node.children = [children[0], child]
            else:
                below = kids[id(node)]
                child = below.get(part)  # type: ignore[assignment]
                if child is None:
                    child = below[part] = TreeNode(part)
                    children.append(child)
            node = child
            path.append((part, node))
        node.key = key
        if keyed is not None:
            keyed.append(node)
    return root


_SHARED_LABELS = 1 << 16
"""Distinct labels a key tree shares a string of (beyond them, a row keeps the string its key was split into)."""


def _signature_nodes(signatures: list[dict[str, object]]) -> list[TreeNode]:
    """A ``signatures`` row with one row per serving signature (``Checkpoint.metadata["signatures"]``)."""
    from formats.concepts.signatures import signature_text

    if not signatures:
        return []
    rows = [TreeNode(str(sig.get("name", "")), note="signature " + signature_text(sig)) for sig in signatures]
    return [TreeNode("signatures", children=rows)]


class _Facts:
    """What the rows of the keys shown say of their tensors, by the key's position: ``own`` (shared tuples) and
    the notes of the few that have any."""

    __slots__ = ("own", "notes")

    def __init__(self) -> None:
        self.own: list[Own] = []
        self.notes: dict[int, tuple[str, ...]] = {}

    def fill(self, node: TreeNode, at: int) -> None:
        """Give ``node`` the facts of the key at position ``at``."""
        node.own = self.own[at]
        notes = self.notes.get(at)
        if notes is not None:
            _add_notes(node, notes)


class _SlotFacts:
    """Each slot's row (its position among the keys shown), ``slot_of`` and ``slot_name``, in three lists (a
    dictionary entry and a tuple a slot held some 150 bytes: 100 MB at 666,000 slots)."""

    __slots__ = ("rows", "of", "names")

    def __init__(self) -> None:
        self.rows: list[int] = []
        self.of: list[str | None] = []
        self.names: list[str | None] = []


def _graph_facts(ckpt: Checkpoint, keys: list[str], include_optimizer: bool, describe_variants: bool
                 ) -> tuple[list[str], _Facts, _SlotFacts, dict[str, str]]:
    """What the object tree needs of the tensors of ``keys``, each key's entry made once (a batch at a time): the
    keys shown (optimizer state left out unless ``include_optimizer``), their rows' facts, each slot's row,
    ``slot_of`` and ``slot_name``, and each optimizer's class name by its path (when all its ``Adam/...``-style
    full names agree on one)."""
    keep: list[str] = []
    facts = _Facts()
    owns = facts.own
    slots = _SlotFacts()
    seen: dict[str, set[str]] = {}  # optimizer path -> the first segments of its state's full names
    for key, entry in zip(keys, ckpt.entries_by_batch(keys)):
        role = entry.role
        if role in OPTIMIZER_ROLES:
            if not include_optimizer:
                continue
            optimizer, name = entry.optimizer, entry.name
            if optimizer is not None and "/" in name:
                seen.setdefault(optimizer, set()).add(name.split("/", 1)[0])
            if role == Role.SLOT:
                slots.rows.append(len(keep))
                slots.of.append(entry.slot_of)
                slots.names.append(entry.slot_name)
        own, notes = _facts(entry, describe_variants, role)
        if notes is not None:
            facts.notes[len(keep)] = notes
        owns.append(own)
        keep.append(key)
    return keep, facts, slots, {path: names.pop() for path, names in seen.items() if len(names) == 1}


def _graph_tree(graph: ObjectGraph, keys: list[str], facts: _Facts,
                slot_facts: _SlotFacts, kinds: dict[str, str],
                everything: bool = False) -> TreeNode:
    mapping = graph.map_keys(keys)
    owners = mapping.owners  # (a key's node by its attribute's position)
    first = memoryview(bytearray(8 * len(graph))).cast("q")  # node -> 1 + the position of its key in keys; 0: none
    several: dict[int, list[int]] = {}  # node -> its keys' positions, for a node with more than one
    outside: list[int] = []  # the positions of keys no attribute accounts for
    for i, k in enumerate(mapping.by_position):
        if k < 0:
            outside.append(i)
            continue
        node = owners[k]
        at = first[node]
        if not at:
            first[node] = i + 1
        else:
            several.setdefault(node, [at - 1]).append(i)
    slots = _slot_homes(slot_facts, mapping)
    placed = {slot_id for entries in slots.values() for _, slot_id in entries}
    builder = _GraphBuilder(graph, _NodeKeys(keys, facts, first, several), slots, placed, kinds, everything)
    root = builder.build()
    rest = [TreeNode(keys[i], key=keys[i]) for i in outside]
    for row, i in zip(rest, outside):
        facts.fill(row, i)
    root.children = [*root.children, *rest]
    return root


class _NodeKeys:
    """The keys of the graph's nodes: a key's position a node (eight bytes, where a dictionary of the nodes with
    keys held some 80), a list of positions for a node with several."""

    __slots__ = ("_keys", "_facts", "_first", "_several")

    def __init__(self, keys: list[str], facts: _Facts, first: Sequence[int], several: dict[int, list[int]]) -> None:
        self._keys, self._facts, self._first, self._several = keys, facts, first, several

    def place(self, row: TreeNode, node_id: int) -> list[TreeNode]:
        """Give ``row`` the tensor of node ``node_id`` when it has one; the rows of its tensors when it has several
        (else [])."""
        several = self._several.get(node_id)
        keys, fill = self._keys, self._facts.fill
        if several is not None:
            rows = [TreeNode(_attribute_label(keys[i]), key=keys[i]) for i in several]
            for kid, i in zip(rows, several):
                fill(kid, i)
            return rows
        at = self._first[node_id]
        if at:
            row.key = keys[at - 1]
            fill(row, at - 1)
        return []


def _slot_homes(slot_facts: _SlotFacts, mapping: KeyMap) -> dict[int, list[tuple[str, int]]]:
    """Variable node -> [(slot name, slot node)], from slot_variables and from slot roles (``slot_facts``: each
    slot's row among the keys ``mapping`` maps, ``slot_of`` and ``slot_name``)."""
    homes: dict[int, list[tuple[str, int]]] = {}
    if not slot_facts.rows:
        return homes
    seen: set[int] = set()
    owners, at = mapping.owners, mapping.by_position
    for row, slot_of, slot_name in zip(slot_facts.rows, slot_facts.of, slot_facts.names):
        k = at[row]
        if k < 0:
            continue
        node_id = owners[k]
        if node_id in seen or slot_of is None or slot_of not in mapping:
            continue
        seen.add(node_id)
        homes.setdefault(mapping[slot_of][0], []).append((slot_name or "slot", node_id))
    return {var: sorted(slots, key=lambda s: s[1]) for var, slots in homes.items()}


class _GraphBuilder:
    """Builds the object tree: each node once, at its first path (slots under their variable); with
    ``everything``, objects the graph describes with a note (a SavedModel's functions) even without tensors."""

    def __init__(self, graph: ObjectGraph, own: _NodeKeys, slots: dict[int, list[tuple[str, int]]],
                 placed: set[int], kinds: dict[str, str], everything: bool = False) -> None:
        """``own``: the keys of the nodes, which places each on its row."""
        self.graph, self.own, self.slots, self.placed, self.kinds = graph, own, slots, placed, kinds
        self.everything = everything
        self.noted: set[int] = set()
        # the nodes whose rows say more than their label (most rows are plain: made without a question);
        # None: any may (notes to ask for)
        self.notable: set[int] | None = None if everything and graph.has_notes() else \
            graph.aliased_or_optimizer() | graph.reached_among(placed)  # (a slot an edge reaches: its path an alias)

    def build(self) -> TreeNode:
        """The tree under the root object: rows made top-down, then finished bottom-up (a row is kept
        when it holds a tensor, a kept row, or a note), without recursion."""
        root = self._row(0, "")
        made: list[TreeNode] = []  # the rows given children (a node's several keys' rows among them)
        todo = [(root, 0, 0)]
        seen = bytearray(len(self.graph))  # (a byte a node: a set of them held an int and a slot each)
        seen[0] = 1
        place, noted, notable, row_of = self.own.place, self.noted, self.notable, self._row
        first_children, placed, slots = self.graph.first_children_reader(), self.placed, self.slots
        while todo:
            row, node_id, depth = todo.pop()
            kids: list[TreeNode] = []
            shown = first_children(node_id)  # its children at their first path, then its slots
            if placed:
                shown = [(child, name) for child, name in shown if child not in placed]
            if node_id in slots:
                shown += [(slot_id, slot_name) for slot_name, slot_id in slots[node_id]]
            for child_id, label in shown:
                if seen[child_id]:  # slots of slots may loop: each object once
                    continue
                if depth + 1 > MAX_TREE_DEPTH:
                    raise CorruptCheckpointError(self.graph.source, f"the object graph nests objects more than "
                                                 f"{MAX_TREE_DEPTH} deep (slot variables of slot variables?)")
                seen[child_id] = 1
                kid = TreeNode(label) if notable is not None and child_id not in notable else row_of(child_id, label)
                kids.append(kid)
                todo.append((kid, child_id, depth + 1))
            several = place(row, node_id)
            if several:
                kids[:0] = several
            if kids:  # one child (most rows that have any: a variable's object): a tuple of it, as _key_tree's,
                row.children = (kids[0],) if len(kids) == 1 else kids  # not a list held to the end (9 MB at 10^5)
                made.append(row)
        for row in reversed(made):  # every row's children are finished before it: those left empty dropped
            children = row.children
            if type(children) is tuple:  # (one: kept as it is, or dropped)
                kid = children[0]
                if not (kid.key is not None or kid.children or id(kid) in noted):
                    row.children = ()
                continue
            kept = [k for k in children if k.key is not None or k.children or id(k) in noted]
            row.children = (kept[0],) if len(kept) == 1 else kept if kept else ()
        return root

    def _row(self, node_id: int, label: str) -> TreeNode:
        node = TreeNode(label, aliases=self._aliases(node_id) or ())
        if self.graph.is_optimizer(node_id):
            kind = self.kinds.get(self.graph.path(node_id) or "")
            node.note = f"optimizer ({kind})" if kind else "optimizer"
        note = self.graph.note(node_id) if self.everything else ""
        if note:
            node.note = "; ".join(filter(None, [node.note, note]))
            self.noted.add(id(node))
        return node

    def _aliases(self, node_id: int) -> list[str]:
        if node_id in self.placed and self.graph.parent(node_id) is not None:
            path = self.graph.path(node_id)
            return [p for p in [path, *self.graph.aliases(node_id)] if p is not None]
        return self.graph.aliases(node_id)


def _attribute_label(key: str) -> str:
    marker = key.rfind(f"/{ATTRIBUTES}/")
    return key[marker + len(ATTRIBUTES) + 2:] if marker >= 0 else key
