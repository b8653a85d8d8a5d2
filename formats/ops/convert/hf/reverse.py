"""``ckpt convert DIR --to tf-name --family F``: a transformers model directory back under the original
TensorFlow names, by the family's map read backwards (its first layout: BERT's TF1 names).

A map rule is inverted by matching its ``to`` pattern against parameter names and filling its ``from``
pattern (``.`` in a value becomes ``/``; a placeholder the parameter name lacks takes its empty alternative, or
its first); its ops run backwards (a transpose is its own inverse). A reshape is invertible only where the rule
gives the source's shape (``source_shape``); otherwise the parameter is an error, as is any parameter no rule
maps. Tied parameters stored anyway (a duplicate of the one they are tied to) are left out by name.
"""
from __future__ import annotations


from formats.core.model import Checkpoint, FormatName, TensorEntry
from formats.ops.convert.hf.entries import MappedEntry, StackedEntry
from formats.ops.convert.hf.family import PLACEHOLDER, Family, MapRule, evaluate, global_index, load_family
from formats.ops.convert.plan import WARNING, ConversionPlan, ConvertOptions

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["plan_tf_names"]


def _source_name(rule: MapRule, values: dict[str, str], config: dict[str, Any]) -> str:
    filled = dict(values)
    for m in PLACEHOLDER.finditer(rule.source.text):
        name, _, kind = m.group(1).partition(":")
        if name.startswith("=") or name in filled:
            continue
        given = [f for f, p in rule.config_from.items() if p == name and f in config]
        if given:  # a value the forward map kept in config.json (XLNet's fine-tuning task)
            filled[name] = str(config[given[0]])
            continue
        words = kind.split("|")
        filled[name] = "" if "" in words else words[0]
    return rule.source.fill({k: v.replace(".", "/") for k, v in filled.items()}, config)


def _invert(rule: MapRule, name: str, config: dict[str, Any]) -> str | None:
    kinds = {k: v.replace("/", ".") if "|" in v else "d" if v.startswith(("d", "0")) else ""
             for k, v in rule.source.kinds().items()}
    kinds.update({f"{n}_{part}": "d" for n in rule.locate for part in ("block", "layer")})
    m = rule.target.regex(config, kinds).match(name)
    if m is None:
        return None
    values = rule.target.values(m)
    for index, sizes in rule.locate.items():  # Funnel: a block and a layer -> the global layer number
        block = int(values.pop(f"{index}_block", len(config.get(sizes) or [])))  # no block: the layers after them
        values[index] = str(global_index(block, int(values.pop(f"{index}_layer")), config, sizes))
    return _source_name(rule, values, config)


def plan_tf_names(source: Checkpoint, options: ConvertOptions) -> ConversionPlan:
    """Plan a name-based TensorFlow checkpoint of the transformers directory ``source``."""
    plan = ConversionPlan(source.path, FormatName.TF_NAME.value)
    family = load_family(options.model_map or options.family or "")
    config = dict(source.metadata.get("config") or {})
    if not config:
        plan.add("config", source.path, "not a transformers model directory (no config.json): --family reads "
                 "one back")
        return plan
    layout = family.layouts[0]
    free = _free_parts(layout.maps)
    if free:  # BERT-generation's two leading name parts: any name forward, none to give back
        plan.add("family", family.path, f"the {family.name} map cannot name the tensors back: its source names' "
                 f"{', '.join(free)} part{'s' * (len(free) != 1)} (any name) are not in the parameter names")
        return plan
    tied = {_strip_any(n, family) for n in family.tied}
    parts: dict[str, dict[int, TensorEntry]] = {}
    for key in source:
        entry = source[key]
        found = None
        for rule in layout.maps:
            for name in _candidates(key, family):
                tf_name = _invert(rule, name, config)
                if tf_name is not None:
                    found = (rule, tf_name)
                    break
            if found:
                break
        if found is None:
            why = _not_stored(key, family, layout.maps, config)
            if why:
                plan.add("dropped", key, why, WARNING)
            elif key in tied or any(key == n for n in family.tied):
                plan.add("dropped", key, "tied to another parameter (stored once, under that one's name)", WARNING)
            else:
                plan.add("unmapped", key, f"unmapped parameter {key!r}: no rule of the {family.name} map gives it "
                         "a TensorFlow name")
            continue
        if found[0].split:  # a part of a stacked tensor: stacked again below
            index = _invert_value(found[0], key, next(iter(found[0].split)), config)
            parts.setdefault(found[1], {})[index] = entry
            continue
        _row(plan, key, entry, *found, config)
    for tf_name, stacked in parts.items():
        if sorted(stacked) != list(range(len(stacked))):
            plan.add("missing", tf_name, f"{tf_name!r} stacks one parameter per layer; the directory has only "
                     f"parts {sorted(stacked)}")
            continue
        value = StackedEntry([stacked[n] for n in range(len(stacked))], tf_name)
        plan.add_row(stacked[0].key, tf_name, value, value.shape, value.dtype, "", "stack")
    plan.check_collisions()
    plan.details = {"family": family.name, "map": family.path, "layout": layout.name}
    return plan


