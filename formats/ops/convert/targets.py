"""The conversion targets (``ckpt convert --to NAME``): the layouts registered formats write.

The targets are derived from the registry (:func:`formats.core.registry.write_targets`, plugins
included). A target with a dedicated planning function ``(source Checkpoint, ConvertOptions) ->
ConversionPlan`` is named in :data:`PLANNERS` (imported only when that target is used); every other
one is an export (:func:`formats.ops.convert.cross.export.plan_export`).
"""
from __future__ import annotations

import sys

from formats.core.model import FormatName
from formats.core.registry import write_targets, writer_of
from formats.core.value_tuples import ValueTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

if TYPE_CHECKING:
    TARGETS: dict[str, str]
    """``--to`` name -> ``module:function`` of its planner (from the registry, when first asked)."""

__all__ = ["TARGETS", "PLANNERS", "EXPORT", "planner", "targets", "model_planner", "ConvertJob", "plan_job"]

PLANNERS: dict[str, str] = {
    FormatName.TF_OBJECT.value: "formats.ops.convert.name_to_object:plan_tf_object",
    FormatName.TF_NAME.value: "formats.ops.convert.object_to_name:plan_tf_name",
    FormatName.KERAS2_H5.value: "formats.ops.convert.cross.keras_targets:plan_keras2_h5",
    FormatName.KERAS3_H5.value: "formats.ops.convert.cross.keras_targets:plan_keras3_h5",
    FormatName.KERAS_MODEL.value: "formats.ops.convert.cross.keras_model:plan_keras_model",
    FormatName.HF.value: "formats.ops.convert.hf.plan:plan_hf",
}
"""Targets with a planner of their own -> ``module:function``."""
EXPORT = "formats.ops.convert.cross.export:exporter"
"""``module:function`` giving the export planner of any other target."""


def targets() -> dict[str, str]:
    """Every target (sorted) -> ``module:function`` of its planner (for an export, of :data:`EXPORT`)."""
    return {name: PLANNERS.get(name, EXPORT) for name in write_targets()}



def __getattr__(name: str) -> object:
    """``TARGETS``: :func:`targets` when first asked (importing this module asks the registry nothing, so
    converting a bundle to a bundle loads no other format's module)."""
    if name == "TARGETS":
        return targets()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def planner(name: str) -> Callable[..., Any]:
    """The planning function of target ``name``; KeyError for an unknown target."""
    ref = PLANNERS.get(name)
    if ref is None:
        writer_of(name)  # KeyError for an unknown target; the formats before the writer's are the only ones imported
        ref = EXPORT
    module, attr = ref.split(":")
    __import__(module)  # not importlib.import_module: importlib imports warnings (start-up)
    function = getattr(sys.modules[module], attr)
    return function(name) if ref == EXPORT else function


def model_planner(to: str, options: Any) -> Callable[..., Any]:
    """The planner of ``to`` for ``options``: a model family's (:mod:`formats.ops.convert.hf`) when a family or
    a model map is given for ``tf-name`` (from a transformers directory) or ``safetensors``, else
    :func:`planner`."""
    if options.family or options.model_map:
        if to == FormatName.TF_NAME:
            from formats.ops.convert.hf.reverse import plan_tf_names

            return plan_tf_names
        if to == FormatName.SAFETENSORS:
            from formats.ops.convert.hf.plan import plan_mapped_safetensors

            return plan_mapped_safetensors
    return planner(to)


class ConvertJob(ValueTuple):
    """A ``convert`` (to ``to``) or a ``rename`` (``to`` empty) by its options, to be planned again where its
    units run (:func:`plan_job`; the options' file paths absolute or URLs)."""

    options: Any
    to: str = ""


def plan_job(sources: list[Any], job: ConvertJob) -> Any:
    """The plan of ``job`` for its one source (``sources[0]``): what ``formats.convert`` or ``formats.rename``
    plans (here and on a cluster's workers), the tensors ckpt cannot read left out if its options say so."""
    if not job.to:
        from formats.ops.convert.rename import plan_rename

        plan = plan_rename(sources[0], job.options)
    else:
        plan = model_planner(job.to, job.options)(sources[0], job.options)
    if job.options.skip_unreadable:
        plan.leave_out_unreadable()
    return plan
