"""``verify PATH --against SRC``: does PATH hold exactly SRC's tensors, paired by key, variable name or object path?

By key (the default) both checkpoints are compared as they are. By name (``match="name"``) each side is
keyed by its entries' TF1-style variable names (the object graph left out), so an object-based
conversion of a name-based checkpoint, or a Keras file and a bundle, can be checked against their
source. By object path (``match="path"``, both object-based) each side is keyed by its tensors' object
paths (:mod:`formats.ops.compare.keying`), where several tensors share a full name. ``rules`` rename SRC's names first - the rules the conversion was given - so that they match
PATH's. Values are compared chunk by chunk (:func:`formats.core.roundtrip.compare_checkpoints`).
"""
from __future__ import annotations

from formats.core.model import Checkpoint, TensorEntry
from formats.core.roundtrip import Progress, RoundTripReport, compare_checkpoints
from formats.ops.compare.keying import SIDE_MATCHES, pairing_names
from formats.ops.rules import RuleSet

__all__ = ["keyed", "verify_against"]


def keyed(ckpt: Checkpoint, match: str, rules: RuleSet | None = None,
          notes: list[str] | None = None) -> dict[str, TensorEntry]:
    """``ckpt``'s entries keyed by key (``match="key"``), by variable name or by object path, renamed by ``rules``
    (:func:`~formats.ops.compare.keying.pairing_names`); a name two keys share keeps the first key (and a
    note says so)."""
    names, clashes = pairing_names(ckpt, match, rules=rules or None)
    if notes is not None:
        notes += [f"{ckpt.path}: {key!r} and {names[name]!r} both pair as {name!r}; {key!r} left out"
                  for key, name in clashes]
    return {name: ckpt[key] for name, key in names.items()}


def verify_against(out: Checkpoint, src: Checkpoint, *, match: str = "key", rules: RuleSet | None = None,
                   path: str = "", against: str = "",
                   progress: Progress | None = None) -> tuple[RoundTripReport, list[str]]:
    """Compare ``out`` with ``src`` (see the module doc): the report, and notes (names two keys share,
    rules that matched nothing)."""
    if match not in SIDE_MATCHES:
        raise ValueError(f"match must be one of {', '.join(SIDE_MATCHES)}, not {match!r}")
    notes: list[str] = []
    actual = keyed(out, match, None, notes)
    expected = keyed(src, match, rules, notes)
    report = compare_checkpoints(actual, expected, path=path or out.path, against=against or src.path,
                                 progress=progress)
    if rules:
        notes += [f"rule {rule} matched nothing" for rule in rules.unused()]
    return report, notes

