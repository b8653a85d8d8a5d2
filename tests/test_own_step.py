"""Issue 36: "step" in ``ls DIR``, ``trend`` and the run report was the number in a checkpoint's name (``ckpt-5``:
the save number); the step a user means is the checkpoint's own (``step``, ``global_step``, the optimizer's
iterations). Both are shown now - ``save`` and ``step`` - in text, ``--json`` (``step`` keeps its meaning,
``own_step`` is new) and the HTML report; ``-`` (null) for a checkpoint without a step variable, found by
reading that one scalar only."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from formats.api import open_checkpoint
from formats.concepts.step import own_step
from formats.core.object_keys import VALUE_SUFFIX
from formats.tf_bundle.writer import write_checkpoint

from .conftest import CORPUS

RUNS = {"seed_slots/tf_ckpts": ("ckpt-{}", (3, 4, 5), "step" + VALUE_SUFFIX),
        "seed_keras2/tf_ckpts": ("ckpt-{}", (8, 9, 10), "step" + VALUE_SUFFIX),
        "tf1_estimator": ("model.ckpt-{}", (1, 200), "global_step"),
        "tf1_adam": ("model.ckpt-{}", (1, 200), "global_step")}
"""Corpus runs: checkpoint name pattern, the numbers in their names, the key of the step variable they hold."""


def _variable(path: Path, key: str) -> int:
    """The oracle: the step variable's value, read by key (not by the step detection under test)."""
    with open_checkpoint(str(path)) as ckpt:
        value = ckpt[key].read()
    assert value.shape == () and value.dtype.kind == "i"
    return int(value)


@pytest.mark.parametrize("run", sorted(RUNS))
def test_ls_of_a_run_shows_the_save_number_and_the_checkpoints_own_step(run_cli, run: str) -> None:
    pattern, saves, key = RUNS[run]
    steps = [_variable(CORPUS / run / pattern.format(n), key) for n in saves]
    assert steps != list(saves) or run.startswith("tf1")  # the corpus' TF2 runs saved every 10 steps
    lines = run_cli("ls", CORPUS / run).stdout.splitlines()
    assert lines[0].split() == ["checkpoint", "save", "step", "format", "tensors", "size", "modified"]
    assert [line.split()[:3] for line in lines[1:-1]] == [
        [pattern.format(n), str(n), str(s)] for n, s in zip(saves, steps)]
    doc = json.loads(run_cli("ls", "--json", CORPUS / run).stdout)
    assert [(Path(c["path"]).name, c["step"], c["own_step"]) for c in doc["checkpoints"]] == [
        (pattern.format(n), n, s) for n, s in zip(saves, steps)]


def test_the_step_values_of_the_corpus() -> None:
    """What the runs above hold, written out: a CheckpointManager run saved every 10 steps, an Estimator at its
    global step; the optimizer's iterations where no step variable is kept (Keras files)."""
    assert [_variable(CORPUS / f"seed_slots/tf_ckpts/ckpt-{n}", "step" + VALUE_SUFFIX) for n in (3, 4, 5)] == [30, 40, 50]
    with open_checkpoint(str(CORPUS / "keras2_tagger/tagger_model.h5")) as ckpt:
        assert own_step(ckpt) == (int(ckpt["optimizer_weights/iteration:0"].read()), "optimizer_weights/iteration:0")
    with open_checkpoint(str(CORPUS / "keras3_tagger/tagger.keras")) as ckpt:
        assert own_step(ckpt)[1] == "optimizer/vars/0" and ckpt["optimizer/vars/0"].name == "adam/iteration"
    with open_checkpoint(str(CORPUS / "saved_models/tf_keras_model")) as ckpt:
        assert own_step(ckpt) == (_variable(CORPUS / "saved_models/tf_keras_model",
                                            "optimizer/_iterations" + VALUE_SUFFIX),
                                  "optimizer/_iterations" + VALUE_SUFFIX)
    for rel in ("keras2_tagger/tagger_weights.h5", "tf2_mixed/all_dtypes/ckpt-1"):  # no step, no optimizer
        with open_checkpoint(str(CORPUS / rel)) as ckpt:
            assert own_step(ckpt) == (None, None)


