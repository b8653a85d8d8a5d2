"""``--to keras2-h5`` and ``--to keras3-h5``: plan a Keras weights file from any Keras checkpoint.

- Keras 2 ``.h5`` without a template, from a Keras TF-format ``save_weights`` bundle: one layer
  group per top-level layer of the object graph (``layer_with_weights-N`` in order), its weights in
  graph (creation) order with non-trainable ones (batch statistics) last, as ``_legacy_weights``
  orders them; weight names are the ``full_name`` s plus ``:0``. A layer is named after the first
  segment its weights' names share; a nested model whose weights share none (``dense``,
  ``dense_1``) is named by its object path and a warning says so (tf-keras loads ``.h5`` weights
  by order, so ``load_weights`` is unaffected; ``by_name=True`` is not).
- With ``--template`` (a weights file written by the target Keras for the same architecture) the
  output has the template's layout and names, and each template weight takes the source weight
  paired with it by :func:`~formats.ops.convert.cross.matching.match_variables`. A Keras 3
  template's optimizer variables are filled by meaning from the source's optimizer state
  (:mod:`formats.ops.convert.cross.optimizer`) when both are recognised; otherwise they are left out.
"""
from __future__ import annotations

import functools
import math
from typing import Any

from formats.discover.resolve import open_checkpoint
from formats.ops.convert.plan import WARNING, ConversionPlan, ConvertOptions
from formats.core.dtypes import by_name
from formats.core.errors import CorruptCheckpointError, InvalidOutputError, UnsupportedError
from formats.ops.convert.sources import is_object_based
from formats.core.model import Checkpoint
from formats.ops.convert.cross.matching import Pairing, match_variables
from formats.ops.convert.cross.optimizer import fill_keras3_optimizer
from formats.ops.convert.cross.variables import KerasVar, keras_variables

__all__ = ["plan_keras2_h5", "plan_keras3_h5", "KERAS2_VERSION", "KERAS3_LAYOUTS"]

KERAS2_VERSION = "2.21.0"
"""``keras_version`` written when neither the source nor a template says which Keras 2 it was."""
TOP_LEVEL = "top_level_model_weights"
KERAS3_LAYOUTS = ("keras3-h5", "keras-zip", "keras3-dir", "keras3-sharded")
"""Formats holding Keras 3's ``<object path>/vars/<i>`` layout (a template for ``--to keras3-h5``)."""


def _open_template(plan: ConversionPlan, options: ConvertOptions, wanted: str,
                   accepted: tuple[str, ...] = ()) -> Checkpoint | None:
    if not options.template:
        return None
    template = open_checkpoint(options.template)
    plan.resources.append(template)
    if template.format != wanted and template.format not in accepted:
        plan.add("unsupported", options.template, f"the template is {template.format}; --to {wanted} needs a "
                 f"{wanted} file written by the target Keras for the same architecture")
        return None
    return template


def _left_out(plan: ConversionPlan, others: list[str], source: Checkpoint, what: str) -> None:
    roles: dict[str, list[str]] = {}
    for key in others:
        roles.setdefault(source[key].role, []).append(key)
    for role, keys in roles.items():
        shown = keys if len(keys) <= 5 else keys[:4] + [f"(+{len(keys) - 4} more)"]
        plan.add("unused", role, f"{len(keys)} {role} tensor(s) of {what} left out (Keras weights files hold "
                 "model weights only)", WARNING, shown)


def _fill(plan: ConversionPlan, template_vars: list[KerasVar], sources: list[KerasVar],
          options: ConvertOptions) -> list[Pairing]:
    used: set[str] = set()
    pairings = match_variables(sources, template_vars, plan)
    for pairing in pairings:
        target, source = pairing.target, pairing.source
        if source is None:
            if options.allow_missing:
                plan.add("missing", target.key, f"no source weight for {target.name!r}: the template's value "
                         "is kept", WARNING)
                plan.add_row(None, target.key, target.entry, target.shape, target.dtype, "template value")
            else:
                plan.add("missing", target.key, f"no source weight for the template's {target.name!r}")
            continue
        used.add(source.key)
        note = "" if pairing.how == "name" else pairing.how
        if source.name != source.original:
            note = f"renamed from {source.original}" + (f"; {note}" if note else "")
        plan.add_row(source.key, target.key, source.entry, source.shape, source.dtype, note)
    for var in sources:
        if var.key not in used:
            plan.add("unused", var.key, f"{var.name!r} has no place in the template", WARNING)
    return pairings


