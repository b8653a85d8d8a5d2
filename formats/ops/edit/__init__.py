"""What people do to checkpoints: average several, leave out the optimizer, keep a subset, cast, re-shard.

Both operations go through the conversion machinery (:mod:`formats.ops.convert`): planned first
with every problem reported, written atomically, read back and compared with what was asked.

- :func:`~formats.ops.edit.edit.edit` / :func:`~formats.ops.edit.edit.plan_edit`: ``drop_optimizer``,
  ``select`` / ``exclude`` (by key or variable name), ``casts`` between floating-point dtypes,
  ``shards`` / ``max_shard_size``, ``to`` another format; an object-based checkpoint's graph is cut
  down to the objects that remain (:mod:`~formats.ops.edit.prune`);
- :func:`~formats.ops.edit.average.average` / :func:`~formats.ops.edit.average.plan_average`: the
  mean of several checkpoints' floating-point variables, streamed (:mod:`~formats.ops.edit.values`).
"""
from __future__ import annotations

from formats.ops.edit.average import average, newest, plan_average
from formats.ops.edit.edit import edit, plan_edit
from formats.ops.edit.plan import EditOptions, EditPlan, EditResult, KeyAction, execute_edit, parse_casts

__all__ = ["EditOptions", "EditPlan", "EditResult", "KeyAction", "edit", "plan_edit", "average", "plan_average",
           "newest", "execute_edit", "parse_casts"]
