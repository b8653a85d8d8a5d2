"""``--to keras``: a Keras 2 whole model (``model.save`` ``.h5``) as a Keras 3 ``.keras`` archive.

The ``.h5`` holds the model's config (``model_config``) and each layer's weights in order (``model_weights``,
``weight_names``). The config is translated (:mod:`formats.ops.convert.cross.legacy_model`); anything Keras 3
cannot rebuild as Keras 2 computed it (a custom class, an activation that changed, an argument Keras 3 does not
have) is an :class:`~formats.core.errors.UnsupportedError` naming every such layer. Each layer's weights take
the places Keras 3 saves them at (:mod:`formats.ops.convert.cross.legacy_graph`): Keras 2's order is derived from
the translated model, and every weight's kind (``kernel``, ``moving_mean``) and layer are checked against the
name Keras 2 gave it. The archive holds ``config.json``, ``metadata.json`` and ``model.weights.h5``, and
``keras.models.load_model`` opens it; the model is not compiled (the training config and optimizer state are
left out, with a warning).
"""
from __future__ import annotations

import json
import os
import time

from formats.concepts.keras_layers import KERAS2_NAMES
from formats.core.errors import UnsupportedError, UsageError
from formats.core.model import Checkpoint, FormatName
from formats.keras_h5.output import KERAS3_VERSION, KERAS_SUFFIX, TOP_LEVEL
from formats.ops.convert.cross.legacy_checks import weight_problem
from formats.ops.convert.cross.legacy_graph import Keras3Object, graph_problems, keras2_order, model_objects
from formats.ops.convert.cross.legacy_model import LegacyModel, translate_model
from formats.ops.convert.plan import WARNING, ConversionPlan, ConvertOptions

__all__ = ["plan_keras_model", "archive_members"]

TARGET = FormatName.KERAS_MODEL.value
_SHOWN = 5
"""How many refusals the error names (a model of 60 custom layers gets one readable line)."""


def plan_keras_model(source: Checkpoint, options: ConvertOptions) -> ConversionPlan:
    """Plan a Keras 3 ``.keras`` archive of the Keras 2 whole model ``source``."""
    plan = ConversionPlan(source.path, TARGET, options.template)
    plan.check_output = _check_output
    if options.template:
        plan.add("unsupported", options.template, f"--to {TARGET} rebuilds the model from the source's own config "
                 f"and takes no template (to put a Keras 2 file's weights into a Keras 3 model's config, use --to "
                 f"{FormatName.KERAS3_H5} --template MODEL{KERAS_SUFFIX} -o OUT{KERAS_SUFFIX})")
    config = source.metadata.get("model_config") if source.format == FormatName.KERAS2_H5 else None
    unreadable = [p.message for p in source.problems() if p.where == "@model_config"]
    if unreadable and "layer_weights" in source.metadata:
        plan.add("unsupported", source.path, f"--to {TARGET} rebuilds the model from its config, which cannot be "
                 f"read: {unreadable[0]}")
        return plan
    if not isinstance(config, dict) or "layer_weights" not in source.metadata:
        plan.add("unsupported", source.path, f"--to {TARGET} translates a Keras 2 whole model (an .h5 written by "
                 f"model.save, which holds the model's config); this {source.format} file has no model config")
        return plan
    model = translate_model(config)
    if model.config is None:
        _refuse(source, model.refusals)
    assert model.config is not None
    if model.config.get("class_name") == "Functional":
        _refuse(source, graph_problems(model.config.get("config") or {}))
    root = model_objects(model.config)
    _place(plan, source, root, model)
    _left_out(plan, source)
    plan.write_options = {"groups": [(o.path, o.name) for o in root.walk() if o.kept],
                          "members": archive_members(model.config, _saved(source.path))}
    plan.report_unused_rules(options.rules)
    plan.check_collisions()
    return plan


def _refuse(source: Checkpoint, refusals: list[str]) -> None:
    """Raise the one error naming why the model cannot be rebuilt in Keras 3 (nothing when ``refusals`` is empty)."""
    if refusals:
        shown = refusals[:_SHOWN]
        more = f"; and {len(refusals) - _SHOWN} more layer(s)" if len(refusals) > _SHOWN else ""
        raise UnsupportedError(source.path, "cannot rebuild the model in Keras 3: " + "; ".join(shown) + more)


def archive_members(config: dict[str, object], date_saved: str) -> dict[str, bytes]:
    """``config.json`` and ``metadata.json`` of a ``.keras`` archive, as Keras 3's ``saving_lib`` writes them."""
    metadata = {"keras_version": KERAS3_VERSION, "date_saved": date_saved}
    return {"config.json": json.dumps(config).encode(), "metadata.json": json.dumps(metadata).encode()}


def _saved(path: str) -> str:
    """When the model was saved (the source's modification time), as Keras 3 writes ``date_saved``."""
    try:
        return time.strftime("%Y-%m-%d@%H:%M:%S", time.localtime(os.path.getmtime(path)))
    except OSError:
        return time.strftime("%Y-%m-%d@%H:%M:%S")


def _check_output(output: str) -> None:
    if not output.endswith(KERAS_SUFFIX):
        raise UsageError(output, f"a {TARGET} output is a Keras 3 model archive, which keras.models.load_model "
                                 f"opens only under a name ending in {KERAS_SUFFIX}")


