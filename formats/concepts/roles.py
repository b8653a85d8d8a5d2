"""What a tensor is, from its name alone: TF1's name-based optimizer conventions.

TF1 optimizers (``tf.compat.v1.train.*Optimizer``) name a slot variable
``<variable>/<optimizer name>[_N]``: the first slot an optimizer makes for a variable
gets the bare optimizer name, later ones ``_1``, ``_2`` (TensorFlow's graph-name
uniquifier). Adam's ``m`` is ``kernel/Adam`` and ``v`` is ``kernel/Adam_1``. A few
scalars are optimizer state too (``beta1_power``, ``beta2_power``, ``global_step``).

:func:`classify_name` reads one key; :func:`classify_names` reads a whole checkpoint's
keys (it can check that the slotted variable exists and tell RMSProp's centered
layout from the plain one). :data:`SLOT_SUFFIXES` and :func:`slot_key` give the
conventions in both directions, for writers (``ckpt convert``); both are derived from the one
table of optimizer semantics, :mod:`formats.concepts.optimizers`.

Name-based checkpoints written from TF2 programs (``ckpt convert --to tf-name``, whose keys are
the variables' full names) keep tf-keras' names instead: legacy ``Adam/iter``, ``Adam/beta_1``
(hyperparameters as variables) and slots ``[Adam/]dense/kernel/m``; current ``iteration``,
``learning_rate`` and ``[Adam/]m/dense/kernel``. :func:`classify_names` reads those too (only
where such optimizer state is present, and slots only of variables that are present), so a tensor keeps its role whatever the checkpoint's layout; TF2's
``save_counter`` and a ``.../ITERATOR_STATE`` are the save counter and iterator state there too.

Roles (``Role``) are plain strings so they compare with and serialise as text:
``variable``, ``slot``, ``optimizer`` (optimizer hyperparameters, step/iteration
counters and other non-slot optimizer state, including ``global_step``),
``iterator``, ``save_counter``, ``object_graph``, ``other``.
"""
from __future__ import annotations


from formats.core.records import record
from formats.core.model import OBJECT_GRAPH_KEY, Role
from formats.concepts.optimizers import (COUNTERS, FAMILIES, KERAS_LEGACY, TF1, TF_KERAS, family_of_class,
                                        parse_keras_slot, tf1_slot_suffixes)

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

__all__ = ["Role", "NameRole", "SLOT_SUFFIXES", "OPTIMIZER_SCALARS", "classify_name", "classify_names",
           "slot_suffixes", "slot_key", "keras_scalar", "may_not_be_variable"]


@record(frozen=True)
class NameRole:
    """The role of one key; for a slot also the variable (``slot_of``), ``optimizer`` and ``slot_name``."""

    role: Role
    slot_of: str | None = None
    optimizer: str | None = None
    slot_name: str | None = None


def _suffix_table() -> tuple[dict[str, tuple[str, str]], dict[tuple[str, str, bool], str]]:
    """Suffix -> (optimizer, slot), and (optimizer, slot, centered) -> suffix, from the optimizer table."""
    suffixes: dict[str, tuple[str, str]] = {}
    keys: dict[tuple[str, str, bool], str] = {}
    for fam in FAMILIES:
        for suffix, cls, slot, layout in tf1_slot_suffixes(fam):
            suffixes.setdefault(suffix, (cls, slot))
            keys.setdefault((cls, slot, layout > 0), suffix)
    return suffixes, keys


SLOT_SUFFIXES, _SLOT_KEYS = _suffix_table()
"""Suffix (last ``/`` segment) -> (optimizer, slot name), derived from :data:`formats.concepts.optimizers.FAMILIES`:
slot names are the ones TF1's optimizers pass to ``_zeros_slot`` / ``_get_or_make_slot``. ``RMSProp_1`` is
``momentum`` here and ``mg`` when ``RMSProp_2`` exists too (centered); :func:`classify_names` tells them apart."""

# Last "/" segment of non-slot optimizer state (TF1 Adam's power accumulators, the step counter).
OPTIMIZER_SCALARS: dict[str, str] = {
    **{power: fam.class_name(TF1) or "" for fam in reversed(FAMILIES) for power, _ in fam.powers},
    "global_step": "",
}

_CENTERED_MG = ("RMSProp", "mg")


def slot_suffixes(optimizer: str | None = None) -> dict[str, str]:
    """Suffix -> slot name, for one optimizer (``"Adam"`` -> ``{"Adam": "m", "Adam_1": "v"}``) or all."""
    return {suffix: slot for suffix, (opt, slot) in SLOT_SUFFIXES.items()
            if optimizer is None or opt == optimizer}


def slot_key(variable: str, optimizer: str, slot_name: str, centered: bool = False) -> str:
    """The TF1 key of a slot: ``slot_key("dense/kernel", "Adam", "v")`` -> ``dense/kernel/Adam_1``.

    Raises KeyError for an (optimizer, slot) pair the table does not know.
    """
    suffix = _SLOT_KEYS.get((optimizer, slot_name, centered)) if centered else None
    suffix = suffix or _SLOT_KEYS.get((optimizer, slot_name, False)) or _SLOT_KEYS.get((optimizer, slot_name, True))
    if suffix is None:
        raise KeyError(f"no name-based convention for slot {slot_name!r} of {optimizer!r}")
    return f"{variable}/{suffix}"