def plan_keras2_h5(source: Checkpoint, options: ConvertOptions) -> ConversionPlan:
    """Plan a Keras 2 ``save_weights`` ``.h5`` file from ``source`` (onto ``options.template``, if given)."""
    plan = ConversionPlan(source.path, "keras2-h5", options.template)
    template = _open_template(plan, options, "keras2-h5")
    sources, others = keras_variables(source, options.rules)
    _left_out(plan, others, source, "the source")
    if template is not None:
        targets, _ = keras_variables(template)
        _fill(plan, targets, sources, options)
        meta = template.metadata
        plan.writer = functools.partial(_write_keras2, layer_names=list(meta.get("layers") or []),
                                        backend=str(meta.get("backend", "tensorflow")),
                                        keras_version=str(meta.get("keras_version", KERAS2_VERSION)))
    elif options.template is None:
        if not (is_object_based(source) or source.format == "keras2-h5"):
            plan.add("unsupported", source.path, f"a {source.format} source has no Keras 2 layer names; give "
                     "--template, a Keras 2 weights file of the same architecture")
        layer_names = _plan_layers(plan, sources)
        meta = source.metadata if source.format == "keras2-h5" else {}
        names = list(meta.get("layers") or layer_names) if not options.rules else layer_names
        plan.writer = functools.partial(_write_keras2, layer_names=names,
                                        backend=str(meta.get("backend", "tensorflow")),
                                        keras_version=str(meta.get("keras_version", KERAS2_VERSION)))
    plan.report_unused_rules(options.rules)
    plan.check_collisions()
    return plan


def _layer_name(plan: ConversionPlan, layer: str, weights: list[KerasVar], from_h5: bool) -> str:
    if from_h5 or not layer:
        return layer or TOP_LEVEL
    heads = {w.name.split("/", 1)[0] for w in weights}
    if len(heads) == 1 and "/" in weights[0].name:
        return heads.pop()
    plan.add("fallback", layer, f"the weights of {layer!r} share no layer name ({', '.join(sorted(heads))}); "
             f"its group is named {layer!r} (tf-keras loads .h5 weights by order, so load_weights is "
             "unaffected; by_name=True is not)", WARNING)
    return layer


def _plan_layers(plan: ConversionPlan, sources: list[KerasVar]) -> list[str]:
    layers: dict[str, list[KerasVar]] = {}
    for var in sources:
        layers.setdefault(var.layer, []).append(var)
    names: list[str] = []
    from_h5 = bool(sources) and not sources[0].object_path
    for layer, weights in layers.items():
        name = _layer_name(plan, layer, weights, from_h5)
        if name in names:
            plan.add("collision", name, f"two layers would both be named {name!r}; rename with --map")
        if name != TOP_LEVEL:
            names.append(name)
        ordered = [w for w in weights if w.trainable is not False] + [w for w in weights if w.trainable is False]
        for var in ordered:
            note = "non-trainable: after the trainable weights" if var.trainable is False else ""
            if var.name != var.original:
                note = f"renamed from {var.original}" + (f"; {note}" if note else "")
            plan.add_row(var.key, f"{name}/{var.name}:0", var.entry, var.shape, var.dtype, note)
    return names


def _write_keras2(plan: ConversionPlan, output: str, force: bool, verify: bool, inputs: list[Any], *,
                  layer_names: list[str], backend: str, keras_version: str) -> Any:
    from formats.keras_h5.writer import Keras2Layer, write_keras2_h5

    layers: dict[str, Keras2Layer] = {}
    for row in plan.rows:
        layer, _, weight = row.key.partition("/")
        layers.setdefault(layer, Keras2Layer(layer)).weights.append((weight, row.value))
    top = layers.pop(TOP_LEVEL, Keras2Layer(TOP_LEVEL)).weights
    names = list(layer_names) + [n for n in layers if n not in layer_names]
    return write_keras2_h5(output, list(layers.values()), layer_names=names, top_level=top, backend=backend,
                           keras_version=keras_version, force=force, verify=verify, inputs=inputs)


