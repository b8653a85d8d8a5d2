"""Conversions between checkpoint layouts, planned before anything is written.

Each target is a function ``(source Checkpoint, ConvertOptions) -> ConversionPlan``:
:func:`plan_tf_object` (name -> object, generic or onto ``options.template``),
:func:`plan_tf_name` (object -> name) and :func:`plan_rename` (rename keys or objects).
A plan lists rows (source key -> output key, shape, dtype, note) and problems;
:func:`execute_plan` writes it unless it has errors (or for a dry run).
"""
from __future__ import annotations

from formats.ops.convert.name_to_object import plan_name_to_object, plan_tf_object
from formats.ops.convert.object_to_name import plan_tf_name
from formats.ops.convert.plan import ConversionPlan, ConversionResult, ConvertOptions, PlanRow, Problem, execute_plan
from formats.ops.convert.rename import plan_rename
from formats.ops.convert.template import plan_onto_template

__all__ = ["ConvertOptions", "ConversionPlan", "ConversionResult", "PlanRow", "Problem", "execute_plan",
           "plan_tf_object", "plan_name_to_object", "plan_onto_template", "plan_tf_name", "plan_rename"]
