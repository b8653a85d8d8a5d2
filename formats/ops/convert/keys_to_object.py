"""An export of an object-based checkpoint back to one: the object graph it carries, or one rebuilt from its keys.

An export written with every tensor under its own key carries the source's serialized object graph
(:data:`~formats.core.provenance.OBJECT_GRAPH_MEMBER` in an npz, ``__metadata__["ckpt.object_graph"]`` in a
safetensors file); ``ckpt convert EXPORT --to tf-object`` writes the tensors under their keys with that graph
again, where its checkpoint keys are exactly the file's: what TensorFlow restores from it is what it restores
from the source. Where there is none (renamed keys, a tensor left out, a file from before it was carried) the
graph is rebuilt from the keys:

``ckpt convert --to npz|safetensors`` of an object-based checkpoint keeps every tensor under its key
(``model/layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE``) and leaves the object graph out (it is not a
tensor). A key is the path TensorFlow chose for its value: escaped local names from the root, ``.ATTRIBUTES`` and
the attribute; a slot variable's is its variable's path, ``.OPTIMIZER_SLOT``, its optimizer's path and the slot's
name. ``ckpt convert EXPORT --to tf-object`` (no ``--template``, no rename rules) therefore rebuilds a graph with
an object at each key's path, the attribute the key names (its full name the record's), and each slot variable
as a ``SlotVariableReference`` on its optimizer (TensorFlow's own layout), so the output's keys are the source's
and ``tf.train.Checkpoint`` restores it into the objects those keys name.

What the keys cannot say is a second path to an object: TensorFlow keys a value by the first path it finds, and
a Keras 3 model's variables, reached through ``optimizer/_trainable_variables/<i>`` first, are also its layers'
(``model/_functional/...``). Those paths are not in the export; a warning says so and names ``--template``, which
maps the tensors onto a checkpoint of the program with its whole graph.
"""
from __future__ import annotations

from formats.core.model import OBJECT_GRAPH_KEY, Checkpoint
from formats.core.names import all_utf8
from formats.core.object_keys import ATTRIBUTES, OPTIMIZER_SLOT, VARIABLE_VALUE, split_path, unescape_local_name
from formats.core.provenance import GRAPH_CARRIERS
from formats.ops.convert.plan import WARNING, ConversionPlan

TYPE_CHECKING = False
if TYPE_CHECKING:
    from formats.core.model import TensorEntry

__all__ = ["ObjectKey", "parse_object_key", "plan_keys_to_object"]

ObjectKey = tuple[str, str, str, str]
"""A parsed key: (object path, attribute, and for a slot variable its optimizer's path and slot name, else "")."""

_MARK = f"/{ATTRIBUTES}/"


def parse_object_key(key: str) -> ObjectKey | None:
    """``(path, attribute, optimizer path, slot name)`` of an object-based checkpoint's ``key``, unescaped where
    TensorFlow escapes (the attribute, the slot's name); None where ``key`` is not one: no ``/.ATTRIBUTES/<name>``
    ending, an empty segment, an escape TensorFlow does not write, more than one ``.OPTIMIZER_SLOT``, a slot of
    an attribute other than a variable's value. The path of a slot variable is its variable's."""
    head, mark, attribute = key.rpartition(_MARK)
    if not mark or not head or not attribute or "/" in attribute:
        return None
    segments = head.split("/")
    if "" in segments or ATTRIBUTES in segments:
        return None
    try:
        attribute = unescape_local_name(attribute)
        for segment in segments:
            if segment != OPTIMIZER_SLOT:
                unescape_local_name(segment)
    except ValueError:
        return None
    slots = segments.count(OPTIMIZER_SLOT)
    if not slots:
        return head, attribute, "", ""
    at = segments.index(OPTIMIZER_SLOT)
    if slots > 1 or at == 0 or len(segments) - at < 3 or attribute != VARIABLE_VALUE:
        return None
    return "/".join(segments[:at]), attribute, "/".join(segments[at + 1:-1]), unescape_local_name(segments[-1])


