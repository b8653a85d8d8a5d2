"""The Keras zoo's harness (tests/interop/programs) without Keras: what it removes when a model is done, and the
gate that keeps its builders a few models ahead of the loads (stop 56's CI ran out of disk holding the whole zoo,
7.8 GB). The zoo itself runs in tests/interop/test_keras3_zoo.py."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

PROGRAMS = Path(__file__).parent / "interop" / "programs"


def _program(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"_harness_{name}", PROGRAMS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_finished_model_keeps_its_inputs_predictions_and_logs_only(tmp_path: Path) -> None:
    report = _program("zoo_report")
    files = ["k2/x.npy", "k2/pred.npy", "k2/w.h5", "k2/full.h5", "k2/tf/checkpoint", "k2/tf/ckpt.index",
             "k2/tf/ckpt.data-00000-of-00001", "k3/t.weights.h5", "k3/t.keras", "out/h5-weights.weights.h5",
             "out/h5-weights.log", "out/tf-keras.weights.h5", "out/tf-keras.log"]
    for name in files:
        (tmp_path / "VGG16" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "VGG16" / name).write_bytes(b"x" * 10)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "w.h5").write_bytes(b"y")
    assert report.bytes_under(tmp_path / "VGG16") == 10 * len(files)
    report.remove_weights(tmp_path, "VGG16")
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert left == ["VGG16/k2/pred.npy", "VGG16/k2/x.npy", "VGG16/out/h5-weights.log", "VGG16/out/tf-keras.log",
                    "other/w.h5"]
    assert report.bytes_under(tmp_path / "gone") == 0


def test_the_gate_lets_a_builder_build_as_many_models_as_the_harness_wrote(tmp_path: Path) -> None:
    gate = _program("keras_zoo").Gate(str(tmp_path))
    assert gate.allows(0) and gate.allows(40)  # no file: every model (keras_zoo.py run by hand)
    (tmp_path / "allowed").write_text("3")
    assert [gate.allows(i) for i in range(5)] == [True, True, True, False, False]
    (tmp_path / "allowed").write_text("4")
    assert gate.allows(3) and not gate.allows(4)
    gate.wait(3)  # returns at once


def test_jobs_are_read_as_the_other_process_writes_them(tmp_path: Path) -> None:
    zoo = _program("keras_zoo")
    path = tmp_path / "jobs.jsonl"
    path.write_text('{"id": "a"}\n{"id": ')
    jobs = zoo.Jobs(str(path))
    try:
        assert jobs.next() == {"id": "a"}
        assert jobs.next() is zoo.WAITING  # half a line: not yet
        with open(path, "a") as f:
            f.write('"b"}\nnull\n')
        assert jobs.next() == {"id": "b"}
        assert jobs.next() is None
    finally:
        jobs.close()
