"""Issue 36 section 5: every output of several files is replaced so that a kill at any instant leaves the whole old
output or the whole new one (never a mix, never neither), ``verify`` reports a mix of two writes' files, and of
two writers of one new output the second fails as if the output had existed.

The kill tests fork a child that runs ``ckpt`` in-process and SIGKILLs itself at its N-th file-system step
(every rename, exchange, unlink, rmdir, link and mkdir), for every N the whole write takes.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import formats
from formats.io import atomic
from formats.io.atomic import is_temp_name

from ..conftest import CORPUS
from ..test_hf_convert import BERT, _bert_tensors

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")

ROOT = Path(__file__).resolve().parents[2]
K3_WEIGHTS = CORPUS / "keras3_tagger/tagger.weights.h5"
STEPS = ("replace", "rename", "unlink", "rmdir", "link", "mkdir")


def _run(args: list[str], kill_at: int = 0) -> tuple[int, int]:
    """Run ``ckpt ARGS`` in a forked child killed at its ``kill_at``-th step (0: never); (exit status or
    -signal, steps taken)."""
    from ckpt_cli.fast import main

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read)
        calls = [0]

        def counted(real):
            def step(*a, **k):
                calls[0] += 1
                os.write(write, b".")
                if calls[0] == kill_at:
                    os.kill(os.getpid(), signal.SIGKILL)
                return real(*a, **k)
            return step

        code = 70
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            for name in STEPS:
                setattr(os, name, counted(getattr(os, name)))
            atomic._renameat2 = counted(atomic._renameat2)
            try:
                main(args)
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
        finally:
            os._exit(code)
    os.close(write)
    steps = 0
    while chunk := os.read(read, 4096):
        steps += len(chunk)
    os.close(read)
    _, status = os.waitpid(pid, 0)
    return (-os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)), steps


def _litter(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if is_temp_name(p.name))


def _verify(path: Path) -> list[str]:
    """The problems ``verify`` finds (structure, and every tensor read)."""
    from formats.ops.compare.verify import verify_checkpoint

    with formats.open_checkpoint(str(path)) as ckpt:
        result = verify_checkpoint(ckpt)
        return [] if result.ok else [str(p) for p in ckpt.problems()] or ["not ok"]


# -- sources: an old and a new checkpoint of the same model, told apart by their values -----------------------
@pytest.fixture
def bert_pair(tmp_path: Path) -> tuple[Path, Path]:
    """Two BERT checkpoints (bert_config.json beside each) whose values differ."""
    made = []
    for name, seed in (("old", 3), ("new", 4)):
        folder = tmp_path / f"src-{name}"
        folder.mkdir()
        formats.write_checkpoint(str(folder / "bert_model.ckpt"), _bert_tensors(np.random.default_rng(seed), BERT))
        (folder / "bert_config.json").write_text(json.dumps(BERT))
        made.append(folder / "bert_model.ckpt")
    return made[0], made[1]


def _hf_state(out: Path, digests: dict[str, dict[str, bytes]]) -> str:
    """``old``/``new`` (the whole model directory of that write, verifying) or ``none``; a mix fails."""
    if not out.exists():
        return "none"
    assert _verify(out) == []
    with formats.open_checkpoint(str(out)) as ckpt:
        values = {k: ckpt[k].read().tobytes() for k in ckpt}
    matches = [name for name, expected in digests.items() if values == expected]
    assert matches, f"{out} holds neither the old nor the new model"
    return matches[0]


def _read_all(path: Path) -> dict[str, bytes]:
    with formats.open_checkpoint(str(path)) as ckpt:
        return {k: ckpt[k].read().tobytes() for k in ckpt}


def _kill_at_every_step(setup, write: list[str], state, folder: Path) -> set[str]:
    """For every step N of ``write`` over what ``setup()`` makes: kill it at N, record ``state()`` (which fails on
    a mix), then check the next write completes (``state() == "new"``) and leaves no temporary in ``folder``.
    Returns the states seen."""
    setup()
    code, steps = _run(write)  # how many steps a whole write takes
    assert code == 0 and steps > 3, (code, steps)
    seen = set()
    for kill_at in range(1, steps + 1):
        setup()
        assert _run(write, kill_at)[0] == -signal.SIGKILL, kill_at
        seen.add(state())
        assert _run(write)[0] == 0 and state() == "new", kill_at  # the next write completes and cleans up
        assert _litter(folder) == [], kill_at
    return seen


# -- kills at every step ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("shard", [None, "1KB"], ids=["one-file", "sharded"])
def test_hf_force_killed_at_every_step_leaves_the_old_or_the_new_model(tmp_path, bert_pair, shard):
    old_src, new_src = bert_pair
    out = tmp_path / "run" / "model"
    extra = ["--max-shard-size", shard] if shard else []
    digests = {}
    for name, src in (("old", old_src), ("new", new_src)):
        probe = tmp_path / f"probe-{name}"
        assert _run(["convert", str(src), "-o", str(probe), "--to", "hf", *extra])[0] == 0
        digests[name] = _read_all(probe)
    assert digests["old"] != digests["new"]
    if shard:
        assert (tmp_path / "probe-old" / "model.safetensors.index.json").exists()
    write_new = ["convert", str(new_src), "-o", str(out), "--to", "hf", "--force", *extra]

    def setup() -> None:
        shutil.rmtree(tmp_path / "run", ignore_errors=True)
        assert _run(["convert", str(old_src), "-o", str(out), "--to", "hf", *extra])[0] == 0

    seen = _kill_at_every_step(setup, write_new, lambda: _hf_state(out, digests), tmp_path / "run")
    assert seen == {"old", "new"}  # never no model directory


def _keras_state(out: Path, digests: dict[str, dict[str, bytes]]) -> str:
    if not out.exists():
        return "none"
    assert _verify(out) == []
    values = _read_all(out)
    matches = [name for name, expected in digests.items() if values == expected]
    assert matches, "the index and its shards are neither the old weights nor the new"
    return matches[0]


def test_sharded_keras_force_killed_at_every_step_leaves_the_old_or_the_new_weights(tmp_path):
    """The old weights have more shards than the new (3KB and 5KB shards): every old shard name is reused."""
    src = str(K3_WEIGHTS)
    folder = tmp_path / "run"
    out = folder / "tagger.weights.json"

    def write(size: str, kill_at: int = 0, force: bool = True, target: Path = out) -> tuple[int, int]:
        return _run(["convert", src, "-o", str(target), "--to", "keras3-h5", "--max-shard-size", size,
                     "--drop-optimizer", *(["--force"] if force else [])], kill_at)

    digests = {}
    for name, size in (("old", "3KB"), ("new", "5KB")):
        probe = tmp_path / f"probe-{name}" / "tagger.weights.json"
        assert write(size, target=probe)[0] == 0
        digests[name] = {"shards": sorted(p.name for p in probe.parent.iterdir())}
    assert len(digests["old"]["shards"]) > len(digests["new"]["shards"]) > 2
    values = _read_all(tmp_path / "probe-old" / "tagger.weights.json")  # the same values, cut differently

    def state() -> str:
        if not out.exists():
            return "none"
        assert _verify(out) == [] and _read_all(out) == values
        with formats.open_checkpoint(str(out)) as ckpt:
            count = len(ckpt.metadata["shards"])
        return "old" if count == len(digests["old"]["shards"]) - 1 else "new"

    def setup() -> None:
        shutil.rmtree(folder, ignore_errors=True)
        assert write("3KB", force=False)[0] == 0

    write_new = ["convert", src, "-o", str(out), "--to", "keras3-h5", "--max-shard-size", "5KB", "--drop-optimizer",
                 "--force"]
    assert _kill_at_every_step(setup, write_new, state, folder) == {"old", "new"}
    assert sorted(p.name for p in folder.iterdir()) == digests["new"]["shards"]  # and nothing else left


def test_extract_force_into_an_existing_directory_killed_at_every_step(tmp_path):
    """``extract -o DIR/ --force`` over a directory holding an earlier extraction and a file of the user's."""
    old = {f"layer_{i}/w": np.full((16, 4), i, np.float32) for i in range(4)}
    new = {f"layer_{i}/w": np.full((16, 4), 100 + i, np.float32) for i in range(4)}
    srcs = {}
    for name, tensors in (("old", old), ("new", new)):
        srcs[name] = str(tmp_path / f"src-{name}" / "ckpt")
        formats.write_checkpoint(srcs[name], tensors)
    root = tmp_path / "run" / "arrays"

    def state() -> str:
        files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
        assert files == [f"layer_{i}/w.npy" for i in range(4)] + ["mine.txt"], files
        assert (root / "mine.txt").read_text() == "the user's"
        got = {i: float(np.load(root / f"layer_{i}" / "w.npy")[0, 0]) for i in range(4)}
        assert got in ({i: float(i) for i in range(4)}, {i: float(100 + i) for i in range(4)}), got  # never a mix
        return "old" if got[0] == 0 else "new"

    write_new = ["extract", srcs["new"], "-o", f"{root}/", "--force"]
    def setup() -> None:
        shutil.rmtree(tmp_path / "run", ignore_errors=True)
        root.mkdir(parents=True)
        (root / "mine.txt").write_text("the user's")
        assert _run(["extract", srcs["old"], "-o", f"{root}/"])[0] == 0

    assert _kill_at_every_step(setup, write_new, state, tmp_path / "run") == {"old", "new"}


