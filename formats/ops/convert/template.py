"""Name -> object onto a template (``ckpt convert --to tf-object --template T``).

The template is an object-based checkpoint written by the new program (``model.save_weights``
once). The output has the template's object graph and keys; each template variable takes its
value from the source tensor whose name, after the rename rules, equals the variable's
``full_name``. Optimizer slots follow their variables, by meaning: template slot ``m`` of the
variable named ``dense/kernel`` takes the source slot meaning the same of the source variable
renamed to ``dense/kernel`` (``dnn/hiddenlayer_0/kernel/Adam`` with ``--map dnn/hiddenlayer_0=dense``),
transformed where the frameworks disagree (TF1 Momentum's accumulator ``x (-lr)``); the template's
step counter comes from the source's (``global_step``, ``iterations``, TF1's ``beta1_power``), its
hyperparameters from the source or its own (:mod:`formats.ops.convert.optimizer_rows`). Every problem is
collected before anything is written: template variables with no source (errors, unless
``allow_missing`` keeps the template's value), shape and dtype mismatches (with the nearest
candidates: source tensors of the wanted shape and dtype, closest names first), source tensors
left unused and rules that matched nothing (warnings).
"""
from __future__ import annotations

import difflib
from collections.abc import Mapping

from formats.discover.resolve import open_checkpoint
from formats.core.errors import UnsupportedError
from formats.core.model import Checkpoint, FormatName, natural_key
from formats.concepts.object_graph import OBJECT_GRAPH_KEY, EntryLabel, label_keys
from formats.core.model import shape_text
from formats.concepts.optimizers import KERAS3
from formats.ops.convert.cross.optimizer import keras3_like
from formats.ops.convert.optimizer_moves import OptimizerMove
from formats.ops.convert.optimizer_rows import TargetState, fill_optimizer_state
from formats.ops.convert.optimizer_state import read_optimizer_state
from formats.ops.convert.plan import WARNING, ConversionPlan, ConvertOptions
from formats.ops.convert.conversion_source import SourceTensor, source_tensors

__all__ = ["plan_onto_template", "nearest_candidates"]

KEPT_ROLES = ("save_counter", "iterator", "other")


def plan_onto_template(source: Checkpoint, options: ConvertOptions) -> ConversionPlan:
    """Plan writing ``source``'s values under the template's object graph and keys."""
    assert options.template is not None
    template = open_checkpoint(options.template)
    plan = ConversionPlan(source.path, FormatName.TF_OBJECT.value, template=template.path, resources=[template])
    graph = template.object_graph
    if graph is None or OBJECT_GRAPH_KEY not in template:
        plan.close()
        raise UnsupportedError(template.path, "the template is not an object-based checkpoint (no object graph); "
                               "write one with the new program, e.g. model.save_weights(prefix)")
    tensors = source_tensors(source, options.rules)
    by_name = {t.name: t for t in tensors if t.role != "slot"}
    by_slot = {(t.slot_of, t.slot_name): t for t in tensors if t.role == "slot"}
    keys = sorted(k for k in template if k != OBJECT_GRAPH_KEY)
    labels = label_keys(graph, keys)
    used, states = _optimizer_state(plan, source, tensors, template, options)
    missing: list[tuple[str, EntryLabel]] = []
    for key in keys:
        label = labels[key]
        if key in states:
            continue
        match = _match(label, labels, by_name, by_slot)
        if match is None:
            missing.append((key, label))
            continue
        if match.key in used:
            plan.add("duplicate-name", match.key, f"source {match.key!r} is used for more than one template "
                     f"variable (also {key!r})", WARNING)
        used.add(match.key)
        if _check(plan, template, key, label, match, tensors):
            note = f"{match.original} -> {label.name}" if match.original != match.name else ""
            plan.add_row(match.key, key, match.entry, match.entry.shape, match.entry.dtype, note)
    unused = [t for t in tensors if t.key not in used]
    for key, label in missing:
        _missing(plan, template, key, label, _wanted(label, labels), unused, options.allow_missing)
    plan.rows.sort(key=lambda row: natural_key(row.key))
    graph_entry = template[OBJECT_GRAPH_KEY]
    plan.add_row(None, OBJECT_GRAPH_KEY, graph_entry, graph_entry.shape, graph_entry.dtype, "template object graph")
    for t in unused:
        plan.add("unused", t.key, f"not used ({_where(t)})", WARNING)
    plan.report_unused_rules(options.rules)
    return plan


