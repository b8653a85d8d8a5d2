"""Moving optimizer state between frameworks by meaning: the values a conversion writes, and why.

An :class:`OptimizerMove` joins a source's :class:`~formats.ops.convert.optimizer_state.OptimizerState`
with the target's framework and optimizer (from a template, or chosen by the target format) and
answers, for each piece of target state, what to write: a slot copied or scaled (Momentum:
``x (-lr)`` into Keras, ``/ (-lr)`` back), the step counter (from ``global_step``, ``iterations``
or ``log(beta1_power)/log(beta_1) - 1``), TF1's power accumulators (``beta_1^(step+1)``), or an
error naming what is missing or why the pair has no mathematical equivalent. Hyperparameters come
from ``--hparam``/``--learning-rate`` first, then the source's own variables or model config, then
the template's.
"""
from __future__ import annotations

from formats.concepts.optimizers import (FRAMEWORK_TITLES, TF1, Family, equivalence, power_from_step,
                                         slot_transform, step_from_power)
from formats.core.records import field, record
from formats.ops.convert.optimizer_state import OptimizerState
from formats.ops.convert.transforms import ScaledEntry, ZerosEntry, scalar_value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Moved", "OptimizerMove", "hparam_flag"]


@record
class Moved:
    """A value to write: ``value`` (a source), the source key it comes from (None when computed from
    several or from nothing), the ``transform`` shown in the plan, and every source key it ``used``."""

    value: Any
    source: str | None
    transform: str = ""
    used: tuple[str, ...] = ()


def hparam_flag(name: str) -> str:
    """How the user supplies a hyperparameter (``--learning-rate`` or ``--hparam NAME=VALUE``)."""
    return "--learning-rate" if name == "learning_rate" else f"--hparam {name}=VALUE"


