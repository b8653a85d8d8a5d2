"""Options several commands share, declared once so the same words mean the same thing everywhere."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def _stack(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    def apply(f: F) -> F:
        for decorator in reversed(decorators):
            f = decorator(f)
        return f

    return apply


def rule_options(whose: str = "") -> Callable[[F], F]:
    """``--map``, ``--regex`` and ``--rules`` (see :mod:`formats.ops.rules`); ``whose`` names the side renamed."""
    subject = f"{whose} names" if whose else "names"
    return _stack(
        click.option("--map", "maps", multiple=True, metavar="OLD=NEW",
                     help=f"Rename {subject} by prefix (whole '/'-segments; repeatable, first matching rule wins)."),
        click.option("--regex", "regexes", multiple=True, metavar="PAT=REPL",
                     help=f"Rename {subject} with re.sub (repeatable)."),
        click.option("--rules", "rules_file", type=click.Path(), metavar="FILE",
                     help="Rename rules file (TOML or JSON), applied before --map and --regex."),
    )


def write_options(source: str = "SRC") -> Callable[[F], F]:
    """``--dry-run``, ``--json``, ``--force``, ``--no-verify``, ``--update-state`` and ``--verbose`` of commands
    that write."""
    return _stack(
        click.option("--dry-run", is_flag=True, help="Print the mapping table and problems; write nothing."),
        click.option("--json", "as_json", is_flag=True, help="Report the plan (and what was written) as JSON."),
        click.option("--force", is_flag=True, help="Replace an existing output."),
        click.option("--no-verify", is_flag=True, help=f"Skip reading the output back and comparing it with {source}."),
        click.option("--update-state", is_flag=True,
                     help="Make OUT the latest checkpoint of its directory's state file."),
        click.option("-v", "--verbose", is_flag=True,
                     help="Under each problem, the keys behind it (candidates, the tensors it is about)."),
    )


def link_option() -> Callable[[F], F]:
    """``--link``: hard-link the input data files an output bundle takes over whole, instead of copying them."""
    return click.option(
        "--link", is_flag=True,
        help="Hard-link the input's data files into the output instead of copying them, where both are on one "
             "file system (a rename or a name<->object conversion then writes only the index). Checkpoint data "
             "files are never modified in place, so the shared files are safe; deleting either checkpoint "
             "leaves the other whole.")


def jobs_option(what: str = "Threads reading tensors at once") -> Callable[[F], F]:
    """``--jobs N``: how many threads read tensors (checksums and comparisons run on every core by default)."""
    return click.option("--jobs", "-j", type=click.IntRange(min=0), default=0, metavar="N",
                        help=f"{what} (default 0: one per available core).")


READ_BACK_JOBS = "Threads reading the output back to verify it"
"""``jobs_option``'s help for the commands that write."""


_UNITS = {"": 1, "B": 1, "KB": 10 ** 3, "MB": 10 ** 6, "GB": 10 ** 9, "TB": 10 ** 12,
          "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40}


class ByteSize(click.ParamType):
    """A size in bytes: ``1000000``, ``500MB``, ``2GB``, ``1.5GiB`` (decimal and binary units)."""

    name = "size"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        """The size in bytes (a positive integer)."""
        import re

        if isinstance(value, int):
            return value
        match = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([A-Za-z]*)\s*", str(value))
        unit = match.group(2).upper() if match else ""
        if match is None or unit not in _UNITS:
            self.fail(f"{value!r} is not a size (examples: 1000000, 500MB, 2GB, 1.5GiB)", param, ctx)
        size = int(float(match.group(1)) * _UNITS[unit])
        if size <= 0:
            self.fail(f"{value!r}: the size must be more than 0 bytes", param, ctx)
        return size
