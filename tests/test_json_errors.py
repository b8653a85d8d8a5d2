"""Every command with --json writes one JSON document on stdout on every exit path: a missing input, a usage
error, an internal error (issue 24, item 8). Run through the shipped entry point (``python -m ckpt_cli``, which is
``ckpt_cli.fast:main``, the console script) and through click's runner."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ckpt_cli.main import COMMANDS, cli

from .conftest import CORPUS

MISSING = "no_such_checkpoint"
GOOD = str(CORPUS / "tf1_estimator/model.ckpt-200")
NOT_FOUND = f"{MISSING}: no such file, directory or checkpoint prefix"

# each command that has --json, with a missing input (and whatever else it requires)
MISSING_INPUT = {
    "ls": ["ls", MISSING],
    "verify": ["verify", MISSING],
    "graph": ["graph", MISSING],
    "diff": ["diff", GOOD, MISSING],
    "stats": ["stats", MISSING],
    "show": ["show", MISSING, "k"],
    "extract": ["extract", MISSING, "-o", "out.npz"],
    "convert": ["convert", MISSING, "-o", "out", "--to", "tf-name"],
    "rename": ["rename", MISSING, "-o", "out", "--add-prefix", "a/"],
    "doctor": ["doctor", MISSING, "--against", GOOD],
    "trend": ["trend", MISSING],
    "edit": ["edit", MISSING, "-o", "out", "--drop-optimizer"],
    "average": ["average", MISSING, GOOD, "-o", "out"],
    "report": ["report", MISSING],
}


def _has_json(name: str) -> bool:
    command = cli.get_command(None, name)  # type: ignore[arg-type]
    return any("--json" in getattr(p, "opts", ()) for p in command.params)


def test_every_command_with_json_is_covered() -> None:
    assert sorted(MISSING_INPUT) == sorted(n for n in COMMANDS if _has_json(n))


def _shipped(argv: list[str], cwd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ckpt_cli", *argv], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


@pytest.mark.parametrize("name", sorted(MISSING_INPUT))
def test_a_missing_input_is_a_json_document(name: str, tmp_path) -> None:
    done = _shipped([*MISSING_INPUT[name], "--json"], str(tmp_path))
    assert done.returncode == 3, done.stderr
    error = NOT_FOUND if name != "trend" else f"{MISSING}: not a directory (trend needs a run's checkpoint directory)"
    assert json.loads(done.stdout) == {"ok": False, "exit_code": 3, "error": error, "hint": None}
    assert done.stderr == f"ckpt: error: {error}\n"  # the line on stderr is unchanged


def _no_such_option(option: str) -> str:
    """click's own words for an unknown option (they changed within the click versions ckpt accepts)."""
    import click

    return click.NoSuchOption(option).format_message()


@pytest.mark.parametrize("name", sorted(MISSING_INPUT))
def test_a_usage_error_is_a_json_document(name: str, tmp_path) -> None:
    done = _shipped([*MISSING_INPUT[name], "--json", "--zzzz"], str(tmp_path))
    assert done.returncode == 2, done.stderr
    doc = json.loads(done.stdout)
    assert doc == {"ok": False, "exit_code": 2, "error": _no_such_option("--zzzz"), "hint": None}
    assert f"Error: {_no_such_option('--zzzz')}" in done.stderr


def test_a_usage_error_of_the_root_and_of_a_bad_value(tmp_path) -> None:
    done = _shipped(["--bogus", "verify", GOOD, "--json"], str(tmp_path))
    assert (done.returncode, json.loads(done.stdout)["error"]) == (2, _no_such_option("--bogus"))
    done = _shipped(["verify", GOOD, "--json", "--jobs", "many"], str(tmp_path))
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"] == "Invalid value for '--jobs' / '-j': 'many' is not a valid integer range."


def test_the_click_runner_gives_the_same_document(run_cli) -> None:
    result = run_cli("verify", MISSING, "--json")
    assert (result.exit_code, json.loads(result.stdout)) == (3, {"ok": False, "exit_code": 3, "error": NOT_FOUND,
                                                                 "hint": None})
    result = run_cli("stats", GOOD, "no/such/key", "--json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert (doc["ok"], doc["exit_code"]) == (False, 1) and "no/such/key" in doc["error"]


def test_an_internal_error_is_a_json_document(run_cli, monkeypatch) -> None:
    import ckpt_cli.commands.verify as verifying

    def crash(*args: object, **kwargs: object) -> int:
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(verifying, "run_verify", crash)
    result = run_cli("verify", GOOD, "--json")
    assert result.exit_code == 5
    assert json.loads(result.stdout) == {
        "ok": False, "exit_code": 5, "hint": None,
        "error": "internal error: ZeroDivisionError: boom; please report it with --traceback output"}


def test_without_json_stdout_stays_empty(tmp_path) -> None:
    done = _shipped(["verify", MISSING], str(tmp_path))
    assert (done.returncode, done.stdout) == (3, "")


def test_a_json_after_double_dash_is_not_a_request(tmp_path) -> None:
    done = _shipped(["ls", "--", MISSING, "--json"], str(tmp_path))
    assert (done.returncode, done.stdout) == (3, "")
