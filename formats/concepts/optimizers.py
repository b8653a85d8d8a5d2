"""THE table of optimizer semantics: what each framework's optimizer state means, and how to move it.

Four frameworks keep optimizer state in checkpoints, each with its own names and, in places, its
own numbers for the same quantity:

- ``tf1``: ``tf.compat.v1.train.*Optimizer`` (slots ``<var>/<Optimizer>[_N]``, TF1 Adam's
  ``beta1_power``/``beta2_power``, the program's ``global_step``);
- ``tf-keras-legacy``: tf-keras ``OptimizerV2`` (``tf_keras.optimizers.legacy``: slot variables
  ``Adam/dense/kernel/m``, hyperparameters as variables ``Adam/learning_rate``, counter ``Adam/iter``);
- ``tf-keras``: the current tf-keras optimizers (``tf_keras.optimizers``: ``Adam/m/dense/kernel`` or,
  built outside ``apply_gradients``, ``m/dense/kernel``; ``iteration``; ``learning_rate``);
- ``keras3``: Keras 3 (``optimizer/vars/N``: ``iteration``, ``learning_rate``, then the slots in
  the order ``add_optimizer_variables`` creates them).

Each :class:`Family` lists, per framework, the optimizer classes, the slots (:class:`Slot`: one
*meaning* and its name in each framework), the hyperparameters stored as variables, TF1's power
accumulators and any extra state. The update rules behind the table (``training_ops`` kernels as
documented in ``gen_training_ops``, tf-keras ``optimizers/legacy/*.py`` and ``optimizers/*.py``,
Keras 3 ``keras/src/optimizers/*.py``):

- Momentum: TF1 ``accum = momentum*accum + g; var -= lr*accum``; every Keras SGD keeps
  ``m = momentum*m - lr*g; var += m``. With a constant ``lr``, Keras' ``m`` is ``-lr x`` TF1's accum.
- Adam: ``m``, ``v`` are the same moments everywhere. TF1 keeps ``beta1_power = beta_1^(t+1)``
  after ``t`` steps (initialised to ``beta_1``, multiplied after each step); Keras computes
  ``beta_1^(iterations+1)``. So ``iterations = log(beta1_power)/log(beta_1) - 1`` and back.
- Adagrad, RMSProp (``ms``/``mom``/``mg``), Ftrl (``accum``/``linear``), Adadelta
  (``accum``/``accum_update``): the same quantities under other names.
- Nadam: tf-keras' legacy Nadam decays its momentum schedule as ``0.96^(0.004 t)``
  (``schedule_decay``) in ``momentum_cache``; the current tf-keras and Keras 3 Nadam use
  ``0.96^t`` in ``u_product``: no state of one continues the other.

:func:`slot_transform` says how a slot moves between two frameworks, :func:`step_from_power` and
:func:`power_from_step` how TF1's power accumulators and the step count are one another;
:func:`equivalence` says why a pair cannot. Keras 3's variable order is derived from the table in
:mod:`formats.concepts.keras3_optimizer`. Nothing here reads a checkpoint.
"""
from __future__ import annotations

from formats.core.records import field, record

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Collection, Iterator, Mapping
__all__ = ["TF1", "KERAS_LEGACY", "TF_KERAS", "KERAS3", "FRAMEWORKS", "FRAMEWORK_TITLES", "Slot", "Family",
           "FAMILIES", "family", "family_of_class", "families_with_slots", "SlotTransform", "slot_transform",
           "equivalence", "step_from_power", "power_from_step", "tf1_slot_suffixes", "tf1_slot_layouts",
           "KerasSlotName", "parse_keras_slot", "TF1_SCALARS", "TRAINING_SHADOWS",
           "COUNTERS", "snake_case"]

TF1 = "tf1"
KERAS_LEGACY = "tf-keras-legacy"
TF_KERAS = "tf-keras"
KERAS3 = "keras3"
FRAMEWORKS = (TF1, KERAS_LEGACY, TF_KERAS, KERAS3)
FRAMEWORK_TITLES = {TF1: "TF1 (tf.compat.v1.train)", KERAS_LEGACY: "tf-keras legacy (OptimizerV2)",
                    TF_KERAS: "tf-keras", KERAS3: "Keras 3"}
