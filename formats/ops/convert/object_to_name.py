"""Object-based -> name-based (``ckpt convert --to tf-name``): every variable under its ``full_name``.

Keys become the attributes' ``full_name``s (after rename rules), as a TF1 ``Saver`` over the
same variables would write them. Slot variables become ``<variable name>/<slot>``
(``net/dense/kernel/m``); with ``slot_names="tf1"`` the state of a recognised Keras optimizer becomes
what TF1's optimizer keeps, by meaning (:mod:`formats.concepts.optimizers`): slots under TF1's names
(Adam's ``m``/``v`` -> ``<var>/Adam``/``<var>/Adam_1``, Adadelta's ``accum_grad`` -> ``<var>/Adadelta``),
values transformed where the meanings differ (SGD's momentum ``/ (-lr)``), plus ``beta1_power``/
``beta2_power`` from the step count and ``global_step`` from ``iterations``.
Full names that several variables share (TensorFlow names unnamed variables ``Variable``) and
attributes without a full name (iterators) fall back to the object path (the key without
``/.ATTRIBUTES/VARIABLE_VALUE``; other attributes keep their name after the path) and are
reported. The object graph is not written.

A V1 checkpoint (``tf-v1``) is name-based already: converting it to ``tf-name`` migrates it to a V2
bundle with the same keys (after rename rules), what a TF1 ``Saver`` writing V2 would have saved.
"""
from __future__ import annotations

from _bisect import bisect_left  # bisect's C half, without its module (start-up)

from formats.core.gc_pause import gc_paused
from formats.core.model import Checkpoint, FormatName
from formats.core.names import repeated
from formats.concepts.object_graph import ATTRIBUTES, OBJECT_GRAPH_KEY, label_keys
from formats.concepts.optimizers import TF1, Family, family_of_class
from formats.concepts.roles import classify_name, slot_key
from formats.core.records import field, record
from formats.ops.convert.optimizer_moves import Moved, OptimizerMove
from formats.ops.convert.optimizer_rows import OPTIMIZER_PROBLEM
from formats.ops.convert.optimizer_state import OptimizerState, read_optimizer_state
from formats.ops.convert.plan import WARNING, ConversionPlan, ConvertOptions
from formats.ops.convert.conversion_source import is_object_based, source_tensors

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from formats.concepts.object_graph import KeyLabels

__all__ = ["plan_tf_name", "object_path_name"]

UNNAMED = "Variable"



def object_path_name(key: str) -> str:
    """``net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE`` -> ``net/l1/kernel``; ``it/.ATTRIBUTES/ITERATOR_STATE``
    -> ``it/ITERATOR_STATE``."""
    marker = f"/{ATTRIBUTES}/"
    path, sep, attribute = key.partition(marker)
    if not sep:
        return key
    return path if attribute == "VARIABLE_VALUE" else f"{path}/{attribute}"


@gc_paused
def plan_tf_name(source: Checkpoint, options: ConvertOptions) -> ConversionPlan:
    """Plan the conversion of an object-based checkpoint to a name-based one."""
    plan = ConversionPlan(source.path, FormatName.TF_NAME.value)
    if source.format == FormatName.TF_V1:
        return _plan_migration(source, options, plan)
    if not is_object_based(source) or source.object_graph is None:
        plan.add("unsupported", source.path, "the source is already name-based; use `ckpt rename` to rename keys")
        return plan
    keys = sorted(k for k in source if k != OBJECT_GRAPH_KEY)
    labels = label_keys(source.object_graph, keys)
    names: list[str] = []  # each key's output name, by position (a dict of pairs was 120 bytes a key)
    notes: dict[int, str] = {}  # ... and its note, where it has one
    for i, key in enumerate(keys):
        name, note = _name(key, labels, options.slot_names)
        names.append(name)
        if note:
            notes[i] = note
    moved = _tf1_state(plan, source, options) if options.slot_names == "tf1" else Tf1State()
    for key, (name, note, _, _) in moved.slots.items():
        i = bisect_left(keys, key)
        if i < len(keys) and keys[i] == key:  # (a source tensor's: always)
            names[i], notes[i] = name, note
    for name, holders in _shared(names).items():
        plan.add("duplicate-name", name, f"full name {name!r} is shared by {len(holders)} tensors; "
                 "their object paths are used instead", WARNING, [keys[i] for i in holders])
        for i in holders:
            names[i], notes[i] = object_path_name(keys[i]), f"object path (full name {name!r} is not unique)"
    # every name is known: the graph and its labels go before a row per key is made (at 10^6 keys, the peak 180 MB
    # lower); decoded again if anything asks
    del labels
    source.forget_object_graph()
    for i, key in enumerate(keys):
        name, note = names[i], notes.get(i, "")
        new = options.rules.apply(name) if options.rules else name
        if new != name:
            note = "; ".join(n for n in (note, f"renamed from {name}") if n)
        entry = source[key]
        value, transform = moved.slots[key][2:] if key in moved.slots else (entry, "")
        if value is not None:
            plan.add_row(key, new, value, entry.shape, entry.dtype, note, transform=transform)
        if note.startswith("object path (no full name"):
            plan.add("fallback", key, f"no full name; written as {new!r}", WARNING)
        elif name == UNNAMED:
            plan.add("fallback", key, f"written as {new!r}, TensorFlow's name for an unnamed variable "
                     f"(object path {object_path_name(key)})", WARNING)
    for name, moved_value in moved.extra.items():
        if any(row.key == name for row in plan.rows):
            continue
        plan.add_row(moved_value.source, name, moved_value.value, _shape(moved_value.value), _dtype(moved_value.value),
                     "TF1 optimizer state", transform=moved_value.transform)
    plan.check_collisions()
    plan.report_unused_rules(options.rules)
    return plan