def plan_keys_to_object(source: Checkpoint, plan: ConversionPlan) -> ConversionPlan | None:
    """``plan`` with the tensors of ``source`` (an export that may carry a graph, :data:`~formats.core.provenance.GRAPH_CARRIERS`) under their own keys and the object
    graph they name; None (nothing planned) where ``source`` is no export or a key is not an object-based one
    (:func:`parse_object_key`) or one the graph would not make again (not valid UTF-8, a control character): the
    caller plans by names then."""
    if source.format not in GRAPH_CARRIERS:
        return None
    keys = sorted(source)
    if not keys:
        return None
    why = _carried(source, keys, plan)
    if not why:
        return plan
    if why is not _NONE:
        plan.add("graph", OBJECT_GRAPH_KEY, f"the object graph the export carries is not written: {why}", WARNING)
    parsed = list(map(parse_object_key, keys))
    if None in parsed or not all_utf8(keys):
        return None
    from formats.ops.convert.graph_columns import GraphColumns

    entries = source.entries_of(keys)
    builder = GraphColumns()
    plain = [i for i, p in enumerate(parsed) if not p[2]]  # type: ignore[index]
    paths = [parsed[i][0] for i in plain]  # type: ignore[index]
    if any("." in p or "\0" in p for p in paths):  # (escaped segments: grow() takes unescaped names split on /)
        nodes = [builder.object(split_path(p)) for p in paths]
    else:
        nodes = builder.grow(paths)
    made: dict[int, str] = {}
    for i, node in zip(plain, nodes):
        made[i] = builder.variable(node, _full_name(keys[i], entries[i]), parsed[i][1])  # type: ignore[index]
    for i, p in enumerate(parsed):
        path, _, optimizer, slot_name = p  # type: ignore[misc]
        if optimizer:
            made[i] = builder.slot(builder.object(split_path(optimizer)), builder.object(split_path(path)), slot_name,
                                   _full_name(keys[i], entries[i]))
    if any(made[i] != key for i, key in enumerate(keys)):  # (a name the graph shows as its safe text)
        return None
    for i, key in enumerate(keys):
        entry = entries[i]
        plan.add_row(key, key, entry, entry.shape, entry.dtype, "slot variable" if parsed[i][2] else "")  # type: ignore[index]
    plan.object_graph = builder.encode()
    others = [key for key, p in zip(keys, parsed) if p[1] != VARIABLE_VALUE]  # type: ignore[index]
    if others:
        plan.add("graph", others[0], f"{len(others):,} attributes other than a variable's value (first {others[0]!r}) "
                 "named as their keys say: an object that saves its state as one attribute of several tensors (a "
                 "dataset iterator's ITERATOR) does not find it under that name", WARNING)
    plan.add("graph", OBJECT_GRAPH_KEY, "not in the export: rebuilt from the keys, each object at the path TensorFlow keyed "
             "its value by; other paths to an object (a Keras 3 model's own and its optimizer's slot lists, beside "
             "the optimizer's _trainable_variables and _variables) are not there: a tf.train.Checkpoint of only such "
             "objects, or a restore before the optimizer is built, does not restore those variables from it; "
             "--template <a checkpoint of the program> maps the tensors onto its whole graph", WARNING)
    return plan


_NONE = "no object graph carried"


def _carried(source: Checkpoint, keys: list[str], plan: ConversionPlan) -> str:
    """Plan ``keys`` as they are with the object graph ``source`` carries, and return "", where it carries one whose
    checkpoint keys are exactly ``keys``; else why not (:data:`_NONE`: it carries none), nothing planned."""
    from formats.concepts.object_graph_codec import decode_object_graph
    from formats.core.errors import CorruptCheckpointError

    try:
        data = source.carried_object_graph()
        if data is None:
            return _NONE
        graph = decode_object_graph(data, source.path)
    except CorruptCheckpointError as exc:
        return exc.message
    found, attributes = graph.key_attributes(keys)  # (a key may extend its attribute's: ".../ITERATOR_STATE")
    if len(found) != len(keys):
        first = next(k for k, at in zip(keys, found.at) if at < 0)
        return f"it does not name {len(keys) - len(found):,} of the file's keys (first {first!r})"
    hit = set(found.at)
    if len(hit) != len(attributes):
        named = graph.table.attr_keys()
        unstored = [named[i] for i in range(len(named)) if i not in hit]
        return f"it names {len(unstored):,} keys the file does not hold (first {unstored[0]!r})"
    del graph, found, attributes
    for key, entry in zip(keys, source.entries_of(keys)):
        plan.add_row(key, key, entry, entry.shape, entry.dtype)
    plan.object_graph = bytes(data)
    return ""


def _full_name(key: str, entry: TensorEntry) -> str:
    """The attribute's full name: the record's (a reader gives the key where it has none: then none)."""
    name = entry.name
    return "" if not name or name == key else str(name)