_KERAS = (KERAS_LEGACY, TF_KERAS, KERAS3)

COUNTERS = {TF1: "global_step", KERAS_LEGACY: "iter", TF_KERAS: "iteration", KERAS3: "iteration"}
"""The step counter's name in each framework (TF1's is the program's, not the optimizer's)."""
TF1_SCALARS = ("beta1_power", "beta2_power", "global_step")
"""Unscoped TF1 scalars that are training state."""
TRAINING_SHADOWS = ("ExponentialMovingAverage",)
"""TF1 suffixes of training state that is not an optimizer's (``tf.train.ExponentialMovingAverage``)."""
NEG_LR = "-lr"


@record(frozen=True, eq=False)
class Slot:
    """One per-variable slot: its ``meaning`` and its name in each framework (absent: none there).

    ``scaled``: frameworks that store ``-learning_rate x`` the meaning. ``when``: the setting that
    creates the slot (``""`` always; ``"momentum"``, ``"centered"``, ``"amsgrad"``); ``always``:
    frameworks that create it regardless (TF1's RMSProp always has ``momentum``).
    """

    meaning: str
    names: Mapping[str, str]
    scaled: frozenset[str] = frozenset()
    when: str = ""
    always: frozenset[str] = frozenset()

    def name(self, framework: str) -> str | None:
        """The slot's name in ``framework`` (None when the framework has no such slot)."""
        return self.names.get(framework)


@record(frozen=True, eq=False)
class Family:
    """One optimizer algorithm across frameworks (see the module doc)."""

    name: str
    title: str
    classes: Mapping[str, tuple[str, ...]]
    slots: tuple[Slot, ...]
    hyper: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    powers: tuple[tuple[str, str], ...] = ()
    extra: Mapping[str, str] = field(default_factory=dict)
    rule: Mapping[str, str] = field(default_factory=dict)
    same_state_as: str = ""
    keras3_groups: tuple[tuple[str, ...], ...] = ()

    @property
    def frameworks(self) -> tuple[str, ...]:
        """The frameworks that have this optimizer."""
        return tuple(fw for fw in FRAMEWORKS if self.classes.get(fw))

    def slot(self, meaning: str) -> Slot:
        """The slot with ``meaning``; KeyError if the family has none."""
        for slot in self.slots:
            if slot.meaning == meaning:
                return slot
        raise KeyError(f"{self.title} has no slot {meaning!r}")

    def slot_named(self, framework: str, name: str) -> Slot | None:
        """The slot called ``name`` in ``framework``, if any."""
        return next((s for s in self.slots if s.names.get(framework) == name), None)

    def slot_names(self, framework: str) -> list[str]:
        """The framework's slot names, in the table's order."""
        return [s.names[framework] for s in self.slots if framework in s.names]

    def class_name(self, framework: str) -> str | None:
        """The default class (and optimizer) name in ``framework``."""
        names = self.classes.get(framework) or ()
        return names[0] if names else None


def _names(tf1: str | None, legacy: str | None, tf_keras: str | None, keras3: str | None) -> dict[str, str]:
    pairs = zip(FRAMEWORKS, (tf1, legacy, tf_keras, keras3))
    return {fw: name for fw, name in pairs if name is not None}


