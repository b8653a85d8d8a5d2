"""A command is one spec: its arguments and options declared once, as data.

Each module of :mod:`ckpt_cli.commands` holds a :class:`Command` (``SPEC``) and the click-free function it
runs, ``run(env, params)``. Two front ends read the same spec:

* :mod:`ckpt_cli.build` makes the click command from it (help under headings, completion, usage errors);
* :mod:`ckpt_cli.fast` parses a plain command line with it without importing click (start-up), and hands
  anything it does not take - help, completion, a malformed option, a value its parser refuses, a usage
  error raised by the command - to click, which then says what is wrong exactly as it always has.

This module imports nothing beyond the standard library's start-up modules: every command's module imports
it, and the fast path imports the command's module to parse its command line.
"""
from __future__ import annotations

from formats.core.errors import UsageError

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ckpt_cli.environment import Environment

__all__ = ["Arg", "Opt", "Ints", "Choices", "Command", "Params", "CommandLineError", "ParameterError", "parse_size",
           "WRITER_EXIT_STATUS", "TEXT", "PATH", "FILE", "CHECKPOINT", "UNPROCESSED", "FLOAT", "SIZE"]

TEXT = "text"
"""Any text (click's default)."""
PATH = "path"
"""A file system path (``click.Path()``)."""
FILE = "file"
"""A path that is not a directory (``click.Path(dir_okay=False)``)."""
CHECKPOINT = "checkpoint"
"""A checkpoint path or URL, completed as checkpoints."""
UNPROCESSED = "unprocessed"
"""Passed on as given (``ckpt run SCRIPT ARGS...``)."""
FLOAT = "float"
"""A floating-point number."""
SIZE = "size"
"""A size in bytes: ``1000000``, ``500MB``, ``2GB``, ``1.5GiB`` (:func:`parse_size`)."""


WRITER_EXIT_STATUS = {0: "written (or planned, with --dry-run)", 1: "problems found, each listed (nothing written)"}
"""What 0 and 1 mean for the commands that write a checkpoint (convert, rename, edit, average)."""


class Ints:
    """An integer type, optionally bounded: ``Ints(min=0)`` (click's ``IntRange``)."""

    __slots__ = ("min", "max")

    def __init__(self, min: int | None = None, max: int | None = None) -> None:
        self.min, self.max = min, max

    def accepts(self, value: int) -> bool:
        """Whether ``value`` is within the bounds."""
        return (self.min is None or value >= self.min) and (self.max is None or value <= self.max)


class Choices:
    """Choices known only when asked (``--to``: the layouts registered formats write, plugins included):
    ``choices()`` lists them all (help, completion, click's check), ``accepts(value)`` checks one value without
    listing them all (the fast path: a bundle's ``--to tf-object`` need not import every other format)."""

    __slots__ = ("choices", "accepts")

    def __init__(self, choices: Callable[[], list[str]], accepts: Callable[[str], bool]) -> None:
        self.choices, self.accepts = choices, accepts


class Arg:
    """A positional argument: ``nargs=-1`` takes any number (at least one when ``required``)."""

    __slots__ = ("name", "nargs", "required", "type", "metavar", "complete")

    def __init__(self, name: str, *, nargs: int = 1, required: bool = True, type: Any = TEXT,
                 metavar: str | None = None, complete: tuple[str, ...] | None = None) -> None:
        self.name, self.nargs, self.required, self.type = name, nargs, required, type
        self.metavar, self.complete = metavar, complete


