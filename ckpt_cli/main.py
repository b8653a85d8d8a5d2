"""The root ``ckpt`` group: global options, lazily imported subcommands, and the one error boundary."""
from __future__ import annotations

import os
import sys

import click

from formats.core.records import record

from .exit_codes import ExitCode
from .command_table import COMMANDS as _COMMANDS
from .command_table import GLOBAL_FLAGS as _GLOBAL_FLAGS
from .command_table import spec_of
from .help import format_exit_status

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

COMMANDS = _COMMANDS
"""Every command: name -> the module holding its spec (:mod:`ckpt_cli.spec`), imported when it runs."""


@record
class Settings:
    """Global options, available to every command as ``ctx.obj``."""

    traceback: bool = False
    color: bool = True


class LazyGroup(click.Group):
    """A group whose commands are imported on first use, and the CLI's single error boundary."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        built = _built.get(cmd_name)
        if built is None:
            from .build import build_command

            built = _built[cmd_name] = build_command(spec_of(cmd_name))
        return built

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_help_text(ctx, formatter)
        format_exit_status(formatter)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Global options are accepted after the command too (``ckpt ls x -q``): see :func:`hoist_global_options`.
        A command line asking for ``--json`` gets its usage errors as a JSON document too (:func:`print_error_json`)."""
        ctx.meta[JSON_ERRORS] = json_requested(self, ctx, args)
        try:
            return super().parse_args(ctx, hoist_global_options(self, ctx, args))
        except click.ClickException as exc:
            _usage_error_json(ctx, exc)
            raise

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None,
                                                                             list[str]]:
        """A mistyped command name is an error that suggests the nearest command(s)."""
        name = click.utils.make_str(args[0])
        if self.get_command(ctx, name) is None and not name.startswith("-"):
            import difflib

            close = difflib.get_close_matches(name, self.list_commands(ctx), n=3, cutoff=0.6)
            if close:
                nearest = " or ".join(repr(c) for c in close)
                ctx.fail(f"No such command {name!r}. Did you mean {nearest}?")
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:  # click shows it on stderr; with --json, a JSON document on stdout too
            _usage_error_json(ctx, exc)
            raise
        except (click.exceptions.Exit, click.Abort):
            raise
        except KeyboardInterrupt:
            click.echo("ckpt: interrupted", err=True)
            ctx.exit(ExitCode.INTERRUPTED)
        except BrokenPipeError:
            _silence_broken_pipe()
            ctx.exit(ExitCode.OK)
        except Exception as exc:  # the one error boundary (commands run through it: ckpt_cli.environment.execute)
            from .boundary import report_error
            from .environment import Environment

            settings = ctx.obj if isinstance(ctx.obj, Settings) else Settings()
            env = Environment(color=settings.color, traceback=settings.traceback)
            ctx.exit(report_error(exc, env, as_json=ctx.meta.get(JSON_ERRORS, False)))


_built: dict[str, click.Command] = {}


JSON_ERRORS = "ckpt.json_errors"
"""``ctx.meta`` key: the command line asked for ``--json``, so errors are also a JSON document on stdout."""


def json_requested(group: click.Group, ctx: click.Context, args: list[str]) -> bool:
    """Whether ``args`` (the root's command line) run a command that has ``--json`` with ``--json`` given
    (before any ``--``)."""
    at = next((i for i, a in enumerate(args) if not a.startswith("-")), None)
    if at is None:
        return False
    rest = args[at + 1:]
    rest = rest[:rest.index("--")] if "--" in rest else rest
    if "--json" not in rest:
        return False
    command = group.get_command(ctx, args[at])
    return command is not None and any("--json" in p.opts for p in command.params if isinstance(p, click.Option))


def _usage_error_json(ctx: click.Context, exc: click.ClickException) -> None:
    """With ``--json``, click's usage error as the JSON error document on stdout (click prints its text on stderr)."""
    if ctx.find_root().meta.get(JSON_ERRORS):
        from .boundary import print_error_json

        print_error_json(exc.exit_code, exc.format_message(), None)


