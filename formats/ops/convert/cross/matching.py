"""Pair a source's weights with a template's, as Keras pairs them and better; what cannot be paired with
certainty is reported, never guessed.

A weight is known by its layer (the name without its last segment, ``mha/query``) and its variable name
(``kernel``), with Keras 2's variable names read as Keras 3 names them (``depthwise_kernel`` of a
``DepthwiseConv2D`` is ``kernel``: :func:`~formats.concepts.keras_layers.keras3_names`).

1. **Automatic layer names are never evidence.** ``dense_3`` says only that it was the fourth ``Dense``
   created in its process. Layers with automatic names of one class (``dense``, ``dense_1``, ... on one
   side, ``dense_4``, ``dense_5``, ... on the other) are paired by the order of their numbers when both sides
   have as many of them; otherwise they are left to step 3.
2. **Names.** A template weight takes the source weight of the same layer and variable name.
0. **Object paths**, for a bundle whose weights share full names (a Keras 3 program's ``tf.train.Checkpoint``
   names every ``Dense`` kernel ``<model>/kernel``; such weights are named by object path): a template weight
   takes the source weight whose object path ends in the template weight's layer path and variable
   (``net/l1/_kernel`` for ``l1`` / ``kernel``), one to one.
3. **Layers.** The weights left over are paired layer by layer, each layer's variables by the layer's own
   order (the order both Keras versions store them in, :data:`~formats.concepts.keras_layers.VARIABLES`):
   a template layer and a source layer of the same name, as many variables with equal shapes and dtypes,
   variable names equal where both sides know them; else of the same name as Keras 3 spells names
   (:func:`~formats.concepts.keras_layers.keras3_spelling`: MobileNetV3's ``Conv/BatchNorm`` is ``conv_bn``),
   one on each side; else the only source layer compatible with the template
   layer (and it with no other). Several compatible layers is an ambiguity: an error naming the candidates
   and the ``--map`` line that pairs the first (``--map`` renames the source's layer to the template's).

Every pairing that is not by equal names says how in its plan row (``--dry-run``), and one warning counts
them.
"""
from __future__ import annotations

from formats.concepts.keras_layers import automatic_family, keras3_names, keras3_spelling
from formats.core.records import record, replace
from formats.ops.convert.plan import ERROR, WARNING, ConversionPlan
from formats.ops.convert.cross.variables import KerasVar, split_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["Pairing", "match_variables"]

NAME = "name"
"""``Pairing.how`` of a pairing by equal names."""


@record
class Pairing:
    """A template weight and the source weight that fills it (None when none does); ``how`` says why."""

    target: KerasVar
    source: KerasVar | None
    how: str = ""


def match_variables(sources: Sequence[KerasVar], targets: Sequence[KerasVar], plan: ConversionPlan) -> list[Pairing]:
    """One :class:`Pairing` per target, in target order; problems are added to ``plan``."""
    by_path = _by_object_path(sources, targets)
    if by_path:
        used = {p.source.key for p in by_path.values() if p.source is not None}
        rest = _match_by_name([s for s in sources if s.key not in used], [t for t in targets if t.key not in by_path],
                              plan)
        by_path.update((p.target.key, p) for p in rest)
        _count_fallbacks(list(by_path.values()), plan)
        return [by_path[t.key] for t in targets]
    return _match_by_name(sources, targets, plan)


def _path_name(var: KerasVar) -> str:
    """A bundle weight's object path as a Keras 3 file's ``<layer path>/<variable>``: ``net/l1/_kernel`` ->
    ``net/l1/kernel`` (Keras 3 keeps a ``Dense`` kernel as ``_kernel``)."""
    owner, _, last = var.object_path.rpartition("/")
    return f"{owner}/{last.lstrip('_')}" if owner else last.lstrip("_")


