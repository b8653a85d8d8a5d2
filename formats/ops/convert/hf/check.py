"""What transformers 5 checks when it loads a ``config.json`` and its weights, checked on the plan before anything
is written, each failure one problem naming the configuration field:

- the counts (``each``: ``num_hidden_layers``, ``num_layers``, ...) agree with the blocks the checkpoint holds
  (:func:`count_problems`: one error for the field, not one per tensor);
- the block sizes of a ``locate`` (Funnel's ``block_sizes``) add up to the layers the checkpoint numbers in those
  blocks (:func:`locate_problems`);
- a tied parameter with a condition (T5's ``lm_head.weight`` when ``tie_word_embeddings``) agrees with whether the
  checkpoint holds a tensor for it (:func:`tie_problems`);
- the family's ``divides`` (``hidden_size`` a multiple of ``num_attention_heads``, at least one head) and
  ``architectures`` naming a class transformers 5 has for the ``model_type`` (``transformers5.toml``, written by
  ``scripts/gen_transformers5_classes.py``) (:func:`config_problems`).

The sizes themselves are checked against the tensors' shapes by :mod:`.plan`.
"""
from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable

from formats.ops.convert.hf.family import PLACEHOLDER, Family, Layout, evaluate, holds, read_family_file

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["config_problems", "count_problems", "locate_problems", "tie_problems", "transformers5_classes", "TRANSFORMERS5_FILE"]

TRANSFORMERS5_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "transformers5.toml")
"""Every model class transformers 5 has, per ``model_type`` (data, generated from transformers' auto mappings)."""

Problem = tuple[str, str]
"""A configuration field (or fields) and what is wrong."""

Origin = Callable[[str], str]
"""Where a configuration field's value came from, as words to append (`` in bert_config.json``, `` (--hparam)``)."""


@functools.lru_cache(maxsize=1)
def transformers5_classes() -> dict[str, list[str]]:
    """``model_type`` -> the model classes transformers 5 has for it (``transformers5.toml``)."""
    return {k: list(v) for k, v in read_family_file(TRANSFORMERS5_FILE).get("classes", {}).items()}


def _shown(config: dict[str, Any], name: str) -> str:
    return f"{name}={config.get(name)!r}"


def config_problems(family: Family, config: dict[str, Any], architecture: str | None) -> list[Problem]:
    """The family's ``divides`` rules and the class against transformers 5's classes for the model type."""
    out: list[Problem] = []
    for whole, part in family.config.get("divides", {}).items():
        total, count = config.get(whole), config.get(part)
        if not isinstance(total, int) or not isinstance(count, int) or isinstance(count, bool):
            continue
        if count < 1:
            out.append((part, f"{_shown(config, part)}: a model needs at least one attention head "
                              f"(transformers 5 cannot build this configuration; --hparam {part}=N sets it)"))
        elif total % count:
            out.append((part, f"{_shown(config, part)} does not divide {_shown(config, whole)}: transformers 5 "
                              f"needs {whole} to be a multiple of {part}"))
    known = transformers5_classes()
    if architecture and family.model_type in known and architecture not in known[family.model_type]:
        out.append(("architectures", f"architectures=[{architecture!r}]: transformers 5 has no class {architecture!r} "
                                     f"for model_type {family.model_type!r}"))
    elif architecture and family.model_type not in known:
        out.append(("model_type", f"model_type={family.model_type!r}: transformers 5 has no such model type"))
    return out


def _count_fields(family: Family, name: str) -> list[tuple[str, str]]:
    """For a target parameter ``name``: each (placeholder value, count expression) of the first ``each`` pattern
    it matches, whatever the counts (``bert.encoder.layer.7.x`` -> ``[("7", "num_hidden_layers")]``)."""
    for param in family.params:
        if not param.each:
            continue
        m = param.name.regex({}, {axis: "d" for axis in param.each}).match(name) if "{=" not in param.name.text \
            else None
        if m is not None:
            return [(m.group(axis), expr) for axis, expr in param.each.items() if axis in m.groupdict()]
    return []


