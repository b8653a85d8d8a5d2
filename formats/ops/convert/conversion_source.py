"""The source side of a conversion: every tensor with its (renamed) TF1-style name and role.

A name-based checkpoint's names are its keys, classified by :func:`formats.concepts.roles.classify_names`
(``<var>/Adam`` is slot ``m`` of ``<var>``); a Keras file's entries say their roles themselves. An object-based checkpoint's names are the
attributes' ``full_name``s (the object path for model variables that share one, as Keras 3's do), and slots come from its object graph (:func:`formats.concepts.object_graph.label_keys`).
Rename rules are applied to names (for slots, to the slot's own name; the variable it belongs to
is looked up among the renamed names).
"""
from __future__ import annotations


from formats.core.records import record
from formats.core.model import OBJECT_GRAPH_KEY, Checkpoint, FormatName, TensorEntry, is_object_based
from formats.core.object_keys import VARIABLE_VALUE, object_path
from formats.ops.rules import RuleSet

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from formats.concepts.object_graph import EntryLabel

__all__ = ["SourceTensor", "source_tensors", "is_object_based", "LABELLED_FORMATS", "shared_variable_names"]

LABELLED_FORMATS = (FormatName.KERAS2_H5, FormatName.KERAS2_MODEL_H5, FormatName.KERAS3_H5, FormatName.KERAS_ZIP,
                    FormatName.KERAS3_DIR, FormatName.KERAS3_SHARDED)
"""Formats whose entries carry their own roles (Keras files): their names are not TF1 names."""


@record(slots=True)  # one per tensor
class SourceTensor:
    """A source tensor: its ``key``, original ``original`` name, renamed ``name``, ``role``, and for a
    slot the renamed name of its variable (``slot_of``), ``optimizer`` and ``slot_name``."""

    key: str
    original: str
    name: str
    role: str
    entry: TensorEntry
    slot_of: str | None = None
    optimizer: str | None = None
    slot_name: str | None = None


def source_tensors(ckpt: Checkpoint, rules: RuleSet | None) -> list[SourceTensor]:
    """Every tensor of ``ckpt`` except the object graph, in key order, with renamed names and roles."""
    keys = sorted(k for k in ckpt if k != OBJECT_GRAPH_KEY)
    apply = rules.apply if rules else (lambda name: name)
    if is_object_based(ckpt) and ckpt.object_graph is not None:
        return _object_based(ckpt, keys, apply)
    entries = ckpt.entries_of(keys)  # each entry asked for once
    names = [str(e.name or k) for k, e in zip(keys, entries)]
    renamed = {k: apply(name) for k, name in zip(keys, names)}
    if ckpt.format in LABELLED_FORMATS:
        return [SourceTensor(k, name, renamed[k], str(e.role), e, _renamed(e.slot_of, renamed), e.optimizer,
                             e.slot_name) for k, name, e in zip(keys, names, entries)]
    from formats.concepts.roles import classify_names  # the naming conventions, on first use

    roles = classify_names(renamed.values())
    texts: dict[object, str] = {}  # role -> its text: a few roles among all the tensors
    out = []
    for key, name, entry in zip(keys, names, entries):
        new = renamed[key]
        role = roles[new]
        text = texts.get(role.role)
        if text is None:
            text = texts[role.role] = str(role.role)
        out.append(SourceTensor(key, name, new, text, entry, role.slot_of, role.optimizer, role.slot_name))
    return out


def _renamed(key: str | None, renamed: dict[str, str]) -> str | None:
    return renamed.get(key, key) if key is not None else None


def shared_variable_names(labels: Mapping[str, EntryLabel]) -> set[str]:
    """The full names several model variables of an object-based checkpoint share (Keras 3 names every
    ``Dense`` kernel of a model ``<model>/kernel``): such variables are known by their object path
    (``net/l1/_kernel``) instead, the one thing that tells them apart."""
    seen: dict[str, int] = {}
    for label in labels.values():
        if label.role == "variable" and label.attribute == VARIABLE_VALUE:
            seen[label.name] = seen.get(label.name, 0) + 1
    return {name for name, n in seen.items() if n > 1}


def _object_based(ckpt: Checkpoint, keys: list[str], apply: object) -> list[SourceTensor]:
    from formats.concepts.object_graph import label_keys

    labels = label_keys(ckpt.object_graph, keys)
    shared = shared_variable_names(labels)
    renamed = {k: apply(object_path(k) if labels[k].name in shared else labels[k].name)  # type: ignore[operator]
               for k in keys}
    out = []
    for key in keys:
        label = labels[key]
        slot_of = renamed.get(label.slot_of) if label.slot_of else None
        out.append(SourceTensor(key, label.name, renamed[key], label.role, ckpt[key], slot_of,
                                label.optimizer, label.slot_name))
    return out