class Opt:
    """An option: ``decls`` its spellings (``("-o", "--output")``), ``name`` the parameter it sets.

    ``type`` is one of this module's type names, an :class:`Ints`, or a tuple of choices. ``flag``: takes no
    value; ``multiple``: repeatable, the values collected in a tuple. ``convert`` turns the parsed value into
    what the command gets (both front ends call it; a :class:`ParameterError` it raises is a usage error
    naming the option). ``complete``: how the shell completes its value (``("keys", "a")``: the tensor keys
    of argument ``a``'s checkpoint; ``("choices", "x", "y")``: a comma-separated list of these)."""

    __slots__ = ("decls", "name", "help", "type", "default", "flag", "multiple", "required", "metavar",
                 "show_default", "convert", "complete")

    def __init__(self, *decls: str, name: str | None = None, help: str = "", type: Any = TEXT,
                 default: Any = None, flag: bool = False, multiple: bool = False, required: bool = False,
                 metavar: str | None = None, show_default: bool = False,
                 convert: Callable[[Any], Any] | None = None, complete: tuple[str, ...] | None = None) -> None:
        self.decls = decls
        self.name = name or max(decls, key=len).lstrip("-").replace("-", "_")
        self.help, self.type, self.flag, self.multiple, self.required = help, type, flag, multiple, required
        self.default = False if flag and default is None else default
        self.metavar, self.show_default, self.convert, self.complete = metavar, show_default, convert, complete

    def initial(self) -> Any:
        """The parameter's value when the option is not given."""
        return () if self.multiple else self.default

    def spelling(self) -> str:
        """Its spellings as click's usage errors quote them: ``'-o' / '--output'``."""
        return " / ".join(f"'{decl}'" for decl in self.decls)


class Command:
    """One command: what ``--help`` says, its arguments and options (in help order), and its runner.

    ``runner``: ``run(env, params) -> exit status``, defined beside the spec. ``exit_status``: what the
    command means by some exit statuses (the help's closing block). ``passes_on``: the arguments after the
    first positional one belong to another program (``ckpt run SCRIPT ARGS...``)."""

    __slots__ = ("name", "short_help", "help", "arguments", "options", "runner", "exit_status", "passes_on")

    def __init__(self, name: str, *, short_help: str, help: str, arguments: tuple[Arg, ...] = (),
                 options: tuple[Opt, ...] = (), runner: Callable[[Environment, Params], int],
                 exit_status: dict[int, str] | None = None, passes_on: bool = False) -> None:
        self.name, self.short_help, self.help = name, short_help, help
        self.arguments, self.options, self.runner = arguments, options, runner
        self.exit_status, self.passes_on = dict(exit_status or {}), passes_on

    def check_required(self, params: Params) -> None:
        """A :class:`CommandLineError` naming the first required option ``params`` lacks (click's words:
        ``Missing option '-o' / '--output'.``): no runner starts without one, whichever front end parsed
        the line (both refuse such a line themselves; this is the last guard before the command runs)."""
        for opt in self.options:
            value = params.get(opt.name)
            if opt.required and (value is None or (opt.multiple and not value)):
                raise CommandLineError(f"Missing option {opt.spelling()}.")

    def defaults(self) -> Params:
        """Every parameter at its value when nothing is given."""
        params = Params((o.name, o.initial()) for o in self.options)
        params.update((a.name, () if a.nargs == -1 else None) for a in self.arguments)
        return params


def example_lines(help: str) -> list[str]:
    """The command lines of a help text's ``Examples:`` block, a line ending in ``\\`` joined with the next
    (the help tests run every one: tests/test_examples.py)."""
    if "Examples:" not in help:
        return []
    out: list[str] = []
    lines = iter(help.split("Examples:", 1)[1].splitlines())
    for line in lines:
        line = line.strip()
        while line.endswith("\\"):
            line = line[:-1].rstrip() + " " + next(lines, "").strip()
        if line.startswith("ckpt "):
            out.append(line)
    return out


class Params(dict):
    """A command's parameters by name, also as attributes (``params.out``)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class CommandLineError(UsageError):
    """A command line that does not make sense (``--against`` with two PATHs): click's usage error, with
    the command's usage line (exit status 2)."""

    def __init__(self, message: str) -> None:
        super().__init__("", message)


class ParameterError(CommandLineError):
    """A value an option's ``convert`` refuses: click's ``Invalid value for --hparam: ...``."""


_UNITS = {"": 1, "B": 1, "KB": 10 ** 3, "MB": 10 ** 6, "GB": 10 ** 9, "TB": 10 ** 12,
          "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40}


def parse_size(text: str) -> int:
    """``"1.5GiB"`` -> 1610612736 (decimal and binary units); ValueError, saying why, for anything else."""
    import re

    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([A-Za-z]*)\s*", text)
    unit = match.group(2).upper() if match else ""
    if match is None or unit not in _UNITS:
        raise ValueError(f"{text!r} is not a size (examples: 1000000, 500MB, 2GB, 1.5GiB)")
    size = int(float(match.group(1)) * _UNITS[unit])
    if size <= 0:
        raise ValueError(f"{text!r}: the size must be more than 0 bytes")
    return size
