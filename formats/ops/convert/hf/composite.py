"""Plan ``ckpt convert --to hf`` of a source holding two models of one family, as transformers' composite class:
BERT-generation's bert2bert module (an encoder stack and a decoder stack over one embedding table) as one
``EncoderDecoderModel`` directory, as transformers 4.x's bert2bert recipe made it (each half converted by its own
loader run, then ``EncoderDecoderModel(encoder=..., decoder=...)``).

A family's variant says it, as data::

    [[variants]]
    name = "bert2bert"
    detect = ["...encoder/layer_{i:d}/...", "...decoder/layer_{j:d}/..."]
    composite = { class = "EncoderDecoderModel", model_type = "encoder-decoder",
                  set = { is_encoder_decoder = true } }   # config.json fields of the composite itself
    [[variants.halves]]
    name = "encoder"                    # the composite's attribute: the half's parameters are encoder.<name>
    class = "BertGenerationEncoder"     # the class the half must plan as
    leave_out = "{a}/{b}/decoder/{*}"   # the other half's tensors (a pattern): planned there, not here

Each half is the source without the tensors its ``leave_out`` matches, planned as any source of the family (its own
layout, variant, class and configuration); its rows go under ``<name>.``, its configuration is the composite's
``<name>`` field, its problems are the composite's (a tensor neither half maps is one error naming it; a
parameter a half misses, one naming ``<name>.<parameter>``). A half that plans as another class than ``class``
(a decoder stack without its encoder-decoder attention) is one error saying so.
"""
from __future__ import annotations

from formats.core.model import Checkpoint, FormatName, TensorEntry
from formats.core.records import replace
from formats.ops.convert.hf.check import transformers5_classes
from formats.ops.convert.hf.family import Family, Pattern
from formats.ops.convert.plan import ConversionPlan, ConvertOptions

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    PlanOne = Callable[[Checkpoint, ConvertOptions, str], ConversionPlan]

__all__ = ["plan_composite"]

HF = FormatName.HF.value
_PARAMETER_KINDS = ("missing", "zeros")
"""Problem kinds whose key (and candidates) are parameter names of the half, not source keys."""


class _Half(Checkpoint):
    """The source's tensors but the other half's (same path and format; the object graph of the source)."""

    def __init__(self, source: Checkpoint, entries: dict[str, TensorEntry]) -> None:
        super().__init__(source.path, source.format, entries)
        self._source = source

    @property
    def object_graph(self) -> Any:
        """The whole source's object graph (names of a variable under other paths)."""
        return self._source.object_graph


def plan_composite(source: Checkpoint, options: ConvertOptions, family: Family, variant: dict[str, Any],
                   target: str, plan_one: PlanOne) -> ConversionPlan:
    """Plan ``source`` as the composite class of ``family``'s ``variant`` (its ``composite`` and ``halves``), each
    half by ``plan_one`` (:func:`.plan.plan_hf`)."""
    plan = ConversionPlan(source.path, target)
    spec: dict[str, Any] = variant["composite"]
    config: dict[str, Any] = {"architectures": [spec["class"]], "model_type": spec["model_type"],
                              **spec.get("set", {})}
    details: dict[str, Any] = {"family": family.name, "map": family.path, "variant": variant.get("name"), "class": spec["class"], "halves": {},
                               "tied": {}}
    named = options.model_map or options.family
    half_options = options if named else replace(options, family=family.path)
    for half in variant.get("halves", []):
        name, leave_out = str(half["name"]), Pattern(str(half["leave_out"])).regex({})
        entries = {k: e for k, e in source.items() if not leave_out.match(k)}
        if len(entries) == len(source):
            plan.add("family", source.path, f"the {name} half of this {spec['class']} (the {family.name} map's "
                     f"{variant.get('name')} variant): its leave_out {half['leave_out']!r} matches no "
                     "tensor")
            continue
        part = plan_one(_Half(source, entries), half_options, target)
        _merge(plan, part, name)
        cls = part.details.get("class")
        if part.ok and cls != half["class"]:
            plan.add("family", source.path, f"the {name} half of this module plans as {cls}, not as "
                     f"{half['class']} ({spec['class']}'s {name}; the {family.name} map's "
                     f"{variant.get('name')} variant)")
        config[name] = {k: v for k, v in part.write_options.get("config", {}).items() if k != "architectures"}
        details["halves"][name] = {k: part.details.get(k) for k in ("layout", "variant", "class")}
        details["tied"].update({f"{name}.{k}": f"{name}.{v}" for k, v in part.details.get("tied", {}).items()})
        details.setdefault("config_source", part.details.get("config_source", ""))
    known = transformers5_classes().get(spec["model_type"], [])
    if target == HF and spec["class"] not in known:  # as each half's class is checked (.check)
        plan.add("config", "architectures", f"architectures=[{spec['class']!r}]: transformers 5 has no class "
                 f"{spec['class']!r} for model_type {spec['model_type']!r}")
    plan.check_collisions()
    plan.write_options = {"config": dict(sorted(config.items())), "max_shard_size": options.max_shard_size}
    details["config"] = plan.write_options["config"]
    plan.details = details
    return plan


def _merge(plan: ConversionPlan, part: ConversionPlan, name: str) -> None:
    """``part``'s rows under ``name.``, and its problems (each once: both halves report a tensor neither maps)."""
    for row in part.rows:
        plan.add_row(row.source, f"{name}.{row.key}", row.value, row.shape, row.dtype, row.note, row.transform)
    seen = {(p.kind, p.key, p.message) for p in plan.problems}
    unreadable = {id(problem): why for problem, why in part.unreadable}  # --skip-unreadable leaves those out
    for problem in part.problems:
        if id(problem) in unreadable and (problem.kind, problem.key, problem.message) not in seen:
            plan.unreadable.append((problem, unreadable[id(problem)]))
        if problem.kind in _PARAMETER_KINDS:
            problem = replace(problem, key=f"{name}.{problem.key}", message=f"{name}: {problem.message}",
                              candidates=[f"{name}.{c}" for c in problem.candidates])
        if (problem.kind, problem.key, problem.message) not in seen:
            seen.add((problem.kind, problem.key, problem.message))
            plan.problems.append(problem)
