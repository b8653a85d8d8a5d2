"""Issue 36, "the first mistakes a user makes": ``stats`` and ``ls --tree`` fit an 80-column terminal
(``stats --columns`` chooses the statistics), keys still never cut; ``--json`` and pipes unchanged."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import formats
import pytest
from click.testing import CliRunner

from ckpt_cli.main import cli

from .conftest import CORPUS

ORDINARY = ["tf1_estimator/model.ckpt-200", "tf1_adam/model.ckpt-200", "tf1_partitioned/model.ckpt-200",
            "seed_slots/tf_ckpts/ckpt-5", "seed_keras2/tf_ckpts/ckpt-10", "tf2_mixed/all_dtypes/ckpt-1",
            "tf2_mixed/sharded/ckpt", "keras2_tagger/tagger_tf/ckpt", "keras2_tagger/tagger_model.h5",
            "keras3_tagger/tagger.keras", "saved_models/tf_keras_model", "tf1_v1_adam"]
"""Corpus checkpoints with keys of ordinary length (at most 75 characters; 41 without the
``/.ATTRIBUTES/VARIABLE_VALUE`` a narrow terminal leaves out)."""
VALUE_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"


def _ckpt(*args: str, width: int | None = 80, cwd: Path = CORPUS) -> subprocess.CompletedProcess[str]:
    """``ckpt ARGS`` as a user runs it, in the corpus folder (short paths): on a terminal ``width`` columns wide
    (rich's layout, no colour), or on a pipe with ``width`` None; the package imported as this process has it."""
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(Path(formats.__file__).parent.parent)}
    env.pop("CKPT_FORCE_RICH", None)
    env.pop("COLUMNS", None)
    if width is not None:
        env.update(CKPT_FORCE_RICH="1", COLUMNS=str(width))
    return subprocess.run([sys.executable, "-m", "ckpt_cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True)


def _keys(rel: str) -> list[str]:
    done = _ckpt("ls", "--json", rel, width=None)
    assert done.returncode == 0, done.stderr
    return [t["key"] for t in json.loads(done.stdout)["tensors"]]


@pytest.mark.parametrize("rel", ORDINARY)
def test_stats_fits_80_columns_with_every_key_whole(rel: str) -> None:
    done = _ckpt("stats", rel)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    too_wide = [line for line in lines if len(line) > 80]
    assert not too_wide, too_wide
    stats = json.loads(_ckpt("stats", "--json", rel, width=None).stdout)["tensors"]
    rows = lines[1:1 + len(stats)]
    shown = [line.split()[0] for line in rows]
    whole = [t["key"] for t in stats]
    assert shown in (whole, [k.removesuffix(VALUE_SUFFIX) for k in whole])  # in order, never cut
    assert [line.split()[1] for line in rows] == [t["dtype"] for t in stats]  # the dtype stays
    header = lines[0].split()
    assert header[:2] == ["key", "dtype"]
    left_out = [line for line in lines if line.startswith("(not shown: ")]
    all_columns = ["dtype", "shape", "min", "max", "mean", "std", "L2", "zeros", "NaN", "Inf"]
    if left_out:  # the line names exactly the columns not in the header
        named = left_out[0].removeprefix("(not shown: ").removesuffix("; see --columns)").split(", ")
        assert sorted(named) == sorted(set(all_columns) - set(header))
    else:
        assert header == ["key", *all_columns]


@pytest.mark.parametrize("rel", ORDINARY)
def test_ls_tree_fits_80_columns_with_every_object_whole(rel: str) -> None:
    done = _ckpt("ls", "--tree", rel)
    assert done.returncode == 0, done.stderr
    too_wide = [line for line in done.stdout.splitlines() if len(line) > 80]
    assert not too_wide, too_wide
    piped = _ckpt("ls", "--tree", rel, width=None).stdout.splitlines()
    names = [line.split("  ")[0].lstrip("│├└─ ") for line in piped[1:-1]]
    text = done.stdout
    assert all(name in text for name in names)  # every object's name whole
    notes = {line[piped[0].index("note"):] for line in piped[1:-1] if len(line) > piped[0].index("note")}
    flat = " ".join(text.replace("│", " ").split())  # a note wrapped under its row, the tree drawn on beside it
    assert all(" ".join(note.split()) in flat for note in notes)  # every note kept (wrapped between words)


def test_a_narrow_tree_draws_notes_under_their_rows_and_says_what_it_left_out() -> None:
    lines = _ckpt("ls", "--tree", "seed_slots/tf_ckpts/ckpt-5", width=60).stdout.splitlines()
    assert lines[:10] == [
        "object                        dtype    shape      size  note",
        "iterator                      variant  [5]     1.0 KiB",
        "    iterator state; 5 x tensorflow::Iterator, 1015 B",
        "    serialized",
        "net                                              120 B",
        "└── l1                                           120 B",
        "    ├── kernel                float32  [1, 5]     20 B",
        "    │   ├── m                 float32  [1, 5]     20 B",
        "    │   │       slot m of optimizer",
        "    │   └── v                 float32  [1, 5]     20 B"]
    assert lines[-4:] == ["_CHECKPOINTABLE_OBJECT_GRAPH  string   []      1.4 KiB", "    object graph",
                          "(not shown: params)",
                          "seed_slots/tf_ckpts/ckpt-5: tf-object, 15 tensors, 37 parameters, 2.6 KiB"]
    assert max(map(len, lines[:-1])) <= 60  # the summary line names the path: never wrapped


def test_wide_terminals_and_pipes_keep_every_column() -> None:
    rel = "tf1_estimator/model.ckpt-200"
    header = ["key", "dtype", "shape", "min", "max", "mean", "std", "L2", "zeros", "NaN", "Inf"]
    for width in (None, 200):
        lines = _ckpt("stats", rel, width=width).stdout.splitlines()
        assert lines[0].split() == header and not any(line.startswith("(not shown") for line in lines)
        tree = _ckpt("ls", "--tree", rel, width=width).stdout.splitlines()
        assert tree[0].split() == ["object", "dtype", "shape", "size", "params", "note"]
    piped = _ckpt("stats", rel, width=None)
    assert max(map(len, piped.stdout.splitlines())) > 80  # a pipe is for scripts: nothing left out


def _expected_cells(t: dict, columns: list[str]) -> list[str]:
    """What a stats row shows for ``columns`` of the JSON document ``t`` (5 significant digits)."""
    field = {"mean": "mean", "std": "std", "min": "min", "max": "max", "L2": "l2", "NaN": "nan", "Inf": "inf",
             "zeros": "zeros"}
    out = []
    for c in columns:
        value = t[field[c]]
        out.append("-" if value is None else str(value) if isinstance(value, int) else f"{value:.5g}")
    return out


@pytest.mark.parametrize("front", ["fast", "click"])
def test_columns_chooses_the_statistics_in_order_on_both_front_ends(run_cli, front: str) -> None:
    path = str(CORPUS / "tf1_estimator/model.ckpt-200")
    argv = ["stats", "--columns", "STD,mean,nan", path]
    result = run_cli(*argv) if front == "fast" else CliRunner().invoke(cli, argv)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    stats = json.loads(_ckpt("stats", "--json", path, width=None).stdout)["tensors"]
    assert lines[0].split() == ["key", "std", "mean", "NaN"]
    assert [line.split() for line in lines[1:1 + len(stats)]] == [
        [t["key"], *_expected_cells(t, ["std", "mean", "NaN"])] for t in stats]
    assert lines[1 + len(stats)] == f"{path}: 13 tensors, all finite"


def test_columns_all_and_json_unaffected(run_cli) -> None:
    path = str(CORPUS / "tf1_estimator/model.ckpt-200")
    every = run_cli("stats", "--columns", "all", path).stdout
    assert every == run_cli("stats", path).stdout  # on a pipe the default is every column
    assert run_cli("stats", "--columns", "mean", "--json", path).stdout == run_cli("stats", "--json", path).stdout


def test_columns_on_a_narrow_terminal_is_what_was_asked() -> None:
    lines = _ckpt("stats", "--columns", "min,max,L2", "tf1_estimator/model.ckpt-200", width=40).stdout.splitlines()
    assert lines[0].split() == ["key", "min", "max", "L2"]  # asked for: nothing left out, rows overflow whole
    assert not any(line.startswith("(not shown") for line in lines)


@pytest.mark.parametrize("front", ["fast", "click"])
def test_an_unknown_column_is_a_usage_error_naming_it(run_cli, front: str) -> None:
    argv = ["stats", "--columns", "mean,median", str(CORPUS / "tf1_estimator/model.ckpt-200")]
    result = run_cli(*argv) if front == "fast" else CliRunner().invoke(cli, argv)
    assert result.exit_code == 2
    assert ("Invalid value for --columns: no column 'median' (columns: dtype, shape, min, max, mean, std, L2, "
            "zeros, NaN, Inf, or all)") in result.stderr
    assert result.stdout == ""


def test_columns_completes_a_comma_separated_list() -> None:
    env = dict(os.environ, COMP_WORDS="ckpt stats --columns mean,s", COMP_CWORD="3", _CKPT_COMPLETE="bash_complete",
               PYTHONPATH=str(Path(formats.__file__).parent.parent))
    out = subprocess.run([sys.executable, "-m", "ckpt_cli"], env=env, capture_output=True, text=True, check=True)
    assert [line.split(",", 1)[1] for line in out.stdout.splitlines()] == ["mean,shape", "mean,std"]
    env["COMP_WORDS"] = "ckpt stats --columns mean,"
    out = subprocess.run([sys.executable, "-m", "ckpt_cli"], env=env, capture_output=True, text=True, check=True)
    offered = [line.split(",", 1)[1] for line in out.stdout.splitlines()]
    assert offered == [f"mean,{c}" for c in ["dtype", "shape", "min", "max", "std", "L2", "zeros", "NaN", "Inf"]]
