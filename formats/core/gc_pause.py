"""Pausing the cyclic garbage collector while many small acyclic objects are built.

Parsing a 50,000-entry index creates hundreds of thousands of tuples and objects, none of them
in reference cycles; the collector's repeated passes over them cost a quarter of the time.

Public: the bundle reader, the index listing and ``ckpt ls``'s summary all use it.
"""
from __future__ import annotations

import gc

__all__ = ["paused_gc"]


class paused_gc:  # noqa: N801 - used as the function it was (``with paused_gc():``); no contextlib (start-up)
    """Disable cyclic GC inside the block (re-enabled after, if it was enabled before)."""

    def __enter__(self) -> None:
        self.was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self.was_enabled:
            gc.enable()
