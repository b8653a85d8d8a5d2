"""Work on tensors spread over threads, with results exactly as one thread would give them.

What reading a checkpoint costs - CRC32C (the ``crc32c`` package), numpy comparisons and reductions,
copying out of memory-mapped files - runs without the GIL, so threads use every core the process may
run on. :func:`map_ordered` keeps a run deterministic: results come back in input order, and an
error is the one the first failing item raises, as in a sequential run. Memory stays bounded: at most
``jobs`` items are worked on at once, and each item streams its tensor a chunk at a time.
"""
from __future__ import annotations

import os

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import TypeVar

    T = TypeVar("T")
    R = TypeVar("R")

__all__ = ["available_cores", "resolve_jobs", "map_ordered"]


def available_cores() -> int:
    """The CPUs this process may run on (its affinity mask, which containers and ``taskset`` narrow)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def resolve_jobs(jobs: int | None) -> int:
    """``jobs`` as a thread count: None or 0 mean every available core; a negative count is an error."""
    if jobs is None or jobs == 0:
        return available_cores()
    if jobs < 0:
        raise ValueError(f"jobs must be 0 (every core) or more, not {jobs}")
    return jobs


def map_ordered(fn: Callable[[T], R], items: Sequence[T], jobs: int | None = 1, *,
                weight: Callable[[T], int] | None = None,
                done: Callable[[T, R], None] | None = None) -> list[R]:
    """``[fn(item) for item in items]``, on up to ``jobs`` threads (None: every core).

    Items are started heaviest first by ``weight`` (so a big tensor does not start last and finish
    alone); ``done(item, result)`` is called in the calling thread as each finishes. When items
    raise, the exception of the first of them in input order propagates, after every earlier item
    has run and no later one is started - the outcome of a sequential run.
    """
    jobs = resolve_jobs(jobs)
    if jobs == 1 or len(items) <= 1:
        return _sequential(fn, items, done)
    order = sorted(range(len(items)), key=lambda i: -weight(items[i])) if weight else list(range(len(items)))
    return _Pool(fn, items, order).run(min(jobs, len(items)), done)


def _sequential(fn: Callable[[T], R], items: Iterable[T], done: Callable[[T, R], None] | None) -> list[R]:
    out = []
    for item in items:
        result = fn(item)
        if done is not None:
            done(item, result)
        out.append(result)
    return out


class _Pool:
    """Worker threads taking items in ``order``, reporting each result to the calling thread.

    (The interpreter's own threads, lock and queue: ``concurrent.futures`` would import ``logging``, and
    ``threading``/``queue`` cost a millisecond more of start-up than the work of a small checkpoint.)"""

    def __init__(self, fn: Callable[[T], R], items: Sequence[T], order: list[int]) -> None:
        import _queue
        import _thread

        self.fn, self.items = fn, items
        self.todo = iter(order)
        self.lock = _thread.allocate_lock()
        self.finished: _queue.SimpleQueue[tuple[int, object, BaseException | None] | None] = _queue.SimpleQueue()
        self.first_error: int | None = None  # no item after it is started
        self.start = _thread.start_new_thread

    def run(self, workers: int, done: Callable[[T, R], None] | None) -> list[R]:
        """Every item's result in input order, or the first failing item's exception."""
        for _ in range(workers):
            self.start(self._work, ())  # like a daemon thread: never keeps the process alive
        results: dict[int, object] = {}
        errors: dict[int, BaseException] = {}
        try:
            while workers:
                message = self.finished.get()
                if message is None:
                    workers -= 1
                    continue
                i, result, exc = message
                if exc is not None:
                    errors[i] = exc
                else:
                    results[i] = result
                    if done is not None:
                        done(self.items[i], result)  # type: ignore[arg-type]
        except BaseException:  # KeyboardInterrupt while waiting: workers start nothing more
            with self.lock:
                self.first_error = -1
            raise
        if errors:
            raise errors[min(errors)]
        return [results[i] for i in range(len(self.items))]  # type: ignore[misc]

    def _next(self) -> int | None:
        with self.lock:
            for i in self.todo:
                if self.first_error is None or i < self.first_error:
                    return i
            return None

    def _work(self) -> None:
        while (i := self._next()) is not None:
            try:
                self.finished.put((i, self.fn(self.items[i]), None))
            except BaseException as exc:  # handed to the calling thread, which raises it
                with self.lock:
                    self.first_error = i if self.first_error is None else min(self.first_error, i)
                self.finished.put((i, None, exc))
        self.finished.put(None)
