"""A checkpoint's optimizer state read through the optimizer table: which framework and optimizer wrote
it, and what each tensor means (slot ``m`` of ``dense/kernel``, the step counter, a hyperparameter).

:func:`read_optimizer_state` takes the :class:`~formats.ops.convert.conversion_source.SourceTensor` list of a
checkpoint (names after rename rules, roles, slots tied to their variables) and recognises:

- the framework: TF1 for name-based checkpoints and for slots named by TF1's convention
  (``dense/kernel/Adam``); tf-keras legacy for ``Adam/dense/kernel/m`` slots and an ``iter`` counter;
  current tf-keras for ``Adam/m/dense/kernel`` or ``m/dense/kernel`` slots and ``_iterations``;
  Keras 3 for the Keras 3 formats;
- the optimizer family (:data:`formats.concepts.optimizers.FAMILIES`), from the optimizer's name
  where the names carry it, else from the set of slot names;
- per tensor: a slot's meaning, the step counter (``global_step``, ``iter``, ``iteration``), TF1's
  power accumulators, stored hyperparameters and extra state (Nadam's ``u_product``).

Nothing is read here except, on request, small scalars (:meth:`OptimizerState.scalar`).
"""
from __future__ import annotations

from formats.concepts.object_graph import ATTRIBUTES
from formats.concepts.optimizers import (FRAMEWORK_TITLES, KERAS3, KERAS_LEGACY, TF1, TF_KERAS, Family,
                                         families_with_slots, family_of_class, parse_keras_slot)
from formats.concepts.roles import SLOT_SUFFIXES, classify_name
from formats.core.model import Checkpoint, FormatName
from formats.core.records import field, record
from formats.ops.convert.conversion_source import SourceTensor, is_object_based

__all__ = ["StateTensor", "OptimizerState", "read_optimizer_state", "KERAS3_FORMATS"]

KERAS3_FORMATS = (FormatName.KERAS3_H5, FormatName.KERAS_ZIP, FormatName.KERAS3_DIR, FormatName.KERAS3_SHARDED)
_KERAS2_FORMATS = (FormatName.KERAS2_H5, FormatName.KERAS2_MODEL_H5)
_STEP_NAMES = {"iter": KERAS_LEGACY, "iterations": TF_KERAS, "iteration": TF_KERAS}
_POWERS = ("beta1_power", "beta2_power")


@record
class StateTensor:
    """One tensor of optimizer state: ``kind`` ``slot`` (``what`` is the slot's meaning, ``variable`` the
    name of its model variable), ``step``, ``global_step``, ``power`` (``beta1_power``), ``hyper``
    (``learning_rate``) or ``extra`` (``u_product``); ``name`` is what the framework calls it."""

    tensor: SourceTensor
    kind: str
    what: str
    name: str
    variable: str | None = None

    @property
    def key(self) -> str:
        """The stored key."""
        return self.tensor.key


@record
class OptimizerState:
    """What :func:`read_optimizer_state` found; ``family`` is None when no (single) optimizer is recognised."""

    framework: str | None = None
    family: Family | None = None
    optimizer: str | None = None
    slots: dict[tuple[str, str], StateTensor] = field(default_factory=dict)
    scalars: dict[str, StateTensor] = field(default_factory=dict)
    configured: dict[str, float] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def known(self) -> bool:
        """True when the framework and the optimizer family are both recognised."""
        return self.framework is not None and self.family is not None

    @property
    def title(self) -> str:
        """``tf-keras Adam``, for messages."""
        fw = FRAMEWORK_TITLES.get(self.framework or "", "unknown framework")
        return f"{fw} {self.family.title if self.family else 'optimizer'}"

    def by_key(self) -> dict[str, StateTensor]:
        """Every recognised tensor by its stored key."""
        return {s.key: s for s in [*self.slots.values(), *self.scalars.values()]}

    def settings(self) -> set[str]:
        """The optional settings the slots show: ``momentum``, ``centered``, ``amsgrad``."""
        if self.family is None:
            return set()
        present = {meaning for _, meaning in self.slots}
        return {s.when for s in self.family.slots if s.when and s.meaning in present}

    def scalar(self, what: str) -> float | None:
        """The value of scalar state ``what`` (``step``, ``learning_rate``, ``beta1_power``), if stored."""
        found = self.scalars.get(what)
        if found is None or tuple(found.tensor.entry.shape) != ():
            return None
        return float(found.tensor.entry.read())