def _by_object_path(sources: Sequence[KerasVar], targets: Sequence[KerasVar]) -> dict[str, Pairing]:
    """Target key -> its pairing, by object path, for the source weights a bundle names by object path (their
    full names are shared: see :mod:`~formats.ops.convert.cross.variables`): a template weight ``l1`` /
    ``kernel`` (a Keras 3 file's layer path and variable) takes the one such source weight whose object path
    ends in ``l1/kernel`` (``net/l1/_kernel``: the model's attribute names, as both files keep them), when no
    other template weight would take it."""
    named = [s for s in sources if s.object_path and s.original == s.name == s.object_path]
    if not named:
        return {}
    found: dict[str, list[KerasVar]] = {}
    for t in targets:
        if t.object_path and not t.object_path.isdigit():
            want = f"{t.object_path}/{t.kind}"
            found[t.key] = [s for s in named if _path_name(s) == want or _path_name(s).endswith("/" + want)]
    claims: dict[str, int] = {}
    for hits in found.values():
        for s in hits:
            claims[s.key] = claims.get(s.key, 0) + 1
    by_key = {t.key: t for t in targets}
    return {key: Pairing(by_key[key], hits[0], f"by object path: {hits[0].object_path} -> {by_key[key].object_path}")
            for key, hits in found.items() if len(hits) == 1 and claims[hits[0].key] == 1}


def _match_by_name(sources: Sequence[KerasVar], targets: Sequence[KerasVar], plan: ConversionPlan) -> list[Pairing]:
    """One :class:`Pairing` per target, by name (steps 1-3 of the module doc)."""
    prefix = _model_prefix(sources, targets)
    if prefix:  # a Keras 2 subclassed model's weights are named under the model's name; Keras 3's are not
        originals = {var.key: var for var in sources}
        sources = [replace(var, name=var.name[len(prefix):], original=var.original[len(prefix):]) for var in sources]
        pairings = _match(sources, targets, plan)
        plan.add("fallback", "(pairing)", f"every source weight is named under {prefix[:-1]!r} (a Keras 2 subclassed "
                 "model's name) and no template weight is: paired without it", WARNING, [prefix[:-1]])
        note = f"the model's name {prefix[:-1]!r} left out"
        return [Pairing(p.target, originals[p.source.key], note if p.how == NAME else f"{note}; {p.how}")
                if p.source is not None else p for p in pairings]
    return _match(sources, targets, plan)


def _model_prefix(sources: Sequence[KerasVar], targets: Sequence[KerasVar]) -> str:
    """``"blocks/"`` when every source weight is named under one first segment that names no template weight
    (a Keras 2 subclassed model ``Blocks`` names its layers' weights ``blocks/dense/kernel``), else ``""``."""
    heads = {var.name.split("/", 1)[0] for var in sources if "/" in var.name}
    if len(heads) != 1 or any("/" not in var.name or var.name != var.original for var in sources) or not targets:
        return ""
    head = heads.pop()
    if any(_top(t.name) == head for t in targets) or any(var.name.count("/") < 2 for var in sources):
        return ""
    return f"{head}/"


def _match(sources: Sequence[KerasVar], targets: Sequence[KerasVar], plan: ConversionPlan) -> list[Pairing]:
    seen: dict[str, KerasVar] = {}
    for var in sources:
        if var.name in seen:
            plan.add("duplicate-name", var.name, f"{seen[var.name].key!r} and {var.key!r} are both named "
                     f"{var.name!r}; rename one with --map/--regex", ERROR, [seen[var.name].key, var.key])
        seen.setdefault(var.name, var)
    ruled = {_top(v.name) for v in sources if v.name != v.original}  # layer names a --map/--rules gave
    ranks = _automatic_ranks(sources, targets, ruled)
    src_names = _matching_names(sources, ranks, ruled)
    tgt_names = _matching_names(targets, {t: t for t in ranks.values()}, ruled)
    by_name: dict[str, KerasVar] = {}
    for var in sources:
        name = src_names[var.key]
        if name is not None:
            by_name.setdefault(name, var)
    pairs: dict[str, Pairing] = {}
    for t in targets:
        name = tgt_names[t.key]
        source = by_name.get(name) if name is not None else None
        how = _rank_note(source, t, ranks) if source is not None and source.name != t.name else NAME
        pairs[t.key] = Pairing(t, source, how)
    used = {p.source.key for p in pairs.values() if p.source is not None}
    _match_layers([s for s in sources if s.key not in used], [t for t in targets if pairs[t.key].source is None],
                  pairs, plan, src_names, tgt_names)
    for pairing in pairs.values():
        _check(pairing, plan)
    _count_fallbacks(list(pairs.values()), plan)
    return [pairs[t.key] for t in targets]


