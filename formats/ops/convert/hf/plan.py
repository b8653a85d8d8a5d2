"""Plan ``ckpt convert SRC --to hf``: every source tensor mapped to a parameter of the target class, or dropped
by a named rule, or an error; every parameter of the class filled (or tied to one that is), or an error; the
original configuration translated into ``config.json`` and checked against the tensors' shapes. Nothing is
written here: :func:`formats.ops.convert.plan.execute_plan` writes the plan with the ``hf`` format's writer.
"""
from __future__ import annotations

import itertools
import os
import re
from formats.core.records import field, record

from formats.core.model import OBJECT_GRAPH_KEY, Checkpoint, FormatName, TensorEntry
from formats.ops.convert.hf.check import config_problems, count_problems, locate_problems, tie_problems
from formats.ops.convert.hf.config import UnsupportedConfigError, find_config, json_text, read_config, translate
from formats.ops.convert.hf.detect import detect_family
from formats.ops.convert.hf.entries import MappedEntry, PartEntry, RowsZeroedEntry, ZerosEntry, output_shape
from formats.ops.convert.hf.joins import Part, add_joined_row
from formats.ops.convert.hf.names import candidates, source_names
from formats.ops.convert.hf.pieces import assemble, split_parts
from formats.ops.convert.hf.tasks import task_fields, task_problem
from formats.ops.convert.hf.family import (PLACEHOLDER, Family, Layout, MapRule, Param, Pattern, evaluate,
                                           family_names, global_index, holds, load_family, locate)
from formats.ops.convert.plan import WARNING, ConversionPlan, ConvertOptions

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["plan_hf", "detect_family", "expected_params", "check_counts", "ConfigBoundError", "Target", "HF", "Choice", "choose"]

HF = FormatName.HF.value
"""The ``--to`` name of a transformers model directory."""


@record
class Target:
    """A parameter of the target class: its shape, its group, and the pattern it came from."""

    shape: tuple[int, ...]
    group: str
    param: Param


@record
class Choice:
    """What a plan settled on: the family, its source layout, the variant, the class and its config."""

    family: Family
    layout: Layout | None = None
    variant: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    config_source: str = ""
    groups: list[str] = field(default_factory=list)
    cls: dict[str, Any] = field(default_factory=dict)
    overrides: list[str] = field(default_factory=list)
    names: dict[str, list[str]] = field(default_factory=dict)
    task: str | None = None


def _axes(param: Param, config: dict[str, Any]) -> list[tuple[str, int | list[str]]]:
    """Each placeholder a parameter pattern repeats over, with its count (``each``: a configuration expression)
    or its words (``a|b``), in the pattern's order; nothing is expanded."""
    axes: list[tuple[str, int | list[str]]] = []
    for m in PLACEHOLDER.finditer(param.name.text):
        name, _, kind = m.group(1).partition(":")
        if name.startswith("="):
            continue
        base, _, part = name.rpartition("_")
        if base in param.locate and part in ("block", "layer"):  # one axis: every layer of every block
            if part == "block":
                axes.append((base, global_index(len(config[param.locate[base]]), 0, config, param.locate[base])))
            continue
        if name in param.each:
            axes.append((name, evaluate(param.each[name], config)))
        elif "|" in kind:
            axes.append((name, kind.split("|")))
        else:
            raise KeyError(f"{param.name.text}: placeholder {{{name}}} has no 'each' count and no words")
    return axes


class ConfigBoundError(ValueError):
    """A configuration whose counts imply more parameters than a checkpoint can fill: ``field`` names the
    configuration field (or fields) behind the count."""

    def __init__(self, field_name: str, values: str, consequence: str) -> None:
        super().__init__(f"{values} {consequence}")
        self.field, self.values, self.consequence = field_name, values, consequence


def check_counts(family: Family, config: dict[str, Any], tensors: int) -> None:
    """Refuse (:class:`ConfigBoundError`) a configuration one of whose parameter patterns repeats more times
    than the checkpoint holds tensors (``num_hidden_layers = 10**9`` beside 200 tensors): every repetition
    needs a tensor of its own, so the configuration contradicts the checkpoint; checked before anything is
    expanded, so time and memory stay bounded by the checkpoint's size."""
    for param in family.params:
        if not holds(param.when, config):
            continue
        axes = _axes(param, config)
        count = 1
        for _, axis in axes:
            count *= len(axis) if isinstance(axis, list) else max(axis, 0)
        if count > tensors:
            fields = sorted({f for name, _ in axes if name in param.each
                             for f in re.findall(r"[A-Za-z_]\w*", param.each[name])})
            named = ", ".join(f"{f}={config.get(f)!r}" for f in fields) or "the configuration"
            raise ConfigBoundError(", ".join(fields) or "config", named, f"makes {count:,} parameters "
                                   f"{param.name.text!r}, more than the {tensors:,} tensors the checkpoint holds: "
                                   "the configuration does not describe this checkpoint")