def _place(plan: ConversionPlan, source: Checkpoint, root: Keras3Object, model: LegacyModel) -> None:
    """A row for every Keras 2 weight, at its Keras 3 place."""
    layers = {child.name: child for child in root.children}
    renamed = model.renamed
    if renamed:
        shown = ", ".join(f"{old} -> {new}" for old, new in list(renamed.items())[:3])
        plan.add("fallback", "(names)", f"{len(renamed)} layer name(s) hold '/', which Keras 3 refuses: '/' "
                 f"becomes '_' ({shown}{', ...' if len(renamed) > 3 else ''})", WARNING, list(renamed))
    contradictions: list[str] = []
    for name, keys in source.metadata["layer_weights"].items():
        if not keys:
            continue
        layer = layers.get(renamed.get(name, name))
        if name == TOP_LEVEL or layer is None:
            plan.add("unsupported", name, f"{len(keys)} weight(s) of {name!r}, which the model config has no layer "
                     "for", candidates=keys)
            continue
        order = keras2_order(layer)
        if not _check(plan, source, name, layer, keys, order):
            continue
        contradictions += _contradictions(source, name, keys, order)
        if not layer.kept:  # Keras 2 saves only the layers between inputs and outputs: the config was edited
            plan.add("unused", name, f"layer {name!r} is not connected to the model's outputs: Keras 3 would leave it "
                     f"out of the model, and its {len(keys)} weight(s) with it", candidates=keys)
            continue
        for key, (obj, index) in zip(keys, order):
            entry = source[key]
            kind = obj.variables[index] if obj.variables else ""
            note = "" if _kind(str(entry.name)) == kind else f"Keras 2 {_kind(str(entry.name))}"
            plan.add_row(key, f"{obj.path}/vars/{index}", entry, entry.shape, entry.dtype, note)
    _refuse(source, contradictions)


def _contradictions(source: Checkpoint, name: str, keys: list[str], order: list[tuple[Keras3Object, int]]) -> list[str]:
    """Why the stored weights ``keys`` of layer ``name`` cannot be its variables as its config makes them (the first
    that cannot; Keras 3 would refuse to load it), else nothing."""
    for key, (obj, index) in zip(keys, order):
        why = weight_problem(obj.cls, obj.variables[index], obj.config, tuple(source[key].shape)) \
            if obj.variables else None
        if why is not None:
            return [f"layer {name!r}: {why} ({key})"]
    return []


def _kind(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def _check(plan: ConversionPlan, source: Checkpoint, name: str, layer: Keras3Object, keys: list[str],
           order: list[tuple[Keras3Object, int]]) -> bool:
    """Whether the Keras 2 weights ``keys`` of layer ``name`` are, in order, the variables ``order`` expects: as
    many, of the same kinds, each named after its own layer (a problem says what differs)."""
    names = [str(source[k].name) for k in keys]
    expected = [obj.variables[i] if obj.variables else "?" for obj, i in order]
    unknown = sorted({o.cls for o in layer.walk() if o.variables is None and o.cls != "InputLayer"})
    if len(order) != len(keys):
        why = (f"; ckpt does not know where Keras 3 keeps the variables of {', '.join(unknown)}" if unknown else "")
        plan.add("unsupported", name, f"layer {name!r} ({layer.cls}) holds {len(keys)} weight(s) in the Keras 2 "
                 f"file, Keras 3 {len(order)} ({', '.join(expected) or 'none'}){why}", candidates=keys)
        return False
    owners = {o.layer for o in layer.walk() if o.layer}
    for key, weight, (obj, index) in zip(keys, names, order):
        kind = KERAS2_NAMES.get(obj.cls, {}).get(_kind(weight), _kind(weight))
        wanted = obj.variables[index] if obj.variables else "?"
        belongs = _named_after(weight, obj.layer)
        other = [o for o in owners if o != obj.layer and _named_after(weight, o) and not belongs]
        if kind != wanted or other:
            what = f"is a {kind}" if kind != wanted else f"belongs to layer {other[0]!r}"
            plan.add("unsupported", key, f"layer {name!r} ({layer.cls}): Keras 2 weight {weight!r} {what}, where "
                     f"Keras 3 expects {obj.cls} {obj.layer!r}'s {wanted} (weights in order: {', '.join(names)})")
            return False
    return True


def _named_after(weight: str, layer: str) -> bool:
    """Whether a Keras 2 weight name (``block1/dense/kernel``) names the layer ``layer`` (``block1_dense``, its
    name in Keras 3)."""
    flat = weight.replace("/", "_")
    return flat.startswith(f"{layer}_") or f"_{layer}_" in flat


def _left_out(plan: ConversionPlan, source: Checkpoint) -> None:
    """Warnings for what a Keras 3 model archive written uncompiled leaves out."""
    placed = {row.source for row in plan.rows}
    optimizer = [k for k in source if source[k].role != "variable"]
    if optimizer:
        plan.add("unused", "optimizer", f"{len(optimizer)} optimizer tensor(s) left out (the model is written "
                 "uncompiled)", WARNING, optimizer)
    if source.metadata.get("training_config") is not None:
        plan.add("unused", "training_config", "the training config (optimizer, loss, metrics) is left out: Keras 3 "
                 "loads the model uncompiled", WARNING)
    stray = [k for k in source if source[k].role == "variable" and k not in placed
             and not any(k in p.candidates or k == p.key for p in plan.problems)]
    if stray:
        plan.add("unused", "model_weights", f"{len(stray)} weight(s) no layer lists: the model would lose them",
                 candidates=stray)
