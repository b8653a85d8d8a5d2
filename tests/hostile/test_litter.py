"""Issue 14 #24: no partial output and no litter - ``extract -o dir/`` is all or nothing when a later
tensor fails, and what a killed writer leaves behind (npz, safetensors, Keras HDF5, extract) is found and
removed by the next write of the same output, while a live writer's temporaries are left alone."""
from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import formats
from formats.io.atomic import sweep_temporaries, temp_name

from ..conftest import CORPUS
from ..installed import child_env
from .craft import bundle, entry

FLOAT = 1
ROOT = Path(__file__).resolve().parents[2]


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _bad_second_tensor(tmp_path: Path) -> Path:
    data = np.arange(8, dtype="<f4").tobytes()
    return bundle(tmp_path, "c", [(b"a/x", entry(FLOAT, [4], 0, 16, data[:16])),
                                  (b"b/y", entry(FLOAT, [4], 16, 16, crc=12345))], data)


def test_extract_dir_is_all_or_nothing_when_a_later_tensor_fails(tmp_path, run_cli):
    prefix = _bad_second_tensor(tmp_path)
    new = tmp_path / "new" / "out"
    result = run_cli("extract", prefix, "-o", f"{new}/")
    assert result.exit_code == 3 and "tensor 'b/y': checksum mismatch" in result.stderr
    assert not (tmp_path / "new").exists()
    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "keep.txt").write_text("mine")
    result = run_cli("extract", prefix, "-o", f"{existing}/")
    assert result.exit_code == 3
    assert _tree(existing) == ["keep.txt"]


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _left_by(pid: int, out: Path, suffix: str = "") -> Path:
    """A temporary name as a writer with ``pid`` on this host made it for ``out``."""
    name = Path(temp_name(str(out)))
    return name.with_name(name.name.rsplit("-", 1)[0] + f"-{pid}{suffix}")


def test_sweep_removes_only_dead_writers_temporaries(tmp_path):
    out = tmp_path / "m.npz"
    dead = _dead_pid()
    stale_file, stale_dir = _left_by(dead, out), _left_by(dead, out, ".d")
    stale_file.write_bytes(b"partial")
    stale_dir.mkdir()
    (stale_dir / "x.npy").write_bytes(b"partial")
    live = _left_by(os.getpid(), out)
    live.write_bytes(b"being written")
    other_host = tmp_path / f".m.npz.tmp-0123abcd-ffffffff-{dead}"
    other_host.write_bytes(b"NFS neighbour")
    foreign = tmp_path / ".m.npz.tmp-notours"
    foreign.write_bytes(b"?")
    assert sorted(sweep_temporaries(str(out))) == sorted([str(stale_file), str(stale_dir)])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, other_host.name, foreign.name])


@pytest.mark.parametrize("args, out", [
    (["convert", "{src}", "-o", "{out}", "--to", "npz"], "m.npz"),
    (["convert", "{src}", "-o", "{out}", "--to", "safetensors", "--skip-unreadable"], "m.safetensors"),
    (["extract", "{src}", "-o", "{out}"], "e.npz"),
    (["convert", "{keras}", "-o", "{out}", "--to", "keras2-h5"], "k.h5"),
])
def test_next_write_removes_what_a_killed_writer_left(tmp_path, run_cli, args, out):
    src = CORPUS / "tf2_mixed" / "all_dtypes" / "ckpt-1"
    keras = CORPUS / "keras2_tagger" / "tagger_weights.h5"
    target = tmp_path / out
    stale = _left_by(_dead_pid(), target)
    stale.write_bytes(b"partial output of a killed write")
    result = run_cli(*[a.format(src=src, keras=keras, out=target) for a in args])
    assert result.exit_code in (0, 1), result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == [out]


def _source(tmp_path: Path, mib: int = 64) -> Path:
    prefix = tmp_path / "src" / "model.ckpt-1"
    rows = mib * (1 << 20) // (4 * 1024) // 8
    formats.write_checkpoint(prefix, ((f"layer_{i}/kernel", np.full((rows, 1024), i, np.float32)) for i in range(8)),
                             verify=False)
    return prefix


def _kill_while_writing(args: list[str], folder: Path) -> bool:
    """Run ``ckpt ARGS`` and SIGKILL it once a temporary appears in ``folder``; True if it was killed."""
    env = child_env()
    proc = subprocess.Popen([sys.executable, "-m", "ckpt_cli", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None and not any(p.name.startswith(".") for p in folder.iterdir()):
        time.sleep(0.005)
    time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    return proc.wait() == -signal.SIGKILL


@pytest.mark.parametrize("into_existing", [False, True])
def test_killed_extract_to_a_directory_is_cleaned_by_the_next(tmp_path, run_cli, into_existing):
    src = _source(tmp_path)
    folder = tmp_path / "out"
    folder.mkdir()
    root = folder / "dir" if not into_existing else folder
    beside = root.parent  # the directory is staged beside itself (then renamed, or exchanged, into place)
    killed = _kill_while_writing(["extract", str(src), "-o", f"{root}/"], beside)
    leftovers = [p for p in beside.iterdir() if p.name.startswith(".")]
    finals = sorted(str(p.relative_to(root)) for p in root.rglob("*.npy")) if root.is_dir() else []
    assert finals in ([], [f"layer_{i}/kernel.npy" for i in range(8)])  # never a partial set under the final names
    assert leftovers or not killed or finals  # the staging directory a kill leaves behind...
    result = run_cli("extract", src, "-o", f"{root}/", *(["--force"] if finals else []))
    assert result.exit_code == 0, result.output
    assert [p for p in beside.rglob("*") if p.name.startswith(".")] == []  # ...is removed by the next extract
    got = {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*.npy")}
    assert sorted(got) == [f"layer_{i}/kernel.npy" for i in range(8)]
