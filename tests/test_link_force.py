"""Issue 36: ``rename --link --force`` (and ``convert --link --force``) onto its own earlier linked output exited 4
("would overwrite ... which is being read"): the old output's data file is a hard link of the input's. The bundle
writer only renames new files over an output's and unlinks the old ones, so replacing a linked output works -
and the input is never touched: same bytes, same inode, its data file unlinked from the old output, never
written through."""
from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from formats.api import open_checkpoint

from .conftest import CORPUS

CASES = {
    "rename": ("seed_slots/tf_ckpts", "ckpt-5", ["rename", "--map", "net=model"]),
    "convert": ("tf1_estimator", "model.ckpt-200", ["convert", "--to", "tf-object"]),
}


def _digests(folder: Path) -> dict[str, tuple[str, int, int]]:
    """Each file's (sha256, inode, link count)."""
    out = {}
    for p in sorted(folder.iterdir()):
        if p.is_file():
            st = p.stat()
            out[p.name] = (hashlib.sha256(p.read_bytes()).hexdigest(), st.st_ino, st.st_nlink)
    return out


def _values(prefix: Path) -> dict[str, bytes]:
    with open_checkpoint(str(prefix)) as ckpt:
        return {key: ckpt[key].read().tobytes() for key in ckpt if ckpt[key].dtype not in ("string", "variant")}


@pytest.mark.parametrize("case", sorted(CASES))
def test_replacing_a_linked_output_leaves_the_input_untouched(run_cli, tmp_path: Path, case: str) -> None:
    folder, name, command = CASES[case]
    src_dir = tmp_path / "in"
    shutil.copytree(CORPUS / folder, src_dir)
    for f in src_dir.iterdir():
        f.chmod(0o644)
    src, out = src_dir / name, tmp_path / "out" / "ckpt-1"
    argv = [command[0], src, *command[1:], "-o", out, "--link"]
    first = run_cli(*argv)
    assert first.exit_code == 0, first.stderr
    input_data = Path(str(src) + ".data-00000-of-00001")
    shared = [p for p in out.parent.iterdir() if p.stat().st_ino == input_data.stat().st_ino]
    assert len(shared) == 1  # the earlier output shares the input's data file: a hard link
    before = _digests(src_dir)
    old_files = {p.name: p for p in out.parent.iterdir()}
    old_bytes = {n: p.read_bytes() for n, p in old_files.items()}
    held = {n: os.open(p, os.O_RDONLY) for n, p in old_files.items()}  # the old output's files, as they were
    try:
        again = run_cli(*argv, "--force")
        assert again.exit_code == 0, again.stderr
        assert again.stdout.startswith(f"wrote {out}: ") and "verified" in again.stdout
        after = _digests(src_dir)
        assert {n: d[:2] for n, d in after.items()} == {n: d[:2] for n, d in before.items()}  # bytes and inodes
        for n, fd in held.items():
            os.lseek(fd, 0, os.SEEK_SET)
            assert os.read(fd, len(old_bytes[n]) + 1) == old_bytes[n]  # never written through, never truncated
            st = os.fstat(fd)
            if st.st_ino == input_data.stat().st_ino:
                continue  # the input's own data file: still the input's (above), linked again by the new output
            assert st.st_nlink == 0 or (out.parent / n).stat().st_ino == st.st_ino  # unlinked unless kept whole
    finally:
        for fd in held.values():
            os.close(fd)
    assert input_data.stat().st_nlink == 2  # the input and the new output: no stray link left behind
    assert run_cli("verify", out).exit_code == 0
    with open_checkpoint(str(out)) as ckpt:
        named = set(ckpt.files) | {str(out) + ".index"}
    assert {str(p) for p in out.parent.iterdir()} == named  # nothing else beside it (no temporaries)
    assert set(_values(src).values()) <= set(_values(out).values())  # every value of the input, carried over


def test_rename_link_force_onto_its_output_gives_the_renamed_values(run_cli, tmp_path: Path) -> None:
    src_dir = tmp_path / "in"
    shutil.copytree(CORPUS / "seed_slots/tf_ckpts", src_dir)
    src, out = src_dir / "ckpt-5", tmp_path / "out" / "ckpt-1"
    for extra in ([], ["--force"]):
        result = run_cli("rename", src, "--map", "net=model", "-o", out, "--link", *extra)
        assert result.exit_code == 0, result.stderr
    source, written = _values(src), _values(out)
    assert written == {k.replace("net/", "model/", 1): v for k, v in source.items()}


def test_the_input_itself_is_still_refused(run_cli, tmp_path: Path) -> None:
    src_dir = tmp_path / "in"
    shutil.copytree(CORPUS / "seed_slots/tf_ckpts", src_dir)
    before = _digests(src_dir)
    result = run_cli("rename", src_dir / "ckpt-5", "--map", "net=model", "-o", src_dir / "ckpt-5", "--link", "--force")
    assert result.exit_code == 4 and "which is being read" in result.stderr
    assert _digests(src_dir) == before
