"""``doctor``: would checkpoint CKPT load into the program that wrote TARGET?

When both are object-based (TF2 ``tf.train.Checkpoint`` bundles), they are compared as
``tf.train.Checkpoint.restore`` matches them: by object path, the program's objects bound to the
checkpoint's from the root down (:mod:`formats.concepts.restore_binding`); full names play no part (Keras 3
gives every ``Dense`` kernel of a model the same one). The names in the report are then object paths
(``net/l1/_kernel``: a key without ``/.ATTRIBUTES/VARIABLE_VALUE``), ``missing`` are the target's variables
no checkpoint object is bound to (``status.assert_existing_objects_matched()`` fails on them),
``unexpected`` the checkpoint's that nothing reads, and ``bound`` says which checkpoint path each target
path is read from where the two differ (a layer that moved is still reached through another path, such as
a Keras 3 optimizer's ``_trainable_variables``).

Otherwise both sides are compared by :attr:`TensorEntry.name` (the TF1-style variable name; the object
graph entry is left out), which is what a name-based restore matches on. Either way, full names that
several variables share are flagged (``duplicates``). The report lists:

- ``missing``: names TARGET has and CKPT lacks (a strict restore fails on them);
- ``unexpected``: names only CKPT has (harmless for a restore, usually a sign of a rename);
- ``mismatched``: names on both sides whose shape or dtype differ (a restore fails).

It would load when nothing is missing or mismatched. The missing names are paired with unexpected ones
of the same shape and dtype, scope by scope (:mod:`formats.ops.inspect.pairing`): whole scopes holding
the same variables (``dnn/hiddenlayer_0`` -> ``dense``), known renames (``weights`` -> ``kernel``,
``biases`` -> ``bias``), the only variable of a shape on each side, similar names (``difflib`` ratio
>= 0.6); slots follow their variables. Optimizer state (slots such as ``kernel/Adam``,
``.OPTIMIZER_SLOT/``, ``beta1_power``; the suffixes come from the one optimizer table,
:mod:`formats.concepts.optimizers`) is only paired with state of the same optimizer; a different
optimizer gets a note instead, and ``ignore_optimizer`` leaves all optimizer state out. Missing
optimizer state that CKPT holds in another framework's convention (tf-keras ``Adam/m/dense/kernel``
for TF1 ``dense/kernel/Adam``) is explained by the same table (``optimizer_state``): no rename makes it
load, ``ckpt convert --template`` converts it.
Accepted candidates become rename rules (``map`` rules: one per scope that moved where that renames
nothing else, else one per name; the specific before the general, as the first matching rule wins)
that rewrite CKPT's names into TARGET's: ``dump_rules(report.rules)`` is a rules file for
``ckpt convert --rules`` or ``ckpt diff --rules``.
"""
from __future__ import annotations

from collections import defaultdict

from formats.concepts.optimizers import TF1_SCALARS, TRAINING_SHADOWS
from formats.concepts.roles import SLOT_SUFFIXES
from formats.core.model import OBJECT_GRAPH_KEY, Checkpoint, FormatName, TensorEntry
from formats.core.names import repeated
from formats.core.object_keys import object_path
from formats.core.records import field, record
from formats.ops.inspect.pairing import KNOWN_RENAMES, layer_order, pair_names
from formats.ops.rules import Rule, RuleSet, specific_first

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

__all__ = ["DOCTOR_MATCHES", "Suggestion", "DoctorReport", "diagnose", "is_optimizer_state", "KNOWN_RENAMES", "duplicate_names"]

_SUFFIXES = frozenset(SLOT_SUFFIXES) | frozenset(TRAINING_SHADOWS)
_NON_SLOT_STATE = frozenset(p for p in TF1_SCALARS if p != "global_step")


def _slot(name: str) -> str | None:
    """The optimizer slot suffix of a TF1 name (``Adam_1``, from the optimizer table), ``.OPTIMIZER_SLOT``
    for object keys, else None."""
    if "/.OPTIMIZER_SLOT/" in name:
        return ".OPTIMIZER_SLOT/" + name.split("/.OPTIMIZER_SLOT/", 1)[1]
    last = name.rsplit("/", 1)[-1]
    return last if "/" in name and last in _SUFFIXES else None


def is_optimizer_state(name: str) -> bool:
    """Whether ``name`` is optimizer state rather than a model variable."""
    return _slot(name) is not None or name in _NON_SLOT_STATE or name.startswith("optimizer/")