def _top(name: str) -> str:
    return name.split("/", 1)[0]


def _automatic_ranks(sources: Sequence[KerasVar], targets: Sequence[KerasVar], ruled: set[str]) -> dict[str, str]:
    """Source layer name -> template layer name for layers named automatically on both sides: the k-th of a
    class (by the numbers Keras appended) to the k-th, where both sides have as many of that class. A source
    layer a rule renamed (``--map``; its name in ``ruled``) keeps the name the user gave it, and so does the
    template layer of that name."""
    src = _families([_top(v.name) for v in sources if _top(v.name) not in ruled])
    tgt = _families([_top(v.name) for v in targets if _top(v.name) not in ruled])
    ranks: dict[str, str] = {}
    for family, names in src.items():
        if len(tgt.get(family, [])) == len(names):
            ranks.update(zip(names, tgt[family]))
    return ranks


def _families(names: list[str]) -> dict[str, list[str]]:
    """Automatic layer names by class, each class's in the order Keras numbered them."""
    found: dict[str, dict[str, int]] = {}
    for name in names:
        family = automatic_family(name)
        if family is not None:
            found.setdefault(family[0], {})[name] = family[1]
    return {family: sorted(members, key=members.__getitem__) for family, members in found.items()}


def _matching_names(variables: Sequence[KerasVar], ranks: dict[str, str], ruled: set[str]) -> dict[str, str | None]:
    """Key -> the name a weight is paired by: its layer (an automatically named one as ``ranks`` pairs it) and
    its variable name as Keras 3 names it; None for a weight whose layer name is automatic, unpaired and not
    one a rule gave (``ruled``): such a name is no evidence, step 3 pairs it."""
    out: dict[str, str | None] = {}
    for owner, group in _groups(variables).items():
        kinds = keras3_names([v.kind for v in group])
        for var, kind in zip(group, kinds):
            name = f"{owner}/{kind}" if owner else kind
            top, sep, rest = name.partition("/")
            if top in ranks:
                out[var.key] = ranks[top] + sep + rest
            elif automatic_family(top) is not None and top not in ruled and sep:
                out[var.key] = None
            else:
                out[var.key] = name
    return out


def _rank_note(source: KerasVar, target: KerasVar, ranks: dict[str, str]) -> str:
    top = _top(source.name)
    if ranks.get(top, top) != top:
        return f"automatic names: {top!r} -> {ranks[top]!r} (as many of the class on both sides, in creation order)"
    return f"layer {split_name(source.name)[0]!r} -> {split_name(target.name)[0]!r}: variable names as Keras 3 names them"


def _groups(variables: Sequence[KerasVar]) -> dict[str, list[KerasVar]]:
    groups: dict[str, list[KerasVar]] = {}
    for var in variables:
        groups.setdefault(var.owner, []).append(var)
    return groups


def _known(kind: str) -> bool:
    return not kind.isdigit()


def _compatible(a: list[KerasVar], b: list[KerasVar]) -> bool:
    """As many variables, in order with equal shapes and dtypes, and equal names where both sides know them."""
    if len(a) != len(b):
        return False
    kinds_a, kinds_b = keras3_names([v.kind for v in a]), keras3_names([v.kind for v in b])
    for x, y, kx, ky in zip(a, b, kinds_a, kinds_b):
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if _known(kx) and _known(ky) and kx != ky:
            return False
    return True


