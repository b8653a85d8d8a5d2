"""The one output guard: no writer replaces a file of any input - not with --force either, not through a
symlink or a hard link - and outputs get their parent directories, which a failed write removes again."""
from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import formats
from ckpt_cli.exit_codes import ExitCode
from formats.core.errors import InvalidOutputError, OutputExistsError, OutputIsInputError
from formats.core.model import Checkpoint, TensorEntry
from formats.io.npy_output import write_npy
from formats.npz.writer import write_npz
from formats.keras_h5.writer import Keras2Layer, write_keras2_h5
from formats.ops.inspect.extract import extract

from .conftest import CORPUS

REFUSED = ExitCode.OUTPUT
"""The exit code of an output that was not written (4 once the exit codes distinguish it, 3 before)."""


def _snapshot(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    """A folder with a bundle (``ck``), a Keras 2 and a Keras 3 weights file, all writable copies."""
    folder = tmp_path / "in"
    folder.mkdir()
    for f in (CORPUS / "keras2_tagger" / "tagger_tf").iterdir():
        if f.name.startswith("ckpt."):
            shutil.copy(f, folder / f.name.replace("ckpt", "ck", 1))
    shutil.copy(CORPUS / "keras2_tagger" / "tagger_weights.h5", folder / "k2.h5")
    shutil.copy(CORPUS / "keras3_tagger" / "tagger.weights.h5", folder / "k3.weights.h5")
    return folder


def _commands(d: Path) -> list[tuple[str, ...]]:
    ck, data = f"{d}/ck", f"{d}/ck.data-00000-of-00001"
    return [
        ("convert", ck, "-o", ck, "--to", "tf-name"),
        ("rename", ck, "-o", ck, "--map", "layer_with_weights-0=emb"),
        ("convert", ck, "-o", f"{ck}.index", "--to", "npz"),
        ("convert", ck, "-o", data, "--to", "safetensors"),
        ("convert", ck, "-o", f"{d}/k2.h5", "--to", "keras2-h5", "--template", f"{d}/k2.h5"),
        ("convert", f"{d}/k2.h5", "-o", f"{d}/k3.weights.h5", "--to", "keras3-h5", "--template",
         f"{d}/k3.weights.h5"),
        ("convert", f"{d}/k2.h5", "-o", f"{d}/k2.h5", "--to", "keras2-h5"),
        ("doctor", ck, "--against", ck, "--write-rules", f"{ck}.index"),
        ("doctor", ck, "--against", f"{d}/k2.h5", "--write-rules", f"{d}/k2.h5"),
    ]


@pytest.mark.parametrize("index", range(9))
def test_no_command_replaces_an_input_even_with_force(run_cli, inputs: Path, index: int) -> None:
    before = _snapshot(inputs)
    result = run_cli(*_commands(inputs)[index], "--force")
    assert result.exit_code == REFUSED, result.output
    assert "which is being read" in result.stderr
    assert _snapshot(inputs) == before  # same files, same bytes, nothing left beside them


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_links_to_an_input_are_inputs(run_cli, inputs: Path, tmp_path: Path, link: str) -> None:
    out = tmp_path / "g.npy"
    (out.symlink_to if link == "symlink" else out.hardlink_to)(inputs / "ck.index")
    before = _snapshot(inputs)
    result = run_cli("extract", inputs / "ck", "layer_with_weights-0/*", "-o", out, "--force")
    assert result.exit_code == REFUSED and "which is being read" in result.stderr
    rules = tmp_path / "rules.json"
    (rules.symlink_to if link == "symlink" else rules.hardlink_to)(inputs / "k2.h5")
    result = run_cli("doctor", inputs / "ck", "--against", inputs / "k2.h5", "--write-rules", rules, "--force")
    assert result.exit_code == REFUSED and "which is being read" in result.stderr
    assert _snapshot(inputs) == before


def test_every_library_writer_refuses_an_input(inputs: Path) -> None:
    ck, k2 = str(inputs / "ck"), str(inputs / "k2.h5")
    before = _snapshot(inputs)
    with formats.open_checkpoint(ck) as src, formats.open_checkpoint(k2) as h5:
        entry = next(iter(src.values()))
        with pytest.raises(OutputIsInputError):  # the source entry is read from the output's file
            write_npz(ck + ".index", [("x", entry)], force=True)
        with pytest.raises(OutputIsInputError):  # a declared input
            write_npy(k2, "x", np.ones(2), inputs=[h5], force=True)
        with pytest.raises(OutputIsInputError):
            write_keras2_h5(k2, [Keras2Layer("a", [("a/k:0", np.ones(2, np.float32))])], inputs=[k2], force=True)
        with pytest.raises(OutputIsInputError):
            formats.write_checkpoint(ck, {"x": np.ones(2)}, inputs=[src], force=True)
        with pytest.raises(OutputIsInputError):
            formats.update_state_file(inputs, ck, inputs=[str(inputs / "checkpoint")])
        with pytest.raises(OutputExistsError):  # an existing output that is no input: refused without force
            write_npz(inputs / "k3.weights.h5", [("x", np.ones(2))], inputs=[src])
    assert _snapshot(inputs) == before


# -- parent directories ---------------------------------------------------------------------------------
def test_rules_file_gets_its_parent_directories(run_cli, tmp_path: Path) -> None:
    rules = tmp_path / "nodir" / "x" / "fix.json"
    result = run_cli("doctor", CORPUS / "tf1_estimator/model.ckpt-200", "--against",
                     CORPUS / "tf1_adam/model.ckpt-200", "--write-rules", rules)
    assert result.exit_code in (0, 1) and "tmp" not in result.stderr, result.stderr
    assert rules.read_text().startswith("{") and os.listdir(rules.parent) == ["fix.json"]


@pytest.mark.parametrize("target", ["tf-name", "npz", "keras2-h5"])
def test_output_naming_a_new_directory_says_so(run_cli, tmp_path: Path, target: str) -> None:
    out = f"{tmp_path / 'outdir2'}/"
    result = run_cli("convert", CORPUS / "keras2_tagger/tagger_tf/ckpt", "-o", out, "--to", target)
    assert result.exit_code == REFUSED
    assert f"{out}: output ends in a path separator, so it names a directory" in result.stderr
    assert os.listdir(tmp_path) == []


class _Interrupted(TensorEntry):
    """A float32 tensor whose bytes stop with Ctrl-C after the first chunk."""

    def read(self) -> np.ndarray:
        return np.zeros(self.shape, np.float32)

    def byte_chunks(self, chunk: int = 1 << 20, check: bool = True) -> Iterator[memoryview]:
        yield memoryview(b"\0" * 4)
        raise KeyboardInterrupt


def _interrupted() -> Checkpoint:
    return Checkpoint("mem", "toy", {"a": _Interrupted("a", (4,), "float32", 16)})


@pytest.mark.parametrize("writer", ["bundle", "keras2", "npz", "npy", "extract-dir"])
def test_an_interrupted_write_leaves_no_directory(tmp_path: Path, writer: str) -> None:
    out = tmp_path / "new" / "deeper" / "out"
    entry = _interrupted()["a"]
    with pytest.raises(KeyboardInterrupt):
        if writer == "bundle":
            formats.write_checkpoint(out, {"a": entry})
        elif writer == "keras2":
            write_keras2_h5(out, [Keras2Layer("l", [("l/a:0", entry)])])
        elif writer == "npz":
            write_npz(out, [("a", entry)])
        elif writer == "npy":
            write_npy(out, "a", entry)
        else:
            extract(_interrupted(), [], f"{out}/")
    assert os.listdir(tmp_path) == []


def test_library_output_directory_messages(tmp_path: Path) -> None:
    with pytest.raises(InvalidOutputError, match="output is a directory"):
        write_npz(tmp_path, [("a", np.ones(1))])
    with pytest.raises(InvalidOutputError, match="names a directory"):
        write_npy(f"{tmp_path / 'x'}/", "a", np.ones(1))


def test_extract_to_a_directory_is_all_or_nothing(run_cli, tmp_path: Path) -> None:
    src = tmp_path / "src" / "ckpt-1"
    formats.write_checkpoint(src, {"a/x": np.ones(3, np.float32), "b": np.array([b"ok\x00"], dtype=object)})
    new, existing = tmp_path / "new", tmp_path / "existing"
    existing.mkdir()
    (existing / "keep.txt").write_text("mine")
    for out in (new, existing):
        result = run_cli("extract", src, "-o", f"{out}/")  # "a/x" is written first, then "b" is refused
        assert result.exit_code == 4 and "ending in NUL bytes" in result.stderr
    assert sorted(os.listdir(tmp_path)) == ["existing", "src"]
    assert sorted(str(p.relative_to(existing)) for p in existing.rglob("*")) == ["keep.txt"]
    assert run_cli("extract", src, "-o", f"{existing}/", "--allow-pickle").exit_code == 0
    assert sorted(str(p.relative_to(existing)) for p in existing.rglob("*")) == ["a", "a/x.npy", "b.npy", "keep.txt"]


class _Lent(TensorEntry):
    """A source that lends the very tuple of its files, as a bundle's tensors of one data file do."""

    def __init__(self, key: str, files: tuple[str, ...]) -> None:
        super().__init__(key, (1,), "float32", 4)
        self._files = files

    @property
    def files(self) -> tuple[str, ...]:  # type: ignore[override]
        return self._files


def test_sources_lending_one_tuple_of_files_are_checked_once_and_another_still_refused(tmp_path):
    """The guard looks up a run of sources that lend the same tuple of files once; a source after them reading an
    output file is refused all the same, naming it."""
    from formats.io.writing import OutputGuard

    out = str(tmp_path / "out.npz")
    shared = (str(tmp_path / "in.index"), str(tmp_path / "in.data-00000-of-00001"))
    guard = OutputGuard(out, [out])
    looked: list[tuple[str, ...]] = []
    check = guard.check_files
    guard.check_files = lambda files: (looked.append(tuple(files)), check(files))[1]  # type: ignore[method-assign]
    guard.check_sources([_Lent(f"k{i}", shared) for i in range(1000)])
    assert looked == [shared]
    with pytest.raises(OutputIsInputError, match="out.npz"):
        guard.check_sources([*(_Lent(f"k{i}", shared) for i in range(10)), _Lent("bad", (out,))])
