"""Every required option of every command is enforced on both front ends: a usage error (exit 2) naming the
option, and nothing written (issue 36: `convert SRC --to tf-object` without -o wrote a checkpoint named None).

The cases are generated from the command specs (ckpt_cli/command_table.py and each command's SPEC): a new
required option is covered without editing this file, and a required option of a type this file cannot supply
a value for fails :func:`test_every_required_option_is_covered`."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ckpt_cli.command_table import COMMANDS, spec_of
from ckpt_cli.main import cli
from ckpt_cli.spec import CHECKPOINT, PATH, Choices, Command, CommandLineError, Opt, Params
from tests.conftest import CORPUS, SHIPPED

SRC = CORPUS / "tf1_adam" / "model.ckpt-200"
"""Name-based (TF1 Saver, Adam): every writing command would write from it (`--to tf-object` included)."""
OTHER = CORPUS / "tf1_adam" / "model.ckpt-1"

FRONT_ENDS = {"fast": SHIPPED, "click": cli}
"""``ckpt`` as shipped (ckpt_cli.fast.main: hands a line it does not take to click) and the click CLI itself."""


def _value(opt: Opt) -> str:
    """A value a user would give ``opt`` (relative outputs land in the test's cwd, so a write would show)."""
    if isinstance(opt.type, Choices):
        assert opt.type.accepts("tf-object")
        return "tf-object"
    if opt.type == PATH:
        return "out"
    if opt.type == CHECKPOINT:
        return str(SRC)
    raise AssertionError(f"no test value for {opt.decls} of type {opt.type!r}: extend tests/test_required_options.py")


def _positionals(spec: Command) -> list[str]:
    words: list[str] = []
    for arg in spec.arguments:
        if not arg.required:
            continue
        assert arg.type == CHECKPOINT, f"{spec.name}: no test value for argument {arg.name}"
        words += [str(OTHER), str(SRC)] if arg.nargs == -1 else [str(SRC)]
    return words


def _cases() -> list[tuple[str, str]]:
    return [(name, opt.name) for name in sorted(COMMANDS) for opt in spec_of(name).options if opt.required]


def _line_without(name: str, missing: str) -> tuple[list[str], Opt]:
    spec = spec_of(name)
    argv = [name, *_positionals(spec)]
    left_out = None
    for opt in spec.options:
        if not opt.required:
            continue
        if opt.name == missing:
            left_out = opt
            continue
        argv += [opt.decls[-1], _value(opt)]
    assert left_out is not None
    return argv, left_out


def test_every_required_option_is_covered() -> None:
    """The generated cases hold at least the required options the issue names (so the generator cannot
    silently produce nothing), and each has a value for the other required options."""
    cases = set(_cases())
    assert {("convert", "out"), ("convert", "to"), ("rename", "out"), ("extract", "out"), ("edit", "out"),
            ("average", "out"), ("doctor", "target")} <= cases
    for name, missing in cases:
        _line_without(name, missing)


@pytest.mark.parametrize("front", sorted(FRONT_ENDS))
@pytest.mark.parametrize(("name", "missing"), _cases(), ids=lambda x: x)
def test_a_missing_required_option_is_a_usage_error(name: str, missing: str, front: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Exit 2, click's `Error: Missing option '-o' / '--output'.`, and the cwd left empty."""
    monkeypatch.chdir(tmp_path)
    argv, opt = _line_without(name, missing)
    result = CliRunner().invoke(FRONT_ENDS[front], argv, prog_name="ckpt", catch_exceptions=False)
    spelled = " / ".join(f"'{decl}'" for decl in opt.decls)
    assert result.exit_code == 2, (argv, result.stdout, result.stderr)
    assert f"\nError: Missing option {spelled}." in result.stderr
    assert result.stderr.startswith(f"Usage: ckpt {name} [OPTIONS]")
    assert "internal error" not in result.stderr and result.stdout == ""
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("argv", [
    ["convert", str(SRC), "--to", "tf-object"],
    ["convert", str(SRC), "--to", "keras3-h5"],
    ["convert", str(SRC), "--to", "npz", "--json"],
    ["rename", str(SRC), "--map", "dense=linear"],
    ["extract", str(SRC), "global_step"],
    ["edit", str(SRC), "--drop-optimizer"],
    ["average", str(OTHER), str(SRC)],
], ids=lambda a: " ".join(a[:1] + a[2:]))
def test_the_issues_command_lines_without_output(argv: list[str], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The command lines of the report (which wrote `None` or ended in an internal error) as a user types them."""
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(SHIPPED, argv, catch_exceptions=False)
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == "Error: Missing option '-o' / '--output'."
    if "--json" in argv:  # the JSON error document too
        import json

        assert json.loads(result.stdout) == {"ok": False, "exit_code": 2, "hint": None,
                                             "error": "Missing option '-o' / '--output'."}
    assert os.listdir(tmp_path) == []


def test_convert_without_to_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(SHIPPED, ["convert", str(SRC), "-o", "never"], catch_exceptions=False)
    assert result.exit_code == 2
    assert "Error: Missing option '--to'. Choose from:" in result.stderr
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(("name", "missing"), _cases(), ids=lambda x: x)
def test_help_marks_it_required(name: str, missing: str) -> None:
    """What --help promises is what is enforced."""
    import click

    command = cli.get_command(click.Context(cli), name)
    ctx = click.Context(command, info_name=name)
    param = next(p for p in command.params if p.name == missing)
    assert param.required and param.get_help_record(ctx)[1].endswith("[required]")


def test_no_runner_starts_without_a_required_option() -> None:
    """The last guard, whatever parsed the line: the shared boundary refuses params lacking one."""
    from ckpt_cli.boundary import execute
    from ckpt_cli.environment import Environment

    called: list[Any] = []
    spec = spec_of("extract")
    guarded = Command("extract", short_help="", help="", arguments=spec.arguments, options=spec.options,
                      runner=lambda env, params: called.append(params) or 0)
    params = Params(guarded.defaults(), path=str(SRC))
    with pytest.raises(CommandLineError) as raised:
        execute(guarded, params, Environment(color=False))
    assert raised.value.message == "Missing option '-o' / '--output'."
    assert called == []
    params["out"] = "x.npz"
    assert execute(guarded, params, Environment(color=False)) == 0 and len(called) == 1