def _optimizer_state(plan: ConversionPlan, source: Checkpoint, tensors: list[SourceTensor], template: Checkpoint,
                     options: ConvertOptions) -> tuple[set[str], set[str]]:
    """Fill the template's optimizer state by meaning (when both sides' optimizers are recognised);
    returns the source keys used and the template keys filled or reported."""
    src = read_optimizer_state(source, tensors)
    dst = read_optimizer_state(template, source_tensors(template, None))
    if src.framework == KERAS3 and not src.slots and dst.known and dst.slots:
        src = keras3_like(plan, source, dst, options.rules, source.path)
    if not (src.known and dst.known) or (not src.slots and not dst.slots):
        return set(), set()
    move = OptimizerMove(src, dst.framework or "", dst.family, options.hparams, dst)
    names = {t.name for t in tensors if t.role != "slot"}
    targets = [TargetState(s.key, template[s.key], s) for s in sorted(dst.by_key().values(), key=lambda s: s.key)
               if s.kind == "slot" or s.tensor.name not in names]  # scalars of the same name are copied by name
    used = fill_optimizer_state(plan, move, targets, options.allow_missing)
    return used, {t.key for t in targets}


def _match(label: EntryLabel, labels: Mapping[str, EntryLabel], by_name: dict[str, SourceTensor],
           by_slot: dict[tuple[str | None, str | None], SourceTensor]) -> SourceTensor | None:
    if label.role == "slot":
        var = labels.get(label.slot_of or "")
        if var is not None:
            hit = by_slot.get((var.name, label.slot_name))
            if hit is not None:
                return hit
    if label.role in KEPT_ROLES and label.name not in by_name:
        return None
    return by_name.get(label.name)


def _missing(plan: ConversionPlan, template: Checkpoint, key: str, label: EntryLabel, wanted: str,
             tensors: list[SourceTensor], allow_missing: bool) -> None:
    entry = template[key]
    if label.role in KEPT_ROLES:
        plan.add_row(None, key, entry, entry.shape, entry.dtype, f"template value ({label.role})")
        return
    candidates = nearest_candidates(label.name, entry.shape, entry.dtype, _same_kind(label, tensors),
                                    same_shape=False)
    if allow_missing:
        plan.add_row(None, key, entry, entry.shape, entry.dtype, "template value (no source)")
        plan.add("missing", key, f"no source tensor named {wanted!r}; the template's value is kept", WARNING,
                 candidates)
    else:
        plan.add("missing", key, f"no source tensor named {wanted!r}", candidates=candidates)


def _same_kind(label: EntryLabel, tensors: list[SourceTensor]) -> list[SourceTensor]:
    """Slots for a slot, everything else for the rest."""
    return [t for t in tensors if (t.role == "slot") == (label.role == "slot")]


def _wanted(label: EntryLabel, labels: Mapping[str, EntryLabel]) -> str:
    if label.role == "slot":
        var = labels.get(label.slot_of or "")
        return f"slot {label.slot_name} of {var.name if var is not None else label.slot_of}"
    return label.name


def _check(plan: ConversionPlan, template: Checkpoint, key: str, label: EntryLabel, match: SourceTensor,
           tensors: list[SourceTensor]) -> bool:
    entry = template[key]
    shape, dtype = tuple(entry.shape), str(entry.dtype)
    src_shape, src_dtype = tuple(match.entry.shape), str(match.entry.dtype)
    if shape == src_shape and dtype == src_dtype:
        return True
    kind = "shape" if shape != src_shape else "dtype"
    have = shape_text(src_shape) if kind == "shape" else src_dtype
    want = shape_text(shape) if kind == "shape" else dtype
    candidates = nearest_candidates(label.name, shape, dtype, _same_kind(label, tensors))
    hint = "" if candidates else f"; no source tensor has {want} {dtype if kind == 'shape' else ''}".rstrip()
    plan.add(kind, key, f"{label.name} <- {match.key}: {kind} {have} does not match the template's {want}{hint}",
             candidates=candidates)
    return False


def nearest_candidates(name: str, shape: tuple[int, ...], dtype: str, tensors: list[SourceTensor],
                       limit: int = 3, same_shape: bool = True) -> list[str]:
    """Source tensors that could be meant for ``name``: those of ``shape`` and ``dtype`` first
    (closest renamed names first), then, unless ``same_shape``, the closest names of any shape."""
    def score(t: SourceTensor) -> tuple[float, str]:
        return (-difflib.SequenceMatcher(None, name, t.name).ratio(), t.name)

    fitting = sorted((t for t in tensors if tuple(t.entry.shape) == tuple(shape) and str(t.entry.dtype) == dtype),
                     key=score)
    out = [f"{t.key} {shape_text(t.entry.shape)}" for t in fitting[:limit]]
    if not same_shape and len(out) < limit:
        close = difflib.get_close_matches(name, [t.name for t in tensors], n=limit, cutoff=0.6)
        named = {t.name: t for t in tensors}
        for n in close:
            text = f"{named[n].key} {shape_text(named[n].entry.shape)}"
            if text not in out and len(out) < limit:
                out.append(text)
    return out


def _where(t: SourceTensor) -> str:
    bits = [t.role, shape_text(t.entry.shape)]
    if t.name != t.original:
        bits.insert(0, f"as {t.name}")
    return ", ".join(bits)
