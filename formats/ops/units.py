"""Running the work of a command as units, on local threads or a cluster, merged in a fixed order.

``verify``, ``stats`` and ``diff`` each hand :func:`run_units` a module-level unit function (``verify_unit``,
``stats_unit``, ``diff_unit``) and their tensors in the order of the result. The tensors are cut into units
of consecutive keys (:func:`formats.discover.units.group_keys`: on local threads up to 1 MiB of small tensors
or one bigger tensor per unit, so that a tiny tensor does not cost a hand-over between threads; about 64 MiB of
stored bytes per unit on a cluster, where a unit costs a round trip); each unit is
the function and plain arguments - the checkpoints as :class:`~formats.discover.units.SourceRef`, its keys -
and returns one small partial result per tensor. The partial results are concatenated in unit order, so
the result is the same wherever the units ran. On local threads the units use the checkpoints the caller
opened (lent for the run); on a cluster each worker opens them from their URLs once per run.
"""
from __future__ import annotations

from formats.core.executors import Executor, LocalExecutor, executor_for
from formats.discover.units import (LOCAL_UNIT_BYTES, LOCAL_UNIT_ITEMS, UNIT_BYTES, for_unit, group_keys, lending,
                                    source_ref)

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import Any

    from formats.core.model import Checkpoint

__all__ = ["run_units", "new_token"]

_runs = [0]


def new_token() -> str:
    """A name for one run, unique in this process and (with the process id and time) across a cluster."""
    import os
    import time

    _runs[0] += 1
    return f"{os.getpid():x}-{time.time_ns():x}-{_runs[0]}"


def run_units(checkpoints: Sequence[Checkpoint], fn: Callable[..., Iterable[Any]],
              sizes: Iterable[tuple[Any, int]], progress: Callable[[int, int], None] | None = None,
              jobs: int | None = 1, executor: str | Executor | None = None, *args: Any,
              parallel: bool | None = None, keys_of: Callable[[Any], Sequence[str]] | None = None,
              joined: Callable[[list[Any]], Any] | None = None) -> Any:
    """``fn(*refs, items, *args)`` over units of ``sizes`` (``(item, stored bytes)``, items usually keys; any
    iterable, read once: a generator keeps no pair per item), the per-item results concatenated in order.
    ``refs`` name ``checkpoints``; ``parallel`` (default: every checkpoint's ``concurrent_reads``) allows local
    threads. ``progress(bytes, items)`` follows the units as they finish. ``keys_of(item)``: the item's key in
    each checkpoint (default: the item is the key). ``joined(parts)``, given, makes the result of the units'
    results in order instead of a list of their items (``stats``: columns, not an object per tensor)."""
    ckpts = list(checkpoints)
    if parallel is None:
        parallel = all(c.concurrent_reads for c in ckpts)
    chosen = executor_for(executor, jobs if parallel else 1)
    if isinstance(chosen, LocalExecutor) and not parallel:
        chosen = LocalExecutor(1)
    try:
        return _run(ckpts, fn, sizes, progress, chosen, args, keys_of or (lambda item: (item,) * len(ckpts)), joined)
    finally:
        if chosen is not executor:
            chosen.close()


def _run(ckpts: list[Checkpoint], fn: Callable[..., Iterable[Any]], sizes: Iterable[tuple[Any, int]],
         progress: Callable[[int, int], None] | None, chosen: Executor, args: tuple[Any, ...],
         keys_of: Callable[[Any], Sequence[str]], joined: Callable[[list[Any]], Any] | None = None) -> Any:
    token = new_token()
    refs = [source_ref(c, token) for c in ckpts]
    units: list[tuple[Any, ...]] = []
    weights: dict[int, tuple[int, int]] = {}
    known = [c.remote_sizes() for c in ckpts] if chosen.remote else []
    cut = (UNIT_BYTES, None) if chosen.remote else (LOCAL_UNIT_BYTES, LOCAL_UNIT_ITEMS)
    for items, nbytes in group_keys(sizes, *cut):
        unit_refs = refs
        if chosen.remote:  # each unit carries the sizes of the files it reads, as found here
            unit_refs = [for_unit(r, c, (keys_of(item)[i] for item in items), k)
                         for i, (r, c, k) in enumerate(zip(refs, ckpts, known))]
        unit = (*unit_refs, items, *args)
        units.append(unit)
        weights[id(unit)] = (nbytes, len(items))
    done = [0, 0]

    def advance(unit: tuple[Any, ...], _: object) -> None:
        nbytes, n = weights[id(unit)]
        done[0] += nbytes
        done[1] += n
        if progress is not None:
            progress(*done)

    lent = [] if chosen.remote else [lending(c, r) for c, r in zip(ckpts, refs)]
    for lend in lent:
        lend.__enter__()
    try:
        found = chosen.map(fn, units, weight=lambda unit: weights[id(unit)][0], done=advance)
    finally:
        for lend in lent:
            lend.__exit__()
    if joined is not None:
        return joined(list(found))
    return [result for part in found for result in part]