def test_a_checkpoint_without_a_step_variable_says_so(run_cli, tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_checkpoint(run / "ckpt-1", {"w": np.ones(3, np.float32)})
    write_checkpoint(run / "ckpt-2", {"w": np.ones(3, np.float32), "global_step": np.asarray(7, np.int64)})
    lines = run_cli("ls", run).stdout.splitlines()
    assert [line.split()[:3] for line in lines[1:-1]] == [["ckpt-1", "1", "-"], ["ckpt-2", "2", "7"]]
    doc = json.loads(run_cli("ls", "--json", run).stdout)
    assert [(c["step"], c["own_step"]) for c in doc["checkpoints"]] == [(1, None), (2, 7)]


def test_only_the_step_scalar_is_read(run_cli, tmp_path: Path) -> None:
    """Every other byte of the data file is destroyed - the weights and the object graph - and the step is still
    listed: the listing read that one scalar (``verify`` finds the rest corrupt)."""
    run = tmp_path / "run"
    shutil.copytree(CORPUS / "seed_slots/tf_ckpts", run)
    for f in run.iterdir():
        f.chmod(0o644)
    prefix = run / "ckpt-5"
    with open_checkpoint(str(prefix)) as ckpt:
        stored = ckpt["step" + VALUE_SUFFIX].stored_range()
        assert stored is not None
        _, offset, size, _ = stored
    data = Path(str(prefix) + ".data-00000-of-00001")
    raw = bytearray(data.read_bytes())
    kept = raw[offset:offset + size]
    raw[:] = bytes(len(raw))
    raw[offset:offset + size] = kept
    data.write_bytes(bytes(raw))
    assert run_cli("verify", prefix).exit_code == 1  # problems found: every other tensor fails its checksum
    row = next(line for line in run_cli("ls", run).stdout.splitlines() if line.startswith("ckpt-5 "))
    assert row.split()[:4] == ["ckpt-5", "5", "50", "tf-object"]


def _diverging_run(tmp_path: Path) -> Path:
    """``ckpt-1..3`` with ``global_step`` 10, 20, 30; ``w`` gets a NaN at ``ckpt-2``."""
    run = tmp_path / "run"
    for n, w in enumerate([[1, 2], [np.nan, 2], [np.nan, 3]], start=1):
        write_checkpoint(run / f"ckpt-{n}", {"w": np.asarray(w, np.float32), "global_step": np.asarray(10 * n, np.int64)})
    return run


def test_trend_names_the_checkpoints_by_their_own_step(run_cli, tmp_path: Path) -> None:
    run = _diverging_run(tmp_path)
    out = run_cli("trend", run).stdout
    assert "NaN/Inf from step 20" in out
    assert "diverged w: 1 NaN/Inf at the last checkpoint, first at step 20" in out
    assert out.endswith(f"{run}: 3 checkpoints (steps 10, 20, 30; saves 1, 2, 3), 2 variables\n")
    doc = json.loads(run_cli("trend", "--json", run).stdout)
    assert [(c["step"], c["own_step"]) for c in doc["checkpoints"]] == [(1, 10), (2, 20), (3, 30)]
    plot = run_cli("trend", "--plot", run, "w").stdout.splitlines()
    axis = next(line for line in plot if "(step)" in line)
    assert axis.split() == ["10", "(step)", "30"]


def test_trend_of_the_corpus_run(run_cli) -> None:
    doc = json.loads(run_cli("trend", "--json", CORPUS / "seed_slots/tf_ckpts").stdout)
    assert [(c["step"], c["own_step"]) for c in doc["checkpoints"]] == [(3, 30), (4, 40), (5, 50)]


def test_the_run_report_shows_save_and_step(run_cli, tmp_path: Path) -> None:
    run = _diverging_run(tmp_path)
    doc = json.loads(run_cli("report", run, "--json").stdout)
    assert [(c["step"], c["own_step"]) for c in doc["run"]["checkpoints"]] == [(1, 10), (2, 20), (3, 30)]
    out = tmp_path / "run.html"
    assert run_cli("report", run, "-o", out).exit_code == 0
    page = out.read_text()
    assert ">save</th>" in page and ">step</th>" in page
    for n in (1, 2, 3):
        assert f"<tr><td>{n}</td><td>{10 * n}</td>" in page
    assert "NaN/Inf from step 20" in page
    assert ">step 10</text>" in page and ">step 30</text>" in page  # the plots' x axis


def test_the_run_report_of_checkpoints_without_a_step(run_cli, tmp_path: Path) -> None:
    run = tmp_path / "run"
    for n in (1, 2):
        write_checkpoint(run / f"ckpt-{n}", {"w": np.full(2, n, np.float32)})
    out = tmp_path / "run.html"
    assert run_cli("report", run, "-o", out).exit_code == 0
    page = out.read_text()
    assert "<tr><td>1</td><td>-</td>" in page and "<tr><td>2</td><td>-</td>" in page
    assert ">save 1</text>" in page and ">save 2</text>" in page


def test_ls_of_a_run_opens_each_index_and_the_one_data_file_of_its_step(run_cli, tmp_path: Path, record_opens) -> None:
    """With a step variable a listing opens that scalar's data file too - the one shard holding it - and nothing
    else (tests/test_zero_copy.py: without one, indexes only)."""

    run = tmp_path / "run"
    for n in (1, 2):
        write_checkpoint(run / f"ckpt-{n}", {"w": np.ones(3, np.float32), "global_step": np.asarray(n, np.int64)},
                         shards=[0, 1])
    opened = record_opens()
    doc = json.loads(run_cli("ls", "--json", run).stdout)
    assert [c["own_step"] for c in doc["checkpoints"]] == [1, 2]
    assert sorted(set(p for p in opened if str(run) in p)) == sorted(
        f"{run}/ckpt-{n}{suffix}" for n in (1, 2) for suffix in (".index", ".data-00001-of-00002"))
