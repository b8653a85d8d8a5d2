"""Object-based -> name-based (``ckpt convert --to tf-name``): every variable under its ``full_name``.

Keys become the attributes' ``full_name``s (after rename rules), as a TF1 ``Saver`` over the
same variables would write them. Slot variables become ``<variable name>/<slot>``
(``net/dense/kernel/m``); with ``slot_names="tf1"`` the TF1 optimizer convention of
:mod:`formats.concepts.roles` is used instead (Adam's ``m``/``v`` -> ``<var>/Adam``/``<var>/Adam_1``).
Full names that several variables share (TensorFlow names unnamed variables ``Variable``) and
attributes without a full name (iterators) fall back to the object path (the key without
``/.ATTRIBUTES/VARIABLE_VALUE``; other attributes keep their name after the path) and are
reported. The object graph is not written.

A V1 checkpoint (``tf-v1``) is name-based already: converting it to ``tf-name`` migrates it to a V2
bundle with the same keys (after rename rules), what a TF1 ``Saver`` writing V2 would have saved.
"""
from __future__ import annotations

from formats.core.model import Checkpoint, FormatName
from formats.concepts.object_graph import ATTRIBUTES, OBJECT_GRAPH_KEY, label_keys
from formats.concepts.roles import classify_name, slot_key
from formats.ops.convert.plan import WARNING, ConversionPlan, ConvertOptions
from formats.ops.convert.sources import is_object_based

__all__ = ["plan_tf_name", "object_path_name"]

UNNAMED = "Variable"

# Keras optimizer class names whose slots follow a TF1 optimizer's naming.
TF1_OPTIMIZER = {"SGD": "Momentum", "Adam": "Adam", "Adagrad": "Adagrad", "RMSprop": "RMSProp",
                 "RMSProp": "RMSProp", "Ftrl": "Ftrl", "Adadelta": "Adadelta", "Momentum": "Momentum"}


def object_path_name(key: str) -> str:
    """``net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE`` -> ``net/l1/kernel``; ``it/.ATTRIBUTES/ITERATOR_STATE``
    -> ``it/ITERATOR_STATE``."""
    marker = f"/{ATTRIBUTES}/"
    path, sep, attribute = key.partition(marker)
    if not sep:
        return key
    return path if attribute == "VARIABLE_VALUE" else f"{path}/{attribute}"


def plan_tf_name(source: Checkpoint, options: ConvertOptions) -> ConversionPlan:
    """Plan the conversion of an object-based checkpoint to a name-based one."""
    plan = ConversionPlan(source.path, "tf-name")
    if source.format == FormatName.TF_V1:
        return _plan_migration(source, options, plan)
    if not is_object_based(source) or source.object_graph is None:
        plan.add("unsupported", source.path, "the source is already name-based; use `ckpt rename` to rename keys")
        return plan
    keys = sorted(k for k in source if k != OBJECT_GRAPH_KEY)
    labels = label_keys(source.object_graph, keys)
    names: dict[str, tuple[str, str]] = {}
    for key in keys:
        names[key] = _name(key, labels, options.slot_names)
    counts: dict[str, list[str]] = {}
    for key, (name, _) in names.items():
        counts.setdefault(name, []).append(key)
    for name, holders in counts.items():
        if len(holders) > 1:
            plan.add("duplicate-name", name, f"full name {name!r} is shared by {len(holders)} tensors; "
                     "their object paths are used instead", WARNING, holders)
            for key in holders:
                names[key] = (object_path_name(key), f"object path (full name {name!r} is not unique)")
    for key in keys:
        name, note = names[key]
        new = options.rules.apply(name) if options.rules else name
        if new != name:
            note = "; ".join(n for n in (note, f"renamed from {name}") if n)
        entry = source[key]
        plan.add_row(key, new, entry, entry.shape, entry.dtype, note)
        if note.startswith("object path (no full name"):
            plan.add("fallback", key, f"no full name; written as {new!r}", WARNING)
        elif name == UNNAMED:
            plan.add("fallback", key, f"written as {new!r}, TensorFlow's name for an unnamed variable "
                     f"(object path {object_path_name(key)})", WARNING)
    plan.check_collisions()
    plan.report_unused_rules(options.rules)
    return plan


def _plan_migration(source: Checkpoint, options: ConvertOptions, plan: ConversionPlan) -> ConversionPlan:
    """Every tensor of a name-based source under its own name (after rename rules)."""
    for key in sorted(source):
        entry = source[key]
        new = options.rules.apply(key) if options.rules else key
        plan.add_row(key, new, entry, entry.shape, entry.dtype, f"renamed from {key}" if new != key else "")
    plan.check_collisions()
    plan.report_unused_rules(options.rules)
    return plan


def _name(key: str, labels: dict, slot_names: str) -> tuple[str, str]:
    """The output name of one key and a note."""
    label = labels[key]
    if label.role == "slot" and label.slot_of in labels and label.slot_name:
        var = labels[label.slot_of].name
        if slot_names == "tf1":
            own = classify_name(label.name)
            if own.role == "slot" and own.slot_of == var:
                return label.name, f"slot {label.slot_name} (its full name)"
            kind = TF1_OPTIMIZER.get(_optimizer_kind(label.name))
            try:
                return slot_key(var, kind or "", label.slot_name), f"slot {label.slot_name} (TF1 name)"
            except KeyError:
                return f"{var}/{label.slot_name}", f"slot {label.slot_name} (no TF1 name known)"
        return f"{var}/{label.slot_name}", f"slot {label.slot_name}"
    if label.name == key or not label.name:
        return object_path_name(key), "object path (no full name)"
    return label.name, ""


def _optimizer_kind(full_name: str) -> str:
    """``Adam/net/dense/kernel/m`` -> ``Adam`` (Keras names slots ``<Optimizer>/...``)."""
    return full_name.split("/", 1)[0]