@record
class Suggestion:
    """A candidate for a missing name: the CKPT name that probably is it, why, and the rule that renames it."""

    missing: str
    candidate: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        """``{"missing", "candidate", "reason"}``."""
        return {"missing": self.missing, "candidate": self.candidate, "reason": self.reason}


def _describe(entry: TensorEntry) -> dict[str, Any]:
    return {"key": entry.key, "shape": list(entry.shape), "dtype": entry.dtype}


@record
class DoctorReport:
    """What :func:`diagnose` found; ``would_load`` when nothing is missing or mismatched."""

    ckpt: str
    target: str
    ckpt_entries: dict[str, TensorEntry] = field(default_factory=dict, repr=False)
    target_entries: dict[str, TensorEntry] = field(default_factory=dict, repr=False)
    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)
    suggestions: list[Suggestion] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    fixed_by_rules: int = 0
    optimizer_state: list[Suggestion] = field(default_factory=list)
    matched_by: str = "name"
    bound: dict[str, str] = field(default_factory=dict)
    duplicates: dict[str, dict[str, list[str]]] = field(default_factory=dict)

    def ckpt_entry(self, name: str) -> TensorEntry:
        """The checkpoint entry target ``name`` is read from (by object path: the one it is bound to)."""
        return self.ckpt_entries[self.bound.get(name, name)]

    @property
    def would_load(self) -> bool:
        """True when every TARGET name is in CKPT with the same shape and dtype."""
        return not (self.missing or self.mismatched)

    def to_json(self) -> dict[str, Any]:
        """The report as JSON; ``rules`` in the rules-file layout (``{"map": [old, new]}`` items)."""
        return {
            "ckpt": self.ckpt, "target": self.target, "would_load": self.would_load,
            "missing": [{"name": n, **_describe(self.target_entries[n])} for n in self.missing],
            "unexpected": [{"name": n, **_describe(self.ckpt_entries[n])} for n in self.unexpected],
            "mismatched": [{"name": n, "ckpt": _describe(self.ckpt_entry(n)),
                            "target": _describe(self.target_entries[n])} for n in self.mismatched],
            "matched_by": self.matched_by,
            "bound": {n: c for n, c in sorted(self.bound.items()) if n != c},
            "duplicate_names": self.duplicates,
            "suggestions": [s.to_json() for s in self.suggestions],
            "rules": [{r.kind: [r.old, r.new]} for r in self.rules],
            "fixed_by_rules": self.fixed_by_rules, "notes": self.notes,
            "optimizer_state": [s.to_json() for s in self.optimizer_state]}


def _by_name(ckpt: Checkpoint, ignore_optimizer: bool, notes: list[str], side: str) -> dict[str, TensorEntry]:
    out: dict[str, TensorEntry] = {}
    for key in sorted(ckpt):
        entry = ckpt[key]
        if key == OBJECT_GRAPH_KEY or entry.role in ("object_graph", "save_counter") \
                or (ignore_optimizer and _is_optimizer(entry)):
            continue  # tf.train.Checkpoint's save_counter: no variable of a program restoring by name
        if entry.name in out:
            notes.append(f"{side}: keys {out[entry.name].key!r} and {key!r} share the name {entry.name!r}")
            continue
        out[entry.name] = entry
    return out


def duplicate_names(ckpt: Checkpoint) -> dict[str, list[str]]:
    """Full (TF1-style) names that several variables of ``ckpt`` share -> their keys, in key order: such a name
    says nothing about which variable is which (Keras 3 names every ``Dense`` kernel of a model
    ``<model>/kernel``). Only object-based checkpoints can hold them; name-based keys are the names."""
    if ckpt.object_graph is None or OBJECT_GRAPH_KEY not in ckpt:
        return {}
    keys = sorted(ckpt)
    # by the names' hashes first (the names themselves, made when asked for, are not all held)
    twice = repeated(hash(name) for _, name in _full_names(ckpt, keys))
    found: dict[str, list[str]] = defaultdict(list)
    if twice:  # the names of those hashes (a hash two names share: each has one key, and is left out below)
        for key, name in _full_names(ckpt, keys):
            if hash(name) in twice:
                found[name].append(key)
    return {name: held for name, held in sorted(found.items()) if len(held) > 1}


def _full_names(ckpt: Checkpoint, keys: list[str]) -> Iterator[tuple[str, str]]:
    """``(key, its full name)`` for each of ``keys`` whose name is not the key itself (the graph's excepted)."""
    for key, entry in zip(keys, ckpt.entries_by_batch(keys)):  # (entries a batch at a time: none kept a key)
        if key != OBJECT_GRAPH_KEY:
            name = entry.name
            if name and name != key:
                yield key, str(name)


