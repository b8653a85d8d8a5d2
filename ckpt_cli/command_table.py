"""Every command, by name: the module that holds its spec and runner, and the root's flags. Both front ends
(:mod:`ckpt_cli.fast`, :mod:`ckpt_cli.main`) read this table. Click-free."""
from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from ckpt_cli.spec import Command

__all__ = ["COMMANDS", "GLOBAL_FLAGS", "spec_of"]

GLOBAL_FLAGS = {"--traceback": "traceback", "--no-color": "no_color", "-q": "quiet", "--quiet": "quiet"}
"""The root's options (all flags; flag -> parameter name). They may also follow the command's name, unless the
command has an option of that spelling itself (``diff -q``)."""

COMMANDS: dict[str, str] = {
    "average": "ckpt_cli.commands.average",
    "completion": "ckpt_cli.commands.completion",
    "convert": "ckpt_cli.commands.convert",
    "diff": "ckpt_cli.commands.diff",
    "doctor": "ckpt_cli.commands.doctor",
    "edit": "ckpt_cli.commands.edit",
    "extract": "ckpt_cli.commands.extract",
    "graph": "ckpt_cli.commands.graph",
    "ls": "ckpt_cli.commands.ls",
    "rename": "ckpt_cli.commands.rename",
    "report": "ckpt_cli.commands.report",
    "run": "ckpt_cli.commands.run",
    "show": "ckpt_cli.commands.show",
    "stats": "ckpt_cli.commands.stats",
    "trend": "ckpt_cli.commands.trend",
    "verify": "ckpt_cli.commands.verify",
}
"""Every command: name -> the module holding its ``SPEC`` and runner (imported when the command runs)."""


def spec_of(name: str) -> Command:
    """The spec of command ``name``."""
    module = COMMANDS[name]
    __import__(module)  # not importlib.import_module: importlib imports warnings (start-up)
    return sys.modules[module].SPEC