# -- verify reports a mix ---------------------------------------------------------------------------------------
def test_verify_reports_a_keras_shard_of_another_write(tmp_path, run_cli):
    first, second = tmp_path / "a" / "t.weights.json", tmp_path / "b" / "t.weights.json"
    for out in (first, second):
        assert run_cli("convert", K3_WEIGHTS, "-o", out, "--to", "keras3-h5", "--max-shard-size", "3KB",
                       "--drop-optimizer").exit_code == 0
    assert run_cli("verify", first).exit_code == 0
    shutil.copyfile(second.parent / "t_00001.weights.h5", first.parent / "t_00001.weights.h5")  # same values
    result = run_cli("verify", first)
    assert result.exit_code == 1, result.output
    generation = json.loads(first.read_text())["metadata"]["ckpt_generation"]
    theirs = json.loads(second.read_text())["metadata"]["ckpt_generation"]
    assert (f"written by another write than t.weights.json names (generation {theirs}, the index's {generation}): "
            "a mix of two outputs' files") in result.output


def test_verify_reports_a_safetensors_shard_of_another_write(tmp_path, run_cli, bert_pair):
    old_src, _ = bert_pair
    first, second = tmp_path / "a", tmp_path / "b"
    for out in (first, second):
        assert run_cli("convert", old_src, "-o", out, "--to", "hf", "--max-shard-size", "1KB").exit_code == 0
    assert run_cli("verify", first).exit_code == 0
    shard = sorted(p.name for p in first.glob("model-*.safetensors"))[1]
    shutil.copyfile(second / shard, first / shard)
    result = run_cli("verify", first)
    assert result.exit_code == 1, result.output
    generation = json.loads((first / "model.safetensors.index.json").read_text())["metadata"]["ckpt_generation"]
    assert f"the index's {generation}): a mix of two outputs' files" in result.output