_LEGACY_BASE = ("learning_rate", "decay")
FAMILIES: tuple[Family, ...] = (
    Family("sgd", "SGD / Momentum",
           {TF1: ("Momentum", "GradientDescent"), KERAS_LEGACY: ("SGD",), TF_KERAS: ("SGD",), KERAS3: ("SGD",)},
           (Slot("velocity", _names("momentum", "momentum", "m", "momentum"), frozenset(_KERAS), "momentum",
                 frozenset({TF1})),),
           {KERAS_LEGACY: (*_LEGACY_BASE, "momentum")}, keras3_groups=(("momentum",),)),
    Family("adam", "Adam",
           {TF1: ("Adam",), KERAS_LEGACY: ("Adam",), TF_KERAS: ("Adam",), KERAS3: ("Adam",)},
           (Slot("m", _names("m", "m", "m", "momentum")), Slot("v", _names("v", "v", "v", "velocity")),
            Slot("vhat", _names(None, "vhat", "vhat", "velocity_hat"), when="amsgrad")),
           {KERAS_LEGACY: (*_LEGACY_BASE, "beta_1", "beta_2")}, (("beta1_power", "beta_1"), ("beta2_power", "beta_2")),
           keras3_groups=(("momentum", "velocity"), ("velocity_hat",))),
    Family("adamw", "AdamW",
           {TF1: ("AdamW",), TF_KERAS: ("AdamW",), KERAS3: ("AdamW",)},
           (Slot("m", _names("m", None, "m", "momentum")), Slot("v", _names("v", None, "v", "velocity")),
            Slot("vhat", _names(None, None, "vhat", "velocity_hat"), when="amsgrad")),
           powers=(("beta1_power", "beta_1"), ("beta2_power", "beta_2")), same_state_as="adam",
           keras3_groups=(("momentum", "velocity"), ("velocity_hat",))),
    Family("nadam", "Nadam",
           {KERAS_LEGACY: ("Nadam",), TF_KERAS: ("Nadam",), KERAS3: ("Nadam",)},
           (Slot("m", _names(None, "m", "m", "momentum")), Slot("v", _names(None, "v", "v", "velocity"))),
           {KERAS_LEGACY: (*_LEGACY_BASE, "beta_1", "beta_2")},
           extra={KERAS_LEGACY: "momentum_cache", TF_KERAS: "u_product", KERAS3: "u_product"},
           rule={KERAS_LEGACY: "momentum schedule 0.96^(0.004 t) in momentum_cache",
                 TF_KERAS: "momentum schedule 0.96^t in u_product", KERAS3: "momentum schedule 0.96^t in u_product"},
           keras3_groups=(("momentum", "velocity"),)),
    Family("adagrad", "Adagrad",
           {TF1: ("Adagrad",), KERAS_LEGACY: ("Adagrad",), TF_KERAS: ("Adagrad",), KERAS3: ("Adagrad",)},
           (Slot("accumulator", _names("accumulator", "accumulator", "accumulator", "accumulator")),),
           {KERAS_LEGACY: _LEGACY_BASE}, keras3_groups=(("accumulator",),)),
    Family("rmsprop", "RMSProp",
           {TF1: ("RMSProp",), KERAS_LEGACY: ("RMSprop",), TF_KERAS: ("RMSprop",), KERAS3: ("RMSprop",)},
           (Slot("ms", _names("rms", "rms", "velocity", "velocity")),
            Slot("mg", _names("mg", "mg", "average_gradient", "average_gradient"), when="centered"),
            Slot("mom", _names("momentum", "momentum", "momentum", "momentum"), when="momentum",
                 always=frozenset({TF1}))),
           {KERAS_LEGACY: (*_LEGACY_BASE, "rho", "momentum")},
           keras3_groups=(("velocity",), ("momentum",), ("average_gradient",))),
    Family("ftrl", "Ftrl",
           {TF1: ("Ftrl",), KERAS_LEGACY: ("Ftrl",), TF_KERAS: ("Ftrl",), KERAS3: ("Ftrl",)},
           (Slot("accumulator", _names("accum", "accumulator", "accumulator", "accumulator")),
            Slot("linear", _names("linear", "linear", "linear", "linear"))),
           {KERAS_LEGACY: (*_LEGACY_BASE, "learning_rate_power", "l1_regularization_strength",
                           "l2_regularization_strength", "beta", "l2_shrinkage_regularization_strength")},
           keras3_groups=(("accumulator", "linear"),)),
    Family("adadelta", "Adadelta",
           {TF1: ("Adadelta",), KERAS_LEGACY: ("Adadelta",), TF_KERAS: ("Adadelta",), KERAS3: ("Adadelta",)},
           (Slot("accum_grad", _names("accum", "accum_grad", "accumulated_grad", "accumulated_grad")),
            Slot("accum_update", _names("accum_update", "accum_var", "accumulated_delta_var",
                                        "accumulated_delta_var"))),
           {KERAS_LEGACY: (*_LEGACY_BASE, "rho")},
           keras3_groups=(("accumulated_grad", "accumulated_delta_var"),)),
    Family("adagrad_da", "Adagrad dual averaging", {TF1: ("AdagradDA",)},
           (Slot("gradient_accumulator", _names("gradient_accumulator", None, None, None)),
            Slot("gradient_squared_accumulator", _names("gradient_squared_accumulator", None, None, None)))),
    Family("proximal_adagrad", "Proximal Adagrad", {TF1: ("ProximalAdagrad",)},
           (Slot("accumulator", _names("accumulator", None, None, None)),)),
)
_BY_NAME = {f.name: f for f in FAMILIES}


