"""``--to keras2-h5`` and ``--to keras3-h5``: plan a Keras weights file from any Keras checkpoint.

- Keras 2 ``.h5`` without a template, from a Keras TF-format ``save_weights`` bundle: one layer
  group per top-level layer of the object graph (``layer_with_weights-N`` in order; a training
  checkpoint's ``model/layer_with_weights-N`` likewise, the object the model hangs from left aside), its weights in
  graph (creation) order with non-trainable ones (batch statistics) last, as ``_legacy_weights``
  orders them; weight names are the ``full_name`` s plus ``:0``. A layer is named after the first
  segment its weights' names share; a nested model whose weights share none (``dense``,
  ``dense_1``) is named by its object path and a warning says so (tf-keras loads ``.h5`` weights
  by order, so ``load_weights`` is unaffected; ``by_name=True`` is not).
- With ``--template`` (a weights file written by the target Keras for the same architecture) the
  output has the template's layout and names, and each template weight takes the source weight
  paired with it by :func:`~formats.ops.convert.cross.matching.match_variables`. A Keras 3
  template's optimizer variables are filled by meaning from the source's optimizer state
  (:mod:`formats.ops.convert.cross.optimizer`); without ``config.json`` the source's slots tell which
  variables are trainable and in which order. Optimizer state both sides hold that cannot be placed
  is an error (``--drop-optimizer`` leaves it out); a Keras 3 source in its own layout keeps its own.
"""
from __future__ import annotations

import functools
import math

from formats.discover.resolve import open_checkpoint
from formats.ops.convert.plan import WARNING, ConversionPlan, ConvertOptions
from formats.core.dtypes import by_name
from formats.core.errors import CorruptCheckpointError, UnsupportedError, UsageError
from formats.ops.convert.conversion_source import is_object_based
from formats.core.model import KERAS3_LAYOUTS, Checkpoint, FormatName
from formats.keras_h5.output import KERAS2_VERSION, KERAS_SUFFIX, TOP_LEVEL
from formats.ops.convert.cross.matching import Pairing, match_variables
from formats.ops.convert.cross.optimizer import fill_keras3_optimizer
from formats.ops.convert.cross.variables import KerasVar, keras_variables

__all__ = ["plan_keras2_h5", "plan_keras3_h5", "KERAS2_VERSION", "KERAS3_LAYOUTS"]

KERAS2 = FormatName.KERAS2_H5.value
KERAS3 = FormatName.KERAS3_H5.value


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


KERAS2_REASONS = {"": "Keras 2 .h5 weights files hold model weights only"}
"""Why a source tensor has no place in a Keras 2 ``.h5`` file, by role (``""``: any role)."""


def _left_out(plan: ConversionPlan, others: list[str], source: Checkpoint, what: str,
              reasons: dict[str, str]) -> None:
    """One warning per role of the ``others`` left out, with the reason ``reasons`` gives for it."""
    roles: dict[str, list[str]] = {}
    for key in others:
        roles.setdefault(source[key].role, []).append(key)
    for role, keys in roles.items():
        plan.add("unused", role, f"{len(keys)} {role} tensor(s) of {what} left out "
                 f"({reasons.get(role, reasons[''])})", WARNING, keys)