def _owner(var: KerasVar, names: dict[str, str | None]) -> str | None:
    name = names.get(var.key)
    return split_name(name)[0] if name is not None else None


def _match_layers(sources: list[KerasVar], targets: list[KerasVar], pairs: dict[str, Pairing],
                  plan: ConversionPlan, src_names: dict[str, str | None], tgt_names: dict[str, str | None]) -> None:
    src_groups, tgt_groups = _groups(sources), _groups(targets)
    src_owner = {owner: _owner(vs[0], src_names) for owner, vs in src_groups.items()}
    ambiguous: list[tuple[str, list[str]]] = []
    for owner, tvars in tgt_groups.items():
        target_owner = _owner(tvars[0], tgt_names)
        same = [s for s, svars in src_groups.items()
                if src_owner[s] is not None and src_owner[s] == target_owner and _compatible(svars, tvars)]
        if same:
            _pair(src_groups.pop(same[0]), tvars, pairs, f"layer {same[0]!r} -> {owner!r} by the layer's variable "
                  "order (variable names not stored, or different)")
            continue
        spelling = keras3_spelling(target_owner) if target_owner is not None else None
        spelled = [s for s, svars in src_groups.items() if spelling is not None and (o := src_owner[s]) is not None
                   and keras3_spelling(o) == spelling and _compatible(svars, tvars)]
        if len(spelled) == 1 and target_owner is not None and _spelled_once(target_owner, tgt_groups, tgt_names):
            _pair(src_groups.pop(spelled[0]), tvars, pairs, f"layer {spelled[0]!r} -> {owner!r}: the same name as "
                  "Keras 3 spells it")
            continue
        candidates = [s for s, svars in src_groups.items() if _compatible(svars, tvars)]
        if not candidates:
            continue
        rivals = [t for t, other in tgt_groups.items() if _compatible(src_groups[candidates[0]], other)]
        if len(candidates) > 1 or len(rivals) > 1:
            ambiguous.append((owner, candidates if len(candidates) > 1 else rivals))
            continue
        source = candidates[0]
        _pair(src_groups.pop(source), tvars, pairs, f"layer {source!r} -> {owner!r}: the only layer with these "
              "variables (names differ)")
    for owner, shown in ambiguous:
        if all(pairs[t.key].source is not None for t in tgt_groups[owner]):
            continue
        first = shown[0] if shown[0] in src_groups else None
        fix = f"; if it is {first!r}, add: --map {first}={owner}" if first is not None and owner else ""
        plan.add("ambiguous", owner or "(model)", f"layer {owner!r} of the template could be any of "
                 f"{len(shown)} layers with the same variables ({', '.join(shown)}){fix}", ERROR, shown)


def _spelled_once(owner: str, groups: dict[str, list[KerasVar]], names: dict[str, str | None]) -> bool:
    """Whether ``owner`` is the only layer of ``groups`` with its Keras 3 spelling."""
    spelling = keras3_spelling(owner)
    return sum(1 for vs in groups.values() if (o := _owner(vs[0], names)) is not None
               and keras3_spelling(o) == spelling) == 1


def _pair(svars: list[KerasVar], tvars: list[KerasVar], pairs: dict[str, Pairing], how: str) -> None:
    for svar, tvar in zip(svars, tvars):
        pairs[tvar.key] = Pairing(tvar, svar, how)


def _count_fallbacks(pairings: list[Pairing], plan: ConversionPlan) -> None:
    """One warning counting the layers paired otherwise than by equal names (each row says how)."""
    layers = sorted({split_name(p.target.name)[0] for p in pairings if p.source is not None and p.how != NAME})
    if layers:
        shown = ", ".join(layers[:5]) + (f" and {len(layers) - 5} more" if len(layers) > 5 else "")
        plan.add("fallback", "(pairing)", f"{len(layers)} template layer(s) paired otherwise than by equal names "
                 f"({shown}); --dry-run lists how each was paired", WARNING, layers)


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
