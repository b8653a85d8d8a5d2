"""Plan rows for a target's optimizer state, filled by meaning from the source's (templates, Keras 3).

:func:`fill_optimizer_state` takes the target's optimizer tensors as the table reads them (slot
``m`` of ``dense/kernel``, the step counter, a hyperparameter) and adds one row per tensor: the
source's slot of the same meaning (copied or scaled), the step counter derived from the source's,
hyperparameters from ``--hparam``, the source or the template. What cannot be filled is an error
(or, with ``allow_missing``, the template's value and a warning); a pair of optimizers without a
mathematical equivalent is one error saying so.
"""
from __future__ import annotations

from formats.core.model import TensorEntry, shape_text
from formats.core.records import record
from formats.ops.convert.optimizer_moves import Moved, OptimizerMove, hparam_flag
from formats.ops.convert.optimizer_state import OptimizerState, StateTensor
from formats.ops.convert.plan import ERROR, WARNING, ConversionPlan
from formats.ops.convert.transforms import scalar_value

__all__ = ["TargetState", "fill_optimizer_state", "OPTIMIZER_PROBLEM"]

OPTIMIZER_PROBLEM = "optimizer"


@record
class TargetState:
    """One tensor of the target's optimizer state: its output ``key``, the ``entry`` holding the
    target's own value (shape, dtype, and the value kept when nothing fills it) and its meaning."""

    key: str
    entry: TensorEntry
    state: StateTensor


def fill_optimizer_state(plan: ConversionPlan, move: OptimizerMove, targets: list[TargetState],
                         allow_missing: bool) -> set[str]:
    """Add a row (or a problem) for every target tensor; returns the source keys used."""
    used: set[str] = set()
    if not targets:
        return used
    if move.error is not None:
        _no_equivalent(plan, move, targets, allow_missing)
        return used
    for target in targets:
        found = _value(move, target)
        if isinstance(found, Moved):
            if _fits(plan, target, found):
                note = _note(target, found, move.src)
                plan.add_row(found.source, target.key, found.value, target.entry.shape, target.entry.dtype, note,
                             transform=found.transform)
                used.update(found.used)
            continue
        _unfilled(plan, target, found, allow_missing)
    if move.src.framework != move.framework:
        used.update(s.key for s in move.src.scalars.values() if s.kind in ("power", "global_step", "step"))
    return used


def _value(move: OptimizerMove, target: TargetState) -> Moved | str | None:
    state, entry = target.state, target.entry
    if state.kind == "slot":
        found = move.slot(state.variable or "", state.what)
        if found is None:
            found = move.zeros(state.variable or "", state.what, target.key, tuple(entry.shape), entry.dtype)
        return found
    if state.kind in ("step", "global_step"):
        return move.counter(entry.dtype)
    if state.kind == "power":
        return move.power(state.what, entry.dtype)
    if state.kind == "hyper":
        return _hyper(move, state, entry)
    if state.kind == "extra":
        own = move.src.scalars.get("extra")
        return Moved(own.tensor.entry, own.key, "", (own.key,)) if own is not None else None
    return None


def _hyper(move: OptimizerMove, state: StateTensor, entry: TensorEntry) -> Moved | None:
    """``--hparam`` first, then the source's variable of that name; else the template keeps its own."""
    if state.what in move.hparams:
        value = move.hparams[state.what]
        return Moved(scalar_value(value, entry.dtype), None, f"= {value:.7g} ({hparam_flag(state.what)})")
    own = move.src.scalars.get(state.what)
    if own is not None and own.tensor.entry.dtype == entry.dtype:
        return Moved(own.tensor.entry, own.key, "", (own.key,))
    return Moved(entry, None, "", ())


def _note(target: TargetState, found: Moved, src: OptimizerState) -> str:
    state = target.state
    if state.kind == "slot":
        own = src.slots.get((state.variable or "", state.what))
        renamed = f" (source slot {own.name})" if own is not None and own.name != state.name else ""
        return f"slot {state.name} of {state.variable}{renamed}"
    if state.kind == "hyper" and found.source is None and not found.transform:
        return "template value (hyperparameter)"
    return f"optimizer {state.name}"


def _fits(plan: ConversionPlan, target: TargetState, found: Moved) -> bool:
    from formats.core.sources import describe

    dt, shape = describe(found.value)
    want_shape, want_dtype = tuple(target.entry.shape), str(target.entry.dtype)
    if tuple(shape) == want_shape and dt.name == want_dtype:
        return True
    plan.add("shape" if tuple(shape) != want_shape else "dtype", target.key,
             f"{target.state.name} of {target.state.variable or 'the optimizer'} <- {found.source}: "
             f"{shape_text(shape)} {dt.name} does not match the template's {shape_text(want_shape)} {want_dtype}")
    return False


def _unfilled(plan: ConversionPlan, target: TargetState, why: str | None, allow_missing: bool) -> None:
    state = target.state
    what = f"slot {state.name} of {state.variable}" if state.kind == "slot" else f"optimizer {state.name}"
    message = why or f"no source tensor for {what}"
    if allow_missing:
        plan.add_row(None, target.key, target.entry, target.entry.shape, target.entry.dtype,
                     "template value (no source)")
        plan.add("missing", target.key, f"{message}; the template's value is kept", WARNING)
    else:
        plan.add("missing" if why is None else OPTIMIZER_PROBLEM, target.key, message, ERROR)


def _no_equivalent(plan: ConversionPlan, move: OptimizerMove, targets: list[TargetState],
                   allow_missing: bool) -> None:
    message = f"{move.describe()}: {move.error}"
    if allow_missing:
        for target in targets:
            plan.add_row(None, target.key, target.entry, target.entry.shape, target.entry.dtype,
                         "template value (no equivalent source state)")
        plan.add(OPTIMIZER_PROBLEM, move.src.optimizer or "optimizer",
                 f"{message}; the template's optimizer state is kept", WARNING)
    else:
        plan.add(OPTIMIZER_PROBLEM, move.src.optimizer or "optimizer",
                 f"{message} (--allow-missing keeps the template's optimizer state)", ERROR)
