"""A Keras 3 template's optimizer variables (``optimizer/vars/N``), filled by meaning from any source's.

The template's optimizer is read through the optimizer table (its class from ``config.json`` or the
``vars`` group's name, each slot tied to its model variable); each slot takes the source's slot of
the same meaning of the source weight paired with that model variable, the step counter comes
from the source's, hyperparameters from ``--hparam``, the source or the template
(:mod:`formats.ops.convert.optimizer_rows`). Source state the template's optimizer has no place for (the
slots of a variable the template does not train) is an error naming the arrays: never left out unsaid.
"""
from __future__ import annotations

from formats.concepts.keras3_optimizer import Variable, keras3_assign
from formats.concepts.optimizers import KERAS3, family_of_class
from formats.core.model import Checkpoint
from formats.core.records import replace
from formats.keras_h5.naming import configured_optimizer
from formats.ops.convert.cross.matching import Pairing
from formats.ops.convert.cross.variables import keras_variables
from formats.ops.convert.optimizer_moves import OptimizerMove
from formats.ops.convert.optimizer_rows import OPTIMIZER_PROBLEM, TargetState, fill_optimizer_state
from formats.ops.convert.optimizer_state import OptimizerState, read_optimizer_state
from formats.ops.convert.plan import ERROR, WARNING, ConversionPlan, ConvertOptions
from formats.ops.convert.conversion_source import SourceTensor, source_tensors
from formats.ops.rules import RuleSet

__all__ = ["fill_keras3_optimizer", "keras3_like"]


def fill_keras3_optimizer(plan: ConversionPlan, source: Checkpoint, template: Checkpoint, pairings: list[Pairing],
                          options: ConvertOptions) -> set[str] | None:
    """Rows for the template's optimizer variables; the source keys used, or None when the template's
    or the source's optimizer is not recognised (the template's optimizer state is then left out:
    without ``config.json`` its slots are tied to model variables only where their shapes fix the order).
    Source slots, step counter or extra state left without a place are an error naming them."""
    dst = read_optimizer_state(template, source_tensors(template, None))
    src = read_optimizer_state(source, source_tensors(source, options.rules))
    if not (src.known and src.slots):
        return None
    if dst.framework == KERAS3 and not dst.slots:
        dst = keras3_like(plan, template, src, None, options.template or template.path, _trainable(src, pairings))
    if not (dst.known and dst.slots):
        return None
    names = {p.target.name: p.source.name for p in pairings if p.source is not None}
    move = OptimizerMove(src, dst.framework or "", dst.family, options.hparams, dst)
    targets = []
    for state in sorted(dst.by_key().values(), key=lambda s: _index(s.key)):
        if state.variable is not None:
            state = replace(state, variable=names.get(state.variable, state.variable))
        targets.append(TargetState(state.key, template[state.key], state))
    used = fill_optimizer_state(plan, move, targets, options.allow_missing)
    if move.error is None:
        _unplaced(plan, src, used, options.template or template.path)
    return used


def _unplaced(plan: ConversionPlan, src: OptimizerState, used: set[str], where: str) -> None:
    """An error naming the source's optimizer arrays (slots, step counter, extra state) that no template
    optimizer variable took: Keras 3 would resume without them."""
    left = [s for s in src.by_key().values() if s.key not in used and s.kind in ("slot", "step", "extra")]
    if not left:
        return
    variables = sorted({s.variable for s in left if s.variable})
    whose = f" (of {', '.join(variables[:5])}{' and more' if len(variables) > 5 else ''})" if variables else ""
    plan.add(OPTIMIZER_PROBLEM, where, f"{len(left)} optimizer array(s) of the source{whose} have no place in the "
             "template's optimizer: a variable the template does not train has no slots there. Save the template "
             "with those variables trainable, or use --drop-optimizer to leave optimizer state out",
             ERROR, sorted(s.key for s in left))


def _trainable(src: OptimizerState, pairings: list[Pairing]) -> list[Variable]:
    """The template's trainable variables in model order, as the source shows them: a variable has
    optimizer slots iff it is trainable, and the source's weights are in model order."""
    with_slots = {variable for variable, _ in src.slots}
    paired = sorted((p for p in pairings if p.source is not None and p.source.name in with_slots),
                    key=lambda p: p.source.order if p.source is not None else 0)
    return [(p.target.name, p.target.shape, p.target.key) for p in paired]


def _index(key: str) -> tuple[str, int]:
    owner, _, index = key.rpartition("/")
    return owner, int(index) if index.isdigit() else -1


def keras3_like(plan: ConversionPlan, ckpt: Checkpoint, like: OptimizerState, rules: RuleSet | None,
                where: str, trainable: list[Variable] | None = None) -> OptimizerState:
    """A Keras 3 file's optimizer whose slots the file alone does not tie to model variables: read as the
    optimizer its ``config.json`` names (``compile_config``), else as ``like``'s (same family and settings: without
    a config, RMSprop with momentum and RMSprop centered have as many variables); a warning says which. Model variables are tied in the order of ``trainable`` (the file's
    trainable variables in model order, as the other side's slots show them) when every slot's shape
    fits it, else by their shapes, or in layer order."""
    fam = like.family
    combos = [(tuple(sorted(like.settings())), lr) for lr in (True, False)]
    named = configured_optimizer(ckpt.metadata.get("model_config"))
    if named is not None:  # the file's config names its optimizer: read as that, whatever the other side holds
        fam = family_of_class(named[1], KERAS3) if named[1] else None
        combos = named[0] or []
    keys = sorted((k for k in ckpt if k.startswith("optimizer/vars/")), key=_index)
    if fam is None or fam.class_name(KERAS3) is None or not keys or not combos:
        return OptimizerState(framework=KERAS3)
    shapes = [tuple(ckpt[k].shape) for k in keys]
    variables = [(v.name, v.shape, v.key) for v in keras_variables(ckpt, rules)[0] if v.trainable is not False]
    found, how = (keras3_assign(fam, shapes, combos, trainable), "as the other side's slots order them") \
        if trainable else ([], "")
    if len(found) != 1:
        found, how = keras3_assign(fam, shapes, combos, None, variables), "by their shapes"
    if len(found) != 1:
        found, how = keras3_assign(fam, shapes, combos, variables), "in the template's layer order"
    if len(found) != 1:
        return OptimizerState(framework=KERAS3)
    layout, order = found[0]
    tensors = [t for t in source_tensors(ckpt, rules) if not t.key.startswith("optimizer/")]
    for key, (name, index) in zip(keys, layout):
        entry = ckpt[key]
        if index is None:
            tensors.append(SourceTensor(key, f"optimizer/{name}", f"optimizer/{name}", "optimizer", entry))
        else:
            tensors.append(SourceTensor(key, f"optimizer/{name}", f"optimizer/{name}", "slot", entry, order[index][0],
                                        fam.class_name(KERAS3), name))
    if named is not None:
        settings = ", ".join(combos[0][0]) or "default settings"
        plan.add("fallback", where, f"this Keras 3 file's config.json names its optimizer ({named[1]} with "
                 f"{settings}), not which model variable each of its slots belongs to: model variables tied {how}",
                 WARNING)
    else:
        settings = ", ".join(sorted(like.settings())) or "default settings"
        plan.add("fallback", where, f"no config.json names this Keras 3 file's optimizer: its variables are read as "
                 f"{fam.title} with {settings} like the other side's, model variables tied {how}", WARNING)
    return read_optimizer_state(ckpt, tensors)