def _combinations(param: Param, config: dict[str, Any]) -> list[dict[str, str]]:
    """Every placeholder assignment a parameter pattern repeats over (``each`` counts, ``a|b`` words)."""
    axes = [[(name, str(n)) for n in range(axis)] if isinstance(axis, int) else [(name, word) for word in axis]
            for name, axis in _axes(param, config)]
    out = [dict(combo) for combo in itertools.product(*axes)]
    for values in out:
        for name, sizes in param.locate.items():
            values[f"{name}_block"], values[f"{name}_layer"] = map(str, locate(int(values[name]), config, sizes))
    return out


def expected_params(family: Family, config: dict[str, Any], groups: list[str] | None = None) -> dict[str, Target]:
    """Every parameter of the family's target (of ``groups``, default all) -> its shape and group: names and
    shapes known from the family file and the configuration, without torch or transformers. KeyError names a
    configuration field that is missing."""
    out: dict[str, Target] = {}
    for param in family.params:
        if (groups is not None and param.group not in groups) or not holds(param.when, config):
            continue
        for values in _combinations(param, config):
            shape = tuple(evaluate(dim, config) for dim in param.shape)
            out[param.name.fill(values, config)] = Target(shape, param.group, param)
    return out


def _own_config(family: Family, layout: Layout, options: ConvertOptions) -> bool:
    """Whether the layout's own configuration applies (its files, format, ``[layouts.config]``): it has one, and
    ``--config`` names none or a file of one of its names; a ``--config bert_config.json`` beside a TF Hub
    SavedModel is read as the family's."""
    own = layout.config_files is not None or layout.config_format is not None or layout.config is not None
    given = options.model_config
    return own and (given is None or layout.config_files is None or os.path.basename(given) in layout.config_files)


def _original_config(source: Checkpoint, family: Family, layout: Layout, options: ConvertOptions,
                     plan: ConversionPlan) -> tuple[dict[str, Any], str, dict[str, Any]] | None:
    """The original configuration, its path and the ``[config]`` spec that translates it; None (with the plan's
    error) when it is missing or names another class."""
    own = _own_config(family, layout, options)
    files = layout.config_files if own and layout.config_files is not None else family.config_files
    kind = (layout.config_format if own else None) or family.config_format
    spec = layout.config if own and layout.config is not None else family.config
    if not files and not options.model_config:  # a layout whose configuration is all in its shapes
        return {}, "", spec
    path = options.model_config or find_config(source.path, files)
    if path is None and own and layout.config_files is not None:  # a training checkpoint beside bert_config.json
        path = find_config(source.path, family.config_files)
        if path is not None:
            kind, spec, own = family.config_format, family.config, False
    if path is None:
        looked = " or ".join(files) or "a configuration file"
        where = source.path if os.path.isdir(source.path) else os.path.dirname(os.path.abspath(source.path))
        also = f" (or the {family.name} family's {', '.join(family.config_files)})" if own else ""
        plan.add("config", "config", f"missing model configuration: no {looked} beside the checkpoint in {where}; "
                 f"give one with --config FILE{also}")
        return None
    config = read_config(path, kind)
    if own and layout.config_class and config.get("class_name") not in layout.config_class:
        plan.add("family", path, f"describes a {config.get('class_name')}, not a "
                 f"{' or '.join(layout.config_class)} (the {family.name} map's {layout.name} layout)")
        return None
    return config, path, spec


def _numbers(hparams: dict[str, Any]) -> dict[str, Any]:
    return {k: int(v) if isinstance(v, float) and v.is_integer() else v for k, v in hparams.items()}


