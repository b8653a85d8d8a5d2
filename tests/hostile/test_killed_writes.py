"""Replacing a bundle is atomic for readers: a writer killed (SIGKILL) at any step leaves the old checkpoint,
the new one or none - never new data beside the old index - and the next write cleans up what it left."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import formats
from formats.core.errors import CheckpointNotFoundError
from formats.io.atomic import is_temp_name, sweep_temporaries

from ..installed import child_env

ROOT = Path(__file__).resolve().parents[2]

# The child writes NEW over the prefix (with force), killing itself at the N-th call of a file-system step.
CHILD = """
import os, signal, sys
import numpy as np
import formats

prefix, kill_at, shards, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
calls = [0]

def killing(real):
    def step(*args, **kwargs):
        calls[0] += 1
        if calls[0] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*args, **kwargs)
    return step

for name in ("replace", "unlink", "link", "fsync", "copy_file_range"):
    setattr(os, name, killing(getattr(os, name)))
import formats.io.atomic as atomic  # the exclusive or exchanging renames (renameat2) are steps too

atomic._renameat2 = killing(atomic._renameat2)
new = {f"layer_{i}/w": np.full((256, 64), 100 + i, np.float32) for i in range(4)}
if mode == "copy":  # taken over from another bundle: kernel copies, or links
    with formats.open_checkpoint(sys.argv[5]) as source:
        formats.write_checkpoint(prefix, [(k, source[k]) for k in source], force=True, link=shards == 2)
else:
    formats.write_checkpoint(prefix, new.items(), force=True)
print("steps", calls[0])
"""


def _old(prefix: str, shards: int = 1) -> None:
    """The checkpoint being replaced: values 1, 2, 3 (in ``shards`` data files)."""
    tensors = {f"layer_{i}/w": np.full((128, 32), i, np.float32) for i in range(3)}
    formats.write_checkpoint(prefix, tensors.items(), verify=False)
    if shards == 2:  # as TensorFlow leaves a two-shard save: an extra data file the new one does not have
        os.rename(prefix + ".data-00000-of-00001", prefix + ".data-00000-of-00002")
        Path(prefix + ".data-00001-of-00002").write_bytes(b"")
        from formats.tf_bundle.encode import encode_header
        from formats.tf_bundle.reader import BundleReader
        from formats.io.sstable.writer import TableWriter

        reader = BundleReader(prefix)
        entries = {k: v for k, v in _raw_entries(prefix).items()}
        reader.close()
        with open(prefix + ".index", "wb") as f:
            table = TableWriter(f)
            table.add(b"", encode_header(num_shards=2))
            for key in sorted(entries):
                table.add(key, entries[key])
            table.finish()


def _raw_entries(prefix: str) -> dict[bytes, bytes]:
    from formats.io.sstable.table import read_table

    return dict(read_table(Path(prefix + ".index").read_bytes(), prefix)[1:])


def _run_child(prefix: str, kill_at: int, shards: int = 1, mode: str = "arrays", source: str = "") -> tuple[int, str]:
    env = child_env()
    done = subprocess.run([sys.executable, "-c", CHILD, prefix, str(kill_at), str(shards), mode, source],
                          capture_output=True, text=True, env=env)
    return done.returncode, done.stdout


def _state(prefix: str) -> str:
    """``old``, ``new`` or ``none``; anything else (a mix, a damaged file) fails the test."""
    try:
        ckpt = formats.open_checkpoint(prefix)
    except CheckpointNotFoundError:
        return "none"
    with ckpt:
        values = {k: float(ckpt[k].read().reshape(-1)[0]) for k in ckpt}
        assert not ckpt.problems()
        for entry in ckpt.values():
            entry.check()
    if values == {f"layer_{i}/w": float(i) for i in range(3)}:
        return "old"
    assert values == {f"layer_{i}/w": float(100 + i) for i in range(4)}, values
    return "new"


def _litter(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if is_temp_name(p.name))


@pytest.mark.parametrize("shards", [1, 2], ids=["one-shard", "two-shard-old"])
def test_a_kill_at_any_step_leaves_old_new_or_none_and_the_next_write_cleans_up(tmp_path, shards):
    folder = tmp_path / "run"
    folder.mkdir()
    prefix = str(folder / "ckpt-1")
    _old(prefix, shards)
    code, out = _run_child(prefix, 0)  # how many steps a whole replacement takes
    assert code == 0, out
    steps = int(out.split()[-1])
    seen = set()
    for kill_at in range(1, steps + 1):
        for f in folder.iterdir():
            f.unlink()
        _old(prefix, shards)
        code, _ = _run_child(prefix, kill_at)
        assert code == -signal.SIGKILL
        seen.add(_state(prefix))
        code, _ = _run_child(prefix, 0)  # the next write: completes, and leaves nothing else behind
        assert code == 0
        assert _state(prefix) == "new"
        assert _litter(folder) == []
        assert sorted(p.name for p in folder.iterdir()) == ["ckpt-1.data-00000-of-00001", "ckpt-1.index"]
    assert seen == {"old", "new"}  # never no checkpoint (issue 24 item 18)


@pytest.mark.parametrize("link", [False, True], ids=["copy", "link"])
def test_a_kill_while_taking_over_input_files_leaves_the_input_whole(tmp_path, link):
    source = str(tmp_path / "src" / "ckpt-9")
    formats.write_checkpoint(source, {f"layer_{i}/w": np.full((256, 64), 100 + i, np.float32)
                                      for i in range(4)}.items())
    before = {p.name: p.read_bytes() for p in (tmp_path / "src").iterdir()}
    folder = tmp_path / "run"
    folder.mkdir()
    prefix = str(folder / "ckpt-1")
    _old(prefix)
    code, out = _run_child(prefix, 0, 2 if link else 1, "copy", source)
    assert code == 0, out
    for kill_at in range(1, int(out.split()[-1]) + 1):
        for f in folder.iterdir():
            f.unlink()
        _old(prefix)
        code, _ = _run_child(prefix, kill_at, 2 if link else 1, "copy", source)
        assert code == -signal.SIGKILL
        state = _state(prefix)
        assert state in ("old", "new")
        if not (link and state == "new"):  # (a linked output shares the source's inode: the guard refuses it)
            assert _run_child(prefix, 0, 2 if link else 1, "copy", source)[0] == 0
        else:  # what the next write of the prefix would sweep first
            sweep_temporaries(prefix)
        assert _state(prefix) == "new" and _litter(folder) == []
        assert {p.name: p.read_bytes() for p in (tmp_path / "src").iterdir()} == before


def test_a_kill_without_force_does_not_block_the_next_write(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    prefix = str(folder / "ckpt-1")
    code, out = _run_child(str(folder / "probe"), 0)
    steps = int(out.split()[-1])
    for kill_at in range(1, steps + 1):
        for f in folder.iterdir():
            f.unlink()
        assert _run_child(prefix, kill_at)[0] == -signal.SIGKILL
        assert _state(prefix) in ("none", "new")
        tensors = {f"layer_{i}/w": np.full((256, 64), 100 + i, np.float32) for i in range(4)}
        if _state(prefix) == "none":  # no checkpoint there: a write without force goes ahead
            formats.write_checkpoint(prefix, tensors.items())
        assert _state(prefix) == "new" and _litter(folder) == []


# The same, through the command line: ``ckpt convert SRC -o PREFIX --to tf-object --force --update-state``.
CLI_CHILD = CHILD.split("new = {", 1)[0] + """
from ckpt_cli.fast import main
sys.argv = ["ckpt", "convert", sys.argv[5], "-o", prefix, "--to", "tf-object", "--force", "--update-state"]
try:
    main()  # ends in sys.exit