def _keras3_reasons(plan: ConversionPlan, options: ConvertOptions, source: Checkpoint, others: list[str],
                    rest: list[str] | None, where: str, filled: bool = False) -> dict[str, str]:
    """Report the template's optimizer variables ``rest`` (None: no template) left out, and say why
    the source's ``others`` are (``filled``: the template's optimizer took the source's state). Optimizer
    state both sides hold is an error unless ``--drop-optimizer``."""
    held = [k for k in others if source[k].role in ("optimizer", "slot")]
    if options.drop_optimizer:
        state = "--drop-optimizer"
        if rest:
            plan.add("unused", where, f"{len(rest)} optimizer tensor(s) of the template left out ({state})", WARNING,
                     list(rest))
    elif filled:
        state = "no variable of a Keras 3 optimizer holds it: Keras 3 keeps such settings in the optimizer's config"
    elif rest and held:
        state = "no place found in the template's optimizer variables"
        plan.add("unsupported", where, f"the template's {len(rest)} optimizer variables cannot be tied to the "
                 f"source's {len(held)} optimizer tensors (which variable each slot belongs to is not certain, "
                 "or the optimizers differ); use a .keras template (its config tells trainable from "
                 "non-trainable variables) or --drop-optimizer to leave optimizer state out", candidates=list(rest))
    elif rest:
        state = ""
        plan.add("unused", where, f"{len(rest)} optimizer tensor(s) of the template left out (the source holds "
                 "no optimizer state)", WARNING, list(rest))
    else:
        state = ("the template has no optimizer variables: save it after model.optimizer.build("
                 "model.trainable_variables), or use --drop-optimizer")
        if held:  # training state is written or refused, never dropped
            plan.add("optimizer", where, f"{len(held)} optimizer tensor(s) of the source have no place: {state} "
                     "to leave them out", candidates=held)
    reasons = {"": "a Keras 3 weights file has no place for it"}
    if state:
        reasons.update(optimizer=state, slot=state)
    return reasons


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
    plan = ConversionPlan(source.path, KERAS2, options.template)
    template = _open_template(plan, options, KERAS2)
    sources, others = keras_variables(source, options.rules)
    _left_out(plan, others, source, "the source", KERAS2_REASONS)
    if template is not None:
        targets, _ = keras_variables(template)
        _fill(plan, targets, sources, options)
        meta = template.metadata
        plan.check_output = _check_keras2_output
        plan.write_options = {"layer_names": list(meta.get("layers") or []),
                              "backend": str(meta.get("backend", "tensorflow")),
                              "keras_version": str(meta.get("keras_version", KERAS2_VERSION))}
    elif options.template is None:
        if not (is_object_based(source) or source.format == KERAS2):
            plan.add("unsupported", source.path, f"a {source.format} source has no Keras 2 layer names; give "
                     "--template, a Keras 2 weights file of the same architecture")
        layer_names = _plan_layers(plan, sources)
        meta = source.metadata if source.format == KERAS2 else {}
        names = list(meta.get("layers") or layer_names) if not options.rules else layer_names
        plan.check_output = _check_keras2_output
        plan.write_options = {"layer_names": names, "backend": str(meta.get("backend", "tensorflow")),
                              "keras_version": str(meta.get("keras_version", KERAS2_VERSION))}
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


def plan_keras3_h5(source: Checkpoint, options: ConvertOptions) -> ConversionPlan:
    """Plan a Keras 3 ``.weights.h5`` file (or, with ``options.max_shard_size`` or an output named
    ``*.json``, sharded weights) from ``source`` onto ``options.template`` (required unless the source
    itself has the Keras 3 layout - a ``.weights.h5``, ``.keras``, model directory or sharded weights -
    whose layout is then kept)."""
    plan = ConversionPlan(source.path, KERAS3, options.template)
    template = _open_template(plan, options, KERAS3, KERAS3_LAYOUTS)
    if template is None and options.template is None:
        if source.format not in KERAS3_LAYOUTS:
            plan.add("unsupported", source.path, _no_template(source))
        else:
            template = source
    sources, others = keras_variables(source, options.rules)
    if template is not None:
        targets, rest = keras_variables(template)
        pairings = _fill(plan, targets, sources, options)
        filling = bool(rest) and not options.drop_optimizer
        used: set[str] | None
        if filling and template is source:
            used = _own_optimizer(plan, source, rest)
        else:
            used = fill_keras3_optimizer(plan, source, template, pairings, options) if filling else None
        refused = {key for problem in plan.errors for key in problem.candidates}
        others = [k for k in others if k not in (used or set()) and k not in refused]
        reasons = _keras3_reasons(plan, options, source, others, rest if used is None else [],
                                  options.template or source.path, filled=used is not None)
        refused = {key for problem in plan.errors for key in problem.candidates}
        others = [k for k in others if k not in refused]
        _check_optimizer_written(plan, rest, used, options.template or source.path)
        _check_shard_size(plan, options.max_shard_size)
        model = _keras_model(template)
        plan.check_output = functools.partial(_check_keras3_output, model=model)
        plan.write_options = {"groups": _keras3_groups(template, optimizer=used is not None),
                              "max_shard_size": options.max_shard_size, "model": model}
    else:
        reasons = _keras3_reasons(plan, options, source, others, None, source.path)
    _left_out(plan, others, source, "the source", reasons)
    plan.report_unused_rules(options.rules)
    plan.check_collisions()
    return plan


