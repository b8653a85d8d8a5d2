"""Pair a source's weights with a template's: by name where the names agree, else layer by layer
by kind and shapes; what cannot be paired with certainty is reported, never guessed.

1. Names: a template weight takes the source weight with the same Keras name (after rules).
2. Layers: the weights left over are grouped by owner (the name without its last segment). A
   template layer and a source layer are paired when each is the only one compatible with the
   other: as many weights, in the same order, with equal shapes and dtypes and equal kinds
   (``kernel``, ``gamma``, ...) where both sides know them. Several compatible layers on either
   side is an ambiguity: an error listing the candidates (a ``--map`` rule resolves it).
"""
from __future__ import annotations

from formats.core.records import record
from formats.ops.convert.plan import ERROR, WARNING, ConversionPlan
from formats.ops.convert.cross.variables import KerasVar

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["Pairing", "match_variables"]


@record
class Pairing:
    """A template weight and the source weight that fills it (None when none does); ``how`` says why."""

    target: KerasVar
    source: KerasVar | None
    how: str = ""


def match_variables(sources: Sequence[KerasVar], targets: Sequence[KerasVar], plan: ConversionPlan) -> list[Pairing]:
    """One :class:`Pairing` per target, in target order; problems are added to ``plan``."""
    by_name: dict[str, KerasVar] = {}
    for var in sources:
        if var.name in by_name:
            plan.add("duplicate-name", var.name, f"{by_name[var.name].key!r} and {var.key!r} are both named "
                     f"{var.name!r}; rename one with --map/--regex", ERROR, [by_name[var.name].key, var.key])
        by_name.setdefault(var.name, var)
    pairs = {t.key: Pairing(t, by_name.get(t.name), "name") for t in targets}
    used = {p.source.key for p in pairs.values() if p.source is not None}
    _match_layers([s for s in sources if s.key not in used], [t for t in targets if pairs[t.key].source is None],
                  pairs, plan)
    for pairing in pairs.values():
        _check(pairing, plan)
    return [pairs[t.key] for t in targets]


def _groups(variables: Sequence[KerasVar]) -> dict[str, list[KerasVar]]:
    groups: dict[str, list[KerasVar]] = {}
    for var in variables:
        groups.setdefault(var.owner, []).append(var)
    return groups


def _compatible(a: list[KerasVar], b: list[KerasVar]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if not x.kind.isdigit() and not y.kind.isdigit() and x.kind != y.kind:
            return False
    return True


def _match_layers(sources: list[KerasVar], targets: list[KerasVar], pairs: dict[str, Pairing],
                  plan: ConversionPlan) -> None:
    src_groups, tgt_groups = _groups(sources), _groups(targets)
    for owner, tvars in tgt_groups.items():
        candidates = [s for s, svars in src_groups.items() if _compatible(svars, tvars)]
        if not candidates:
            continue
        rivals = [t for t, other in tgt_groups.items() if _compatible(src_groups[candidates[0]], other)]
        if len(candidates) > 1 or len(rivals) > 1:
            shown = candidates if len(candidates) > 1 else rivals
            plan.add("ambiguous", owner or "(model)", f"layer {owner!r} of the template could be any of "
                     f"{len(shown)} layers with the same kinds and shapes; pair them with --map OLD=NEW",
                     ERROR, shown)
            continue
        source = candidates[0]
        for svar, tvar in zip(src_groups[source], tvars):
            pairs[tvar.key] = Pairing(tvar, svar, f"layer {source!r} -> {owner!r} by kind and shapes")
        plan.add("fallback", owner, f"names differ: source layer {source!r} paired with template layer "
                 f"{owner!r} by kinds and shapes", WARNING, [source])
        del src_groups[source]


def _check(pairing: Pairing, plan: ConversionPlan) -> None:
    source, target = pairing.source, pairing.target
    if source is None:
        return
    if source.shape != target.shape:
        plan.add("shape", target.key, f"{source.key!r} has shape {list(source.shape)}, the template's "
                 f"{target.name!r} has {list(target.shape)}", ERROR, [source.key])
    elif source.dtype != target.dtype:
        plan.add("dtype", target.key, f"{source.key!r} is {source.dtype}, the template's {target.name!r} is "
                 f"{target.dtype}", ERROR, [source.key])
