"""Where units of work run: threads of this process, or the workers of a Dask cluster.

A unit is a plain picklable call - a module-level function and small arguments (URLs, byte ranges, tensor
keys) - returning a small partial result. :meth:`Executor.map` runs a list of them and gives their results
back in input order, as :func:`formats.core.parallel.map_ordered` does; the caller merges them in that fixed
order, so a result does not depend on where, or in what order, its units ran:

- :class:`LocalExecutor` runs them on ``jobs`` threads of this process (``--jobs``);
- :class:`DaskExecutor` submits them to a ``dask.distributed`` scheduler (``--executor dask://HOST:PORT``);
  its workers read the checkpoint from where it lives (a bucket) themselves, and only the partial results
  travel back. A worker lost mid-unit is replaced and the unit run again by Dask: units only read, or write
  their own output object whole, so a rerun gives the same bytes.

:func:`executor_for` reads the option's text (``local``, ``dask://HOST:PORT``), ``CKPT_EXECUTOR`` when none
is given. ``distributed`` is imported only for a Dask executor; without it the error says how to install it.
"""
from __future__ import annotations

import os

from formats.core.errors import InputReadError, UsageError

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, TypeVar

    T = TypeVar("T")
    R = TypeVar("R")

__all__ = ["Executor", "LocalExecutor", "DaskExecutor", "executor_for", "is_local", "ENVIRONMENT", "INSTALL"]

ENVIRONMENT = "CKPT_EXECUTOR"
"""The environment variable naming the executor when none is given (``local`` when unset)."""
INSTALL = "pip install 'tfckpt[dask]'"
"""What installs the Dask executor's packages."""


class Executor:
    """Runs units; results in input order, the first failing unit's (in input order) exception raised."""

    name = "local"
    remote = False
    """Whether units run in other processes (they then open checkpoints themselves, by URL)."""

    def map(self, fn: Callable[..., R], units: Sequence[tuple[Any, ...]], *,
            weight: Callable[[tuple[Any, ...]], int] | None = None,
            done: Callable[[tuple[Any, ...], R], None] | None = None) -> list[R]:
        """``[fn(*unit) for unit in units]``; ``done(unit, result)`` in the calling thread as each finishes."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the executor holds (a cluster connection)."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LocalExecutor(Executor):
    """Units on ``jobs`` threads of this process (None or 0: one per available core)."""

    def __init__(self, jobs: int | None = 1) -> None:
        self.jobs = jobs

    def map(self, fn: Callable[..., R], units: Sequence[tuple[Any, ...]], *,
            weight: Callable[[tuple[Any, ...]], int] | None = None,
            done: Callable[[tuple[Any, ...], R], None] | None = None) -> list[R]:
        from formats.core.parallel import map_ordered

        return map_ordered(lambda unit: fn(*unit), units, self.jobs, weight=weight, done=done)


class DaskExecutor(Executor):
    """Units on the workers of the ``dask.distributed`` scheduler at ``address`` (``tcp://HOST:PORT``)."""

    name = "dask"
    remote = True

    def __init__(self, address: str, timeout: float = 20.0) -> None:
        try:
            from distributed import Client
        except ImportError:
            raise UsageError("", f"a dask:// executor needs the Dask packages: {INSTALL}") from None
        self.address = address
        try:
            self.client = Client(address, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise InputReadError(address, f"cannot reach the Dask scheduler ({type(exc).__name__}: {exc})") from None

    def map(self, fn: Callable[..., R], units: Sequence[tuple[Any, ...]], *,
            weight: Callable[[tuple[Any, ...]], int] | None = None,
            done: Callable[[tuple[Any, ...], R], None] | None = None) -> list[R]:
        from distributed import as_completed

        if not units:
            return []
        import uuid

        run = uuid.uuid4().hex[:12]
        futures = [self.client.submit(fn, *unit, key=f"ckpt-{getattr(fn, '__name__', 'unit')}-{run}-{i}",
                                      priority=weight(unit) if weight else 0, pure=False)
                   for i, unit in enumerate(units)]
        index = {f.key: i for i, f in enumerate(futures)}
        results: dict[int, Any] = {}
        errors: dict[int, BaseException] = {}
        try:
            for future in as_completed(futures, loop=self.client.loop):
                i = index[future.key]
                if future.status == "error":
                    errors[i] = future.exception()
                    for later in futures[i + 1:]:  # nothing after the first failure is needed
                        later.cancel()
                    continue
                if future.status == "cancelled":
                    continue
                results[i] = future.result()
                future.release()
                if done is not None:
                    done(units[i], results[i])
        finally:
            for future in futures:
                future.cancel()
        if errors:
            raise errors[min(errors)]
        return [results[i] for i in range(len(units))]

    def close(self) -> None:
        self.client.close()


def is_local(spec: str | Executor | None = None) -> bool:
    """Whether ``spec`` (as :func:`executor_for` takes it) names this process's threads - known without
    connecting anywhere or importing anything."""
    if isinstance(spec, Executor):
        return not spec.remote
    text = spec if spec is not None else os.environ.get(ENVIRONMENT, "")
    return text.strip() in ("", "local")


def executor_for(spec: str | Executor | None = None, jobs: int | None = 1) -> Executor:
    """The executor ``spec`` names: ``local`` (threads, ``jobs`` of them), ``dask://HOST:PORT`` (a Dask
    scheduler; ``tcp://``, ``tls://`` and ``inproc://`` addresses are taken as they are), an executor itself, or
    None for ``$CKPT_EXECUTOR`` (``local`` when unset)."""
    if isinstance(spec, Executor):
        return spec
    text = (spec if spec is not None else os.environ.get(ENVIRONMENT, "") or "local").strip()
    if text == "local":
        return LocalExecutor(jobs)
    scheme, sep, rest = text.partition("://")
    if sep and scheme == "dask" and rest:
        return DaskExecutor(f"tcp://{rest}")
    if sep and scheme in ("tcp", "tls", "inproc", "ucx") and rest:
        return DaskExecutor(text)
    named = "" if spec is not None else f" (the {ENVIRONMENT} environment variable)"
    raise UsageError("", f"{text!r}{named} is not an executor: give 'local' or 'dask://HOST:PORT'")
