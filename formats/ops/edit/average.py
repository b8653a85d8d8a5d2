"""``ckpt average``: one checkpoint whose weights are the mean of several checkpoints' weights.

Every floating-point model variable is the element-wise mean of the inputs, accumulated in float64
and rounded once (to nearest, ties to even) to its own dtype, bfloat16 and float16 included;
integer tensors, counters (``step``, ``save_counter``, ``global_step``), iterator state and
optimizer state come from the newest input (optimizer state can be left out instead). The inputs
must be of one format and agree on keys and dtypes, and on the shapes of the tensors averaged (one taken
from the newest input may change its shape from step to step: TensorFlow 2.21's serialized iterator state
does): every difference is listed before anything is written. Values stream a few chunks per input at a time, so memory stays bounded
whatever the checkpoints' size, and the writer's read-back compares the output with the mean
computed again from the inputs::

    from formats import average
    result = average(["run/ckpt-8", "run/ckpt-9", "run/ckpt-10"], "avg/ckpt-10")
    result = average(newest("run/tf_ckpts", 5), "avg/ckpt", drop_optimizer=True)
"""
from __future__ import annotations

import os

from formats.core.errors import UsageError
from formats.core.model import Checkpoint, TensorEntry, shape_text
from formats.core.values import value_kind
from formats.ops.convert.plan import Problem
from formats.ops.edit.build import plan_output
from formats.ops.edit.plan import EditOptions, EditPlan, EditResult
from formats.ops.edit.values import MeanTensor

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

__all__ = ["plan_average", "average", "newest", "newest_last", "compare_inputs"]


def newest(directory: str, count: int) -> list[str]:
    """The ``count`` checkpoints of ``directory`` with the highest steps, oldest first.

    Raises :class:`~formats.core.errors.UsageError` when the directory holds fewer checkpoints with a
    step, or one of them cannot be read.
    """
    from formats.discover.scan import scan_directory

    if count < 2:
        raise UsageError(directory, f"averaging needs at least 2 checkpoints, not {count}")
    found = [i for i in scan_directory(directory) if i.step is not None and i.format != "missing"]
    found.sort(key=lambda i: (i.step, i.path))
    if len(found) < count:
        raise UsageError(directory, f"{len(found)} checkpoint{'s' * (len(found) != 1)} with a step found, "
                                    f"{count} wanted")
    chosen = found[-count:]
    broken = [i for i in chosen if i.error]
    if broken:
        raise UsageError(broken[0].path, f"cannot be averaged: {broken[0].error}")
    return [i.path for i in chosen]


def newest_last(paths: Sequence[str]) -> list[str]:
    """``paths`` ordered oldest first by step when every one has a step (``ckpt-10`` after ``ckpt-9``),
    else as given (the last is then the newest)."""
    from formats.discover.scan import step_of

    steps = [step_of(p) for p in paths]
    if any(s is None for s in steps):
        return list(paths)
    order = sorted(range(len(paths)), key=lambda i: (steps[i], i))
    return [paths[i] for i in order]


def compare_inputs(sources: Sequence[Checkpoint]) -> list[Problem]:
    """Every way the inputs disagree: format, keys, dtypes, and the shapes of the tensors averaged (one problem per
    key and kind; a tensor taken from the newest input may change its shape)."""
    problems: list[Problem] = []
    formats = {s.format for s in sources}
    if len(formats) > 1:
        problems.append(Problem("format", "", "the inputs are of different formats: " + ", ".join(
            f"{n} {s.format}" for n, s in zip(_names(sources), sources))))
    names = _names(sources)
    keys = sorted(set().union(*(set(s) for s in sources)))
    for key in keys:
        lacking = [n for n, s in zip(names, sources) if key not in s]
        if lacking:
            problems.append(Problem("missing", key, f"not in {', '.join(lacking)}"))
            continue
        entries = [s[key] for s in sources]
        for kind, text in (("shape", lambda e: shape_text(e.shape)), ("dtype", lambda e: str(e.dtype))):
            if kind == "shape" and not any(map(_averaged, entries)):
                continue
            seen = [text(e) for e in entries]
            if len(set(seen)) > 1:
                problems.append(Problem(kind, key, f"{kind}s differ: " + ", ".join(
                    f"{t} in {n}" for n, t in zip(names, seen))))
    return problems