finally:
    print()
    print("steps", calls[0])
"""


def test_a_killed_forced_conversion_with_the_state_file_never_loses_a_checkpoint(tmp_path):
    """Issue 24 item 18: ``convert --force --update-state`` over an existing checkpoint, SIGKILLed at every
    rename, unlink, link and flush: the prefix opens as the old or the new checkpoint, the state file (written
    last) names a checkpoint that opens, and ``ckpt ls DIR`` names what the killed write left."""
    from formats.concepts.state import read_state

    source = str(tmp_path / "src" / "model.ckpt-7")
    formats.write_checkpoint(source, {f"layer_{i}/w": np.full((256, 64), 100 + i, np.float32)
                                      for i in range(4)}.items())
    folder = tmp_path / "run"
    folder.mkdir()
    prefix = str(folder / "ckpt-1")
    env = child_env()

    def run(kill_at: int) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", CLI_CHILD, prefix, str(kill_at), "1", "cli", source],
                              capture_output=True, text=True, env=env)

    _old(prefix)
    done = run(0)
    assert done.returncode == 0, done.stderr
    steps = int(re.search(r"^steps (\d+)$", done.stdout, re.M).group(1))
    seen = set()
    for kill_at in range(1, steps + 1):
        for f in folder.iterdir():
            f.unlink()
        _old(prefix)
        assert run(kill_at).returncode == -signal.SIGKILL
        with formats.open_checkpoint(prefix) as ckpt:  # never "none"
            seen.add("new" if "_CHECKPOINTABLE_OBJECT_GRAPH" in ckpt else "old")
        state = read_state(str(folder))
        if state is not None:
            with formats.open_checkpoint(os.path.join(str(folder), state.model_checkpoint_path)):
                pass
        if _litter(folder):
            listed = subprocess.run([sys.executable, "-m", "ckpt_cli", "ls", str(folder)], capture_output=True,
                                    text=True, env=env)
            assert "left by interrupted writes" in listed.stderr and _litter(folder)[0] in listed.stderr
        assert run(0).returncode == 0  # the next write completes and cleans up
        assert _litter(folder) == []
    assert seen == {"old", "new"}
