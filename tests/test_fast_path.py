"""The console script's click-free path for ``ckpt ls`` (ckpt_cli/fast.py): the same output, status and
errors as the click command, and none of click, rich, typing or dataclasses imported on the way."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from ckpt_cli import fast
from ckpt_cli.commands.ls import ls as ls_command
from tests.conftest import CORPUS

ROOT = Path(__file__).resolve().parent.parent
BUNDLE = CORPUS / "seed_slots" / "tf_ckpts" / "ckpt-5"
RUN_DIR = CORPUS / "seed_slots" / "tf_ckpts"


def test_the_option_table_matches_the_click_command() -> None:
    """Every option the fast path knows means what it means to click (name, flag or value, choices)."""
    options = {opt: param for param in ls_command.params if isinstance(param, click.Option) for opt in param.opts}
    for opt, (name, allowed) in fast.LS_OPTIONS.items():
        param = options[opt]
        assert param.name == name
        assert param.is_flag == (allowed is None)
        if allowed == ():
            assert param.multiple and not isinstance(param.type, click.Choice)
        elif allowed is not None:
            assert isinstance(param.type, click.Choice) and tuple(param.type.choices) == allowed
    assert set(options) - {"-h", "--help"} == set(fast.LS_OPTIONS)


@pytest.mark.parametrize("argv", [
    ["ls", "-h"], ["ls"], ["ls", "--", "x"], ["ls", "-rf", "x", "p"], ["ls", "--sort", "bogus", "p"],
    ["ls", "--sort"], ["ls", "--json=1", "p"], ["ls", "--fil", "x", "p"], ["--version"], ["diff", "a", "b"],
    ["--unknown-global", "ls", "p"], ["ls", "-fx", "p"], [],
])
def test_lines_that_need_click_go_to_click(argv: list[str]) -> None:
    assert fast.parse_ls(argv) is None


def test_a_plain_line_is_parsed() -> None:
    flags, params = fast.parse_ls(["-q", "--no-color", "ls", "a", "--filter", "x*", "-f=y", "--sort=size", "b",
                                   "-r", "--json"])  # type: ignore[misc]
    assert flags == {"traceback": False, "no_color": True, "quiet": True}
    assert params == {"paths": ["a", "b"], "patterns": ["x*", "y"], "sort": "size", "recursive": True,
                      "tree": False, "names": False, "no_optimizer": False, "as_json": True}


CASES = [
    ["ls", str(BUNDLE)],
    ["ls", "--json", str(BUNDLE)],
    ["ls", "--sort", "size", "--names", "-f", "*kernel*", str(BUNDLE)],
    ["ls", "--no-optimizer", "--tree", str(BUNDLE)],
    ["ls", str(RUN_DIR)],
    ["ls", "--json", str(RUN_DIR), str(BUNDLE)],
    ["ls", "-f", "no-such-key*", str(BUNDLE)],
    ["ls", str(BUNDLE) + "-missing"],
    ["-q", "ls", str(BUNDLE)],
]


@pytest.mark.parametrize("argv", CASES, ids=lambda a: " ".join(a).replace(str(CORPUS), "C"))
def test_same_output_and_status_as_click(argv: list[str], run_cli, capsys) -> None:
    expected = run_cli(*argv)
    parsed = fast.parse_ls(argv)
    assert parsed is not None
    status = fast.run_fast(*parsed)
    out, err = capsys.readouterr()
    assert (status, out, err) == (expected.exit_code, expected.stdout, expected.stderr)


def _modules_after(argv: list[str]) -> set[str]:
    code = ("import sys\nfrom ckpt_cli.fast import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "sys.stderr.write(' '.join(sorted(sys.modules)))\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, env=env, check=True)
    return set(done.stderr.split())


def test_ls_imports_nothing_it_does_not_need() -> None:
    modules = _modules_after(["ls", str(BUNDLE)])
    assert "formats.tf_bundle.checkpoint" in modules
    heavy = {"click", "rich", "typing", "dataclasses", "inspect", "json", "numpy", "importlib.metadata",
             "concurrent.futures", "formats.keras_h5.reader", "formats.npz.reader", "formats.safetensors.reader"}
    assert modules & heavy == set()


def test_anything_else_goes_to_click() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "ckpt_cli", "ls", "--sort", "bogus", str(BUNDLE)],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 2
    assert "Invalid value for '--sort'" in done.stderr