def _shared(names: list[str]) -> dict[str, list[int]]:
    """Each name that several of ``names`` are -> their positions, in the order the names first come."""
    twice = repeated(names)
    holders: dict[str, list[int]] = {}
    if twice:
        for i, name in enumerate(names):
            if name in twice:
                holders.setdefault(name, []).append(i)
    return holders


def _plan_migration(source: Checkpoint, options: ConvertOptions, plan: ConversionPlan) -> ConversionPlan:
    """Every tensor of a name-based source under its own name (after rename rules)."""
    for key in sorted(source):
        entry = source[key]
        new = options.rules.apply(key) if options.rules else key
        plan.add_row(key, new, entry, entry.shape, entry.dtype, f"renamed from {key}" if new != key else "")
    plan.check_collisions()
    plan.report_unused_rules(options.rules)
    return plan


@record
class Tf1State:
    """TF1 names and values for a Keras optimizer's state: ``slots`` key -> (name, note, value, transform)
    (value None: not written), ``extra`` rows TF1 needs that Keras does not keep (``beta1_power``,
    ``global_step``, zeros for RMSProp's momentum)."""

    slots: dict[str, tuple[str, str, Any, str]] = field(default_factory=dict)
    extra: dict[str, Moved] = field(default_factory=dict)


def _tf1_state(plan: ConversionPlan, source: Checkpoint, options: ConvertOptions) -> Tf1State:
    """Keras optimizer state under TF1's names and meanings (see :mod:`formats.concepts.optimizers`)."""
    out = Tf1State()
    state = read_optimizer_state(source, source_tensors(source, None))
    if not state.known or state.framework == TF1 or state.family is None:
        return out
    fam = state.family
    cls = fam.class_name(TF1)
    move = OptimizerMove(state, TF1, fam, options.hparams)
    if cls is None or move.error is not None:
        plan.add(OPTIMIZER_PROBLEM, state.optimizer or fam.title, f"{move.describe()}: {move.error or 'no TF1 class'}")
        return out
    centered = "centered" in state.settings()
    dtype = "float32"
    for (variable, meaning), found in sorted(state.slots.items()):
        dtype = found.tensor.entry.dtype
        slot = fam.slot(meaning)
        tf1_name = slot.name(TF1)
        if tf1_name is None:
            plan.add(OPTIMIZER_PROBLEM, found.key, f"slot {found.name} of {variable}: TF1's {cls} has no such slot "
                     f"({slot.when or meaning}); no TF1 program can continue it")
            continue
        value = move.slot(variable, meaning)
        if isinstance(value, str) or value is None:
            plan.add(OPTIMIZER_PROBLEM, found.key, value or f"slot {found.name} of {variable}: no value")
            continue
        key = slot_key(variable, cls, tf1_name, centered)
        out.slots[found.key] = (key, f"slot {tf1_name} of {variable} (TF1 name)", value.value, value.transform)
    _tf1_extra(plan, state, move, fam, out, dtype, centered)
    return out


def _tf1_extra(plan: ConversionPlan, state: OptimizerState, move: OptimizerMove, fam: Family, out: Tf1State,
               dtype: str, centered: bool) -> None:
    """Zeros for slots TF1 always has, the power accumulators and ``global_step``."""
    cls = fam.class_name(TF1) or ""
    variables = sorted({variable for variable, _ in state.slots})
    for slot in fam.slots:
        if TF1 not in slot.always or any(meaning == slot.meaning for _, meaning in state.slots):
            continue
        for variable in variables:
            shape = tuple(state.slots[next(k for k in state.slots if k[0] == variable)].tensor.entry.shape)
            key = slot_key(variable, cls, slot.name(TF1) or "", centered)
            zeros = move.zeros(variable, slot.meaning, key, shape, dtype)
            if zeros is not None:
                out.extra[key] = zeros
    for power, _ in fam.powers:
        found = move.power(power, dtype)
        if isinstance(found, str):
            plan.add(OPTIMIZER_PROBLEM, power, found)
        else:
            out.extra[power] = found
    counter = move.counter("int64")
    if isinstance(counter, str):
        plan.add(OPTIMIZER_PROBLEM, "global_step", counter, WARNING)
    else:
        out.extra["global_step"] = counter


def _shape(value: Any) -> tuple[int, ...]:
    from formats.core.sources import describe

    return describe(value)[1]


def _dtype(value: Any) -> str:
    from formats.core.sources import describe

    return describe(value)[0].name


def _name(key: str, labels: KeyLabels, slot_names: str) -> tuple[str, str]:
    """The output name of one key and a note."""
    facts = labels.facts(key)  # (a model variable's: one label shared, none made)
    if facts is None:
        raise KeyError(key)
    if facts.role != "slot":
        name = labels.name_of(key)
        return (object_path_name(key), "object path (no full name)") if name == key or not name else (name, "")
    label = labels[key]
    if label.slot_of is not None and label.slot_of in labels and label.slot_name:
        var = labels.name_of(label.slot_of)
        if slot_names == "tf1":
            own = classify_name(label.name)
            if own.role == "slot" and own.slot_of == var:
                return label.name, f"slot {label.slot_name} (its full name)"
            fam = family_of_class(_optimizer_kind(label.name))
            kind = fam.class_name(TF1) if fam is not None else None
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