@record
class OptimizerMove:
    """Source state ``src`` into framework ``framework`` and optimizer ``family`` (``target``: the
    template's own state, for its hyperparameters)."""

    src: OptimizerState
    framework: str
    family: Family | None
    hparams: dict[str, float] = field(default_factory=dict)
    target: OptimizerState | None = None
    _step: tuple[int, str, tuple[str, ...]] | str | None = field(default=None, init=False, repr=False)

    @property
    def error(self) -> str | None:
        """Why this source's optimizer state cannot continue in the target at all (None when it can)."""
        if not self.src.known or self.family is None:
            return None
        assert self.src.family is not None and self.src.framework is not None
        return equivalence(self.src.family, self.src.framework, self.family, self.framework)

    def hyper(self, name: str) -> tuple[float, str] | None:
        """A hyperparameter's value and where it came from (``--hparam``, the source, the template)."""
        if name in self.hparams:
            return float(self.hparams[name]), hparam_flag(name)
        for state, where in ((self.src, "the source"), (self.target, "the template")):
            if state is None:
                continue
            value = state.scalar(name)
            if value is None:
                value = state.configured.get(name)
            if value is not None:
                return value, where
        return None

    def slot(self, variable: str, meaning: str) -> Moved | str | None:
        """The value of slot ``meaning`` of ``variable`` in the target; an error text; None when the
        source has no such slot."""
        found = self.src.slots.get((variable, meaning))
        if found is None or self.src.family is None or self.src.framework is None:
            return None
        slot = self.src.family.slot(meaning)
        transform = slot_transform(slot, self.src.framework, self.framework)
        entry = found.tensor.entry
        if transform.op == "copy":
            return Moved(entry, found.key, "", (found.key,))
        lr = self.hyper("learning_rate")
        if lr is None:
            return (f"slot {slot.names.get(self.framework, meaning)} of {variable}: {self.src.title} stores "
                    f"{transform.describe()} x the target's value; the learning rate is in neither checkpoint "
                    f"(a schedule?): give {hparam_flag('learning_rate')}")
        if entry.dtype not in ("float16", "bfloat16", "float32", "float64"):
            return f"slot {found.name} of {variable} is {entry.dtype}: it cannot be scaled"
        return Moved(ScaledEntry(entry, transform.op, -lr[0]), found.key, transform.describe(lr[0]), (found.key,))

    def zeros(self, variable: str, meaning: str, key: str, shape: tuple[int, ...], dtype: str) -> Moved | None:
        """Zeros for a slot the source lacks because its setting was off (RMSProp's momentum with
        momentum=0: the update multiplies it by 0); None when zeros would not be the same training."""
        fam = self.family
        if fam is None or self.src.family is None:
            return None
        slot = fam.slot(meaning)
        if slot.when != "momentum" or self.framework not in slot.always or "momentum" in self.src.settings():
            return None
        return Moved(ZerosEntry(key, shape, dtype), None, "zeros (no momentum in the source: momentum=0)")

    def step(self) -> tuple[int, str, tuple[str, ...]] | str:
        """``(steps taken, how it was found, source keys used)``, or an error text."""
        if self._step is None:
            self._step = self._find_step()
        return self._step

    def _find_step(self) -> tuple[int, str, tuple[str, ...]] | str:
        if "iterations" in self.hparams:
            return int(self.hparams["iterations"]), hparam_flag("iterations"), ()
        counter = self.src.scalars.get("step") or self.src.scalars.get("global_step")
        counted = (int(counter.tensor.entry.read()), f"= {counter.name}", (counter.key,)) if counter else None
        powered = self._step_from_powers()
        if isinstance(powered, str):
            return powered
        if powered is None:
            return counted or (f"the step count: {self.src.title} has no step counter (global_step); give "
                               f"{hparam_flag('iterations')}")
        if counted is not None and counted[0] != powered[0]:
            return (f"{counted[1][2:]} is {counted[0]} but {powered[1][2:]} is {powered[0]}: the optimizer did not "
                    f"step with {counted[1][2:]}; give {hparam_flag('iterations')}")
        return counted or powered

    def _step_from_powers(self) -> tuple[int, str, tuple[str, ...]] | str | None:
        """From TF1's ``beta1_power`` (``beta2_power`` once it underflows) and the betas, when known."""
        fam = self.src.family
        if fam is None or not fam.powers:
            return None
        for power, beta_name in fam.powers:
            found, beta = self.src.scalars.get(power), self.hyper(beta_name)
            if found is None or beta is None:
                continue
            value = float(found.tensor.entry.read())
            if value < 1e-30:
                continue  # underflowed float32: the next accumulator tells
            raw = step_from_power(value, beta[0])
            if abs(raw - round(raw)) > 0.05:
                return (f"{power} = {value:.7g} is no power of {beta_name} = {beta[0]:.7g} ({beta[1]}); "
                        f"give the right {hparam_flag(beta_name)} or {hparam_flag('iterations')}")
            return round(raw), f"= log({power})/log({beta[0]:.7g}) - 1", (found.key,)
        return None

    def counter(self, dtype: str) -> Moved | str:
        """The target's step counter (``iterations`` in Keras, ``global_step`` in TF1)."""
        stepped = self.step()
        if isinstance(stepped, str):
            return stepped
        step, how, used = stepped
        counter = self.src.scalars.get("step") or self.src.scalars.get("global_step")
        if counter is not None and used == (counter.key,) and how == f"= {counter.name}":
            same = counter.kind == ("global_step" if self.framework == TF1 else "step")
            if counter.tensor.entry.dtype == dtype and tuple(counter.tensor.entry.shape) == ():
                return Moved(counter.tensor.entry, counter.key, "" if same else how, used)
        return Moved(scalar_value(step, dtype), used[0] if len(used) == 1 else None, f"{how} = {step}", used)

    def power(self, power: str, dtype: str) -> Moved | str:
        """TF1's ``beta1_power``/``beta2_power`` after the source's steps."""
        fam = self.family or self.src.family
        beta_name = dict(fam.powers).get(power) if fam else None
        if beta_name is None:
            return f"{power}: {fam.title if fam else 'this optimizer'} has no such accumulator"
        if self.src.framework == TF1 and power in self.src.scalars:
            found = self.src.scalars[power]
            return Moved(found.tensor.entry, found.key, "", (found.key,))
        beta = self.hyper(beta_name)
        if beta is None:
            return (f"{power} = {beta_name}^(step+1): {beta_name} is in neither checkpoint; give "
                    f"{hparam_flag(beta_name)}")
        stepped = self.step()
        if isinstance(stepped, str):
            return stepped
        step, how, used = stepped
        value = power_from_step(beta[0], step)
        return Moved(scalar_value(value, dtype), used[0] if len(used) == 1 else None,
                     f"= {beta[0]:.7g}^(step+1), step {how[2:] if how.startswith('= ') else how} = {step}", used)

    def describe(self) -> str:
        """``TF1 (tf.compat.v1.train) Adam -> tf-keras Adam``."""
        target = f"{FRAMEWORK_TITLES.get(self.framework, self.framework)} {self.family.title if self.family else ''}"
        return f"{self.src.title} -> {target.strip()}"