# -- two writers of one new output ------------------------------------------------------------------------------
def _another_writer_first(monkeypatch, make, at: Path) -> None:
    """Make the output (``make()``) just before this write's exclusive publication step at ``at`` - after every
    check."""
    real = atomic._renameat2
    done = []

    def racing(src, dst, flags):
        if not done and os.path.abspath(dst) == str(at):
            done.append(make())
        return real(src, dst, flags)

    monkeypatch.setattr(atomic, "_renameat2", racing)


@pytest.mark.parametrize("to, name, made", [
    ("npz", "w.npz", "file"),
    ("safetensors", "w.safetensors", "file"),
    ("tf-name", "ckpt", "bundle"),
    ("keras3-h5", "t.weights.json", "file"),
])
def test_a_writer_that_publishes_first_makes_the_second_fail_as_if_the_output_existed(tmp_path, monkeypatch,
                                                                                    run_cli, to, name, made):
    src = K3_WEIGHTS if to == "keras3-h5" else CORPUS / "tf2_mixed" / "all_dtypes" / "ckpt-1"
    out = tmp_path / name
    target = out.with_name(name + ".index") if made == "bundle" else out
    _another_writer_first(monkeypatch, lambda: target.write_bytes(b"the other writer's"), target)
    extra = {"keras3-h5": ["--max-shard-size", "3KB", "--drop-optimizer"],
             "safetensors": ["--skip-unreadable"]}.get(to, [])  # all_dtypes holds what safetensors cannot store
    result = run_cli("convert", src, "-o", out, "--to", to, *extra)
    assert result.exit_code == 4, result.output
    assert result.stderr.splitlines()[0].endswith("exists") and "ckpt: error:" in result.stderr
    assert target.read_bytes() == b"the other writer's"  # not replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]  # and nothing of this write left


def test_a_model_directory_published_first_by_another_writer_fails_the_second(tmp_path, monkeypatch, run_cli,
                                                                              bert_pair):
    old_src, _ = bert_pair
    out = tmp_path / "model"

    def make():
        out.mkdir()
        (out / "config.json").write_text("{}")

    _another_writer_first(monkeypatch, make, out)
    result = run_cli("convert", old_src, "-o", out, "--to", "hf")
    assert result.exit_code == 4, result.output
    assert "output directory exists" in result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["config.json"]
    assert [p.name for p in tmp_path.iterdir() if is_temp_name(p.name)] == []


