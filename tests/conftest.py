"""Shared fixtures: the reference corpus (written by real TensorFlow/Keras) and its manifest."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from .installed import import_installed

import_installed()  # formats and ckpt_cli from the installed package, before any test module imports them

CORPUS = Path(__file__).parent / "data" / "corpus"
MANIFEST: dict[str, Any] = json.loads((CORPUS / "manifest.json").read_text())["entries"]


def entries_of(fmt: str) -> list[str]:
    """Manifest paths (relative to the corpus) of one format."""
    return sorted(k for k, v in MANIFEST.items() if v["format"] == fmt)


def digest(arr: Any) -> str:
    """The manifest's sha256 of a value (see tests/data/corpus/README.md)."""
    h = hashlib.sha256()
    a = np.asarray(arr)
    if a.dtype == object or a.dtype.kind in "SU":
        for x in a.reshape(-1):
            b = x if isinstance(x, bytes) else str(x).encode()
            h.update(len(b).to_bytes(8, "little"))
            h.update(b)
    else:
        h.update(np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<"), copy=False).tobytes())
    return h.hexdigest()


@pytest.fixture
def corpus_copy(tmp_path: Path):
    """Copy one corpus folder into a writable temp dir: ``corpus_copy("tf1_adam")`` -> its path."""

    def copy(rel: str) -> Path:
        dst = tmp_path / rel
        shutil.copytree(CORPUS / rel, dst)
        for root, _, files in os.walk(dst):
            for f in files:
                os.chmod(os.path.join(root, f), 0o644)
        return dst

    return copy


@pytest.fixture
def run_cli():
    """Invoke ``ckpt`` in-process as users run it - the shipped entry point, :func:`ckpt_cli.fast.main`, which
    runs a plain command line without click and hands the rest to the click CLI: ``run_cli("ls", path)`` ->
    click Result (stdout, stderr, exit_code)."""
    from click.testing import CliRunner

    def run(*args: str) -> Any:
        return CliRunner().invoke(SHIPPED, [str(a) for a in args], catch_exceptions=False)

    return run


def _shipped_command() -> Any:
    import click

    class Shipped(click.Command):
        """What click's test runner invokes: ``ckpt_cli.fast.main`` with the command line as given (click does
        not parse it first, ``--`` and ``--help`` included)."""

        def main(self, args: Any = None, prog_name: Any = None, **extra: Any) -> Any:
            from ckpt_cli.fast import main

            main(list(args or ()))

    return Shipped("ckpt")


SHIPPED = _shipped_command()


@pytest.fixture
def record_opens(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``record_opens()`` -> the list of every path this process opens from then on (``os.open`` and ``open``),
    in order: what a command read."""
    import builtins

    def start() -> list[str]:
        opened: list[str] = []
        real_os_open, real_open = os.open, builtins.open

        def os_open(path, *args, **kwargs):  # type: ignore[no-untyped-def]
            opened.append(os.fspath(path))
            return real_os_open(path, *args, **kwargs)

        def open_(file, *args, **kwargs):  # type: ignore[no-untyped-def]
            if isinstance(file, (str, os.PathLike)):
                opened.append(os.fspath(file))
            return real_open(file, *args, **kwargs)

        monkeypatch.setattr(os, "open", os_open)
        monkeypatch.setattr(builtins, "open", open_)
        return opened

    return start


def edited_model_config(source: Path, out: Path, edit: Any) -> Path:
    """A copy of the whole-model Keras 2 file ``source`` at ``out`` whose ``model_config`` ``edit(config)`` changed
    in place (hostile or inconsistent configs for ``convert --to keras``)."""
    import h5py

    shutil.copyfile(source, out)
    with h5py.File(out, "r+") as f:
        config = json.loads(f.attrs["model_config"])
        edit(config)
        f.attrs["model_config"] = json.dumps(config)
    return out


@pytest.fixture(autouse=True)
def _no_tensorflow_stand_in_left_behind() -> Any:
    """``ckpt run`` run in-process installs the TensorFlow stand-in (``formats.tf.standin.install``) and, as a
    command whose process ends, never takes it off: put ``tensorflow`` back as it was before the test, so that a
    later test importing the real TensorFlow gets it, whatever order the tests run in."""
    import sys

    before = {k: v for k, v in sys.modules.items() if k == "tensorflow" or k.startswith("tensorflow.")}
    yield
    standin = sys.modules.get("formats.tf.standin")
    if standin is not None and standin._FINDER in sys.meta_path:
        standin.uninstall()
        sys.modules.update(before)


def numbers_by_value(key: str) -> list:
    """Text order but runs of digits compared as numbers (the corpus keys' numbers follow a '/', '_' or '-')."""
    import re

    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", key)]


# --- The slowest modules first (issue 36: .ci/run under 30 minutes) -------------------------------------------------
# The README's test command runs the modules in one worker process per core (`-n auto --dist loadfile`); xdist hands
# them out in collection order. A long module handed out last keeps one worker busy after the other has finished
# (in a clean CI run on 2 cores the Keras 3 zoo alone took 9 minutes), so the modules that take longest go first,
# longest first, each to whichever worker is free. Seconds per module from the `--durations` of a CI run under load
# (only the order matters); every other module keeps its place after them.
SLOW_MODULES = {
    "tests/interop/test_keras3_zoo.py": 554, "tests/interop/test_keras_legacy_models.py": 376,
    "tests/hostile/test_mutation.py": 190, "tests/hostile/test_publication.py": 134,
    "tests/interop/test_tf216_guide_tf.py": 86, "tests/interop/test_keras3_resume.py": 72,
    "tests/interop/test_keras_interop.py": 62, "tests/hostile/test_hdf5_mutation.py": 61,
    "tests/hostile/test_allocations.py": 58, "tests/interop/test_keras_training_state_tf.py": 56,
    "tests/interop/test_optimizer_resume.py": 55, "tests/remote/test_dask.py": 54,
    "tests/interop/test_hf_h5_transformers5.py": 48, "tests/remote/test_dask_report.py": 46,
    "tests/hostile/test_killed_writes.py": 44,
}


def pytest_configure(config: pytest.Config) -> None:
    """Under xdist, hand the modules out in the order :func:`pytest_collection_modifyitems` gives (xdist's own
    ``--loadscope-reorder``, on by default, orders them by how many tests they hold)."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The modules of :data:`SLOW_MODULES` first, slowest first; the tests of a module stay in their order."""
    def weight(item: pytest.Item) -> int:
        return -SLOW_MODULES.get(item.nodeid.split("::", 1)[0], 0)

    items.sort(key=weight)  # a stable sort
