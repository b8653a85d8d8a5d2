"""Name-based -> object-based, generically: one object per name segment (``ckpt convert --to tf-object``).

``dnn/hiddenlayer_0/kernel`` becomes root -> ``dnn`` -> ``hiddenlayer_0`` -> ``kernel`` with the
attribute ``VARIABLE_VALUE`` whose ``full_name`` is the (renamed) original name, so that a TF1
``Saver`` restores the result by name (``Saver`` falls back to ``full_name`` -> ``checkpoint_key``
for object-based checkpoints) and ``tf.train.Checkpoint`` restores it into objects of the same
structure. An export of an object-based checkpoint (npz, safetensors: every key an object-based one) goes back
under its own keys, its graph rebuilt from them (:mod:`formats.ops.convert.keys_to_object`). Recognised optimizer slots (``<var>/Adam``, ``<var>/Adam_1``, ``<var>/Adagrad``, ...)
become slot variables of an optimizer node (root child ``optimizer``) linked to their variable,
as TensorFlow writes them: ``SlotVariableReference``s on the optimizer node, keys
``<var path>/.OPTIMIZER_SLOT/optimizer/<slot>/.ATTRIBUTES/VARIABLE_VALUE``. TF1 Adam's unscoped
``beta1_power`` / ``beta2_power`` become children of the optimizer node. A ``save_counter`` (int64 1) is written as every
``tf.train.Checkpoint`` writes one, unless a source variable takes the name. Nodes are numbered
breadth-first (children in name order), slot variables last, like TensorFlow's traversal.
With ``--template`` the work is done by :mod:`formats.ops.convert.template` instead.
"""
from __future__ import annotations


from formats.core.gc_pause import gc_paused
from formats.core.model import OBJECT_GRAPH_KEY, Checkpoint, FormatName
from formats.core.names import all_utf8, unused_name
from formats.core.object_keys import split_path
from formats.concepts.roles import OPTIMIZER_SCALARS
from formats.ops.convert.graph_columns import GraphColumns
from formats.ops.convert.plan import WARNING, ConversionPlan, ConvertOptions
from formats.ops.convert.conversion_source import SourceTensor, is_object_based, source_tensors

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from formats.ops.convert.graph_build import GraphBuilder

    Builder = GraphBuilder | GraphColumns

__all__ = ["plan_tf_object", "plan_name_to_object"]

OPTIMIZER_NODE = "optimizer"
SAVE_COUNTER = "save_counter"


def plan_tf_object(source: Checkpoint, options: ConvertOptions) -> ConversionPlan:
    """The ``--to tf-object`` target: onto ``options.template`` if given, else generic."""
    if options.template:
        from formats.ops.convert.template import plan_onto_template

        return plan_onto_template(source, options)
    return plan_name_to_object(source, options)


@gc_paused
def plan_name_to_object(source: Checkpoint, options: ConvertOptions) -> ConversionPlan:
    """Plan the generic conversion of a name-based checkpoint to an object-based one."""
    plan = ConversionPlan(source.path, FormatName.TF_OBJECT.value)
    if is_object_based(source) and source.format != FormatName.TF_OBJECT and OBJECT_GRAPH_KEY in source \
            and not options.rules:
        return _plan_as_is(source, plan)
    if is_object_based(source):
        plan.add("unsupported", source.path, "the source is already object-based; use --template T to map it "
                 "onto another program's objects, or `ckpt rename` to rename its objects")
        return plan
    if not options.rules:
        from formats.ops.convert.keys_to_object import plan_keys_to_object

        rebuilt = plan_keys_to_object(source, plan)
        if rebuilt is not None:
            return rebuilt
    tensors = source_tensors(source, options.rules)
    slots = [t for t in tensors if t.role == "slot"]
    by_name = {t.name: t for t in tensors} if slots else {}  # (a dict a tensor: only for slots' variables)
    optimizers = _optimizer_names(slots, {t.name.split("/", 1)[0] for t in tensors})
    moved = [t for t in tensors if optimizers and _is_optimizer_scalar(t, optimizers)]
    plain = [t for t in tensors if t.role != "slot" and t not in moved]
    bad = [t for t in plain + moved if _bad_name(t.name)]
    for t in bad:
        plan.add("unsupported", t.key, f"name {t.name!r} has an empty segment; it cannot be an object path")
    if bad:
        return plan
    names = [t.name for t in plain] + [f"\0{optimizers[o]}" for o in optimizers]
    counter = SAVE_COUNTER not in {n.split("/", 1)[0] for n in names}
    if counter:
        names.append(f"\0{SAVE_COUNTER}")
    builder: Builder
    if all_utf8(names):
        builder = GraphColumns()
        ends = builder.grow(names)
    else:  # names shown as their safe text (nodes as objects: the object graph's model)
        from formats.ops.convert.graph_build import GraphBuilder

        builder = GraphBuilder()
        tree, leaves = _tree(names)
        placed = builder.grow(tree)
        ends = [placed[id(leaf)] for leaf in leaves]
        del tree, leaves, placed  # a dict per object: not kept while the rest is planned and written
    del names, ends[len(plain):]
    opt_nodes = {o: builder.object([n]) for o, n in optimizers.items()}
    for t, node in zip(plain, ends):
        key = builder.variable(node, t.name)
        _note_children(plan, builder, node, t)
        plan.add_row(t.key, key, t.entry, t.entry.shape, t.entry.dtype, _note(t))
    nodes = dict(zip((t.name for t in plain), ends)) if slots else {}  # (a variable's node, for its slots)
    del ends
    for t in moved:
        node = builder.child(opt_nodes[t.optimizer or ""], t.name)
        key = builder.variable(node, t.name)
        plan.add_row(t.key, key, t.entry, t.entry.shape, t.entry.dtype, f"{t.optimizer} state")
    for t in _slot_order(slots):
        var = by_name.get(t.slot_of or "")
        if var is None or t.slot_of not in nodes:  # pragma: no cover - classify_names requires the variable
            continue
        key = builder.slot(opt_nodes[t.optimizer or ""], nodes[t.slot_of], t.slot_name or "", t.name)
        plan.add_row(t.key, key, t.entry, t.entry.shape, t.entry.dtype, f"slot {t.slot_name} of {t.slot_of}")
    _warn_partitioned(plan, plain + moved + slots)
    del tensors, plain, moved, slots, by_name, nodes  # (an object a tensor: not held while the graph is encoded)
    _save_counter(plan, builder, counter)
    plan.object_graph = builder.encode()
    del builder  # (its columns: not held while the keys are checked)
    for name in optimizers.values():
        if name != OPTIMIZER_NODE:
            plan.add("fallback", name, f"optimizer node named {name!r}", WARNING)
    plan.check_collisions()
    plan.report_unused_rules(options.rules)
    return plan


