"""The console script's entry: every command's plain command line runs without click.

Importing click costs about as much as starting Python itself, and no command needs it to run. :func:`main`
parses ``ckpt [GLOBAL FLAGS] COMMAND [OPTIONS] ARGS...`` with the command's own spec (the ``SPEC`` of its
module in :mod:`ckpt_cli.commands`, the one the click command is built from) and runs it through the one
error boundary (:func:`ckpt_cli.environment.execute`). Anything else goes to the click CLI
(:data:`ckpt_cli.main.cli`): help, completion, ``--version``, an unknown, clustered or malformed option, a
value the spec's parser refuses, a missing argument - and a usage error the command itself raises - so that
click words every usage error and prints help as always.
"""
from __future__ import annotations

import os
import sys

from ckpt_cli.command_table import COMMANDS, GLOBAL_FLAGS, spec_of
from ckpt_cli import kept

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from types import FrameType
    from typing import Any

    from ckpt_cli.spec import Command, Opt, Params

__all__ = ["COMMANDS", "GLOBAL_FLAGS", "parse", "main", "run_fast", "end_process"]

_ENDS_AT_ONCE = [False]
"""Whether the process may end without the interpreter's teardown (:func:`end_process`): a command ran on the
fast path and ran no code of the user's (``ckpt run SCRIPT`` does: its objects' finalisers run as at Python's
own exit)."""


class _Refused(Exception):
    """The command line is not one the fast path takes: click parses it."""


def parse(argv: list[str]) -> tuple[Command, dict[str, bool], Params] | None:
    """``(spec, global flags, parameters)`` for a plain ``ckpt [GLOBAL FLAGS] COMMAND [OPTIONS] ARGS...``,
    or None when the line needs click (see the module's docstring)."""
    flags = {"traceback": False, "no_color": False, "quiet": False}
    i = 0
    while i < len(argv) and argv[i] in GLOBAL_FLAGS:
        flags[GLOBAL_FLAGS[argv[i]]] = True
        i += 1
    if i >= len(argv) or argv[i] not in COMMANDS:
        return None
    spec = spec_of(argv[i])
    try:
        return spec, flags, _parse_command(spec, argv[i + 1:], flags)
    except _Refused:
        return None


def _parse_command(spec: Command, words: list[str], flags: dict[str, bool]) -> Params:
    """The parameters of ``spec`` a command line's ``words`` give (after the command's name)."""
    by_decl = {decl: opt for opt in spec.options for decl in opt.decls}
    params = spec.defaults()
    given: set[str] = set()
    positional: list[str] = []
    rest = iter(words)
    for word in rest:
        if (spec.passes_on and positional) or not word.startswith("-") or word == "-":
            positional.append(word)  # `ckpt run SCRIPT ARGS...`: after SCRIPT, the rest is the script's
            continue
        opt, value = _option(word, by_decl)
        if opt is None:
            if word not in GLOBAL_FLAGS:
                raise _Refused  # unknown, clustered flags (-rq), a flag given a value, or `--`
            flags[GLOBAL_FLAGS[word]] = True
            continue
        given.add(opt.name)
        if opt.flag:
            params[opt.name] = True
            continue
        value = next(rest, None) if value is None else value
        if value is None:
            raise _Refused
        parsed = _value(opt, value)
        params[opt.name] = (*params[opt.name], parsed) if opt.multiple else parsed
    _finish_options(spec, params, given)
    _bind(spec, positional, params)
    return params


def _option(word: str, by_decl: dict[str, Opt]) -> tuple[Opt | None, str | None]:
    """The option a word names, and its value when the word carries one (``--sort=size``; a short option's
    value attached: ``-fx`` gives ``x``, ``-f=x`` gives ``=x``, as click reads them); no option for a flag
    given a value."""
    if word.startswith("--"):
        option, eq, value = word.partition("=")
    elif word in by_decl:
        option, eq, value = word, "", ""
    else:
        option, eq, value = word[:2], "=", word[2:]
    opt = by_decl.get(option)
    if opt is None or (eq and opt.flag):
        return None, None
    return opt, value if eq else None


def _finish_options(spec: Command, params: Params, given: set[str]) -> None:
    """Required options given, and each option's ``convert`` applied (as click's callbacks are)."""
    for opt in spec.options:
        if opt.required and opt.name not in given:
            raise _Refused
        if opt.convert is not None:
            from ckpt_cli.spec import ParameterError

            try:
                params[opt.name] = opt.convert(params[opt.name])
            except ParameterError:
                raise _Refused from None


def _value(opt: Opt, text: str) -> Any:
    """An option's value as the click type of its spec type gives it; :class:`_Refused` where click would
    refuse it (and say why)."""
    from ckpt_cli.spec import CHECKPOINT, FILE, FLOAT, PATH, SIZE, TEXT, Ints, parse_size

    kind = opt.type
    try:
        if kind in (TEXT, PATH, CHECKPOINT):
            return text
        if isinstance(kind, Ints):
            number = int(text)
            if not kind.accepts(number):
                raise _Refused
            return number
        if kind == FLOAT:
            return float(text)
        if kind == SIZE:
            return parse_size(text)
        if kind == FILE:
            if os.path.isdir(text):
                raise _Refused
            return text
        if isinstance(kind, tuple) and text in kind:
            return text
        if not isinstance(kind, (tuple, str)) and kind.accepts(text):  # Choices known when asked
            return text
    except ValueError:
        pass
    raise _Refused