def choose(source: Checkpoint, options: ConvertOptions, plan: ConversionPlan) -> Choice | None:
    """The family (``--family``, ``--rules FILE`` or detected), layout, variant and configuration of a
    conversion; None (with the plan's error) when one cannot be settled."""
    names = source_names(source)
    keys = [n for found in names.values() for n in found]
    named = options.model_map or options.family
    family = load_family(named) if named else detect_family(keys, source.path)
    if family is None:
        plan.add("family", source.path, f"no model family recognises these variable names (ckpt knows "
                 f"{', '.join(family_names())}); name one with --family or give a map with --rules")
        return None
    layout = family.layout_of(keys, {})
    if layout is None:
        plan.add("family", source.path, f"no source layout of the {family.name} map "
                 f"({', '.join(lay.name for lay in family.layouts)}) recognises these variable names")
        return None
    fields, wrong = task_fields(family, options.hf_task)
    if wrong is not None:
        plan.add("config", "hf_task", wrong)
        return None
    original = _original_config(source, family, layout, options, plan)
    if original is None:
        return None
    shapes = {n: tuple(source[k].shape) for k, found in names.items() for n in found}
    variant = _variant(family, keys)
    if variant.get("refuse"):  # a source the map recognises but does not convert (a variant saying why)
        plan.add("family", source.path, f"{variant['refuse']} (the {family.name} map's {variant.get('name')} variant)")
        return None
    if variant.get("composite"):  # two models in one source (a bert2bert): each half planned alone (.composite)
        return Choice(family, layout, variant, names=names, task=options.hf_task)
    base = original[2]
    spec = {**base, "set": {**base.get("set", {}), **variant.get("set", {})}}
    try:
        config, missing, notes = translate(original[0], spec, shapes, {**fields, **_numbers(options.hparams)})
    except UnsupportedConfigError as exc:
        plan.add("config", exc.field, f"the {family.name} map cannot carry {exc.field} = {json_text(exc.value)} of "
                 f"{original[1]} ({exc.allowed})")
        return None
    for name in missing:
        plan.add("config", name, f"missing model configuration field {name!r} in {original[1]} (give it with "
                 f"--hparam {name}=VALUE)")
    if missing:
        return None
    choice = Choice(family, family.layout_of(keys, config), variant, config, original[1],
                    overrides=sorted(options.hparams), names=names, task=options.hf_task)
    for note in notes:
        plan.add("config", note.split(" ", 1)[0], note, WARNING)
    return choice


def _variant(family: Family, keys: list[str]) -> dict[str, Any]:
    """The first of the family's variants whose ``detect`` pattern matches a key (T5 v1.1's gated
    feed-forward; a list of patterns: each matches a key), else the one without ``detect``, else none."""
    fallback: dict[str, Any] = {}
    for variant in family.variants:
        detect = variant.get("detect")
        if detect is None:
            fallback = fallback or variant
            continue
        regexes = [Pattern(d).regex({}) for d in ([detect] if isinstance(detect, str) else detect)]
        if all(any(regex.match(k) for k in keys) for regex in regexes):
            return variant
    return fallback


def _map(rules: list[MapRule], key: str, config: dict[str, Any]) -> tuple[MapRule, str, dict[str, str]] | None:
    for rule in rules:
        m = rule.source.regex(config).match(key)
        if m:
            values = {k: v.replace("/", ".") for k, v in rule.source.values(m).items()}
            for name, sizes in rule.locate.items():  # Funnel: a global layer number -> its block and layer
                values[f"{name}_block"], values[f"{name}_layer"] = map(str, locate(int(values[name]), config, sizes))
            if any(f"{{{n}_block}}" not in rule.target.text and int(values[f"{n}_block"]) < len(config[s])
                   for n, s in rule.locate.items()):
                continue  # a layer after the blocks (Funnel's decoder) numbered as one in them: not this rule's
            filled = {**values, **{name: f"{{{name}}}" for name in rule.split or {}}}  # filled per part by _split
            return rule, "\n".join(t.fill(filled, config) for t in [rule.target, *rule.also]), values
    return None