def _save_counter(plan: ConversionPlan, builder: Builder, free: bool) -> None:
    """The ``save_counter`` every ``tf.train.Checkpoint`` writes (int64, 1: saved once), so that the guide's
    ``ckpt.restore(path).assert_existing_objects_matched()`` passes on the output (``restore`` creates the
    counter, and an object with no value in the checkpoint fails it); a warning instead when a source
    variable already takes the name. The value is its canonical bytes: planning a conversion imports no numpy."""
    from formats.core.sources import TensorValue

    if not free:
        plan.add("save_counter", SAVE_COUNTER, f"no save_counter written: a source variable is named under "
                 f"{SAVE_COUNTER!r}; tf.train.Checkpoint's assert_existing_objects_matched() will fail on its "
                 "counter", WARNING)
        return
    node = builder.find(SAVE_COUNTER)
    assert node is not None
    key = builder.variable(node, SAVE_COUNTER)
    plan.add_row(None, key, TensorValue((1).to_bytes(8, "little"), "int64"), (), "int64", "tf.train.Checkpoint's save_counter (1)")


def _warn_partitioned(plan: ConversionPlan, tensors: list[SourceTensor]) -> None:
    """A warning for every partitioned variable joined into one tensor (TF1 ``Saver`` cannot restore it
    into its partitions from an object-based checkpoint without silently losing a slice)."""
    for t in tensors:
        if t.entry.partitions > 1:
            plan.add("partitioned", t.key, f"{t.name!r} is stored in {t.entry.partitions} slices and is written "
                     "whole; tf.train.Checkpoint restores it, but a TF1 Saver restoring this object-based output "
                     "into the partitioned variable silently leaves slices at their initial values (a TensorFlow "
                     "limitation): restore the name-based source, or convert back with --to tf-name", WARNING)


def _optimizer_names(slots: list[SourceTensor], taken: set[str]) -> dict[str, str]:
    """Optimizer kind (``Adam``) -> the root child holding it (``optimizer``, or one per kind)."""
    kinds = sorted({t.optimizer or "" for t in slots})
    out = {}
    for kind in kinds:
        out[kind] = unused_name(OPTIMIZER_NODE if len(kinds) == 1 else f"{OPTIMIZER_NODE}_{kind}", taken)
    return out


def _plan_as_is(source: Checkpoint, plan: ConversionPlan) -> ConversionPlan:
    """An object-based checkpoint of another format (a SavedModel's variables) written as a bundle as it
    is: the same keys, and its own object graph (whose checkpoint keys are those keys)."""
    for key in sorted(k for k in source if k != OBJECT_GRAPH_KEY):
        entry = source[key]
        plan.add_row(key, key, entry, entry.shape, entry.dtype)
    graph = source[OBJECT_GRAPH_KEY]
    if graph.dtype != "string" or graph.shape != ():
        plan.add("graph", OBJECT_GRAPH_KEY, f"{OBJECT_GRAPH_KEY} is not a scalar string")
        return plan
    plan.object_graph = bytes(graph.read().reshape(-1)[0])
    return plan


def _is_optimizer_scalar(t: SourceTensor, optimizers: dict[str, str]) -> bool:
    return "/" not in t.name and OPTIMIZER_SCALARS.get(t.name) in optimizers


def _bad_name(name: str) -> bool:
    """Whether ``name`` has an empty segment (between two slashes, or at either end)."""
    return not name or name[0] == "/" or name[-1] == "/" or "//" in name


def _tree(names: list[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Nested dicts of name segments (names starting with NUL are single root children), and each name's own."""
    root: dict[str, Any] = {}
    ends = []
    for name in names:
        node = root
        for segment in [name[1:]] if name.startswith("\0") else name.split("/"):
            node = node.setdefault(segment, {})
        ends.append(node)
    return root, ends


def _slot_order(slots: list[SourceTensor]) -> list[SourceTensor]:
    """Slots by optimizer, then slot name in table order (m before v), then variable name."""
    return sorted(slots, key=lambda t: (t.optimizer or "", t.name.rsplit("/", 1)[-1], t.slot_of or ""))


def _note(t: SourceTensor) -> str:
    notes = [] if t.name == t.original else [f"renamed from {t.original}"]
    if t.role == "optimizer":
        notes.append("optimizer state")
    return "; ".join(notes)


def _note_children(plan: ConversionPlan, builder: Builder, node: int, t: SourceTensor) -> None:
    if builder.has_children(node):
        names = ", ".join(split_path(builder.path(c))[-1] for c in builder.child_ids(node))
        plan.add("fallback", t.key, f"variable {t.name!r} is also a scope (children: {names})", WARNING)