def _names(sources: Sequence[Checkpoint]) -> list[str]:
    """How problems name the inputs: their base names, or their paths when base names repeat."""
    names = [os.path.basename(s.path.rstrip(os.sep)) or s.path for s in sources]
    return names if len(set(names)) == len(names) else [s.path for s in sources]


def _averaged(entry: TensorEntry) -> bool:
    """Whether the tensor is one an average takes the mean of (a floating-point model variable)."""
    return str(entry.role) == "variable" and value_kind(str(entry.dtype)) == "float"


def _mean_of(sources: Sequence[Checkpoint]) -> Callable[[TensorEntry], tuple[Any, str] | None]:
    count = len(sources)

    def value_for(entry: TensorEntry) -> tuple[Any, str] | None:
        if not _averaged(entry):
            return None
        return MeanTensor([s[entry.key] for s in sources]), f"mean of {count}"

    return value_for


def plan_average(sources: Sequence[Checkpoint], options: EditOptions | None = None) -> EditPlan:
    """Plan the average of ``sources`` (opened checkpoints, oldest first: the last is the newest).

    ``options`` as for an edit (``drop_optimizer``, ``to``, ``shards``...; no casts). Disagreeing
    inputs make plan errors, each listed; UsageError for fewer than two inputs.
    """
    options = options or EditOptions()
    if len(sources) < 2:
        raise UsageError(sources[0].path if sources else "", "averaging needs at least 2 checkpoints")
    if options.casts:
        raise UsageError("", "an average is written in the inputs' dtypes; cast it with an edit afterwards")
    disagreements = compare_inputs(sources)
    plan = plan_output(sources[-1], options, "average", [s.path for s in sources],
                       value_for=None if disagreements else _mean_of(sources))
    plan.conversion.problems[:0] = disagreements
    return plan


def average(sources: Sequence[str | os.PathLike[str]], output: str | os.PathLike[str], *, dry_run: bool = False,
            force: bool = False, verify: bool = True, update_state: bool = False, order: str = "step",
            progress: Callable[[int, int], None] | None = None, jobs: int | None = None,
            executor: Any = None, **options: Any) -> EditResult:
    """Write the average of the checkpoints at ``sources`` to ``output`` (see the module docstring).

    ``order="step"`` takes the input with the highest step as the newest (when every path has one),
    ``order="given"`` the last one. Keyword ``options`` are :class:`~formats.ops.edit.plan.EditOptions`
    fields (``drop_optimizer=True``, ``to=...``, ``shards=...``). ``jobs``: threads reading the output
    back and computing the means again to compare (None: every core). ``executor``: ``"dask://HOST:PORT"`` (or
    ``$CKPT_EXECUTOR``) writes each data file on a worker of that cluster (:mod:`formats.ops.edit.on_cluster`).
    """
    from formats.discover.resolve import open_checkpoint

    paths = [os.fspath(p) for p in sources]
    paths = newest_last(paths) if order == "step" else paths
    opened: list[Checkpoint] = []
    try:
        for path in paths:
            opened.append(open_checkpoint(path))
        plan_options = EditOptions(**options)
        plan = plan_average(opened, plan_options)
    except BaseException:
        for ckpt in opened:
            ckpt.close()
        raise
    plan.resources += opened
    from formats.ops.edit.on_cluster import execute_edit_on

    return execute_edit_on(executor, plan, plan_average, opened, plan_options, os.fspath(output), dry_run=dry_run,
                           force=force, verify=verify, update_state=update_state, inputs=paths, progress=progress,
                           jobs=jobs)