GLOBAL_FLAGS = tuple(_GLOBAL_FLAGS)
"""The root's options (all flags) that may also follow the command's name (:data:`ckpt_cli.fast.GLOBAL_FLAGS`)."""


def hoist_global_options(group: click.Group, ctx: click.Context, args: list[str]) -> list[str]:
    """``args`` with the global flags found after the command name moved before it, so that click parses
    them as the root's: ``ls x -q`` -> ``-q ls x``. A flag the command defines itself (``diff -q``) stays
    the command's; nothing after ``--`` moves, nor the value of one of the command's options."""
    at = next((i for i, a in enumerate(args) if not a.startswith("-")), None)
    if at is None or "--" in args[:at]:
        return args
    command = group.get_command(ctx, args[at])
    if command is None:
        return args
    own, values = _option_arity(command, ctx)
    passes_on = not command.context_settings.get("allow_interspersed_args", True)  # ckpt run SCRIPT ARGS...
    hoisted: list[str] = []
    rest: list[str] = []
    i = at + 1
    while i < len(args):
        token = args[i]
        if token == "--" or (passes_on and not token.startswith("-")):  # the rest is another program's
            rest += args[i:]
            break
        if token in GLOBAL_FLAGS and token not in own:
            hoisted.append(token)
        else:
            taken = values.get(token, 0)
            rest += args[i:i + 1 + taken]
            i += taken
        i += 1
    return args[:at] + hoisted + [args[at]] + rest


def _option_arity(command: click.Command, ctx: click.Context) -> tuple[set[str], dict[str, int]]:
    """The command's option strings, and how many values follow each that takes values."""
    own: set[str] = set()
    values: dict[str, int] = {}
    for param in command.get_params(ctx):
        if not isinstance(param, click.Option):
            continue
        names = [*param.opts, *param.secondary_opts]
        own.update(names)
        if not (param.is_flag or param.count):
            values.update((name, max(param.nargs, 1)) for name in param.opts)
    return own, values


def _silence_broken_pipe() -> None:
    # stdout's reader went away (`ckpt ls | head`): point stdout at devnull so the exit flush is quiet.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


if "_CKPT_COMPLETE" in os.environ:  # shell completion: register ckpt's own bash script class
    from . import completion  # noqa: F401


def _version() -> str:
    from formats import __version__

    return __version__


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--traceback", is_flag=True, help="Show the full traceback on errors.")
@click.option("--no-color", is_flag=True, help="No colour (also: the NO_COLOR environment variable).")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing on stdout; the exit status says it all.")
@click.version_option(_version(), "--version", prog_name="ckpt", message="%(prog)s %(version)s")
@click.pass_context
def cli(ctx: click.Context, traceback: bool, no_color: bool, quiet: bool) -> None:
    """Inspect, compare, edit and convert TensorFlow and Keras checkpoints - without TensorFlow.

    The options below may also follow the command (ckpt ls DIR -q), except where
    the command has its own option of that name (diff -q).

    \b
    Examples:
      ckpt ls runs/exp1/tf_ckpts              # a run's checkpoints, the latest marked
      ckpt ls -r runs/                        # every checkpoint under runs/
      ckpt verify model.ckpt-200              # read everything, check every checksum
      ckpt -q diff run_a run_b && echo same   # exit status only, for scripts and CI
    """
    ctx.obj = Settings(traceback=traceback, color=not no_color and "NO_COLOR" not in os.environ)
    if quiet:
        _silence_stdout(ctx)


def _silence_stdout(ctx: click.Context) -> None:
    """Send the command's stdout to devnull until it finishes (errors still go to stderr)."""
    previous = sys.stdout
    sink = open(os.devnull, "w")  # noqa: SIM115 - closed by the context
    sys.stdout = sink

    def restore() -> None:
        sys.stdout = previous
        sink.close()

    ctx.call_on_close(restore)
