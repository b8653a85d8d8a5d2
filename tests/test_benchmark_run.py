"""benchmarks/run.py measures a regular install and selects rows with ``--only`` (issue 24 #6)."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .installed import child_env

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


def test_a_row_that_runs_no_ckpt_goes_with_the_command_it_names(run) -> None:
    """The floor under ``verify`` runs no ckpt command: ``word`` puts it with ``verify`` under ``--only``."""
    run.ONLY.update({"ls"})
    try:
        ours, _ = run.pair(["/nonexistent/python", "floor.py", "x"], None, 3, word="verify")
        assert ours.times == []
    finally:
        run.ONLY.clear()


def test_the_floor_reads_and_checksums_every_byte_on_every_core(tmp_path, monkeypatch) -> None:
    """floor.py splits each file into one range per core and checksums every byte of each: 1,049,344 bytes
    on three cores are ranges of 349,782, 349,782 and 349,780 bytes; an empty file starts no thread."""
    import crc32c

    spec = importlib.util.spec_from_file_location("ckpt_bench_floor", ROOT / "benchmarks" / "floor.py")
    floor = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(floor)
    data = bytes(range(256)) * 4099
    (tmp_path / "a").write_bytes(data)
    (tmp_path / "b").write_bytes(b"")
    seen: list[tuple[int, int, int]] = []

    def crc32c_range(fd: int, offset: int, size: int) -> int:
        seen.append((offset, size, crc32c.crc32c(os.pread(fd, size, offset))))
        return seen[-1][2]

    monkeypatch.setattr(floor, "crc32c_range", crc32c_range)
    monkeypatch.setattr(floor.os, "sched_getaffinity", lambda pid: {0, 1, 2})
    floor.main([str(tmp_path / "a"), str(tmp_path / "b")])
    seen.sort()
    assert [(o, n) for o, n, _ in seen] == [(0, 349782), (349782, 349782), (699564, 349780)]


def test_dependency_dirs_keep_a_folder_where_ckpt_is_installed_beside_its_dependencies(run, tmp_path,
                                                                                      monkeypatch) -> None:
    """The README's .venv holds ckpt and numpy in one site-packages: the run's venv must see that folder (it
    was left out, and the venv's ckpt could not import numpy); the venv's own ckpt still comes first."""
    deps, both = tmp_path / "a" / "site-packages", tmp_path / "b" / "site-packages"
    (deps / "click").mkdir(parents=True)
    (both / "formats").mkdir(parents=True)
    (both / "numpy").mkdir()
    monkeypatch.setattr(sys, "path", [str(tmp_path), str(deps), str(both), str(tmp_path / "c")])
    assert run._dependency_dirs() == [str(deps.resolve()), str(both.resolve())]


def test_an_unknown_only_word_is_a_usage_error() -> None:
    done = subprocess.run([sys.executable, str(RUN), "--only", "ls,foo"], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == \
        "run.py: error: --only: unknown foo (one of ls, verify, diff, stats, show, extract, rename, convert, average, report, edit)"


def test_an_editable_install_is_refused(run, tmp_path) -> None:
    """The probe itself, run in a Python whose site-packages holds an editable hook for ckpt."""
    site = tmp_path / "site"
    (site / "ckpt_cli").mkdir(parents=True)
    (site / "ckpt_cli" / "__init__.py").write_text("")
    (site / "__editable__.tfckpt-0.1.0.pth").write_text("")
    probe = run.PROBE.replace('sysconfig.get_paths()["purelib"]', repr(str(site)))
    env = child_env(PYTHONPATH=str(site))  # the stand-in site-packages first, as its own would be
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=site, env=env)
    assert done.stdout.startswith("editable or missing: ")
    (site / "__editable__.tfckpt-0.1.0.pth").unlink()
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=site, env=env)
    assert done.stdout.strip() == str((site / "ckpt_cli" / "__init__.py").resolve())


def test_scale_rows_name_ckpt_commands_and_follow_only(run, tmp_path) -> None:
    """Issue 38's scale rows: each runs a command ``--only`` knows, every command of the issue's table is there,
    and under ``--only`` naming none of them no row is run (nor a missing input opened)."""
    commands = run.scale_commands("/x/ckpt-1", tmp_path)
    words = {run.command_word(f"/v/bin/ckpt {args}") for _, args in commands}
    assert words <= set(run.COMMAND_WORDS)
    assert {label for label, _ in commands} >= {"ls", "verify", "ls --tree", "rename", "diff (self)", "stats", "edit",
                                                 "convert --to tf-object", "convert --to safetensors",
                                                 "convert --to npz", "extract to .npz"}
    run.ONLY.update({"average"})
    try:
        assert run.measure_scale({"scale_name_10k": "/nonexistent/ckpt-1"}, tmp_path, "/nonexistent/ckpt") == []
    finally:
        run.ONLY.clear()


def test_the_scale_rows_include_a_bundle_of_slot_variables(run, tmp_path) -> None:
    """A scale input whose tensors are two thirds an optimizer's slot variables (labelling them was quadratic and no
    scale row had any): TF1's ``<var>/Adam``, ``<var>/Adam_1`` converted to slot variables of the optimizer."""
    import generate

    from formats import open_checkpoint

    assert set(run.SCALE_LAYOUTS) == {"name", "object", "slots"}
    prefix = generate.scale_object(tmp_path, 30, "30", slots=True)
    assert prefix == str(tmp_path / "scale-slots-30" / "ckpt-1")
    assert [p.name for p in tmp_path.iterdir()] == ["scale-slots-30"]  # the name-based source not kept
    with open_checkpoint(prefix) as ckpt:
        roles = {k: (t.role, t.slot_of, t.slot_name) for k, t in ckpt.items()}
    v = "/.ATTRIBUTES/VARIABLE_VALUE"
    for i in range(10):
        var = f"model/layer_0/unit_{i}/w"
        assert roles[var + v] == ("variable", None, None)
        for slot in ("m", "v"):
            assert roles[f"{var}/.OPTIMIZER_SLOT/optimizer/{slot}{v}"] == ("slot", var + v, slot)
    assert {k: role for k, (role, _, _) in roles.items() if role not in ("variable", "slot")} == {
        "_CHECKPOINTABLE_OBJECT_GRAPH": "object_graph", "global_step" + v: "optimizer",
        "optimizer/beta1_power" + v: "optimizer", "optimizer/beta2_power" + v: "optimizer",
        "save_counter" + v: "save_counter"}