def plan_hf(source: Checkpoint, options: ConvertOptions, target: str = HF) -> ConversionPlan:
    """Plan writing ``source`` as a transformers model directory (``config.json``, ``model.safetensors``), or as
    the mapped tensors alone in another ``target`` (then no check of what transformers would build); transformers'
    own TF weights (``tf_model.h5`` beside its ``config.json``) by :mod:`.tf_h5`'s generic rule."""
    from formats.ops.convert.hf.tf_h5 import is_tf_h5, plan_tf_h5

    if target == HF and is_tf_h5(source, options):
        if options.hf_task is not None:  # its config.json holds the task's fields already
            refused = ConversionPlan(source.path, target)
            refused.add("config", "hf_task", f"--hf-task {options.hf_task}: transformers' own TensorFlow weights "
                        "carry their task's fields in their config.json; name no task")
            return refused
        return plan_tf_h5(source, options)
    plan = ConversionPlan(source.path, target)
    choice: Choice | None = None
    try:
        choice = choose(source, options, plan)
        if choice is None:
            return plan
        if choice.variant.get("composite"):
            from formats.ops.convert.hf.composite import plan_composite

            return plan_composite(source, options, choice.family, choice.variant, target, plan_hf)
        _plan_tensors(source, choice, plan)
        plan.write_options["max_shard_size"] = options.max_shard_size
        if target == HF and choice.layout is not None and choice.layout.name == "keras-hub":
            from formats.ops.convert.hf.tokenizer.keras_hub import plan_tokenizer

            plan_tokenizer(plan, source.path if os.path.isdir(source.path) else os.path.dirname(source.path))
    except KeyError as exc:
        plan.add("config", str(exc.args[0]), f"missing model configuration field {exc.args[0]!r}")
    except ConfigBoundError as exc:
        where = f" in {choice.config_source}" if choice is not None and choice.config_source else ""
        plan.add("config", exc.field, f"{exc.values}{where} {exc.consequence}")
    except ValueError as exc:
        plan.add("config", "config", f"model configuration: {exc}")
    return plan


def _sort_sources(source: Checkpoint, choice: Choice, plan: ConversionPlan) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """Each source tensor mapped (key -> target name, entry, rule), dropped (``pattern\0why`` -> keys) or an
    ``unmapped`` error."""
    family, config, layout = choice.family, choice.config, choice.layout
    assert layout is not None
    mapped: dict[str, tuple[str, TensorEntry | None, MapRule, dict[str, str]]] = {}
    dropped: dict[str, list[str]] = {}
    for key in source:
        if key == OBJECT_GRAPH_KEY:
            continue
        tried = candidates(layout, choice.names.get(key, [key]))
        hit = next(((name, found) for name in tried if (found := _map(layout.maps, name, config))), None)
        found = hit[1] if hit is not None else None
        if found is not None and found[0].split:
            parts = split_parts(plan, source[key], found[0], found[1], config)
            mapped.update({part: (*value, found[2]) for part, value in parts.items()})
            continue
        if hit is not None and hit[1][0].config_from:  # XLNet's task name, for --to tf-name
            m = hit[1][0].source.regex(config).match(hit[0])
            assert m is not None
            config.update({name: m.group(p) for name, p in hit[1][0].config_from.items()})
        if found is not None:
            first, *copies = found[1].split("\n")  # a rule's ``also``: more targets of the same tensor
            mapped[key] = (first, source[key], found[0], found[2])
            mapped.update({f"{key} (copy {n})": (t, source[key], found[0], found[2]) for n, t in enumerate(copies, 1)})
            continue
        drop = next((d for d in layout.drops for name in tried if d.match.regex(config).match(name)), None)
        if drop is not None:
            dropped.setdefault(f"{drop.match.text}\0{drop.why}", []).append(key)
            continue
        plan.add("unmapped", key, f"unmapped tensor {key!r} {list(source[key].shape)}: no rule of the {family.name} "
                 f"map ({layout.name} layout) maps or drops it")
    return mapped, dropped


def _plan_tensors(source: Checkpoint, choice: Choice, plan: ConversionPlan) -> None:
    family, config = choice.family, choice.config
    check_counts(family, config, sum(1 for k in source if k != OBJECT_GRAPH_KEY))
    every = expected_params(family, config)
    mapped, dropped = _sort_sources(source, choice, plan)
    choice.cls = _class(family, {every[t].group for t, *_ in mapped.values() if t in every})
    choice.groups = list(choice.cls.get("groups", ["base"])) + list(choice.variant.get("groups", []))
    wrong_task = task_problem(family, choice.cls, choice.groups, choice.task)
    if wrong_task is not None:  # TAPAS's aggregation head without its task's hyperparameters
        plan.add("config", "hf_task", wrong_task)
    expected = {name: t for name, t in every.items() if t.group in choice.groups}
    covered = _check(plan, choice, mapped, expected)
    filled: set[str] = set(covered)  # their errors are the one that names the field
    misfits: dict[str, list[tuple[str, str]]] = {}
    pieces: dict[str, list[tuple[str, TensorEntry, MapRule]]] = {}
    joins: dict[str, list[Part]] = {}
    for key, (target, entry, rule, values) in mapped.items():
        if target in covered:
            continue
        if entry is None:  # a split whose error is planned already
            filled.add(target)
            continue
        if rule.into is not None and target in expected:  # one piece of the target: assembled below
            pieces.setdefault(target, []).append((key, entry, rule))
            filled.add(target)
            continue
        if target not in expected:
            if target in every:
                why = f"{every[target].group} parameters, which {choice.cls.get('name')} does not have"
                dropped.setdefault(f"{every[target].group}\0{why}", []).append(key)
            else:
                plan.add("unmapped", key, f"{key!r} maps to {target!r}, which {choice.cls.get('name')} does not have")
            continue
        filled.add(target)
        if rule.concat is not None:
            joins.setdefault(target, []).append((key, entry, rule, values))
            continue
        misfit = _add_row(plan, key, _strip(target, choice), entry, rule, expected[target], config)
        if misfit is not None:
            misfits.setdefault(_fields(expected[target], config), []).append((key, misfit))
    for target, found in pieces.items():
        assemble(plan, _strip(target, choice), found, expected[target].shape, config)
    for target, parts in joins.items():
        misfit = add_joined_row(plan, _strip(target, choice), parts, expected[target].shape)
        if misfit is not None:
            misfits.setdefault(_fields(expected[target], config), []).append((parts[0][0], misfit))
    _report_misfits(plan, misfits)
    _finish(plan, choice, expected, filled, dropped)


