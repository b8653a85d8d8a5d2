"""Global options (--traceback, --no-color, -q/--quiet) work before or after the command, and a mistyped
command suggests the nearest one."""
from __future__ import annotations

import click
import pytest

from ckpt_cli.main import cli, hoist_global_options

from .conftest import CORPUS

EST1, EST200 = CORPUS / "tf1_estimator" / "model.ckpt-1", CORPUS / "tf1_estimator" / "model.ckpt-200"
RUN = CORPUS / "seed_slots" / "tf_ckpts"


def test_quiet_after_the_command(run_cli):
    before, after = run_cli("-q", "ls", RUN), run_cli("ls", RUN, "-q")
    assert (after.exit_code, after.stdout) == (before.exit_code, before.stdout) == (0, "")
    assert run_cli("ls", RUN, "--quiet").stdout == ""
    assert run_cli("verify", EST200, "-q").stdout == ""


def test_no_color_and_traceback_after_the_command(run_cli, tmp_path):
    result = run_cli("diff", EST1, EST200, "--no-color")
    assert result.exit_code == 1 and "\x1b[" not in result.stdout
    missing = run_cli("ls", tmp_path / "nope", "--traceback")
    assert missing.exit_code == 3
    assert missing.stderr.startswith("Traceback (most recent call last):")
    assert missing.stderr.splitlines()[-1] == f"ckpt: error: {tmp_path / 'nope'}: no such file, directory or " \
                                              "checkpoint prefix"


def test_a_command_keeps_its_own_option_of_the_same_name(run_cli):
    result = run_cli("diff", EST1, EST200, "-q")  # diff's own --quiet: no warnings, no output
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", "")


@pytest.mark.parametrize("args, want", [
    (["ls", "x", "-q"], ["-q", "ls", "x"]),
    (["--no-color", "diff", "a", "b", "--traceback", "-q"], ["--no-color", "--traceback", "diff", "a", "b", "-q"]),
    (["ls", "--filter", "-q", "x"], ["ls", "--filter", "-q", "x"]),  # the value of ls's --filter
    (["ls", "--", "-q"], ["ls", "--", "-q"]),
    (["nosuch", "-q"], ["nosuch", "-q"]),
    (["--help"], ["--help"]),
])
def test_hoisting(args, want):
    assert hoist_global_options(cli, click.Context(cli), args) == want


def test_after_double_dash_nothing_moves(run_cli):
    result = run_cli("ls", "--", "-q")
    assert result.exit_code == 3 and result.stderr.startswith("ckpt: error: -q: no such file")


@pytest.mark.parametrize("typed, nearest", [("verfy", "'verify'"), ("lss", "'ls'"), ("convrt", "'convert'")])
def test_mistyped_command_suggests_the_nearest(run_cli, typed, nearest):
    result = run_cli(typed, EST200)
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == f"Error: No such command {typed!r}. Did you mean {nearest}?"


def test_unknown_command_without_a_near_one(run_cli):
    result = run_cli("zzzzzz")
    assert result.exit_code == 2 and result.stderr.splitlines()[-1] == "Error: No such command 'zzzzzz'."