def count_problems(family: Family, config: dict[str, Any], targets: list[str], missing: list[str],
                   origin: Origin) -> tuple[list[Problem], set[str], dict[str, int]]:
    """One error per count (``num_hidden_layers=3``) that disagrees with the blocks the mapped ``targets`` hold
    (the highest index + 1); the ``targets`` and ``missing`` parameters whose errors it stands for; and each wrong
    count field (a plain name) with the count the checkpoint holds."""
    seen: dict[str, int] = {}
    for name in targets:
        for value, expr in _count_fields(family, name):
            seen[expr] = max(seen.get(expr, 0), int(value) + 1)
    wrong = {}
    for expr, held in seen.items():
        try:
            wanted = evaluate(expr, config)
        except (KeyError, ValueError):
            continue
        if wanted != held:
            wrong[expr] = (wanted, held)
    problems = []
    for expr, (_, held) in wrong.items():
        fields = re.findall(r"[A-Za-z_]\w*", expr)
        named = ", ".join(_shown(config, f) + origin(f) for f in fields)
        problems.append((", ".join(fields), f"{named}, but the checkpoint holds {held} (blocks 0 to {held - 1}): "
                                            "the configuration does not describe this checkpoint"))
    covered = {n for n in [*targets, *missing] if any(expr in wrong for _, expr in _count_fields(family, n))}
    return problems, covered, {expr: held for expr, (_, held) in wrong.items() if expr.isidentifier()}


def locate_problems(layout: Layout, keys: list[str], config: dict[str, Any], origin: Origin) -> list[Problem]:
    """One error per ``locate`` field (``block_sizes``) whose sizes do not add up to the layers the checkpoint numbers
    in its blocks (the highest number + 1 the rules placing a layer in a block match)."""
    inside: dict[str, int] = {}
    for rule in layout.maps:
        for name, sizes in rule.locate.items():
            if f"{{{name}_block}}" not in rule.target.text:
                continue  # the layers after the blocks (Funnel's decoder)
            regex = rule.source.regex(config)
            numbers = [int(rule.source.values(m)[name]) for key in keys if (m := regex.match(key))]
            inside[sizes] = max([inside.get(sizes, 0), *(n + 1 for n in numbers)])
    problems = []
    for sizes, count in inside.items():
        given = config.get(sizes)
        if not isinstance(given, list) or not all(type(n) is int for n in given):
            continue
        if sum(given) != count:  # (right sizes, the layers after them numbered inside: those are unmapped)
            problems.append((sizes, f"{_shown(config, sizes)}{origin(sizes)} makes {sum(given)} layers, but the "
                                    f"checkpoint holds {count} (layers 0 to {count - 1}): the configuration does not "
                                    "describe this checkpoint"))
    return problems


def tie_problems(family: Family, config: dict[str, Any], sources: dict[str, str],
                 origin: Origin) -> tuple[list[Problem], set[str]]:
    """For each tied parameter with a condition (``lm_head.weight`` when ``tie_word_embeddings``): tied, the
    checkpoint must hold no tensor for it; untied, it must hold one (``sources``: target -> source key). Also the
    parameters whose errors these stand for."""
    problems: list[Problem] = []
    covered: set[str] = set()
    for name, condition in family.tied_when.items():
        if PLACEHOLDER.search(name) or "=" in condition:
            continue
        flag = condition.lstrip("!")
        where = origin(flag)
        tied = holds(condition, config)
        if tied and name in sources:
            problems.append((flag, f"{_shown(config, flag)}{where}, but the checkpoint holds its own {name!r} "
                                   f"({sources[name]!r}): the configuration does not describe this checkpoint"))
            covered.add(name)
        elif not tied and name not in sources and name in _untied_params(family, config):
            problems.append((flag, f"{_shown(config, flag)}{where}, but the checkpoint holds no tensor for {name!r}: "
                                   "the configuration does not describe this checkpoint"))
            covered.add(name)
    return problems, covered


def _untied_params(family: Family, config: dict[str, Any]) -> set[str]:
    return {p.name.text for p in family.params if holds(p.when, config)}
