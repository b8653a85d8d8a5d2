"""Ctrl-C at any instant: one line on stderr, ``ckpt: interrupted``, and exit status 130 (ExitCode.INTERRUPTED).

While a command runs, Ctrl-C is Python's KeyboardInterrupt, which the error boundary
(:func:`ckpt_cli.boundary.execute`) turns into that line and status once the command has cleaned up (a
write removes its temporary files). Outside a command - Python's start-up and ckpt's imports (the first
10 to 400 ms), parsing the command line, and the exit after it - there is nothing to clean up and no
boundary: the launchers (scripts/ckpt, ``python -m ckpt_cli``) install :func:`interrupted` as the SIGINT
handler first thing, which ends the process there and then (a KeyboardInterrupt raised in an import or
a finaliser would print a traceback, or be swallowed, and leave exit status 1: what ``diff -q`` calls
"differ"). :func:`command_running` hands SIGINT back to KeyboardInterrupt while a command runs.

Before the interpreter has installed any handler (its first milliseconds) SIGINT terminates the process
as for any program: no output, wait status "killed by SIGINT", which shells report as 130 too.
Click-free and import-free (``_signal`` is built in): this module is imported before anything else.
"""
from __future__ import annotations

import os
import _signal  # type: ignore[import-not-found]  # signal's C half: the module signal imports enum
import _thread  # built in, and with time loaded by the interpreter's start: no import in a signal handler
import time

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from types import FrameType, TracebackType

__all__ = ["INTERRUPTED", "LINE", "interrupted", "install", "command_running"]

INTERRUPTED = 130
"""The exit status of an interrupted command (:attr:`formats.core.errors.ExitCode.INTERRUPTED`; a test
checks they agree: importing formats here would widen the window this module closes)."""
LINE = "ckpt: interrupted"
"""What an interrupted ckpt prints on stderr, the one line."""


def interrupted(signum: int = 0, frame: FrameType | None = None) -> None:
    """End ckpt now, as interrupted: :data:`LINE` on stderr, exit status :data:`INTERRUPTED` (no exit
    handlers, no flushing: nothing of a command is left to finish)."""
    try:
        os.write(2, (LINE + "\n").encode())
    finally:
        os._exit(INTERRUPTED)


def install() -> None:
    """Make Ctrl-C end ckpt at once (:func:`interrupted`): the launchers' first statement."""
    _signal.signal(_signal.SIGINT, interrupted)


def _keyboard_interrupt(signum: int = 0, frame: FrameType | None = None) -> None:
    """SIGINT while a command runs: KeyboardInterrupt, but never inside importlib. A KeyboardInterrupt raised in
    its module-lock bookkeeping (a weak reference's callback) is swallowed there and can leave the import lock
    held, and a thread importing then waits for ever (``diff -q`` hung so, interrupted while its main thread
    imported and a worker imported numpy). There the signal is sent again :data:`RETRY_S` later, from a thread
    of its own, until the import is over."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            _thread.start_new_thread(_again, (_thread.get_ident(),))
            return
        frame = frame.f_back
    raise KeyboardInterrupt


RETRY_S = 0.005
"""How long a SIGINT that came during an import waits to be sent again (:func:`_keyboard_interrupt`)."""


def _again(thread: int) -> None:
    time.sleep(RETRY_S)
    _signal.pthread_kill(thread, _signal.SIGINT)


class command_running:  # noqa: N801 - a context manager used as a function; no contextlib (start-up)
    """``with command_running():`` Ctrl-C raises KeyboardInterrupt in the block (the command cleans up and the
    boundary reports it; not inside an import: :func:`_keyboard_interrupt`), and ends ckpt at once again after it - where a launcher installed
    :func:`interrupted` (in-process callers, tests among them, keep their own handler), in the main thread."""

    __slots__ = ("swapped",)

    def __init__(self) -> None:
        self.swapped = False

    def __enter__(self) -> None:
        if _signal.getsignal(_signal.SIGINT) is interrupted:
            try:
                _signal.signal(_signal.SIGINT, _keyboard_interrupt)
                self.swapped = True
            except ValueError:  # not the main thread: signals are the main thread's
                pass

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self.swapped:
            _signal.signal(_signal.SIGINT, interrupted)
