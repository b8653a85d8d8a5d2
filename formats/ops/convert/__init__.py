"""Conversions between checkpoint layouts, planned before anything is written.

Each target is a function ``(source Checkpoint, ConvertOptions) -> ConversionPlan``:
:func:`plan_tf_object` (name -> object, generic or onto ``options.template``),
:func:`plan_tf_name` (object -> name) and :func:`plan_rename` (rename keys or objects).
A plan lists rows (source key -> output key, shape, dtype, note, transform) and problems;
:func:`execute_plan` writes it unless it has errors (or for a dry run). Optimizer state moves
between TF1, tf-keras and Keras 3 by meaning: :mod:`~formats.ops.convert.optimizer_state` reads a
checkpoint's optimizer through the table of :mod:`formats.concepts.optimizers`,
:mod:`~formats.ops.convert.optimizer_moves` computes the target's values (copies, ``x (-lr)``, the
step count, TF1's power accumulators) and :mod:`~formats.ops.convert.optimizer_rows` turns them into rows.
"""
from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from formats.ops.convert.name_to_object import plan_name_to_object, plan_tf_object
    from formats.ops.convert.object_to_name import plan_tf_name
    from formats.ops.convert.plan import (ConversionPlan, ConversionResult, ConvertOptions, PlanRow, Problem,
                                          execute_plan)
    from formats.ops.convert.rename import plan_rename
    from formats.ops.convert.template import plan_onto_template

__all__ = ["ConvertOptions", "ConversionPlan", "ConversionResult", "PlanRow", "Problem", "execute_plan",
           "plan_tf_object", "plan_name_to_object", "plan_onto_template", "plan_tf_name", "plan_rename"]

_WHERE = {"plan_tf_object": "name_to_object", "plan_name_to_object": "name_to_object", "plan_tf_name": "object_to_name",
          "plan_rename": "rename", "plan_onto_template": "template"}


def __getattr__(name: str) -> object:
    """The planners, imported on first use (a rename does not load the conversions it does not make)."""
    if name in __all__:
        import importlib

        return getattr(importlib.import_module(f"formats.ops.convert.{_WHERE.get(name, 'plan')}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