def test_an_extract_directory_made_first_by_another_writer_fails_the_second(tmp_path, monkeypatch, run_cli):
    src = tmp_path / "src" / "ckpt"
    formats.write_checkpoint(str(src), {"a": np.zeros(3, np.float32), "b/c": np.ones(2, np.int64)})
    out = tmp_path / "arrays"

    def make():
        out.mkdir()
        (out / "theirs.npy").write_bytes(b"x")

    _another_writer_first(monkeypatch, make, out)
    result = run_cli("extract", src, "-o", f"{out}/")
    assert result.exit_code == 4, result.output
    assert "output directory exists" in result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["theirs.npy"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["arrays", "src"]


def test_two_concurrent_conversions_to_one_new_output(tmp_path):
    """Two processes at once, many times: exactly one succeeds each time, the other exits 4 (output exists)."""
    src = tmp_path / "src" / "ckpt"
    formats.write_checkpoint(str(src), {f"w{i}": np.full((64, 64), i, np.float32) for i in range(16)})
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for attempt in range(4):
        out = tmp_path / f"out{attempt}.npz"
        procs = [subprocess.Popen([sys.executable, "-m", "ckpt_cli", "convert", str(src), "-o", str(out), "--to",
                                   "npz"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
                 for _ in range(2)]
        codes = sorted(p.wait() for p in procs)
        errors = [p.stderr.read() for p in procs]
        assert codes == [0, 4], errors
        assert any("output file exists" in e for e in errors)
        with formats.open_checkpoint(str(out)) as ckpt:
            assert sorted(ckpt) == sorted(f"w{i}" for i in range(16))


# -- where the system cannot exchange or refuse to replace (not Linux, an old kernel, a file system without it) --
def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_publish_dir_without_renameat2(tmp_path, monkeypatch):
    from formats.core.errors import OutputExistsError

    monkeypatch.setattr(atomic, "_renameat2", lambda src, dst, flags: False)
    final = tmp_path / "out"

    def staged(text: str) -> str:
        stage = Path(atomic.temp_name(str(final)))
        stage.mkdir()
        (stage / "f").write_text(text)
        return str(stage)

    atomic.publish_dir(staged("one"), str(final), replace=False)  # a new name: claimed by mkdir, then renamed
    assert (final / "f").read_text() == "one"
    stage = staged("two")
    with pytest.raises(OutputExistsError, match="output directory exists"):
        atomic.publish_dir(stage, str(final), replace=False)
    atomic.publish_dir(stage, str(final), replace=True)  # the old one aside, the new in, the old removed
    assert (final / "f").read_text() == "two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_an_old_directory_a_killed_write_left_aside_is_put_back(tmp_path):
    final = tmp_path / "out"
    aside = tmp_path / f".out.tmp-0123abcd-{atomic._host()}-{_dead_pid()}.old"  # moved aside, then the kill
    aside.mkdir()
    (aside / "f").write_text("old")
    atomic.sweep_temporaries(str(final))
    assert (final / "f").read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    aside.mkdir()  # where the new directory did take its place, the old one is removed
    atomic.sweep_temporaries(str(final))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_extract_into_a_directory_too_large_to_rebuild_moves_files_in(tmp_path, monkeypatch, run_cli):
    src = tmp_path / "src" / "ckpt"
    formats.write_checkpoint(str(src), {"a": np.zeros(3, np.float32), "b/c": np.ones(2, np.int64)})
    root = tmp_path / "arrays"
    root.mkdir()
    (root / "mine.txt").write_text("the user's")
    inode = root.stat().st_ino
    monkeypatch.setattr(atomic, "MAX_LINKED", 0)
    assert run_cli("extract", src, "-o", f"{root}/").exit_code == 0
    assert root.stat().st_ino == inode  # the same directory, the files moved in
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) == ["a.npy", "b/c.npy", "mine.txt"]
    monkeypatch.setattr(atomic, "MAX_LINKED", 1000)
    assert run_cli("extract", src, "-o", f"{root}/", "--force").exit_code == 0
    assert root.stat().st_ino != inode  # rebuilt beside and exchanged in one step
    assert (root / "mine.txt").read_text() == "the user's"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["arrays", "src"]


def test_publish_dir_over_a_symbolic_link_replaces_the_link_only(tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "keep").write_text("not the output's")
    final = tmp_path / "out"
    final.symlink_to(target)
    stage = Path(atomic.temp_name(str(final)))
    stage.mkdir()
    (stage / "f").write_text("new")
    atomic.publish_dir(str(stage), str(final), replace=True)
    assert not final.is_symlink() and (final / "f").read_text() == "new"
    assert (target / "keep").read_text() == "not the output's"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "out"]
