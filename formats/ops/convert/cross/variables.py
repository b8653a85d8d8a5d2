"""The model weights of a Keras-related checkpoint, seen the same way whatever the format.

Each :class:`KerasVar` has the Keras name used for matching (a bundle attribute's ``full_name``, or its
object path where several weights share that full name, as a Keras 3 program's ``tf.train.Checkpoint`` names
every ``Dense`` kernel ``<model>/kernel``,
a Keras 2 weight name without ``:0``, or the Keras 3 reader's ``<layer>/<role>``, all after rename
rules), the top-level layer it belongs to, its position in model order, and whether it is
trainable (where the file says so). Optimizer state, slots and the object graph are not weights.
"""
from __future__ import annotations

import re

from formats.concepts.keras_layers import NON_TRAINABLE
from formats.core.model import Checkpoint, FormatName, TensorEntry
from formats.core.object_keys import VALUE_SUFFIX
from formats.concepts.object_graph import OBJECT_GRAPH_KEY, ObjectGraph
from formats.core.records import record
from formats.ops.convert.conversion_source import is_object_based
from formats.ops.rules import RuleSet

__all__ = ["KerasVar", "keras_variables", "split_name", "order_key"]
_VALUE = VALUE_SUFFIX
_SUFFIX = re.compile(r":\d+$")
_NUM = re.compile(r"^(.*?)(?:_(\d+))?$")
_LAYER = re.compile(r"layer_with_weights-(\d+)")


@record
class KerasVar:
    """One model weight of a source or template checkpoint."""

    key: str                 # the stored key
    original: str            # the Keras name as stored (before rules)
    name: str                # the Keras name after rules (what matching uses)
    layer: str               # the top-level layer or object path owning it
    order: int               # position in model order (or file order)
    entry: TensorEntry
    object_path: str = ""    # bundle: the key without /.ATTRIBUTES/VARIABLE_VALUE
    trainable: bool | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        """The tensor's shape."""
        return tuple(self.entry.shape)

    @property
    def dtype(self) -> str:
        """The tensor's TF dtype name."""
        return str(self.entry.dtype)

    @property
    def kind(self) -> str:
        """The last segment of the name (``kernel``, ``gamma``, ...)."""
        return split_name(self.name)[1]

    @property
    def owner(self) -> str:
        """The name without its last segment (``lstm/lstm_cell``)."""
        return split_name(self.name)[0]


def split_name(name: str) -> tuple[str, str]:
    """``"lstm/lstm_cell/kernel"`` -> ``("lstm/lstm_cell", "kernel")``."""
    owner, _, kind = name.rpartition("/")
    return owner, kind


def order_key(path: str) -> list[tuple[str, int]]:
    """Sort key for Keras 3 object paths: ``dense_2`` before ``dense_10`` (Keras numbers repeats)."""
    out = []
    for part in path.split("/"):
        m = _NUM.match(part)
        out.append((m.group(1), int(m.group(2)) if m and m.group(2) else -1) if m else (part, -1))
    return out


def keras_variables(ckpt: Checkpoint, rules: RuleSet | None = None) -> tuple[list[KerasVar], list[str]]:
    """The model weights of ``ckpt`` in model order, and the keys of everything else."""
    apply = rules.apply if rules else (lambda name: name)
    if is_object_based(ckpt) and ckpt.object_graph is not None:  # a bundle, a SavedModel's variables
        found = _bundle_vars(ckpt, ckpt.object_graph)
    elif ckpt.format in (FormatName.KERAS3_H5, FormatName.KERAS_ZIP):
        found = _keras3_vars(ckpt)
    else:
        found = _plain_vars(ckpt)
    for var in found:
        var.name = apply(var.original)
    taken = {v.key for v in found}
    return found, [k for k in ckpt if k not in taken]


def _plain_vars(ckpt: Checkpoint) -> list[KerasVar]:
    out = []
    for i, key in enumerate(ckpt):
        entry = ckpt[key]
        if entry.role != "variable" or key == OBJECT_GRAPH_KEY:
            continue
        name = _SUFFIX.sub("", str(entry.name or key))
        layer = key.split("/", 1)[0] if ckpt.format == FormatName.KERAS2_H5 else split_name(name)[0]
        out.append(KerasVar(key, name, name, layer, i, entry, trainable=_guess_trainable(name)))
    return out


