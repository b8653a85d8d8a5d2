"""The one error boundary both front ends run commands through: :func:`execute` runs a command's runner in its
:class:`~ckpt_cli.environment.Environment` and turns every exception into one line on stderr (and the JSON error
document on stdout, when the command line asked for ``--json``) and the documented exit status. Click-free."""
from __future__ import annotations

import os
import sys

from formats.core.errors import ExitCode

from .environment import Environment, entered
from .kept import KEEPING

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    import re

    from ckpt_cli.spec import Command, Params

__all__ = ["execute", "one_blas_thread", "report_error", "print_error_json", "cli_hint", "cli_words"]


def execute(spec: Command, params: Params, env: Environment) -> int:
    """Run ``spec``'s runner with ``params`` in ``env``; its exit status. Every exception becomes one line
    on stderr (and, when the command line asked for ``--json``, the JSON error document on stdout) and its
    exit status; a :class:`~ckpt_cli.spec.CommandLineError` is left to the front end, which words it as a
    usage error."""
    from ckpt_cli.spec import CommandLineError

    spec.check_required(params)
    if KEEPING[0] and not spec.passes_on:  # ckpt is the program, and runs none of the user's code
        one_blas_thread()
    with entered(env):
        return _run(spec, params, env, CommandLineError)


def one_blas_thread() -> None:
    """Have numpy's OpenBLAS start one thread, not one a core, unless ``OPENBLAS_NUM_THREADS`` says otherwise.

    OpenBLAS (the BLAS of numpy's wheels) starts its threads as numpy is imported, before any work: on this
    project's 2-core machine that alone was half of ``import numpy``'s CPU (150 ms -> 78 ms, the same wall time),
    and it grows with the cores. ckpt does no BLAS work at all: its sums are numpy's own pairwise ones, so that
    they are the same bits whatever the thread count (``formats.ops.compare.diff``, ``formats.ops.inspect.trend``).
    Set only where ckpt is the program (the launchers' process, :data:`ckpt_cli.kept.KEEPING`) and the command runs
    none of the user's code (not ``ckpt run SCRIPT``, whose script may multiply matrices): a caller of the command
    functions, and a script, keep their environment. Dask's nanny sets the same for its workers
    (``distributed.nanny.pre-spawn-environ``)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _run(spec: Command, params: Params, env: Environment, usage: type[Exception]) -> int:
    from .interrupt import command_running

    try:
        with command_running():  # Ctrl-C is KeyboardInterrupt here: the command cleans up, then the line below
            status = spec.runner(env, params)
            sys.stdout.flush()
        return int(status)
    except usage:
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
    (``pass force=True`` -> ``use --force``, ``pass by="key"`` -> ``use --by key``), else one per error class
    or per errno."""
    from formats.core.errors import TensorNotFoundError

    hint = getattr(exc, "hint", None)
    if hint:
        return cli_words(hint)
    if isinstance(exc, TensorNotFoundError) and exc.path:
        import shlex

        return f"`ckpt ls {shlex.quote(exc.path)}` lists the keys"
    if isinstance(exc, OSError):
        return _OS_HINTS.get(exc.errno or 0)
    return None


def cli_words(hint: str) -> str:
    """A library hint in command-line words: its keyword arguments as flags (``pass force=True`` -> ``use
    --force``, ``pass match="path"`` -> ``use --match path``)."""
    import re

    return re.sub(r"""\bpass (\w+)=(?:True\b|"([^"]*)"|'([^']*)')""", _as_flag, hint)


def _as_flag(match: re.Match[str]) -> str:
    """``pass force=True`` -> ``use --force``; ``pass by="key"`` -> ``use --by key``."""
    flag = "use --" + match.group(1).replace("_", "-")
    value = match.group(2) if match.group(2) is not None else match.group(3)
    return flag if value is None else f"{flag} {value}"


_OS_HINTS = {
    28: "the output's disk is full; nothing was left under the output name",  # ENOSPC
    122: "disk quota exceeded; nothing was left under the output name",  # EDQUOT
    27: "the file size limit was reached; nothing was left under the output name",  # EFBIG
    30: "the output is on a read-only file system",  # EROFS
}

