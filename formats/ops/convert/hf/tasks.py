"""A fine-tuning task named with ``--hf-task``: the ``config.json`` fields an original conversion script set from its
``--task`` argument, which the checkpoint does not hold (TAPAS's WTQ temperature, answer loss cutoff...).

A family file says, as data::

    [[classes]]
    name = "TapasForQuestionAnswering"
    groups = ["base", "pooler", "cell_selection", "aggregation"]
    needs_task = "an aggregation head (output_weights_agg), whose ... are not in the checkpoint"
    [tasks.wtq]                       # --hf-task wtq
    groups = ["base", "pooler", "cell_selection", "aggregation"]  # the parameter groups of the model it builds
    [tasks.wtq.set]                   # config.json fields (over the original configuration's, under --hparam's)
    temperature = 0.0352513

A class with ``needs_task`` is refused without ``--hf-task``; a task whose groups are not the class's (``--hf-task
sqa`` on a checkpoint with an aggregation head) is refused; so is a task the family does not know.
"""
from __future__ import annotations

from typing import Any

from formats.ops.convert.hf.family import Family

__all__ = ["OPTION", "task_fields", "task_problem"]

OPTION = "--hf-task"
"""The command line's name of the task choice (messages name it)."""


def _tasks(family: Family) -> dict[str, Any]:
    tasks = family.raw.get("tasks", {})
    return tasks if isinstance(tasks, dict) else {}


def task_fields(family: Family, task: str | None) -> tuple[dict[str, Any], str | None]:
    """The ``config.json`` fields ``task`` sets (``{}`` without one), and what is wrong with the choice (a task the
    family does not know), else None."""
    if task is None:
        return {}, None
    tasks = _tasks(family)
    if task not in tasks:
        known = f"it knows {', '.join(sorted(tasks))}" if tasks else "it knows none"
        return {}, f"{OPTION} {task}: the {family.name} map has no such task ({known})"
    return dict(tasks[task].get("set", {})), None


def task_problem(family: Family, cls: dict[str, Any], groups: list[str], task: str | None) -> str | None:
    """Why the class chosen from the checkpoint's tensors (``cls``, with its parameter ``groups``) cannot be built
    with ``task`` (None: no task named), else None."""
    fits = sorted(name for name, spec in _tasks(family).items() if sorted(spec.get("groups", [])) == sorted(groups))
    if task is None:
        if cls.get("needs_task"):
            return (f"the checkpoint holds {cls['needs_task']}: name its task with {OPTION} "
                    f"{'|'.join(fits) or 'TASK'}")
        return None
    wanted = _tasks(family).get(task, {}).get("groups")
    if wanted is None or sorted(wanted) == sorted(groups):
        return None
    also = f"; its tensors fit {OPTION} {'|'.join(fits)}" if fits else ""
    extra, lacking = sorted(set(groups) - set(wanted)), sorted(set(wanted) - set(groups))
    if extra:
        return f"{OPTION} {task} builds a model without the {', '.join(extra)} parameters the checkpoint holds{also}"
    return f"{OPTION} {task} builds a model with {', '.join(lacking)} parameters, which the checkpoint lacks{also}"