def family(name: str) -> Family:
    """The family called ``name`` (``"adam"``); KeyError if none."""
    return _BY_NAME[name]


def snake_case(name: str) -> str:
    """Keras 3's default optimizer name for a class (``RMSprop`` -> ``rm_sprop``, ``AdamW`` -> ``adam_w``)."""
    import re

    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


def family_of_class(name: str, framework: str | None = None) -> Family | None:
    """The family of an optimizer class or default name (``"Adam"``, ``"RMSprop"``, Keras 3's ``"rm_sprop"``,
    ``"adam_1"``), in ``framework`` or any; None when unknown."""
    base = name.rsplit("_", 1)[0] if name.rsplit("_", 1)[-1].isdigit() else name
    for fam in FAMILIES:
        for fw, classes in fam.classes.items():
            if framework is not None and fw != framework:
                continue
            if base in classes or (fw == KERAS3 and base in {snake_case(c) for c in classes}):
                return fam
    return None


def families_with_slots(framework: str, names: Collection[str]) -> list[Family]:
    """Families of ``framework`` whose slot names include every one of ``names`` and whose
    unconditional slots are all among them (``{"m", "v"}`` in tf-keras: Adam, AdamW, Nadam)."""
    found = []
    for fam in FAMILIES:
        own = {s.names[framework]: s for s in fam.slots if framework in s.names}
        if not fam.classes.get(framework) or not set(names) <= set(own):
            continue
        required = {n for n, s in own.items() if not s.when or framework in s.always}
        if required <= set(names):
            found.append(fam)
    return found


# ---- transforms -----------------------------------------------------------------------------------------

@record(frozen=True)
class SlotTransform:
    """How a slot value moves: ``op`` ``copy``, ``mul`` or ``div`` by ``-learning_rate`` (``needs``)."""

    op: str = "copy"
    needs: str = ""

    def describe(self, value: float | None = None) -> str:
        """``x (-0.05)``, ``/ (-0.05)`` or ``""`` for a copy; ``x (-learning_rate)`` without a value."""
        if self.op == "copy":
            return ""
        factor = f"-{_num(value)}" if value is not None else f"-{self.needs}"
        return f"{'x' if self.op == 'mul' else '/'} ({factor})"

    def factor(self, learning_rate: float) -> float:
        """The number to multiply by."""
        return -learning_rate if self.op == "mul" else -1.0 / learning_rate


def _num(value: float) -> str:
    return f"{value:.7g}"


def equivalence(src: Family, src_fw: str, dst: Family, dst_fw: str) -> str | None:
    """Why state of ``src`` in ``src_fw`` cannot continue as ``dst`` in ``dst_fw``; None when it can."""
    if not src.classes.get(src_fw):
        return f"{FRAMEWORK_TITLES[src_fw]} has no {src.title} optimizer"
    if not dst.classes.get(dst_fw):
        return f"{FRAMEWORK_TITLES[dst_fw]} has no {dst.title} optimizer"
    if src.name != dst.name and (src.same_state_as or src.name) != (dst.same_state_as or dst.name):
        return (f"{src.title} state has no mathematical equivalent in {dst.title} (different slots and "
                "update rules)")
    a, b = src.rule.get(src_fw, ""), dst.rule.get(dst_fw, "")
    if a != b:
        return (f"{FRAMEWORK_TITLES[src_fw]} {src.title} ({a}) and {FRAMEWORK_TITLES[dst_fw]} {dst.title} ({b}) "
                "are different algorithms: no state of one continues the other")
    return None