def plan_keras3_h5(source: Checkpoint, options: ConvertOptions) -> ConversionPlan:
    """Plan a Keras 3 ``.weights.h5`` file (or, with ``options.max_shard_size`` or an output named
    ``*.json``, sharded weights) from ``source`` onto ``options.template`` (required unless the source
    itself has the Keras 3 layout - a ``.weights.h5``, ``.keras``, model directory or sharded weights -
    whose layout is then kept)."""
    plan = ConversionPlan(source.path, "keras3-h5", options.template)
    template = _open_template(plan, options, "keras3-h5", KERAS3_LAYOUTS)
    if template is None and options.template is None:
        if source.format not in KERAS3_LAYOUTS:
            plan.add("unsupported", source.path, "--to keras3-h5 needs --template, a .weights.h5 file written by "
                     "Keras 3 for the same architecture (Keras 3 object paths cannot be derived from "
                     f"a {source.format} file)")
        else:
            template = source
    sources, others = keras_variables(source, options.rules)
    if template is not None:
        targets, rest = keras_variables(template)
        pairings = _fill(plan, targets, sources, options)
        used = fill_keras3_optimizer(plan, source, template, pairings, options) if rest else None
        if used is None and rest:
            plan.add("unused", options.template or source.path, f"{len(rest)} optimizer tensor(s) of the template "
                     "left out", WARNING, rest[:4] + ([f"(+{len(rest) - 4} more)"] if len(rest) > 4 else []))
        others = [k for k in others if k not in (used or set())]
        _check_shard_size(plan, options.max_shard_size)
        plan.writer = functools.partial(_write_keras3, groups=_keras3_groups(template, optimizer=used is not None),
                                        max_shard_size=options.max_shard_size)
    _left_out(plan, others, source, "the source")
    plan.report_unused_rules(options.rules)
    plan.check_collisions()
    return plan


def _check_shard_size(plan: ConversionPlan, max_shard_size: int | None) -> None:
    """A warning for each tensor larger than a shard may be (it is written alone in a shard)."""
    if max_shard_size is None:
        return
    for row in plan.rows:
        nbytes = math.prod(row.shape) * by_name(row.dtype).itemsize
        if nbytes > max_shard_size:
            plan.add("fallback", row.key, f"{nbytes:,} bytes, more than the maximum shard size "
                     f"({max_shard_size:,}): written alone in a shard (Keras' own save_weights refuses such a "
                     "tensor; load_weights reads it)", WARNING)


def _keras3_groups(template: Checkpoint, optimizer: bool = False) -> list[tuple[str, str | None]]:
    """``(object path, name attribute)`` of every ``vars`` group of a Keras 3 checkpoint, the optimizer's
    only when ``optimizer``."""
    if template.format not in KERAS3_LAYOUTS:
        raise UnsupportedError(template.path, f"a {template.format} checkpoint has no Keras 3 vars groups")
    try:
        groups = template.vars_groups()  # type: ignore[attr-defined]
    except (OSError, ValueError, KeyError) as exc:
        raise CorruptCheckpointError(template.path, f"cannot read the template's groups ({exc})") from None
    return [(owner, name) for owner, name in groups
            if optimizer or (owner != "optimizer" and not owner.startswith("optimizer/"))]


def _write_keras3(plan: ConversionPlan, output: str, force: bool, verify: bool, inputs: list[Any], *,
                  groups: list[tuple[str, str | None]], max_shard_size: int | None = None) -> Any:
    from formats.keras_h5.sharded_writer import DEFAULT_MAX_SHARD_SIZE, write_keras3_sharded
    from formats.keras_h5.writer import Keras3Group, write_keras3_h5

    out = {path: Keras3Group(path, name) for path, name in groups}
    slots: dict[str, dict[int, Any]] = {}
    for row in plan.rows:
        owner, _, index = row.key.rpartition("vars/")
        slots.setdefault(owner.rstrip("/"), {})[int(index)] = row.value
    for owner, values in slots.items():
        group = out.setdefault(owner, Keras3Group(owner))
        if sorted(values) != list(range(len(values))):
            raise InvalidOutputError(output, f"variables of {owner!r} would not be numbered 0..{len(values) - 1}")
        group.variables = [values[i] for i in range(len(values))]
    if max_shard_size is not None or output.endswith(".json"):
        return write_keras3_sharded(output, list(out.values()), max_shard_size=max_shard_size or DEFAULT_MAX_SHARD_SIZE,
                                    force=force, verify=verify, inputs=inputs)
    return write_keras3_h5(output, list(out.values()), force=force, verify=verify, inputs=inputs)
