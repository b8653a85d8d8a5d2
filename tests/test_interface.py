"""One interface: help with examples everywhere, grouped options, global options, golden outputs."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ckpt_cli.help import example_lines
from ckpt_cli.main import COMMANDS, LazyGroup

from .conftest import CORPUS

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_a_summary_grouped_options_and_examples(run_cli, name):
    result = run_cli(name, "--help")
    assert result.exit_code == 0
    cmd = LazyGroup().get_command(None, name)  # type: ignore[arg-type]
    summary = (cmd.help or "").strip().splitlines()[0]
    assert summary.endswith(".") and len(summary) <= 100
    examples = example_lines(cmd)
    assert len(examples) >= 2, f"{name}: needs at least two examples"
    assert all(f"ckpt {name}" in e or e.startswith("ckpt ") for e in examples)
    assert "Examples:" in result.stdout
    headings = [line for line in result.stdout.splitlines() if line and not line.startswith(" ") and
                line.endswith(":") and line not in ("Examples:",)]
    assert headings[-1] == "Other options:"  # --help itself; every other option sits under a heading


def test_root_lists_every_command_with_one_line(run_cli):
    result = run_cli("--help")
    listed = [line.split()[0] for line in result.stdout.split("Commands:")[1].splitlines() if line.strip()]
    assert listed == sorted(COMMANDS)


def test_version(run_cli):
    from formats import __version__

    assert run_cli("--version").stdout == f"ckpt {__version__}\n"


def test_quiet_prints_nothing_and_keeps_the_exit_status(run_cli, corpus_copy):
    assert run_cli("-q", "verify", CORPUS / "tf1_adam").stdout == ""
    assert run_cli("-q", "ls", "--json", CORPUS / "tf1_adam/model.ckpt-1").stdout == ""
    result = run_cli("-q", "ls", CORPUS / "nope")
    assert result.exit_code == 3 and result.stderr.startswith("ckpt: error: ")


def test_golden_ls_table_and_directory(run_cli):
    path = CORPUS / "seed_slots/tf_ckpts/ckpt-5"
    got = run_cli("ls", path).stdout.replace(str(CORPUS), "CORPUS")
    assert got == (GOLDEN / "ls_seed_slots_ckpt5.txt").read_text()


def test_golden_error(run_cli):
    result = run_cli("ls", CORPUS / "seed_slots/tf_ckpts/ckpt-50")
    got = result.stderr.replace(str(CORPUS), "CORPUS")
    assert result.exit_code == 3
    assert got == (GOLDEN / "error_missing_prefix.txt").read_text()


def test_terminal_rendering_at_fixed_width_without_colour():
    env = dict(os.environ, CKPT_FORCE_RICH="1", COLUMNS="72", NO_COLOR="1")
    out = subprocess.run([sys.executable, "-m", "ckpt_cli", "ls", str(CORPUS / "seed_slots/tf_ckpts/ckpt-5")],
                         env=env, capture_output=True, text=True, check=True).stdout
    got = out.replace(str(CORPUS), "CORPUS")
    assert "\x1b[" not in got
    assert got == (GOLDEN / "ls_seed_slots_ckpt5_terminal72.txt").read_text()
    assert max(len(line) for line in got.splitlines()[:-1]) <= 72  # the summary line is never wrapped


def test_ckpt_alone_lists_the_commands():
    out = subprocess.run([sys.executable, "-m", "ckpt_cli"], capture_output=True, text=True)
    assert "Commands:" in out.stdout + out.stderr
    listed = [line.split()[0] for line in (out.stdout + out.stderr).split("Commands:")[1].splitlines() if line.strip()]
    assert listed == sorted(COMMANDS)


def _terminal(width: int, *args: str) -> str:
    env = dict(os.environ, CKPT_FORCE_RICH="1", COLUMNS=str(width), NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "ckpt_cli", *args], env=env, capture_output=True, text=True,
                          check=True).stdout


def test_narrow_terminals_never_wrap_numbers_or_dtypes():
    """Issue 14 #8: at 60 columns every row stays one line with its numbers and dtype whole. Issue 24, item 10:
    and a key is never cut (it was shortened in the middle, ``.OP…v/``, into something that cannot be
    copied): a row too wide overflows whole, for the terminal to wrap."""
    import json

    prefix = str(CORPUS / "tf1_estimator/model.ckpt-200")
    stats = json.loads(subprocess.run([sys.executable, "-m", "ckpt_cli", "stats", "--json", prefix],
                                      capture_output=True, text=True, check=True).stdout)["tensors"]
    lines = _terminal(60, "stats", prefix).splitlines()
    rows = [line for line in lines[1:] if line.strip() and not line.startswith((prefix, "(not shown: "))]
    assert len(rows) == len(stats)  # one line per tensor (and a line naming the columns left out)
    for line, row in zip(rows, stats):
        cells = line.split()
        assert cells[1] == row["dtype"] and cells[0] == row["key"]  # too many columns to fit: keys kept whole
    keys = [row["key"] for row in stats]
    body = [line for line in _terminal(50, "ls", prefix).splitlines()[1:] if line.startswith("dnn")]
    assert [line.split()[0] for line in body] == [k for k in keys if k.startswith("dnn")]  # whole, never cut
    assert all(line.split()[1] == "float32" for line in body) and "…" not in "".join(body)


def test_keys_too_wide_lose_only_the_value_suffix_and_say_so():
    """Issue 24, item 10: at 72 columns the slot keys of a TF2 checkpoint were cut in the middle
    (``net/l1/kernel/.OP…v/.ATTRIBUTES/VARIABLE_VALUE``). Now the documented suffix is left out, the slot name
    ends the key, and a line under the table says so."""
    import formats
    from ckpt_cli.render.table import SUFFIX_NOTE, VALUE_SUFFIX

    path = CORPUS / "seed_slots/tf_ckpts/ckpt-5"
    lines = _terminal(72, "ls", str(path)).splitlines()
    with formats.open_checkpoint(path) as ckpt:
        expected = [k[:-len(VALUE_SUFFIX)] if k.endswith(VALUE_SUFFIX) else k for k in sorted(ckpt)]
    assert [line.split()[0] for line in lines[1:1 + len(expected)]] == expected
    assert "net/l1/kernel/.OPTIMIZER_SLOT/optimizer/v" in expected
    assert lines[1 + len(expected)] == SUFFIX_NOTE == "(keys ending in /.ATTRIBUTES/VARIABLE_VALUE are shown without it)"
    assert "…" not in "\n".join(lines)
    wide = _terminal(200, "ls", str(path)).splitlines()  # when the keys fit, they are shown as they are
    assert "net/l1/kernel/.OPTIMIZER_SLOT/optimizer/v/.ATTRIBUTES/VARIABLE_VALUE" in wide[8] and SUFFIX_NOTE not in wide


def test_convert_help_names_every_target_and_what_needs_a_template(run_cli):
    """Issue 24, item 14: convert --help began "(name-based <-> object-based)" and had --template under Selection."""
    from formats.ops.convert.targets import TARGETS

    text = run_cli("convert", "--help").stdout
    assert text.splitlines()[2] == "  Convert SRC to another format: --to names one of eight targets."
    listed = [line.split()[0] for line in text.splitlines()[4:16] if line.startswith("    ") and line[4] != " "]
    assert sorted(listed) == sorted(TARGETS) and len(TARGETS) == 8
    assert "keras3-h5    Keras 3 .weights.h5, or sharded *.weights.json: needs\n" in text
    sections: dict[str, list[str]] = {}
    heading = ""
    for line in text.splitlines():
        if line and not line.startswith(" ") and line.endswith(":"):
            heading = line[:-1]
        elif line.startswith("  -"):
            sections.setdefault(heading, []).append(line.split()[0])
    assert "--template" in sections["Writing"] and "--template" not in sections.get("Selection", [])
    assert "Optimizer state: tf-object and tf-name carry it" in text


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_exit_status_block_appears_once(run_cli, name):
    text = run_cli(name, "--help").stdout
    assert text.count("Exit status") == 1, name