def _check(plan: ConversionPlan, choice: Choice, mapped: dict[str, tuple[str, TensorEntry | None, MapRule, dict[str, str]]],
           expected: dict[str, Target]) -> set[str]:
    """The checks of :mod:`.check` (what transformers 5 will check when it loads the output), each one error naming
    the field; the parameters whose own errors (missing, unmapped) those stand for."""
    family, config = choice.family, choice.config

    def origin(name: str) -> str:
        return " (--hparam)" if name in choice.overrides else f" in {choice.config_source}" if choice.config_source else ""

    sources = {target: key for key, (target, *_) in mapped.items()}
    problems, covered, held = count_problems(family, config, list(sources), [n for n in expected if n not in sources],
                                             origin)
    located = locate_problems(choice.layout, list(choice.names), config, origin) if choice.layout is not None else []
    if located and choice.layout is not None:  # wrong block sizes: every located layer's own error is that one
        problems = located
        covered |= {target for target, _, rule, _ in mapped.values() if rule.locate}
        covered |= {name for name, target in expected.items() if target.param.locate}
        regexes = [rule.source.regex(config) for rule in choice.layout.maps if rule.locate]
        for problem in [p for p in plan.problems if p.kind == "unmapped"]:
            if any(regex.match(problem.key) for regex in regexes):
                plan.problems.remove(problem)
    if held and choice.layout is not None:  # what the wrong count alone left unmapped (the pooler after the layers)
        for problem in [p for p in plan.problems if p.kind == "unmapped"]:
            found = _map(choice.layout.maps, problem.key, {**config, **held})
            if found is not None:
                covered.update(found[1].split("\n"))  # the target and its `also` targets
                plan.problems.remove(problem)
    tied, tied_covered = tie_problems(family, config, sources, origin)
    built = config_problems(family, config, choice.cls.get("name")) if plan.target == HF else []
    for field_name, message in [*problems, *tied, *built]:
        plan.add("config", field_name, message)
    return covered | tied_covered


def _finish(plan: ConversionPlan, choice: Choice, expected: dict[str, Target], filled: set[str],
            dropped: dict[str, list[str]]) -> None:
    """The missing parameters' errors, one warning per drop rule, and what the writer and --json need."""
    family, config = choice.family, choice.config
    zeros: dict[str, list[str]] = {}
    for name in expected:
        why = expected[name].param.zeros
        if name not in filled and why:
            plan.add_row(None, _strip(name, choice), ZerosEntry(_strip(name, choice), expected[name].shape),
                         expected[name].shape, "float32", "", "zeros")
            zeros.setdefault(why, []).append(_strip(name, choice))
        elif name not in filled:
            plan.add("missing", name, f"parameter {name!r} {list(expected[name].shape)} of {choice.cls.get('name')} "
                     "has no source tensor")
    for why, names in zeros.items():
        plan.add("zeros", names[0], f"{len(names)} parameter{'s' * (len(names) != 1)} written as zeros: {why}",
                 WARNING, names)
    for what, keys in dropped.items():
        pattern, why = what.split("\0")
        plan.add("dropped", pattern, f"{len(keys)} tensor{'s' * (len(keys) != 1)} left out: {why}", WARNING, keys)
    plan.check_collisions()
    plan.write_options = {"config": _config_json(choice), "max_shard_size": None}
    plan.details = {"family": family.name, "map": family.path, "layout": choice.layout.name if choice.layout else None,
                    "variant": choice.variant.get("name"), "class": choice.cls.get("name"),
                    "config_source": choice.config_source, "config": plan.write_options["config"],
                    "tied": {_strip(n, choice): _strip(t, choice) for n, t in family.tied.items()
                             if t in expected and _tied(family, n, config)}}


