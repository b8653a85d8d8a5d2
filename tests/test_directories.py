"""Directories as real runs leave them: spellings of one path, shell globs, stale state files, the
``dir/`` prefix ``Saver.save(sess, "dir/")`` writes, hidden files, missing data files."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

import formats
from formats.concepts.state import CheckpointState, format_state

from .conftest import CORPUS

MANAGER = "seed_keras2/tf_ckpts"  # a CheckpointManager directory: relative paths in its state file
TF1 = "tf1_estimator"             # a TF1 Saver directory: absolute paths (of the machine that wrote it)


def _rows(result) -> list[tuple[str, int | None, bool]]:
    assert "Traceback" not in result.output
    return [(os.path.basename(r["path"].rstrip("/")) or r["path"], r["step"], r["latest"])
            for r in json.loads(result.stdout)["checkpoints"]]


def _write_state(directory: Path, latest: str, paths: list[str]) -> None:
    (directory / "checkpoint").write_text(format_state(CheckpointState(latest, paths)))


@pytest.mark.parametrize("spelling", [".", "./", ".//", "../tf_ckpts", "./../tf_ckpts/."])
def test_each_checkpoint_once_however_the_directory_is_spelled(corpus_copy, run_cli, monkeypatch, spelling):
    monkeypatch.chdir(corpus_copy(MANAGER))
    result = run_cli("ls", "--json", spelling)
    assert result.exit_code == 0
    assert _rows(result) == [("ckpt-8", 8, False), ("ckpt-9", 9, False), ("ckpt-10", 10, True)]


def test_doubled_separators_and_dotdot_in_the_middle(corpus_copy, run_cli):
    run = corpus_copy(MANAGER)
    for spelling in (f"{run.parent}//{run.name}", f"{run}/../{run.name}", f"{run}/."):
        result = run_cli("ls", "--json", spelling)
        assert _rows(result) == [("ckpt-8", 8, False), ("ckpt-9", 9, False), ("ckpt-10", 10, True)], spelling


def test_trend_of_dot_sees_each_step_once(corpus_copy, run_cli, monkeypatch):
    monkeypatch.chdir(corpus_copy(MANAGER))
    result = run_cli("trend", "--json", ".")
    assert result.exit_code == 0
    assert [c["step"] for c in json.loads(result.stdout)["checkpoints"]] == [8, 9, 10]


def test_absolute_paths_that_exist_are_the_same_checkpoints(corpus_copy, run_cli, monkeypatch):
    run = corpus_copy(TF1)
    _write_state(run, str(run / "model.ckpt-200"), [str(run / "model.ckpt-1"), str(run / "model.ckpt-200")])
    monkeypatch.chdir(run)
    for spelling in (".", str(run), f"{run}/"):
        assert _rows(run_cli("ls", "--json", spelling)) == [("model.ckpt-1", 1, False), ("model.ckpt-200", 200, True)]


def test_stale_absolute_paths_fall_back_to_the_directory(corpus_copy, run_cli):
    run = corpus_copy(TF1)  # its state file names /tmp/gen/tf1_iris/..., where it was written
    assert _rows(run_cli("ls", "--json", run)) == [("model.ckpt-1", 1, False), ("model.ckpt-200", 200, True)]


def test_a_shell_glob_lists_each_checkpoint_once(corpus_copy, run_cli):
    run = corpus_copy(MANAGER)
    files = sorted(str(p) for p in run.glob("ckpt-*"))
    assert len(files) == 6  # .index and .data of three checkpoints
    result = run_cli("ls", "--json", *files)
    assert result.exit_code == 0
    assert [doc["path"] for doc in json.loads(result.stdout)] == [str(run / f"ckpt-{n}") for n in (10, 8, 9)]
    text = run_cli("ls", *files).stdout
    assert [line for line in text.splitlines() if line.startswith(str(run))] == [
        f"{run / f'ckpt-{n}'}: tf-object, 12 tensors, 34 parameters, 2.4 KiB, 1 data file" for n in (10, 8, 9)]


def test_verify_takes_several_paths(corpus_copy, run_cli):
    run = corpus_copy(MANAGER)
    files = sorted(str(p) for p in run.glob("ckpt-*"))
    result = run_cli("verify", *files)
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [f"ok {run / f'ckpt-{n}'}: tf-object, checked 12 tensors, 2.4 KiB in 2 files"
                                          for n in (10, 8, 9)]
    result = run_cli("verify", "--json", run / "ckpt-8", run / "nothing", run / "ckpt-9")
    assert result.exit_code == 3  # one could not be read; the others were still verified
    assert [d["ok"] for d in json.loads(result.stdout)] == [True, True]
    assert result.stderr == f"ckpt: error: {run / 'nothing'}: no such file, directory or checkpoint prefix\n"
    result = run_cli("verify", run / "ckpt-8", run / "ckpt-9", "--against", run / "ckpt-10")
    assert result.exit_code == 2 and "give one PATH" in result.stderr


def test_a_state_file_naming_a_missing_checkpoint_hides_nothing(corpus_copy, run_cli):
    run = corpus_copy(MANAGER)
    _write_state(run, "ckpt-11", ["ckpt-7", "ckpt-8", "ckpt-9", "ckpt-10", "ckpt-11"])
    result = run_cli("ls", "--json", run)
    assert result.exit_code == 1
    rows = json.loads(result.stdout)["checkpoints"]
    assert [(r["path"], r["step"], r["format"], r["tensors"], r["latest"], r.get("error")) for r in rows] == [
        (str(run / "ckpt-7"), 7, "missing", 0, False,
         "the checkpoint state file names 'ckpt-7' among its checkpoints, but it does not exist"),
        (str(run / "ckpt-8"), 8, "tf-object", 12, False, None),
        (str(run / "ckpt-9"), 9, "tf-object", 12, False, None),
        (str(run / "ckpt-10"), 10, "tf-object", 12, False, None),
        (str(run / "ckpt-11"), 11, "missing", 0, True,
         "the checkpoint state file names 'ckpt-11' as the latest checkpoint, but it does not exist")]
    text = run_cli("ls", run).stdout.splitlines()
    assert text[-1] == f"{run}: 5 checkpoints"
    assert text[5].split() == ["ckpt-11", "11", "-", "missing", "0", "0", "B", "latest;", "error:", "the", "checkpoint", "state",
                               "file", "names", "'ckpt-11'", "as", "the", "latest", "checkpoint,", "but", "it", "does",
                               "not", "exist"]


def test_opening_a_directory_whose_latest_is_gone_names_the_others(corpus_copy, run_cli):
    run = corpus_copy(MANAGER)
    _write_state(run, "ckpt-11", ["ckpt-11"])
    result = run_cli("ls", "--tree", run)
    assert result.exit_code == 3
    assert result.stderr.splitlines() == [
        f"ckpt: error: {run / 'checkpoint'}: names 'ckpt-11' as the latest checkpoint, but it does not exist",
        "  hint: the directory holds ckpt-10, ckpt-8, ckpt-9: pass one of them"]


def _empty_basename_prefix(tmp_path: Path, state: str | None) -> Path:
    """What ``Saver.save(sess, "dir/")`` leaves: ``dir/.index``, ``dir/.data-00000-of-00001``, ``dir/.meta``
    and a state file naming ``"."``."""
    src = CORPUS / "tf1_adam" / "model.ckpt-1"
    d = tmp_path / "dir"
    d.mkdir()
    for suffix in (".index", ".data-00000-of-00001", ".meta"):
        shutil.copyfile(f"{src}{suffix}", d / suffix)
    if state is not None:
        _write_state(d, state, [state])
    return d


@pytest.mark.parametrize("state", [".", None])
def test_a_prefix_with_an_empty_basename_opens_from_its_directory(tmp_path, run_cli, state):
    d = _empty_basename_prefix(tmp_path, state)
    for typed in (d, f"{d}/", d / ".index", d / ".data-00000-of-00001"):
        with formats.open_checkpoint(typed) as ckpt:
            assert ckpt.path == f"{d}/" and len(ckpt) == 21, typed
    rows = json.loads(run_cli("ls", "--json", d).stdout)["checkpoints"]
    assert [(r["path"], r["format"], r["tensors"], r["latest"]) for r in rows] == \
        [(f"{d}/", "tf-name", 21, state is not None)]
    assert run_cli("verify", f"{d}/").exit_code == 0
    assert run_cli("diff", d, CORPUS / "tf1_adam" / "model.ckpt-1").exit_code == 0


def test_hidden_checkpoints_are_found_and_temporaries_are_not(corpus_copy, run_cli):
    run = corpus_copy(MANAGER)
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copyfile(run / f"ckpt-8{suffix}", run / f".backup-3{suffix}")
        shutil.copyfile(run / f"ckpt-8{suffix}", run / f".ckpt-11.tmp-0123abcd{suffix}")  # a killed ckpt write
    assert _rows(run_cli("ls", "--json", run)) == [(".backup-3", 3, False), ("ckpt-8", 8, False),
                                                   ("ckpt-9", 9, False), ("ckpt-10", 10, True)]
    from formats.io.atomic import is_temp_name, temp_name

    assert is_temp_name(temp_name(str(run / "ckpt-11")) + ".index") and not is_temp_name(str(run / ".backup-3"))


def test_a_missing_data_file_lists_the_keys_with_a_warning(corpus_copy, run_cli):
    run = corpus_copy(MANAGER)
    data = run / "ckpt-10.data-00000-of-00001"
    data.unlink()
    result = run_cli("ls", run / "ckpt-10")
    assert result.exit_code == 0
    assert result.stderr == f"ckpt: warning: {data}: missing; the keys are listed, their values cannot be read\n"
    assert result.stdout.splitlines()[-1] == f"{run / 'ckpt-10'}: tf-object, 12 tensors, 34 parameters, 2.4 KiB, 1 data file"
    result = run_cli("verify", "--json", run / "ckpt-10")
    assert result.exit_code == 1
    problems = json.loads(result.stdout)["problems"]
    assert problems[0] == {"where": data.name, "message": f"data file missing (shard 1 of 1 of {run / 'ckpt-10'})"}
    assert len(problems) == 13  # and each of the 12 tensors
    rows = json.loads(run_cli("ls", "--json", run).stdout)["checkpoints"]
    assert [(os.path.basename(r["path"]), r["tensors"], r.get("error")) for r in rows] == [
        ("ckpt-8", 12, None), ("ckpt-9", 12, None), ("ckpt-10", 12, f"missing {data.name}")]


def test_a_saved_model_inside_a_run_is_one_row(corpus_copy, run_cli):
    run = corpus_copy(MANAGER)
    shutil.copytree(CORPUS / "saved_models" / "module" / "1", run / "export")  # not also export/variables
    rows = _rows(run_cli("ls", "-r", "--json", run))
    assert rows == [("export", None, False), ("ckpt-8", 8, False), ("ckpt-9", 9, False), ("ckpt-10", 10, True)]


def test_the_latest_is_marked_when_every_row_has_an_error(tmp_path):
    """Index-only bundles (their data files missing): each row says so, and the state file's latest is still
    marked (issue 24, item 17). Through the shipped entry point."""
    import subprocess
    import sys

    run = tmp_path / "run"
    run.mkdir()
    for name in ("checkpoint", "ckpt-3.index", "ckpt-4.index", "ckpt-5.index"):
        shutil.copy(CORPUS / "seed_slots/tf_ckpts" / name, run / name)
    done = subprocess.run([sys.executable, "-m", "ckpt_cli", "--no-color", "ls", str(run)], capture_output=True,
                          text=True, env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 1
    marks = [line.split("  ")[-1] for line in done.stdout.splitlines()[1:4]]
    assert marks == ["error: missing ckpt-3.data-00000-of-00001", "error: missing ckpt-4.data-00000-of-00001",
                     "latest; error: missing ckpt-5.data-00000-of-00001"]


def _shipped(*argv: str) -> Any:
    """``ckpt ARGV`` through the console script's entry (ckpt_cli.fast:main), at a fixed width."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "ckpt_cli", "--no-color", *argv], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200"})


