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
    """``--dry-run``, ``--json``, ``--force``, ``--no-verify`` and ``--update-state`` of commands that write."""
    return _stack(
        click.option("--dry-run", is_flag=True, help="Print the mapping table and problems; write nothing."),
        click.option("--json", "as_json", is_flag=True, help="Report the plan (and what was written) as JSON."),
        click.option("--force", is_flag=True, help="Replace an existing output."),
        click.option("--no-verify", is_flag=True, help=f"Skip reading the output back and comparing it with {source}."),
        click.option("--update-state", is_flag=True,
                     help="Make OUT the latest checkpoint of its directory's state file."),
    )