def test_the_2_gib_tensor_rows_run_every_command_against_the_per_byte_bound(run, tmp_path) -> None:
    """Issue 38's "no regression per byte": every command of the scale rows, and the ones that read both sides of
    a changed tensor (``diff``, ``diff --atol``, ``report A B``), once each on the 2 GiB tensor, goal 60 MiB."""
    commands = run.huge_commands("/x/ckpt-1", "/y/ckpt-2", tmp_path)
    assert {run.command_word(f"/v/bin/ckpt {args}") for _, args in commands} <= set(run.COMMAND_WORDS)
    assert [label for label, _ in commands] == [
        "ls", "verify", "ls --tree", "rename", "diff (self)", "stats", "edit", "convert --to tf-object",
        "convert --to safetensors", "convert --to npz", "extract to .npz", "report", "show (the whole tensor)",
        "diff (changed values)", "diff --atol (changed values)", "report A B (changed values)"]
    assert dict(commands)["edit"] == f"edit /x/ckpt-1 -o {tmp_path}/ckpt --exclude global_step"
    assert dict(commands)["diff (changed values)"] == "diff /x/ckpt-1 /y/ckpt-2"
    assert run.HUGE_GOAL_MIB == 60
    assert run.measure_huge({"huge_tensor": "/x/ckpt-1"}, tmp_path, "/nonexistent/ckpt") == []  # no later: no row


def test_a_row_keeps_each_runs_cpu_time(run) -> None:
    """The scale rows' goals are on CPU time: each run's user + system time is kept beside its wall time."""
    ours, _ = run.pair([sys.executable, "-c", "sum(range(3 * 10 ** 6))"], None, 2)
    assert len(ours.cpu) == len(ours.times) == 2 and all(cpu > 0 for cpu in ours.cpu)


def test_the_scale_table_shows_cpu_and_memory_beside_the_goal(run) -> None:
    ours, floor = run.Timing(), run.Timing()
    ours.times, ours.cpu, ours.rss, floor.times = [2.5], [1.25], 200 * 1024, [0.004]
    row = run.Row("verify (100,000 tiny tensors, name-based)", ours, "cat", floor, "<= 1 s CPU, <= 100 MiB", False)
    assert run.scale_table([row]).splitlines()[2] == \
        "| verify (100,000 tiny tensors, name-based) | 2.50 s | 1.25 s | 200 MiB | 4 ms (4 ms-4 ms) | " \
        "<= 1 s CPU, <= 100 MiB | missed |"


def test_the_readmes_scale_table_is_benchmarks_scale_md() -> None:
    """The README's table of commands at 10k-1M tensors is the one `benchmarks/run.py --scale` wrote
    (benchmarks/scale.md), its header line (date, machine, load) included: regenerated, never edited by hand."""
    readme = (ROOT / "README.md").read_text()
    start, end = "<!-- scale-table: benchmarks/scale.md -->\n", "<!-- /scale-table -->"
    assert readme.count(start) == 1 and readme.count(end) == 1
    shown = readme.split(start)[1].split(end)[0]
    written = (ROOT / "benchmarks" / "scale.md").read_text()
    assert shown.strip() == written.strip()
    assert written.count("| ls (100,000 tiny tensors, name-based) |") == 1