def _strip(name: str, choice: Choice) -> str:
    """A parameter's name in the chosen class (``BertModel`` has no ``bert.`` prefix)."""
    prefix = choice.cls.get("strip", "")
    return name[len(prefix):] if prefix and name.startswith(prefix) else name


def _tied(family: Family, name: str, config: dict[str, Any]) -> bool:
    return holds(family.tied_when.get(name), config)


def _class(family: Family, present: set[str]) -> dict[str, Any]:
    """The first class every one of whose groups the source fills; else the last."""
    for cls in family.classes:
        if all(g in present for g in cls.get("groups", ["base"])):
            return cls
    return family.classes[-1] if family.classes else {"name": family.name, "groups": ["base"]}


def _add_row(plan: ConversionPlan, key: str, target: str, entry: TensorEntry, rule: MapRule, want: Target,
             config: dict[str, Any]) -> str | None:
    """Plan one parameter's row; what is wrong with its shape (the row is not planned then), else None."""
    dtype = rule.dtype or entry.dtype
    shape = output_shape(tuple(entry.shape), rule.ops, want.shape)
    if shape != want.shape:
        return f"{key!r} {list(entry.shape)} does not fit {target!r} {list(want.shape)}"
    part = [f"part {entry.index} of axis 0"] if isinstance(entry, PartEntry) else []
    if rule.zero_rows:
        rows = tuple(evaluate(r, config) for r in rule.zero_rows)
        if not entry.shape or any(not 0 <= r < entry.shape[0] for r in rows):
            return f"{key!r} {list(entry.shape)} has no row {', '.join(map(str, rows))} to zero"
        entry = RowsZeroedEntry(entry, entry.key, rows)
        part.append(f"row{'s' * (len(rows) != 1)} {', '.join(map(str, rows))} zeroed")
    transform = " + ".join([*part, *rule.ops, *([f"as {dtype}"] if dtype != entry.dtype else [])])
    value = MappedEntry(entry, target, want.shape, dtype, rule.ops) if rule.ops or dtype != entry.dtype else entry
    plan.add_row(key, target, value, want.shape, dtype, "", transform)
    return None


def _report_misfits(plan: ConversionPlan, misfits: dict[str, list[tuple[str, str]]]) -> None:
    """One error naming the configuration fields every misfit shares (``hidden_size=16``), or one per set of
    fields when they share none, each naming its first tensor."""
    if not misfits:
        return
    common = set.intersection(*(set(fields.split(", ")) for fields in misfits))
    groups = {", ".join(sorted(common)): [f for found in misfits.values() for f in found]} if common else misfits
    for fields, found in groups.items():
        more = f" (and {len(found) - 1} more tensor{'s' * (len(found) != 2)})" if len(found) > 1 else ""
        plan.add("config", fields, f"the configuration contradicts the shapes: {found[0][1]}{more}",
                 candidates=[key for key, _ in found])


def _fields(want: Target, config: dict[str, Any]) -> str:
    names = sorted({f for dim in want.param.shape for f in re.split(r"[-+*/]", dim) if f and not f.isdigit()})
    return ", ".join(f"{n}={evaluate(n, config) if n.endswith(']') else config.get(n)}" for n in names)  # list items


def _config_json(choice: Choice) -> dict[str, Any]:
    config = {k: v for k, v in choice.config.items()}
    config["model_type"] = choice.family.model_type
    if choice.cls.get("name"):
        config["architectures"] = [choice.cls["name"]]
    return dict(sorted(config.items()))


def plan_mapped_safetensors(source: Checkpoint, options: ConvertOptions) -> ConversionPlan:
    """``--to safetensors`` with a model map (``--rules FILE`` or ``--family``): the mapped, transformed
    parameters in one ``.safetensors`` file (no config.json), planned as :func:`plan_hf` plans them."""
    plan = plan_hf(source, options, FormatName.SAFETENSORS.value)
    config = plan.write_options.get("config")
    plan.write_options = {"metadata": {"format": "pt"}} if config is not None else {}
    return plan
