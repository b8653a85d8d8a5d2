"""The conversion targets (``ckpt convert --to NAME``): one table, read by the library and the CLI.

Each target names a planning function ``(source Checkpoint, ConvertOptions) -> ConversionPlan``; it is
imported only when that target is used, so listing the targets costs nothing.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable

from formats.core.model import FormatName

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["TARGETS", "planner"]

TARGETS: dict[str, str] = {
    FormatName.TF_OBJECT.value: "formats.ops.convert.name_to_object:plan_tf_object",
    FormatName.TF_NAME.value: "formats.ops.convert.object_to_name:plan_tf_name",
    FormatName.KERAS2_H5.value: "formats.ops.convert.cross.keras_targets:plan_keras2_h5",
    FormatName.KERAS3_H5.value: "formats.ops.convert.cross.keras_targets:plan_keras3_h5",
    FormatName.NPZ.value: "formats.ops.convert.cross.export:plan_npz",
    FormatName.SAFETENSORS.value: "formats.ops.convert.cross.export:plan_safetensors",
}
"""``--to`` name -> ``module:function`` of its planner."""


def planner(name: str) -> Callable[..., Any]:
    """The planning function of target ``name``; KeyError for an unknown target."""
    module, attr = TARGETS[name].split(":")
    return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]
