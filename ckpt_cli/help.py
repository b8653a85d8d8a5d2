"""Help that reads the same everywhere: options grouped under the same headings in every command.

Commands are declared with :func:`command` instead of ``click.command``; an option's heading comes
from one table keyed by the option's parameter name, so ``--map`` is under "Rename rules" and
``--json`` under "Output" wherever they appear.
"""
from __future__ import annotations

import functools

import click

from formats.core.errors import ExitCode

from . import spec

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

#: What each exit status means, for every command's ``--help`` and the README (one table).
EXIT_MEANINGS: dict[ExitCode, str] = {
    ExitCode.OK: "success",
    ExitCode.PROBLEMS: "differences or problems found (each listed), or a key selection that matches nothing",
    ExitCode.USAGE: "usage error (unknown option, malformed --map/--regex/rules, bad slice syntax)",
    ExitCode.INPUT: "an input cannot be read (missing, not a checkpoint, corrupt)",
    ExitCode.OUTPUT: "the output was not written (exists without --force, would replace an input, disk full, "
                     "failed its read-back)",
    ExitCode.INTERNAL: "internal error (a bug: please report it with --traceback output)",
    ExitCode.INTERRUPTED: "interrupted",
}


def format_exit_status(formatter: click.HelpFormatter, meanings: dict[int, str] | None = None) -> None:
    """The closing block of every ``--help`` (the root's too): each exit status and its meaning, a command's
    own ``meanings`` (``{0: "written (or planned, with --dry-run)"}``) in place of the general ones."""
    own = meanings or {}
    formatter.write_paragraph()
    with formatter.indentation():
        formatter.write_text("Exit status:")
        with formatter.indentation():
            formatter.write_dl([(str(int(code)), own.get(int(code), text)) for code, text in EXIT_MEANINGS.items()],
                               col_spacing=2)


GROUPS: dict[str, tuple[str, ...]] = {
    "Selection": ("patterns", "recursive", "match", "strip_prefix_a", "strip_prefix_b", "keys_only", "include_graph",
                  "no_optimizer", "ignore_optimizer", "against", "target", "last", "select", "exclude",
                  "by", "drop_optimizer"),
    "Rename rules": ("maps", "regexes", "rules_file", "add_prefix", "strip_prefix", "rename_full_names",
                     "slot_names"),
    "Comparison": ("atol", "rtol", "equal_nan", "check_finite"),
    "Casting": ("casts", "cast_model_only"),
    "Writing": ("out", "to", "template", "force", "no_verify", "update_state", "dry_run", "link", "allow_missing", "allow_pickle",
                "rules_out", "shards", "max_shard_size"),
    "Optimizer state": ("learning_rate", "hparams"),
    "Output": ("as_json", "all_rows", "verbose", "quiet", "sort", "tree", "names", "fmt", "mode", "by", "precision", "threshold",
               "edgeitems", "full", "hist", "bins", "plot", "stat", "ascii"),
}
_HEADING = {name: title for title, names in GROUPS.items() for name in names}
ORDER = ("Selection", "Rename rules", "Comparison", "Casting", "Writing", "Optimizer state", "Output", "Other options")


class CkptCommand(click.Command):
    """A click command whose ``--help`` lists options under headings (see :data:`GROUPS`) and ends with
    the exit statuses (:func:`format_exit_status`), with what the command means by some of them
    (``exit_status={1: "different"}``): one block, stated once."""

    def __init__(self, *args: Any, exit_status: dict[int, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.exit_status = dict(exit_status or {})

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_epilog(ctx, formatter)
        format_exit_status(formatter, self.exit_status)

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        sections: dict[str, list[tuple[str, str]]] = {}
        for param in self.get_params(ctx):
            if not isinstance(param, click.Option):
                continue
            record = param.get_help_record(ctx)
            if record is not None:
                sections.setdefault(_HEADING.get(param.name or "", "Other options"), []).append(record)
        for title in ORDER:
            if title in sections:
                with formatter.section(title):
                    formatter.write_dl(sections[title])


command = functools.partial(click.command, cls=CkptCommand)
"""``@command()``: like ``@click.command()``, with grouped help."""


def example_lines(cmd: click.Command) -> list[str]:
    """The command lines of a command's ``Examples:`` block (:func:`ckpt_cli.spec.example_lines`)."""
    return spec.example_lines(cmd.help or "")
