"""Which tensors an edit keeps: a selection by key or variable name, optimizer state left out, slots
following their variables.

Patterns are the ones every command uses (:mod:`formats.core.selection`: exact keys or globs on the
whole key, ``*`` crossing ``/``); with ``by="name"`` they match each tensor's TF1-style variable
name instead (``net/dense/kernel`` rather than ``net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE``). A
tensor is kept when it matches a ``select`` pattern (every tensor when there are none) and no
``exclude`` pattern; a ``tf.train.Checkpoint``'s own ``save_counter``, which every program restoring
one has, is kept whatever ``select`` says (only ``exclude`` leaves it out). ``drop_optimizer`` leaves
out slots and optimizer state (hyperparameters, iteration counters, ``global_step``). A slot whose variable is left out is left out too: nothing
could restore it.
"""
from __future__ import annotations

from formats.core.model import OBJECT_GRAPH_KEY, OPTIMIZER_ROLES, Checkpoint, Role
from formats.core.records import field, record
from formats.core.selection import nothing_selected, select_keys
from formats.ops.convert.plan import ERROR, WARNING, Problem

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from formats.core.model import TensorEntry

__all__ = ["Selection", "choose_tensors", "OPTIMIZER_ROLES"]


@record
class Selection:
    """Every tensor's key but the object graph's (in key order), the keys kept (in key order), why each other key is
    left out, and the problems found."""

    keys: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    dropped: dict[str, str] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)


def choose_tensors(ckpt: Checkpoint, select: Sequence[str] = (), exclude: Sequence[str] = (), by: str = "key",
                   drop_optimizer: bool = False) -> Selection:
    """Decide, for every tensor of ``ckpt`` but the object graph, whether an edit keeps it."""
    keys = sorted(k for k in ckpt if k != OBJECT_GRAPH_KEY)
    subject = {k: str(ckpt[k].name) for k in keys} if by == "name" else None  # (None: each key's own)
    special = {k: e for k, e in ckpt.items_maybe_not_variables() if k != OBJECT_GRAPH_KEY}  # (any other: a variable)
    roles = {k: str(e.role) for k, e in special.items()}
    out = Selection(keys)
    chosen = _matching(out, ckpt.path, keys, subject, select, by) if select else None  # (None: every key)
    excluded = _matching(out, ckpt.path, keys, subject, exclude, by) if exclude else set()
    if chosen is not None or excluded or drop_optimizer:
        for key in keys:
            if chosen is not None and key not in chosen and roles.get(key) != Role.SAVE_COUNTER:
                out.dropped[key] = "not selected"
            elif key in excluded:
                out.dropped[key] = "excluded"
            elif drop_optimizer and (role := roles.get(key)) in OPTIMIZER_ROLES:  # (none: a variable)
                out.dropped[key] = "optimizer slot" if role == Role.SLOT else "optimizer state"
    if drop_optimizer and not any(r.startswith("optimizer") for r in out.dropped.values()):
        out.problems.append(Problem("optimizer", ckpt.path, "there is no optimizer state to leave out", WARNING))
    if out.dropped:
        _orphaned_slots(special, roles, out)
    out.kept = [k for k in keys if k not in out.dropped]
    if not out.kept:
        out.problems.append(Problem("selection", ckpt.path, "nothing would be left to write", ERROR))
    return out


def _matching(out: Selection, path: str, keys: list[str], subject: dict[str, str] | None, patterns: Sequence[str],
              by: str) -> set[str]:
    """The keys whose subject (key or name; ``subject`` None: the key itself) matches one of ``patterns``; a
    problem per pattern that matches none."""
    subjects = keys if subject is None else sorted(set(subject.values()))  # (the keys: sorted, each once)
    hits, unmatched = select_keys(subjects, list(patterns))
    if unmatched:
        error = nothing_selected(path, unmatched, by, among=subjects)
        out.problems.append(Problem("selection", ", ".join(unmatched), f"{error.message} ({error.hint})", ERROR))
    wanted = set(hits)
    return wanted if subject is None else {k for k in keys if subject[k] in wanted}


def _orphaned_slots(special: Mapping[str, TensorEntry], roles: Mapping[str, str], out: Selection) -> None:
    """Leave out every kept slot (among the ``special`` tensors: a variable is none) whose variable is left out (one
    warning per variable)."""
    orphans: dict[str, list[str]] = {}
    for key in sorted(special):  # (in key order, as the warnings are given)
        if key in out.dropped or roles[key] != Role.SLOT:
            continue
        slot_of = special[key].slot_of
        if slot_of and slot_of in out.dropped:
            orphans.setdefault(slot_of, []).append(key)
    for variable, slots in orphans.items():
        for key in slots:
            out.dropped[key] = f"slot of {variable}, which is left out"
        out.problems.append(Problem("selection", variable, f"{len(slots)} slot(s) of this variable left out with it",
                                    WARNING, slots))