def classify_name(key: str, known: Iterable[str] | None = None) -> NameRole:
    """The role of a name-based key by convention.

    With ``known`` (the checkpoint's keys), a ``<var>/Adam``-style key is a slot only if
    ``<var>`` is one of them; without it the suffix alone decides.
    """
    base, _, last = key.rpartition("/")
    if key == OBJECT_GRAPH_KEY:
        return NameRole(Role.OBJECT_GRAPH)
    if key == "save_counter":
        return NameRole(Role.SAVE_COUNTER)
    if last == "ITERATOR_STATE":
        return NameRole(Role.ITERATOR)
    if last in OPTIMIZER_SCALARS:
        return NameRole(Role.OPTIMIZER, optimizer=OPTIMIZER_SCALARS[last] or None)
    pair = SLOT_SUFFIXES.get(last)
    if pair is not None and base and (known is None or base in _as_set(known)):
        return NameRole(Role.SLOT, slot_of=base, optimizer=pair[0], slot_name=pair[1])
    return NameRole(Role.VARIABLE)


_TELLING_KEYS = frozenset((OBJECT_GRAPH_KEY, "save_counter"))
_TELLING_LASTS = frozenset(("ITERATOR_STATE", *OPTIMIZER_SCALARS, *SLOT_SUFFIXES))
"""The keys, and the last ``/`` segments, for which :func:`classify_name` may say anything but a variable."""


def telling_names() -> frozenset[str]:
    """The last segments, and the keys, for which :func:`may_not_be_variable` says yes: a key ends in one of them
    (after a ``/``) or is one."""
    return _TELLING_LASTS | _TELLING_KEYS


def may_not_be_variable(key: str) -> bool:
    """Whether :func:`classify_name` may give ``key`` another role than a variable (else it gives none)."""
    return key.rpartition("/")[2] in _TELLING_LASTS or key in _TELLING_KEYS


def classify_names(keys: Iterable[str], every: bool = True) -> dict[str, NameRole]:
    """Roles for every key of a name-based checkpoint (slots only for variables that are present), in key order;
    without ``every``, only the keys whose role is more than a plain variable (a dictionary of a million-key
    bundle's variables took 44 MB at once)."""
    listed = keys if isinstance(keys, (list, tuple)) else list(keys)
    telling = _TELLING_LASTS
    candidates = [k for k in listed if k.rpartition("/")[2] in telling or k in _TELLING_KEYS]  # may_not_be_variable
    # the keys asked about - a slot's variable, found among the keys, and the candidates themselves (a centered
    # RMSProp's second slot is one) - rather than a set of every key (32 MB at 10^6: the peak of an extract)
    known = {k.rpartition("/")[0] for k in candidates}.intersection(listed)
    known.update(candidates)
    out = {k: classify_name(k, known) for k in candidates}
    for k, r in out.items():
        if (r.role is Role.SLOT and k.endswith("/RMSProp_1") and r.slot_of is not None
                and f"{r.slot_of}/RMSProp_2" in known):
            out[k] = NameRole(Role.SLOT, slot_of=r.slot_of, optimizer=_CENTERED_MG[0], slot_name=_CENTERED_MG[1])
    _keras_state(out, listed)
    if every:
        variable = NameRole(Role.VARIABLE)  # frozen: one for every key whose last segment no convention names
        return {k: out.get(k, variable) for k in sorted(listed)}
    return {k: r for k in sorted(out) if (r := out[k]).role is not Role.VARIABLE or r.slot_of or r.optimizer
            or r.slot_name}


def keras_scalar(name: str) -> str | None:
    """The optimizer (``""`` when unscoped) whose non-slot state ``name`` is in tf-keras' naming: legacy
    ``Adam/iter``, ``Adam/beta_1`` (a hyperparameter of that class in the optimizer table), ``Nadam/
    momentum_cache``; current ``iteration``. None otherwise."""
    if name == COUNTERS[TF_KERAS]:
        return ""
    head, _, last = name.partition("/")
    fam = family_of_class(head, KERAS_LEGACY) if last and "/" not in last else None
    if fam is None:
        return None
    own = {COUNTERS[KERAS_LEGACY], "learning_rate", *fam.hyper.get(KERAS_LEGACY, ()), fam.extra.get(KERAS_LEGACY)}
    return head if last in own else None


def _keras_state(out: dict[str, NameRole], listed: Sequence[str]) -> None:
    """Re-label, in place, the variables that are tf-keras optimizer state (see the module doc): ``out`` holds the
    roles found so far of some of the keys ``listed``, the others are variables."""
    counter = COUNTERS[TF_KERAS]

    def variable(key: str) -> bool:
        role = out.get(key)
        return role is None or role.role is Role.VARIABLE

    scalars = {k: opt for k in listed if (k == counter or k.count("/") == 1) and variable(k)
               and (opt := keras_scalar(k)) is not None}  # keras_scalar: the counter, or one "/" (a C call first)
    if not scalars:
        return
    keys = set(listed)  # (tf-keras optimizer state found: its slots are looked for among every key)
    for key, opt in scalars.items():
        out[key] = NameRole(Role.OPTIMIZER, optimizer=opt or None)
    if "learning_rate" in keys and variable("learning_rate") and COUNTERS[TF_KERAS] in scalars:
        out["learning_rate"] = NameRole(Role.OPTIMIZER)
    model = {k for k in keys if variable(k)}
    for key in sorted(model):
        parsed = parse_keras_slot(key, model)  # the variable it names is shorter than the key: never the key
        if parsed is not None:
            out[key] = NameRole(Role.SLOT, slot_of=parsed.variable, optimizer=parsed.optimizer,
                                slot_name=parsed.slot)


def _as_set(known: Iterable[str]) -> set[str] | frozenset[str]:
    return known if isinstance(known, (set, frozenset)) else set(known)