def read_optimizer_state(ckpt: Checkpoint, tensors: list[SourceTensor]) -> OptimizerState:
    """The optimizer state of ``ckpt`` (whose source tensors are ``tensors``) read through the table."""
    state = OptimizerState()
    model = {t.name for t in tensors if t.role == "variable"}
    state.framework = _framework(ckpt, tensors, model)
    if state.framework is None:
        return state
    slots = [t for t in tensors if t.role == "slot" or (t.role == "optimizer" and state.framework in
                                                       (KERAS_LEGACY, TF_KERAS) and parse_keras_slot(t.original, model))]
    lasts = {_last(ckpt, t) for t in tensors if t.role == "optimizer"}
    state.family, state.optimizer = _family(state, slots, tensors, model, lasts)
    if state.family is None:
        return state
    for t in slots:
        _add_slot(state, t, model)
    for t in tensors:
        if t not in slots:
            _add_scalar(state, ckpt, t)
    state.configured = _configured(ckpt.metadata)
    return state


def _configured(metadata: dict[str, object]) -> dict[str, float]:
    """Numeric optimizer settings from a Keras model config (``.keras``: ``compile_config``; a tf-keras
    full-model ``.h5``: ``training_config``)."""
    found: object = None
    model = metadata.get("model_config")
    if isinstance(model, dict) and isinstance(model.get("compile_config"), dict):
        found = model["compile_config"].get("optimizer")
    training = metadata.get("training_config")
    if found is None and isinstance(training, dict):
        found = training.get("optimizer_config")
    settings = found.get("config") if isinstance(found, dict) else None
    if not isinstance(settings, dict):
        return {}
    return {k: float(v) for k, v in settings.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def _framework(ckpt: Checkpoint, tensors: list[SourceTensor], model: set[str]) -> str | None:
    if ckpt.format in KERAS3_FORMATS:
        return KERAS3
    object_based = is_object_based(ckpt) and ckpt.object_graph is not None
    if not object_based and ckpt.format not in _KERAS2_FORMATS:
        return TF1
    if object_based and any(t.role == "slot" for t in tensors):
        from formats.concepts.object_graph import keras3_optimizer

        graph = ckpt.object_graph
        if any(keras3_optimizer(graph, node.id) for node in graph.nodes):  # a Keras 3 program's tf.train.Checkpoint
            return KERAS3
    votes: set[str] = set()  # only whether one framework is named matters (collections.Counter stays unimported)
    for t in tensors:
        if t.role == "slot" and classify_name(t.original).role == "slot":
            vote: str | None = TF1
        elif t.role in ("slot", "optimizer"):
            parsed = parse_keras_slot(t.original, model)
            vote = parsed.framework if parsed is not None else _STEP_NAMES.get(_last(ckpt, t))
        else:
            vote = None
        if vote is not None:
            votes.add(vote)
    return next(iter(votes)) if len(votes) == 1 else None


def _last(ckpt: Checkpoint, t: SourceTensor) -> str:
    """The last segment of the tensor's object path (bundles) or name, leading ``_`` removed."""
    marker = f"/{ATTRIBUTES}/"
    path = t.key.split(marker, 1)[0] if is_object_based(ckpt) and marker in t.key else t.original
    return path.rsplit("/", 1)[-1].lstrip("_")


def _family(state: OptimizerState, slots: list[SourceTensor], tensors: list[SourceTensor],
            model: set[str], lasts: set[str]) -> tuple[Family | None, str | None]:
    fw = state.framework or ""
    names = {_optimizer_name(fw, t, model) for t in slots} - {None}
    names |= {t.original.split("/", 1)[0] for t in tensors if t.role == "optimizer" and "/" in t.original
              and fw in (KERAS_LEGACY, KERAS3)}
    families = {family_of_class(n, fw) for n in names if n} - {None}
    if fw == TF1 and not slots and any(t.name.rsplit("/", 1)[-1] in _POWERS for t in tensors):
        families = {family_of_class("Adam", TF1)}
    if len(families) > 1:
        state.problems.append(f"several optimizers ({', '.join(sorted(n for n in names if n))}); their state is "
                              "copied by name only")
        return None, None
    if families:
        fam = families.pop()
        return fam, next((n for n in sorted(n for n in names if n) if family_of_class(n, fw) is fam), None)
    candidates = families_with_slots(fw, {_slot_name(fw, t, model) or "" for t in slots}) if slots else []
    if len(candidates) > 1:  # Nadam keeps extra state (u_product, momentum_cache) that Adam lacks
        extra = [c for c in candidates if c.extra.get(fw) in lasts]
        candidates = extra or [c for c in candidates if not c.extra.get(fw)]
    kinds = {c.same_state_as or c.name for c in candidates}
    if len(kinds) == 1:
        return candidates[0], None
    if len(candidates) > 1:
        state.problems.append(f"the slots fit {' or '.join(c.title for c in candidates)}: cannot tell which")
    return None, None


def _optimizer_name(fw: str, t: SourceTensor, model: set[str]) -> str | None:
    if fw == TF1:
        return classify_name(t.original).optimizer or t.optimizer
    if fw == KERAS3:
        return t.optimizer
    parsed = parse_keras_slot(t.original, model)
    return parsed.optimizer if parsed is not None else None


def _slot_name(fw: str, t: SourceTensor, model: set[str]) -> str | None:
    if fw in (KERAS_LEGACY, TF_KERAS):
        parsed = parse_keras_slot(t.original, model)
        if parsed is not None:
            return parsed.slot
    if fw == TF1 and t.slot_name is None:
        pair = SLOT_SUFFIXES.get(t.original.rsplit("/", 1)[-1])
        return pair[1] if pair else None
    return t.slot_name


def _add_slot(state: OptimizerState, t: SourceTensor, model: set[str]) -> None:
    fw, fam = state.framework or "", state.family
    assert fam is not None
    name = _slot_name(fw, t, model)
    slot = fam.slot_named(fw, name or "")
    parsed = parse_keras_slot(t.original, model) if fw in (KERAS_LEGACY, TF_KERAS) else None
    variable = t.slot_of or (parsed.variable if parsed else None)
    if slot is None or variable is None:
        state.problems.append(f"{t.key}: slot {name!r} is not one of {fam.title}'s in {FRAMEWORK_TITLES[fw]}")
        return
    state.slots[(variable, slot.meaning)] = StateTensor(t, "slot", slot.meaning, name or "", variable)


def _add_scalar(state: OptimizerState, ckpt: Checkpoint, t: SourceTensor) -> None:
    fam, fw = state.family, state.framework or ""
    assert fam is not None
    last = _last(ckpt, t)
    if t.role not in ("optimizer", "variable") or (t.role == "variable" and last not in ("global_step", *_POWERS)):
        return
    if last == "global_step":
        state.scalars["global_step"] = StateTensor(t, "global_step", "global_step", last)
    elif last in _POWERS and fw == TF1:
        state.scalars[last] = StateTensor(t, "power", last, last)
    elif last in _STEP_NAMES and fw != TF1:
        state.scalars["step"] = StateTensor(t, "step", "step", last)
    elif last in fam.hyper.get(fw, ("learning_rate",) if fw != TF1 else ()):
        state.scalars[last] = StateTensor(t, "hyper", last, last)
    elif last == fam.extra.get(fw):
        state.scalars["extra"] = StateTensor(t, "extra", last, last)