def _object_based(ckpt: Checkpoint) -> bool:
    return ckpt.object_graph is not None and OBJECT_GRAPH_KEY in ckpt


DOCTOR_MATCHES = ("auto", "path", "name")
"""How :func:`diagnose` may pair variables: ``auto`` by object path when both sides are object-based, else by
name; ``path`` by object path (both must be object-based); ``name`` by variable name, as a name-based restore
(``tf.compat.v1.train.Saver``, ``init_from_checkpoint``) reads even an object-based checkpoint."""


def diagnose(ckpt: Checkpoint, target: Checkpoint, ignore_optimizer: bool = False,
             match: str = "auto") -> DoctorReport:
    """Compare ``ckpt`` with ``target`` by object path or variable name, as ``match`` (:data:`DOCTOR_MATCHES`)
    says; see the module doc. ``match="path"`` with a side that is not object-based raises
    :class:`~formats.core.errors.UsageError`."""
    if match not in DOCTOR_MATCHES:
        raise ValueError(f"match must be one of {', '.join(DOCTOR_MATCHES)}, not {match!r}")
    if match == "path":
        from formats.ops.compare.keying import require_object_paths

        require_object_paths(target)
        require_object_paths(ckpt)
    report = DoctorReport(ckpt.path, target.path)
    report.duplicates = {side: found for side, found in (("checkpoint", duplicate_names(ckpt)),
                                                         ("target", duplicate_names(target))) if found}
    if match == "path" or match == "auto" and _object_based(ckpt) and _object_based(target):
        _by_object_path(report, ckpt, target, ignore_optimizer)
    else:
        have = report.ckpt_entries = _by_name(ckpt, ignore_optimizer, report.notes, "checkpoint")
        want = report.target_entries = _by_name(target, ignore_optimizer, report.notes, "target")
        report.missing = sorted(n for n in want if n not in have)
        report.unexpected = sorted(n for n in have if n not in want)
        report.mismatched = sorted(n for n in want if n in have and
                                   (want[n].shape, want[n].dtype) != (have[n].shape, have[n].dtype))
    if not ignore_optimizer:
        _explain_optimizer_state(report, ckpt, target)
    keras = _keras_pairs(ckpt, target)
    report.suggestions = _suggest(report) if keras is None else _keras_suggestions(report, keras)
    report.rules = _rules(report)
    if not ignore_optimizer and report.rules:
        _explain_optimizer_state(report, ckpt, target, RuleSet(list(report.rules)))
    report.fixed_by_rules = _fixed(report)
    _optimizer_note(report)
    return report


def _by_object_path(report: DoctorReport, ckpt: Checkpoint, target: Checkpoint, ignore_optimizer: bool) -> None:
    """Fill ``report`` as ``tf.train.Checkpoint.restore`` binds ``target``'s objects to ``ckpt``'s."""
    from formats.concepts.restore_binding import bind_keys

    def entries(side: Checkpoint) -> dict[str, str]:
        return {k: object_path(k) for k in sorted(side) if k != OBJECT_GRAPH_KEY and side[k].role != "object_graph"
                and not (ignore_optimizer and _is_optimizer(side[k]))}

    mine, theirs = entries(target), entries(ckpt)
    report.matched_by = "object path"
    have = report.ckpt_entries = {path: ckpt[key] for key, path in theirs.items()}
    want = report.target_entries = {path: target[key] for key, path in mine.items()}
    bound = bind_keys(target.object_graph, list(target), ckpt.object_graph, list(ckpt))
    report.bound = {path: theirs[bound[key]] for key, path in mine.items() if bound.get(key) in theirs}
    report.missing = sorted(n for n in want if n not in report.bound)
    read = set(report.bound.values())
    report.unexpected = sorted(n for n in have if n not in read)
    report.mismatched = sorted(n for n, c in report.bound.items()
                               if (want[n].shape, want[n].dtype) != (have[c].shape, have[c].dtype))
    report.notes.append("matched by object path, as tf.train.Checkpoint.restore binds objects (full names are "
                        "not used)")
    moved = sorted((n, c) for n, c in report.bound.items() if n != c)
    if moved:
        shown = ", ".join(f"{n} <- {c}" for n, c in moved[:3]) + (f" and {len(moved) - 3} more" if len(moved) > 3
                                                                   else "")
        report.notes.append(f"{len(moved)} of the target's variables are read from another object path ({shown}): "
                            "the checkpoint reaches those objects by a path both sides share")
    for side, found in report.duplicates.items():
        shown = ", ".join(f"{name!r} ({len(keys)} variables)" for name, keys in list(found.items())[:3])
        report.notes.append(f"{side}: {len(found)} full name(s) shared by several variables ({shown}); full names "
                            "cannot tell them apart, object paths can")