def _free_parts(maps: list[MapRule]) -> list[str]:
    """The placeholders of the rules' source names that match any name part and that neither the parameter name
    nor config.json gives back (``{a}`` in ``{a}/{b}/embeddings/...``), as ``{a}``."""
    free = {name for rule in maps for name, kind in rule.source.kinds().items()
            if not kind and name not in rule.target.kinds() and name not in rule.config_from.values()}
    return [f"{{{name}}}" for name in sorted(free)]


def _candidates(key: str, family: Family) -> list[str]:
    """``key`` and, for a base class's names (no prefix), the names with each class's stripped prefix back."""
    return [key, *(cls["strip"] + key for cls in family.classes if cls.get("strip"))]


def _strip_any(name: str, family: Any) -> str:
    for cls in family.classes:
        prefix = cls.get("strip", "")
        if prefix and name.startswith(prefix):
            return name[len(prefix):]
    return name


def _row(plan: ConversionPlan, key: str, entry: Any, rule: MapRule, tf_name: str, config: dict[str, Any]) -> None:
    ops = tuple(reversed(rule.ops))
    shape = tuple(entry.shape)
    if "reshape" in ops:
        spec = getattr(rule, "source_shape", None)
        if not spec:
            plan.add("unsupported", key, f"{key!r} -> {tf_name!r}: the map reshapes it and does not say the "
                     "TensorFlow shape, so it cannot be inverted")
            return
        shape = tuple(evaluate(d, config) for d in spec)
    elif "transpose" in ops:
        shape = shape[::-1]
    dtype = entry.dtype
    transform = " + ".join(ops)
    value = MappedEntry(entry, tf_name, shape, dtype, ops) if ops else entry
    plan.add_row(key, tf_name, value, shape, dtype, "", transform)



def _invert_value(rule: MapRule, key: str, name: str, config: dict[str, Any]) -> int:
    """The value of placeholder ``name`` (a split's part) in the parameter name ``key`` that ``rule`` targets."""
    kinds = {k: v.replace("/", ".") if "|" in v else "" for k, v in rule.source.kinds().items()}
    m = rule.target.regex(config, {**kinds, name: "d"}).match(key)
    return int(m.group(name)) if m else -1


def _not_stored(key: str, family: Family, maps: list[MapRule], config: dict[str, Any]) -> str | None:
    """Why a parameter the map makes has no TensorFlow tensor of its own (a ``zeros`` parameter, an ``also`` copy),
    else None."""
    for param in family.params:
        if param.zeros and param.name.regex(config).match(key):
            return f"written as zeros by the {family.name} map ({param.zeros}): no TensorFlow tensor"
    for rule in maps:
        if any(also.regex(config).match(key) for also in rule.also):
            return f"a copy of {rule.target.text!r} ({rule.source.text!r}, one TensorFlow tensor)"
    return None
