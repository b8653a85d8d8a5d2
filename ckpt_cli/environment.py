"""The environment a command runs in.

An :class:`Environment` (httpie's idea) owns what a command may do to the terminal: stdout and stderr,
colour, quiet, whether errors show their traceback, and the ``warning:``/``hint:``/``error:`` lines.
Runners and renderers take it (renderers through :func:`current`); nothing else decides colour or writes
those lines. :func:`ckpt_cli.boundary.execute` runs a command inside one. Click-free.
"""
from __future__ import annotations

import os
import sys

from formats.core.names import terminal_text

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import TextIO

__all__ = ["Environment", "current", "entered"]


class Environment:
    """Where output goes and how it looks: ``color`` (False under ``--no-color``, ``NO_COLOR``), ``quiet``
    (``-q``: nothing on stdout), ``traceback`` (``--traceback``: errors show it)."""

    __slots__ = ("color", "quiet", "traceback")

    def __init__(self, *, color: bool = True, quiet: bool = False, traceback: bool = False) -> None:
        self.color = color and "NO_COLOR" not in os.environ
        self.quiet, self.traceback = quiet, traceback

    @property
    def stdout(self) -> TextIO:
        """The command's standard output (devnull under ``-q``)."""
        return sys.stdout

    @property
    def stderr(self) -> TextIO:
        """Where warnings, hints and errors go."""
        return sys.stderr

    def line(self, text: str) -> None:
        """One line on stderr, flushed at once: names that are not valid UTF-8, and control characters (a
        hostile key's ESC, BEL, CR or newline), escaped (:func:`~formats.core.names.terminal_text`)."""
        print(terminal_text(text), file=sys.stderr, flush=True)

    def warn(self, message: str) -> None:
        """``ckpt: warning: message``."""
        self.line(f"ckpt: warning: {message}")

    def hint(self, message: str) -> None:
        """``ckpt: hint: message``."""
        self.line(f"ckpt: hint: {message}")

    def error(self, message: str) -> None:
        """``ckpt: error: message``."""
        self.line(f"ckpt: error: {message}")


_current: list[Environment] = []
"""The environments of the commands running now, innermost last (:func:`entered`)."""


def current() -> Environment:
    """The environment of the command running now (a default one outside any command: library use, tests)."""
    return _current[-1] if _current else Environment()


class entered:  # noqa: N801 - used as ``with entered(env):``
    """``with entered(env):`` makes ``env`` the :func:`current` environment inside the block."""

    def __init__(self, env: Environment) -> None:
        self.env = env

    def __enter__(self) -> Environment:
        _current.append(self.env)
        return self.env

    def __exit__(self, *exc: object) -> None:
        _current.pop()