def _bind(spec: Command, words: list[str], params: Params) -> None:
    """The positional words given to the spec's arguments in order (one that takes any number takes what
    the ones after it leave); :class:`_Refused` where click would refuse them."""
    arguments = spec.arguments
    at = 0
    for i, arg in enumerate(arguments):
        if arg.nargs == -1:
            after = sum(1 for later in arguments[i + 1:] if later.nargs != -1)
            taken = tuple(words[at:max(at, len(words) - after)])
            if arg.required and not taken:
                raise _Refused
            params[arg.name] = taken
            at += len(taken)
            continue
        if at >= len(words):
            if arg.required:
                raise _Refused
            continue
        params[arg.name] = _argument(arg.type, words[at])
        at += 1
    if at != len(words):
        raise _Refused


def _argument(kind: Any, word: str) -> str:
    """A positional argument's word, where click takes it as it is."""
    from ckpt_cli.spec import FILE

    if (isinstance(kind, tuple) and word not in kind) or (kind == FILE and os.path.isdir(word)):
        raise _Refused
    return word


def main(argv: list[str] | None = None) -> None:
    """``ckpt``: the fast path when it applies, else the click CLI."""
    args = sys.argv[1:] if argv is None else argv
    kept.KEEPING[0] = argv is None  # the process's own command line: the process ends with the command
    parsed = None if "_CKPT_COMPLETE" in os.environ else parse(args)
    if parsed is not None:
        status = run_fast(*parsed)
        if status is not None:
            _ENDS_AT_ONCE[0] = not parsed[0].passes_on
            sys.exit(status)
    from ckpt_cli.main import cli

    cli(args=args, prog_name="ckpt")


def end_process(status: int | str | None, entry: FrameType) -> None:
    """End the process a launcher's module frame ``entry`` runs in with exit status ``status`` (what
    ``sys.exit(status)`` gives) without the interpreter's teardown: once a command is done, freeing every
    module, class and object one by one (and a last garbage collection) is work no one sees, about a third as
    much CPU as Python's own start-up after a ``ckpt diff``'s imports. Standard output and error are flushed
    first. Only after a command of the fast path that ran no code of the user's; where anything could still
    run at exit - a program that ran the launcher itself (``runpy``), a non-daemon thread, an ``atexit``
    function (coverage, logging), a status that is not an int or None - or a flush fails (a closed pipe), and
    after click's path or ``ckpt run SCRIPT``, it is ``sys.exit(status)``: Python exits as it always has."""
    import atexit

    if _ENDS_AT_ONCE[0] and (status is None or isinstance(status, int)) and _is_the_program(entry) \
            and not atexit._ncallbacks() and _no_threads_left():
        try:
            for stream in (sys.stdout, sys.stderr):
                if stream is not None:
                    stream.flush()
        except BaseException:  # noqa: BLE001 - Python's own exit reports it, as it always has
            sys.exit(status)
        os._exit(0 if status is None else status & 0xFF)
    sys.exit(status)


def _is_the_program(entry: FrameType) -> bool:
    """Whether the module frame ``entry`` is what the interpreter runs: a script (no caller), or the module of
    ``python -m`` (called by runpy's ``_run_code`` from ``_run_module_as_main`` alone)."""
    caller = entry.f_back
    if caller is None:
        return True
    runner = caller.f_back
    return caller.f_code.co_name == "_run_code" and runner is not None and runner.f_back is None \
        and runner.f_code.co_name == "_run_module_as_main"


def _no_threads_left() -> bool:
    """No thread but the main one and daemon threads (which exit ends in either case) is running."""
    threading = sys.modules.get("threading")
    if threading is None or not hasattr(threading, "_after_fork"):  # (its last definition)
        return True  # not imported, or left half-imported by a Ctrl-C during its import: no thread of it runs
    main_thread = threading.main_thread()
    return all(t is main_thread or t.daemon or not t.is_alive() for t in threading.enumerate())


def run_fast(spec: Command, flags: dict[str, bool], params: Params) -> int | None:
    """Run ``spec`` with ``params`` under the global ``flags``: the exit status, or None when the command
    raised a usage error (click runs the line again, and words it)."""
    from ckpt_cli.boundary import execute
    from ckpt_cli.environment import Environment
    from ckpt_cli.spec import CommandLineError

    env = Environment(color=not flags["no_color"], quiet=flags["quiet"], traceback=flags["traceback"])
    stdout = sys.stdout
    if flags["quiet"]:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - closed below
    try:
        return execute(spec, params, env)
    except CommandLineError:
        return None
    finally:
        if sys.stdout is not stdout:
            sys.stdout.close()
            sys.stdout = stdout
