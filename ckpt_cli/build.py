"""The click command of a spec (:mod:`ckpt_cli.spec`): help under headings, completion, usage errors.

The command's callback runs the spec's runner through the one error boundary (:func:`ckpt_cli.environment.execute`),
in an :class:`~ckpt_cli.environment.Environment` made from the root's options. A
:class:`~ckpt_cli.spec.CommandLineError` the runner raises becomes click's usage error, a
:class:`~ckpt_cli.spec.ParameterError` an option's ``convert`` raises click's ``Invalid value for ...``.
"""
from __future__ import annotations


import click

from .completion import CHECKPOINT as CHECKPOINT_TYPE
from .completion import complete_keys, key_completer, list_completer
from .help import CkptCommand
from .spec import (CHECKPOINT, FILE, FLOAT, PATH, SIZE, TEXT, UNPROCESSED, Arg, Choices, Command, CommandLineError, Ints,
                   Opt,
                   ParameterError, Params, parse_size)

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["build_command", "ByteSize"]


class ByteSize(click.ParamType):
    """A size in bytes: ``1000000``, ``500MB``, ``2GB``, ``1.5GiB`` (decimal and binary units)."""

    name = "size"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        """The size in bytes (a positive integer)."""
        if isinstance(value, int):
            return value
        try:
            return parse_size(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


_TYPES: dict[str, Any] = {TEXT: None, PATH: click.Path(), FILE: click.Path(dir_okay=False), CHECKPOINT: CHECKPOINT_TYPE,
                          UNPROCESSED: click.UNPROCESSED, FLOAT: float, SIZE: ByteSize()}


def click_type(kind: Any) -> Any:
    """The click type of a spec type."""
    if isinstance(kind, Ints):
        return click.IntRange(kind.min, kind.max) if kind.min is not None or kind.max is not None else int
    if isinstance(kind, tuple):
        return click.Choice(list(kind))
    if isinstance(kind, Choices):  # choices known when asked (--to: the formats that write)
        return click.Choice(list(kind.choices()))
    return _TYPES[kind]


def _completer(complete: tuple[str, ...] | None) -> Any:
    if complete is None:
        return None
    if complete[0] == "choices":  # a comma-separated list of these (stats --columns)
        return list_completer(*complete[1:])
    return key_completer(*complete[1:]) if len(complete) > 1 else complete_keys


def _argument(arg: Arg) -> click.Argument:
    return click.Argument([arg.name], nargs=arg.nargs, required=arg.required, type=click_type(arg.type),
                          metavar=arg.metavar, shell_complete=_completer(arg.complete))


def _option(opt: Opt) -> click.Option:
    extra: dict[str, Any] = {}
    if opt.flag:
        extra["is_flag"] = True
    else:
        extra["type"] = click_type(opt.type)
    if opt.convert is not None:
        convert = opt.convert
        hint = max(opt.decls, key=len)

        def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
            try:
                return convert(value)
            except ParameterError as exc:
                raise click.BadParameter(exc.message, ctx=ctx, param_hint=hint) from None

        extra["callback"] = callback
    if not opt.multiple and not opt.required:
        # Not for a required option: click >= 8.3 takes an explicit default, None too, as the value given,
        # and would run the command without it (`convert SRC --to tf-object` writing a checkpoint named None).
        extra["default"] = opt.default
    return click.Option([*opt.decls, opt.name], multiple=opt.multiple, required=opt.required, metavar=opt.metavar,
                        show_default=opt.show_default, help=opt.help or None, shell_complete=_completer(opt.complete),
                        **extra)


def build_command(spec: Command) -> click.Command:
    """The click command of ``spec``."""

    def callback(**params: Any) -> None:
        from .boundary import execute
        from .environment import Environment

        ctx = click.get_current_context()
        settings = ctx.find_root().obj
        env = Environment(color=getattr(settings, "color", True), traceback=getattr(settings, "traceback", False))
        try:
            status = execute(spec, Params(params), env)
        except ParameterError as exc:
            raise click.BadParameter(exc.message, ctx=ctx) from None
        except CommandLineError as exc:
            raise click.UsageError(exc.message, ctx) from None
        ctx.exit(status)

    context = {"ignore_unknown_options": True, "allow_interspersed_args": False} if spec.passes_on else None
    params: list[click.Parameter] = [_argument(a) for a in spec.arguments]
    params += [_option(o) for o in spec.options]
    return CkptCommand(spec.name, params=params, callback=callback, help=spec.help, short_help=spec.short_help,
                       exit_status=spec.exit_status, context_settings=context)

