"""Results held until the process ends, when ckpt runs as the program.

Once a command of the fast path is done, the process ends without the interpreter's teardown
(:func:`ckpt_cli.fast.end_process`). A command's results - a tree of a node per key, a row per tensor - are
built with the cyclic garbage collector paused; once it runs again, its first collections walk all of them
(none is garbage), and they are freed one by one as the command returns: work no one sees (a 100,000-tensor
``ls --tree``: 200,000 rows, about 6 % of its CPU). :func:`keep_until_exit` holds them until the end instead and
moves what is alive to the collector's permanent generation (``gc.freeze``, as the launchers do with Python's
own start-up objects), only when :func:`ckpt_cli.fast.main` runs for the process's own command line; anywhere
else (a caller of the command functions, a test's runner) it does nothing.
"""
from __future__ import annotations

__all__ = ["KEEPING", "keep_until_exit"]

KEEPING = [False]
"""Whether :func:`keep_until_exit` keeps (set by :func:`ckpt_cli.fast.main`)."""

_KEPT: list[object] = []


def keep_until_exit(*objects: object) -> None:
    """Hold ``objects`` until the process ends, and leave everything alive now out of later collections, when ckpt
    runs as the program (see the module's docstring)."""
    if KEEPING[0]:
        import gc

        _KEPT.extend(objects)
        gc.freeze()
