"""``ckpt edit``: a checkpoint written again with less in it, other dtypes, or its data spread over files.

:func:`plan_edit` plans the edit of an opened checkpoint; :func:`edit` opens, plans and writes in
one call::

    from formats import edit
    result = edit("run/tf_ckpts/ckpt-5", "model_only/ckpt-5", drop_optimizer=True)
    result = edit("ckpt-5", "bf16/ckpt-5", casts={"float32": "bfloat16"}, dry_run=True)
    for action in result.plan.actions:
        print(action.key, action.action, action.detail)
"""
from __future__ import annotations

import os

from formats.core.gc_pause import gc_paused
from formats.core.model import Checkpoint
from formats.ops.edit.build import plan_output
from formats.ops.edit.plan import EditOptions, EditPlan, EditResult

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

__all__ = ["plan_edit", "plan_edit_of", "edit"]


@gc_paused
def plan_edit(source: Checkpoint, options: EditOptions | None = None) -> EditPlan:
    """Plan writing ``source`` as ``options`` ask: every input key's fate, every problem, nothing written.

    Raises :class:`~formats.core.errors.UsageError` for options that mean nothing (an unknown dtype in
    a cast, a number of data files and a shard size together).
    """
    return plan_output(source, options or EditOptions(), "edit", [source.path])


def plan_edit_of(sources: Sequence[Checkpoint], options: EditOptions) -> EditPlan:
    """:func:`plan_edit` of the one checkpoint of ``sources`` (the planners of a write on a cluster take a list)."""
    return plan_edit(sources[0], options)


def edit(source: str | os.PathLike[str], output: str | os.PathLike[str], *, dry_run: bool = False,
         force: bool = False, verify: bool = True, update_state: bool = False,
         progress: Callable[[int, int], None] | None = None, jobs: int | None = None, executor: Any = None,
         **options: Any) -> EditResult:
    """Write the checkpoint at ``source`` to ``output`` edited as the keyword ``options`` say
    (the fields of :class:`~formats.ops.edit.plan.EditOptions`: ``drop_optimizer=True``,
    ``select=("net/*",)``, ``casts={"float32": "bfloat16"}``, ``shards=4``, ``to=FormatName.TF_NAME``...).

    Nothing is written when the plan has errors (``result.ok`` is False and ``result.plan.problems``
    says why) or with ``dry_run``. The output is written atomically, read back and compared with
    what was planned (on ``jobs`` threads; None: every core); ``force`` replaces an existing output (never
    an input). ``executor``: ``"dask://HOST:PORT"`` (or ``$CKPT_EXECUTOR``) writes each data file of a bundle
    output on a worker of that cluster (:mod:`formats.ops.edit.on_cluster`).
    """
    from formats.discover.resolve import open_checkpoint

    ckpt = open_checkpoint(source)
    try:
        plan_options = EditOptions(**options)
        plan = plan_edit(ckpt, plan_options)
    except BaseException:
        ckpt.close()
        raise
    plan.resources.append(ckpt)
    from formats.ops.edit.on_cluster import execute_edit_on

    return execute_edit_on(executor, plan, plan_edit_of, [ckpt], plan_options, os.fspath(output), dry_run=dry_run,
                           force=force, verify=verify, update_state=update_state, inputs=[os.fspath(source)],
                           progress=progress, jobs=jobs)