def test_a_directory_whose_checkpoints_are_below_says_how_many_and_how_to_list_them():
    """Issue 24, item 13: `ckpt ls DIR` said "0 checkpoints" and nothing more."""
    everything = json.loads(_shipped("ls", "-r", "--json", str(CORPUS)).stdout)["checkpoints"]
    done = _shipped("ls", str(CORPUS))
    assert (done.returncode, done.stdout) == (0, f"{CORPUS}: 0 checkpoints ({len(everything)} in its "
                                                 "subdirectories: `ckpt ls -r` lists them)\n")
    assert json.loads(_shipped("ls", "--json", str(CORPUS)).stdout) == {
        "path": str(CORPUS), "checkpoints": [], "in_subdirectories": len(everything)}
    assert len(everything) == 47  # the corpus' README counts them too (31, and the TF 2.16 guide's 16)


def test_an_empty_directory_says_nothing_more(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "sub").mkdir()
    done = _shipped("ls", str(tmp_path / "empty"))
    assert (done.returncode, done.stdout) == (0, f"{tmp_path / 'empty'}: 0 checkpoints\n")


@pytest.mark.parametrize(("typed", "meant"), [
    ("tf_ckpts/ckpt-44", "tf_ckpts/ckpt-4, tf_ckpts/ckpt-3, tf_ckpts/ckpt-5"),  # equally near: in number order
    ("tf_ckpt", "tf_ckpts"),
    ("tf_ckpts/ckpt-", "tf_ckpts/ckpt-3, tf_ckpts/ckpt-4, tf_ckpts/ckpt-5"),  # a prefix: the ones it begins
])
def test_did_you_mean_names_the_closest_checkpoints(tmp_path, typed, meant):
    shutil.copytree(CORPUS / "seed_slots", tmp_path / "run")
    path = tmp_path / "run" / typed
    done = _shipped("ls", str(path))
    assert done.returncode == 3
    hint = ", ".join(str(tmp_path / "run" / m) for m in meant.split(", "))
    assert done.stderr == (f"ckpt: error: {path}: no such file, directory or checkpoint prefix\n"
                           f"  hint: did you mean {hint}?\n")
