"""The environment a command runs in, and the one error boundary both front ends run commands through.

An :class:`Environment` (httpie's idea) owns what a command may do to the terminal: stdout and stderr,
colour, quiet, whether errors show their traceback, and the ``warning:``/``hint:``/``error:`` lines.
Runners and renderers take it (renderers through :func:`current`); nothing else decides colour or writes
those lines. :func:`execute` runs a command's runner inside it and turns every exception into one line
and an exit status (:func:`report_error`). Click-free.
"""
from __future__ import annotations

import os
import sys

from formats.core.errors import ExitCode
from formats.core.names import safe_text

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import TextIO

    from ckpt_cli.spec import Command, Params

__all__ = ["Environment", "current", "execute", "report_error", "print_error_json", "cli_hint"]


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
        """One line on stderr, names that are not valid UTF-8 escaped, flushed at once."""
        print(safe_text(text), file=sys.stderr, flush=True)

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


def current() -> Environment:
    """The environment of the command running now (a default one outside any command: library use, tests)."""
    return _current[-1] if _current else Environment()


def execute(spec: Command, params: Params, env: Environment) -> int:
    """Run ``spec``'s runner with ``params`` in ``env``; its exit status. Every exception becomes one line
    on stderr (and, when the command line asked for ``--json``, the JSON error document on stdout) and its
    exit status; a :class:`~ckpt_cli.spec.CommandLineError` is left to the front end, which words it as a
    usage error."""
    from ckpt_cli.spec import CommandLineError

    _current.append(env)
    try:
        status = spec.runner(env, params)
        sys.stdout.flush()
        return int(status)
    except CommandLineError:
        raise
    except KeyboardInterrupt:
        env.line("ckpt: interrupted")
        return int(ExitCode.INTERRUPTED)
    except BrokenPipeError:  # stdout's reader went away (`ckpt ls | head`): a quiet exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return int(ExitCode.OK)
    except Exception as exc:  # the one place errors become messages and exit codes
        return report_error(exc, env, as_json=bool(params.get("as_json")))
    finally:
        _current.pop()


def report_error(exc: BaseException, env: Environment, as_json: bool = False) -> int:
    """Print one line (plus a hint) for ``exc`` on stderr and return its exit code (see ExitCode); with
    ``as_json``, the same as one JSON document on stdout too (:func:`print_error_json`)."""
    from formats.core.errors import CheckpointError

    if env.traceback:
        import traceback

        traceback.print_exception(exc)
    if isinstance(exc, CheckpointError):
        code = exc.exit_code
        message = str(exc)
    elif isinstance(exc, OSError):  # not wrapped by the library: an input, unless only writing fails so
        from formats.io.atomic import WRITE_ERRNOS

        code = ExitCode.OUTPUT if exc.errno in WRITE_ERRNOS else ExitCode.INPUT
        message = f"{exc.filename}: {exc.strerror or exc}" if exc.filename else str(exc.strerror or exc)
    else:
        message = f"internal error: {type(exc).__name__}: {exc}; please report it with --traceback output"
        env.line(f"ckpt: {message}")
        if as_json:
            print_error_json(ExitCode.INTERNAL, message, None)
        return int(ExitCode.INTERNAL)
    env.error(message)
    hint = cli_hint(exc)
    if hint:
        env.line(f"  hint: {hint}")
    if as_json:
        print_error_json(code, message, hint)
    return int(code)


def print_error_json(code: int, message: str, hint: str | None) -> None:
    """The error document a ``--json`` command prints on stdout when it fails before its own document:
    ``{"ok": false, "exit_code": 3, "error": "<path>: <what is wrong>", "hint": null}``."""
    from .render.common import print_json

    print_json({"ok": False, "exit_code": int(code), "error": message, "hint": hint})
    sys.stdout.flush()


def cli_hint(exc: BaseException) -> str | None:
    """The hint for ``exc`` in command-line words: the library's hint with its keyword arguments as flags
    (``pass force=True`` -> ``use --force``), else one per error class or per errno."""
    from formats.core.errors import TensorNotFoundError

    hint = getattr(exc, "hint", None)
    if hint:
        import re

        return re.sub(r"\bpass (\w+)=True\b", lambda m: "use --" + m.group(1).replace("_", "-"), hint)
    if isinstance(exc, TensorNotFoundError) and exc.path:
        import shlex

        return f"`ckpt ls {shlex.quote(exc.path)}` lists the keys"
    if isinstance(exc, OSError):
        return _OS_HINTS.get(exc.errno or 0)
    return None


_OS_HINTS = {
    28: "the output's disk is full; nothing was left under the output name",  # ENOSPC
    122: "disk quota exceeded; nothing was left under the output name",  # EDQUOT
    27: "the file size limit was reached; nothing was left under the output name",  # EFBIG
    30: "the output is on a read-only file system",  # EROFS
}