def _is_optimizer(entry: TensorEntry) -> bool:
    return entry.role in ("slot", "optimizer") or is_optimizer_state(entry.name)


def _same_kind(a: TensorEntry, b: TensorEntry) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and _is_optimizer(a) == _is_optimizer(b)


def _explain_optimizer_state(report: DoctorReport, ckpt: Checkpoint, target: Checkpoint,
                             rules: RuleSet | None = None) -> None:
    """Missing optimizer state that the checkpoint holds under another framework's names and meanings
    (TF1 ``dense/kernel/Adam`` for tf-keras ``Adam/m/dense/kernel``), read through the optimizer table,
    the checkpoint's variables renamed by ``rules`` (the suggested ones, on the second pass)."""
    from formats.concepts.optimizers import equivalence
    from formats.ops.convert.optimizer_state import read_optimizer_state
    from formats.ops.convert.conversion_source import source_tensors

    have = read_optimizer_state(ckpt, source_tensors(ckpt, rules))
    want = read_optimizer_state(target, source_tensors(target, None))
    if not (have.known and want.known) or have.framework == want.framework:
        return
    missing = set(report.missing) - {s.missing for s in report.optimizer_state + report.suggestions}
    pairs = []
    for (variable, meaning), state in sorted(want.slots.items()):
        own = have.slots.get((variable, meaning))
        if state.tensor.original in missing and own is not None:
            pairs.append(Suggestion(state.tensor.original, own.tensor.original,
                                    f"slot {meaning} of {variable} ({have.title} -> {want.title})"))
    if not pairs:
        return
    assert have.family is not None and want.family is not None
    why = equivalence(have.family, have.framework or "", want.family, want.framework or "")
    report.optimizer_state += pairs
    renamed = " once renamed by the suggested rules" if rules else ""
    if why is not None:
        report.notes.append(f"{len(pairs)} missing slot(s) are the checkpoint's optimizer state under other "
                            f"names{renamed}, but {why}")
    else:
        report.notes.append(f"{len(pairs)} missing slot(s) are the checkpoint's {have.title} state under "
                            f"{want.title} names{renamed} (e.g. {pairs[0].missing} is {pairs[0].candidate}): "
                            "`ckpt convert --template` converts them, with the step count and any transform")


def _suggest(report: DoctorReport) -> list[Suggestion]:
    """Candidates for the missing names, scope-consistent (see :mod:`formats.ops.inspect.pairing`)."""
    explained = {s.missing for s in report.optimizer_state}
    taken = {s.candidate for s in report.optimizer_state}
    pairs = pair_names(report.ckpt_entries, report.target_entries,
                       [n for n in report.missing if n not in explained],
                       [n for n in report.unexpected if n not in taken], _slot, _is_optimizer)
    return [Suggestion(p.missing, p.candidate, p.reason) for p in pairs]


def _keras_pairs(ckpt: Checkpoint, target: Checkpoint) -> list[tuple[str, str, str]] | None:
    """For a Keras checkpoint (a Keras file, or a TF-format ``save_weights``) against a Keras target: ``(target
    name, checkpoint name, how)`` of every weight ``ckpt convert --template TARGET`` pairs under another name - the pairing of
    :func:`~formats.ops.convert.cross.matching.match_variables`, where automatic layer names are never evidence;
    None for any other target."""
    from formats.ops.convert.cross.keras_targets import KERAS3_LAYOUTS
    from formats.ops.convert.cross.matching import match_variables
    from formats.ops.convert.cross.variables import keras_variables
    from formats.ops.convert.plan import ConversionPlan

    keras = (*KERAS3_LAYOUTS, FormatName.KERAS2_H5.value)
    if target.format not in keras or ckpt.format not in (*keras, FormatName.TF_OBJECT.value):
        return None
    sources, _ = keras_variables(ckpt)
    targets, _ = keras_variables(target)
    if not sources or not targets:
        return None
    plan = ConversionPlan(ckpt.path, str(target.format), target.path)
    return [(p.target.name, p.source.name, p.how) for p in match_variables(sources, targets, plan)
            if p.source is not None and p.source.name != p.target.name]


