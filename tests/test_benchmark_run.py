"""benchmarks/run.py measures a regular install and selects rows with ``--only`` (issue 24 #6)."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "benchmarks" / "run.py"


@pytest.fixture(scope="module")
def run():
    """benchmarks/run.py as a module (its ``generate`` import needs benchmarks/ on sys.path)."""
    sys.path.insert(0, str(RUN.parent))
    try:
        spec = importlib.util.spec_from_file_location("ckpt_bench_run", RUN)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(RUN.parent))


def test_command_word_names_the_ckpt_command_of_a_row(run) -> None:
    assert run.command_word(["/v/bin/ckpt", "ls", "x"]) == "ls"
    assert run.command_word(["/v/bin/python", "-m", "ckpt_cli", "ls", "x"]) == "ls"
    assert run.command_word("/v/bin/ckpt rename a -o b --map x=y --link") == "rename"
    assert run.command_word("cat a b > /dev/null") is None
    assert run.command_word(["/v/bin/python", "-c", "pass"]) is None


def test_only_leaves_rows_of_other_commands_unrun(run) -> None:
    run.ONLY.update({"verify"})
    try:
        ours, limit = run.pair(["/nonexistent/ckpt", "ls", "x"], ["/nonexistent/python", "-c", "pass"], 3)
        assert ours.times == [] and limit is not None and limit.times == []
        assert run.measure_average("x", Path("/nonexistent"), 3, "/nonexistent/ckpt").ours.times == []
    finally:
        run.ONLY.clear()


def test_layout_rows_are_left_out_without_their_inputs(run) -> None:
    """``--only ls`` generates no object-based BERT-like checkpoint: its layout rows are not run (they failed
    with a KeyError)."""
    run.ONLY.update({"ls"})
    try:
        assert run.measure_layouts({"bert": "/nonexistent/bert"}, Path("/nonexistent"), 3, "/nonexistent/ckpt") == []
    finally:
        run.ONLY.clear()


def test_dependency_dirs_leave_out_a_copy_of_ckpt(run, tmp_path, monkeypatch) -> None:
    deps, checkout = tmp_path / "a" / "site-packages", tmp_path / "b" / "site-packages"
    (deps / "click").mkdir(parents=True)
    (checkout / "formats").mkdir(parents=True)
    monkeypatch.setattr(sys, "path", [str(tmp_path), str(deps), str(checkout)])
    assert run._dependency_dirs() == [str(deps.resolve())]


def test_an_unknown_only_word_is_a_usage_error() -> None:
    done = subprocess.run([sys.executable, str(RUN), "--only", "ls,foo"], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == \
        "run.py: error: --only: unknown foo (one of ls, verify, diff, stats, rename, convert, average)"


def test_an_editable_install_is_refused(run, tmp_path) -> None:
    """The probe itself, run in a Python whose site-packages holds an editable hook for ckpt."""
    site = tmp_path / "site"
    (site / "ckpt_cli").mkdir(parents=True)
    (site / "ckpt_cli" / "__init__.py").write_text("")
    (site / "__editable__.tfckpt-0.1.0.pth").write_text("")
    probe = run.PROBE.replace('sysconfig.get_paths()["purelib"]', repr(str(site)))
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=site)
    assert done.stdout.startswith("editable or missing: ")
    (site / "__editable__.tfckpt-0.1.0.pth").unlink()
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=site)
    assert done.stdout.strip() == str((site / "ckpt_cli" / "__init__.py").resolve())