def slot_transform(slot: Slot, src_fw: str, dst_fw: str) -> SlotTransform:
    """How slot ``slot`` moves from ``src_fw`` to ``dst_fw`` (Momentum: ``x (-lr)`` into Keras)."""
    a, b = src_fw in slot.scaled, dst_fw in slot.scaled
    if a == b:
        return SlotTransform()
    return SlotTransform("mul" if b else "div", "learning_rate")


def step_from_power(power: float, beta: float) -> float:
    """Steps taken when TF1's power accumulator holds ``power`` = ``beta^(step+1)`` (not rounded)."""
    if not 0.0 < beta < 1.0:
        raise ValueError(f"beta must be in (0, 1), not {beta}")
    if not 0.0 < power <= 1.0:
        raise ValueError(f"a power accumulator must be in (0, 1], not {power}")
    from math import log  # (a conversion's optimizer state only: math is a shared library to load)

    return log(power) / log(beta) - 1.0


def power_from_step(beta: float, step: int) -> float:
    """TF1's power accumulator after ``step`` steps: ``beta^(step+1)``."""
    return float(beta) ** (int(step) + 1)


# ---- names ----------------------------------------------------------------------------------------------

def tf1_slot_layouts(fam: Family) -> list[tuple[str, ...]]:
    """The TF1 slot names a variable gets, in creation order (one tuple per combination of settings):
    RMSProp ``[("rms", "momentum"), ("rms", "mg", "momentum")]``; suffixes follow this order."""
    slots = [s for s in fam.slots if TF1 in s.names]
    base = tuple(s.names[TF1] for s in slots if not s.when or TF1 in s.always)
    layouts = [base]
    optional = [s for s in slots if s.when and TF1 not in s.always]
    if optional:
        layouts.append(tuple(s.names[TF1] for s in slots))
    return layouts


def tf1_slot_suffixes(fam: Family) -> Iterator[tuple[str, str, str, int]]:
    """``(suffix, optimizer class, slot name, layout index)`` for every TF1 name of the family's slots
    (``Adam``, ``Adam_1``; each class name of the family)."""
    for cls in fam.classes.get(TF1, ()):
        if cls == "GradientDescent":
            continue
        for index, layout in enumerate(tf1_slot_layouts(fam)):
            for n, slot in enumerate(layout):
                yield (cls if n == 0 else f"{cls}_{n}"), cls, slot, index


@record(frozen=True)
class KerasSlotName:
    """A Keras slot's full name taken apart: ``framework``, ``optimizer`` name (None when the name
    has no prefix), ``slot`` name and the ``variable``'s name."""

    framework: str
    optimizer: str | None
    slot: str
    variable: str


def _keras_slot_names(framework: str) -> set[str]:
    return {s.names[framework] for f in FAMILIES for s in f.slots if framework in s.names}


def parse_keras_slot(full_name: str, variables: Collection[str]) -> KerasSlotName | None:
    """Read a tf-keras slot variable's name: legacy ``Adam/dense/kernel/m`` (``dense/kernel/m`` when its
    slots were made outside a name scope), current ``Adam/m/dense/kernel`` or ``m/dense/kernel``;
    ``variables`` are the model variables' names."""
    head, _, rest = full_name.partition("/")
    slot, _, var = rest.partition("/")
    if slot in _keras_slot_names(TF_KERAS) and var in variables:
        return KerasSlotName(TF_KERAS, head, slot, var)
    if head in _keras_slot_names(TF_KERAS) and rest in variables:
        return KerasSlotName(TF_KERAS, None, head, rest)
    var, _, slot = rest.rpartition("/")
    if slot in _keras_slot_names(KERAS_LEGACY) and var in variables:
        return KerasSlotName(KERAS_LEGACY, head, slot, var)
    var, _, slot = full_name.rpartition("/")
    if slot in _keras_slot_names(KERAS_LEGACY) and var in variables:
        return KerasSlotName(KERAS_LEGACY, None, slot, var)
    return None