def _keras_suggestions(report: DoctorReport, pairs: list[tuple[str, str, str]]) -> list[Suggestion]:
    """The Keras pairing as suggestions; a name both sides have that the pairing gives to other weights (an
    automatic ``dense_4`` on each side) is missing and unexpected, not a mismatch no rename can fix."""
    moved = {want for want, have, _ in pairs} | {have for _, have, _ in pairs}
    taken = [n for n in report.mismatched if n in moved]
    report.mismatched = [n for n in report.mismatched if n not in moved]
    report.missing = sorted({*report.missing, *(n for n in taken if n in report.target_entries)})
    report.unexpected = sorted({*report.unexpected, *(n for n in taken if n in report.ckpt_entries)})
    return [Suggestion(want, have, how) for want, have, how in pairs
            if want in report.target_entries and have in report.ckpt_entries]


def _split(old: str, new: str) -> tuple[str, str]:
    """The differing prefixes of two names that share a tail of whole segments (``""`` when none is shared)."""
    a, b = old.split("/"), new.split("/")
    n = 0
    while n < min(len(a), len(b)) - 1 and a[-1 - n] == b[-1 - n]:
        n += 1
    return "/".join(a[:len(a) - n]), "/".join(b[:len(b) - n])


def _rules(report: DoctorReport) -> list[Rule]:
    """One map rule per scope that moved (``dnn/hiddenlayer_0=dense``) where that is safe, else one per
    suggestion; rules another one implies are left out, and specific rules come before general ones."""
    groups: dict[tuple[str, str], list[Suggestion]] = defaultdict(list)
    for s in report.suggestions:
        groups[_split(s.candidate, s.missing)].append(s)
    rules = []
    for (old, new), items in sorted(groups.items(), key=lambda item: layer_order(item[0][0])):
        if _prefix_is_safe(report, old, new, [s.candidate for s in items]):
            rules.append(Rule("map", old, new))
        else:
            rules.extend(Rule("map", s.candidate, s.missing) for s in items)
    return specific_first(_implied_left_out(rules))


def _prefix_is_safe(report: DoctorReport, old: str, new: str, paired: list[str]) -> bool:
    """A prefix rule is safe when every CKPT name it rewrites is (or lies under) a paired name, or lands on
    a TARGET name."""
    rule = Rule("map", old, new)
    for name in report.ckpt_entries:
        renamed = rule.apply(name)
        if renamed is None or renamed in report.target_entries:
            continue
        if not any(name == p or name.startswith(p + "/") for p in paired):
            return False
    return True


def _implied_left_out(rules: list[Rule]) -> list[Rule]:
    """``rules`` without those a more general rule already makes (``a/k=b/k`` beside ``a=b``)."""
    def implied(rule: Rule) -> bool:
        return any(other is not rule and other.old != rule.old and other.apply(rule.old) == rule.new
                   for other in rules)

    return [r for r in rules if not implied(r)]


def _fixed(report: DoctorReport) -> int:
    """How many missing names the rules would supply (with the right shape and dtype)."""
    return len(report.missing) - len(_unsupplied(report))


def _unsupplied(report: DoctorReport) -> list[str]:
    """The missing names the rules would not supply (with the right shape and dtype)."""
    rules = RuleSet(list(report.rules))
    renamed = {rules.apply(n): e for n, e in report.ckpt_entries.items()}
    return [n for n in report.missing if not (n in renamed and _same_kind(renamed[n], report.target_entries[n]))]


def _optimizer_note(report: DoctorReport) -> None:
    shapes = [n for n in report.mismatched if report.ckpt_entry(n).shape != report.target_entries[n].shape]
    if shapes:
        report.notes.append(f"{len(shapes)} variable{'s' if len(shapes) != 1 else ''} differ in shape (different "
                            "layer sizes?); no rename can fix that")
    theirs = sorted({_slot(n) or "" for n in report.missing if _slot(n)})
    ours = sorted({_slot(n) or "" for n in report.unexpected if _slot(n)})
    if theirs and ours and theirs != ours:
        report.notes.append(f"optimizer differs: the checkpoint has {', '.join(ours)} slots, the target expects "
                            f"{', '.join(theirs)}; restore the model variables only (--ignore-optimizer shows them)")
    elif any(is_optimizer_state(n) for n in _unsupplied(report)):
        report.notes.append("optimizer state is missing; a restore of the model variables alone can still work "
                            "(--ignore-optimizer)")
