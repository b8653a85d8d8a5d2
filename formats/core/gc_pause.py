"""Pausing the cyclic garbage collector while many small acyclic objects are built.

Parsing a 50,000-entry index creates hundreds of thousands of tuples and objects, none of them
in reference cycles; the collector's repeated passes over them cost a quarter of the time.

Public: the bundle reader, the index listing and ``ckpt ls``'s summary all use it.
"""
from __future__ import annotations

import gc

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import ParamSpec, TypeVar

    P = ParamSpec("P")
    R = TypeVar("R")

__all__ = ["paused_gc", "gc_paused"]


class paused_gc:  # noqa: N801 - used as the function it was (``with paused_gc():``); no contextlib (start-up)
    """Disable cyclic GC inside the block (re-enabled after, if it was enabled before)."""

    def __enter__(self) -> None:
        self.was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self.was_enabled:
            gc.enable()


def gc_paused(function: Callable[P, R]) -> Callable[P, R]:
    """``function`` run inside :class:`paused_gc` (a renderer laying out a table of many rows, a tree built
    of a node per key: objects by the hundred thousand, none in a cycle)."""
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        with paused_gc():
            return function(*args, **kwargs)

    run.__name__, run.__qualname__, run.__doc__ = function.__name__, function.__qualname__, function.__doc__
    run.__wrapped__ = function  # type: ignore[attr-defined]
    return run