def _guess_trainable(name: str) -> bool | None:
    return False if split_name(name)[1] in NON_TRAINABLE else None


def _keras3_vars(ckpt: Checkpoint) -> list[KerasVar]:
    keys = [k for k in ckpt if ckpt[k].role == "variable"]
    keys.sort(key=lambda k: (order_key(k.rsplit("/vars/", 1)[0]), int(k.rsplit("/", 1)[1])
                             if k.rsplit("/", 1)[1].isdigit() else 0))
    out = []
    for i, key in enumerate(keys):
        entry = ckpt[key]
        owner = key.rsplit("/vars/", 1)[0] if "/vars/" in key else ""
        name = str(entry.name or key)
        out.append(KerasVar(key, name, name, owner, i, entry, object_path=owner,
                            trainable=_guess_trainable(name)))
    return out


def _bundle_vars(ckpt: Checkpoint, graph: ObjectGraph) -> list[KerasVar]:
    """Variables of a Keras TF-format bundle, in object graph order (children in creation order)."""
    by_node: dict[int, str] = {}
    for node in graph.nodes:
        for attr in node.attributes:
            if attr.name == "VARIABLE_VALUE" and attr.checkpoint_key in ckpt:
                by_node[node.id] = attr.checkpoint_key
    trainable = {ref.original_variable_node_id for n in graph.nodes for ref in n.slot_variables}
    ordered = _graph_order(graph, set(by_node))
    found = []
    for node_id in ordered:
        key = by_node[node_id]
        entry = ckpt[key]
        if entry.role != "variable":
            continue
        path = key[:-len(_VALUE)] if key.endswith(_VALUE) else key
        flag = (node_id in trainable) if trainable else _guess_trainable(str(entry.name))
        found.append((key, entry, path, flag))
    base = _model_root([path for _, _, path, _ in found])
    counts: dict[str, int] = {}
    for _, entry, path, _ in found:
        counts[str(entry.name or path)] = counts.get(str(entry.name or path), 0) + 1
    out = []
    for key, entry, path, flag in found:
        inner = path[len(base):]
        top = inner.split("/", 1)[0] if "/" in inner else ""
        name = str(entry.name or path)
        name = path if counts[name] > 1 else name  # a full name several weights share (Keras 3): the object path
        out.append(KerasVar(key, name, name, top, 0, entry, object_path=path, trainable=flag))
    if base:  # the layers in model order, as the root's own layers are ordered
        out.sort(key=lambda v: _layer_rank(v.layer))
    for i, var in enumerate(out):
        var.order = i
    return out


def _model_root(paths: list[str]) -> str:
    """``"model/"`` when every model weight hangs from one object of the root whose children are the
    layers (``tf.train.Checkpoint(model=...)``: ``model/layer_with_weights-N/...``), else ``""``."""
    heads = {path.split("/", 1)[0] for path in paths}
    if len(heads) != 1 or any(path.count("/") < 2 for path in paths):
        return ""
    if not all(_LAYER.fullmatch(path.split("/")[1]) for path in paths):
        return ""
    return f"{heads.pop()}/"


def _layer_rank(name: str) -> int:
    m = _LAYER.fullmatch(name)
    return int(m.group(1)) if m else -1


def _graph_order(graph: ObjectGraph, wanted: set[int]) -> list[int]:
    """Depth-first from the root, children in stored order; layers ``layer_with_weights-N`` by N."""
    root_children = list(graph.root.children)
    rank = {ref.local_name: i for i, ref in enumerate(root_children)}

    def top_rank(name: str) -> tuple[int, int]:
        m = re.fullmatch(r"layer_with_weights-(\d+)", name)
        return (0, int(m.group(1))) if m else (1, rank[name])

    seen: set[int] = set()
    order: list[int] = []

    def visit(node_id: int) -> None:
        stack = [node_id]
        while stack:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            if current in wanted:
                order.append(current)
            stack.extend(ref.node_id for ref in reversed(graph.nodes[current].children))

    seen.add(0)
    for ref in sorted(root_children, key=lambda r: top_rank(r.local_name)):
        visit(ref.node_id)
    order += [n for n in sorted(wanted) if n not in seen]  # unreachable leftovers, stable
    return order