def _no_template(source: Checkpoint) -> str:
    """Why ``--to keras3-h5`` needs a template for ``source``, and, for a Keras 2 whole model, the way through."""
    if source.format == KERAS2 and isinstance(source.metadata.get("model_config"), dict) \
            and "layer_weights" in source.metadata:
        model = FormatName.KERAS_MODEL.value
        return (f"--to {KERAS3} needs --template, a .weights.h5 or .keras file written by Keras 3 for the same "
                f"architecture; this {source.format} file is a whole model (model.save), whose Keras 3 object paths "
                f"--to {model} derives from its config: convert it --to {model} -o MODEL{KERAS_SUFFIX} (Keras 3 loads "
                f"that model; --to {KERAS3} takes it as a source or a --template)")
    return (f"--to {KERAS3} needs --template, a .weights.h5 file written by Keras 3 for the same architecture "
            f"(Keras 3 object paths cannot be derived from a {source.format} file)")


def _check_optimizer_written(plan: ConversionPlan, rest: list[str], used: set[str] | None, where: str) -> None:
    """Keras 3 loads an optimizer's variables only when the file holds exactly as many as the optimizer has
    (else it warns "Skipping variable loading for optimizer" and keeps none of them): an optimizer group
    written without every one of the template's variables is an error, never an output."""
    if used is None or plan.errors:
        return
    expected = [k for k in rest if k.startswith("optimizer/")]
    written = {row.key for row in plan.rows}
    missing = [k for k in expected if k not in written]
    if missing:
        plan.add("optimizer", where, f"the output's optimizer would hold {len(expected) - len(missing)} of the "
                 f"template's {len(expected)} variables, and Keras 3 skips an optimizer whose variable count "
                 "differs from its own: nothing written (--drop-optimizer leaves optimizer state out)",
                 candidates=missing)


def _keras_model(template: Checkpoint) -> tuple[str, str] | None:
    """``(path, kind)`` of a template that is a whole Keras 3 model (a ``.keras`` archive or a model
    directory with ``config.json``), whose config a ``.keras`` output carries over; else None."""
    kind = {FormatName.KERAS_ZIP.value: "zip", FormatName.KERAS3_DIR.value: "dir"}.get(template.format)
    if kind is None or "model_config" not in template.metadata:
        return None
    return template.path, kind


def _check_keras3_output(output: str, *, model: tuple[str, str] | None) -> None:
    """A ``.keras`` output needs a model config to carry over."""
    if output.endswith(KERAS_SUFFIX) and model is None:
        raise UsageError(output, "a .keras file is a whole model (config.json and weights); with no .keras "
                         "template there is no config to put in it: name the output *.weights.h5, or convert "
                         "onto a .keras template")


def _check_keras2_output(output: str) -> None:
    if output.endswith(KERAS_SUFFIX):
        raise UsageError(output, "a keras2-h5 output is a save_weights .h5 file, not a .keras archive: name "
                         "the output *.h5")


def _own_optimizer(plan: ConversionPlan, source: Checkpoint, keys: list[str]) -> set[str]:
    """A Keras 3 source written in its own layout keeps its optimizer variables as they are."""
    for key in keys:
        entry = source[key]
        plan.add_row(key, key, entry, entry.shape, entry.dtype, "")
    return set(keys)


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
