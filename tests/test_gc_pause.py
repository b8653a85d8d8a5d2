"""Issue 38: exports, verify and report of many tensors run with Python's cyclic garbage collector paused.

``extract`` and a conversion's planning and writing make objects by the hundred thousand (an entry, a pair, a
member, a row per tensor), none in a reference cycle; the collector's passes over them (each full one over every
object alive) were a fifth of `extract`'s CPU at 10^6 tensors. Here no collection runs while they work (Python
runs one on its own every 700 allocations: thousands of tensors set off several; a conversion is paused from its
planning to its writing, so the objects made while planning set off none between them), and the collector is left
as it was found: enabled after, and still disabled where the caller had disabled it.
"""
from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
import pytest

import formats

N = 3000


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> str:
    prefix = str(tmp_path_factory.mktemp("gc") / "ckpt-1")
    formats.write_checkpoint(prefix, {f"model/layer_{i // 100}/unit_{i % 100}/w": np.full(3, i, np.float32)
                                      for i in range(N)})
    return prefix


def _collections(work) -> list[int]:
    """The generations of the collections Python runs while ``work()`` runs."""
    seen: list[int] = []

    def count(phase: str, info: dict) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.collect()
    gc.callbacks.append(count)
    try:
        work()
    finally:
        gc.callbacks.remove(count)
    return seen


def _export(ckpt: formats.Checkpoint, out: Path, command: str):
    if command == "extract":
        return formats.extract(ckpt, [], out / "all.npz")
    return formats.convert(ckpt, out / ("out" if command == "tf-object" else f"out.{command}"), command).written


@pytest.mark.parametrize("command", ["verify", "report"])
def test_a_verify_or_report_of_many_tensors_runs_no_collection(bundle: str, command: str) -> None:
    with formats.open_checkpoint(bundle) as ckpt:
        def work() -> object:
            return formats.verify(ckpt) if command == "verify" else formats.report(ckpt, page="summary")

        work()  # (imports)
        done: list[object] = []
        assert _collections(lambda: done.append(work())) == []
    assert done[0].ok if command == "verify" else done[0].to_json()["kind"] == "checkpoint"


@pytest.mark.parametrize("command", ["extract", "npz", "safetensors", "tf-object"])
def test_an_export_of_many_tensors_runs_no_collection(tmp_path: Path, bundle: str, command: str) -> None:
    reports = []
    with formats.open_checkpoint(bundle) as ckpt:
        _export(ckpt, tmp_path / "warm", command)  # (a first run imports what it uses: imports make objects)
        assert gc.isenabled()
        seen = _collections(lambda: reports.append(_export(ckpt, tmp_path, command)))
    assert reports[0].tensors >= N and reports[0].verified
    assert seen == []
    assert gc.isenabled()


def test_the_collector_is_left_as_the_caller_set_it(tmp_path: Path, bundle: str) -> None:
    gc.disable()
    try:
        with formats.open_checkpoint(bundle) as ckpt:
            formats.extract(ckpt, [], tmp_path / "all.npz")
            formats.convert(ckpt, tmp_path / "out.npz", "npz")
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_without_the_pause_a_collection_would_run(tmp_path: Path, bundle: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above can fail: with the pause made a no-op, the same extract sets off collections."""
    from formats.core import gc_pause

    with formats.open_checkpoint(bundle) as ckpt:
        _export(ckpt, tmp_path / "warm", "extract")
        monkeypatch.setattr(gc_pause.gc, "disable", lambda: None)
        assert len(_collections(lambda: _export(ckpt, tmp_path, "extract"))) >= 3
        assert len(_collections(lambda: _export(ckpt, tmp_path / "npz", "npz"))) >= 3
