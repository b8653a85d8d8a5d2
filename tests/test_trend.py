"""`ckpt trend`: norms and changes across a run's checkpoints checked against numpy, gaps and shape changes,
sparklines, a golden table."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from ckpt_cli.render.trend import sparkline
from formats import write_checkpoint

from .conftest import CORPUS, MANIFEST
from .test_diff import GOLDEN, read_all


@pytest.mark.parametrize("folder, steps", [("seed_slots/tf_ckpts", [3, 4, 5]), ("seed_keras2/tf_ckpts", [8, 9, 10]),
                                           ("tf1_estimator", [1, 200])])
def test_trend_json_matches_numpy(run_cli, folder, steps):
    result = run_cli("trend", "--json", CORPUS / folder)
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    rels = [f"{folder}/{os.path.basename(c['path'])}" for c in doc["checkpoints"]]
    assert [c["step"] for c in doc["checkpoints"]] == steps
    values = [read_all(rel) for rel in rels]
    numeric = sorted(k for k, t in MANIFEST[rels[-1]]["tensors"].items() if t["dtype"] not in ("string", "variant"))
    assert [v["key"] for v in doc["variables"]] == numeric
    for v in doc["variables"]:
        xs = [vals[v["key"]].astype(np.float64) for vals in values]
        assert v["norm"] == pytest.approx([float(np.linalg.norm(x)) for x in xs], rel=1e-12)
        want = [None] + [float(np.linalg.norm(b - a)) for a, b in zip(xs, xs[1:])]
        assert v["change"][0] is None and v["change"][1:] == pytest.approx(want[1:], rel=1e-12, abs=1e-15)
        assert (v["shape"], v["dtype"]) == (MANIFEST[rels[-1]]["tensors"][v["key"]]["shape"],
                                            MANIFEST[rels[-1]]["tensors"][v["key"]]["dtype"])


def test_variables_that_appear_or_change_shape(run_cli, tmp_path):
    run = tmp_path / "run"
    write_checkpoint(run / "ckpt-1", {"w": np.array([3.0, 4.0], np.float32), "s": np.array(b"x", dtype=object)})
    write_checkpoint(run / "ckpt-2", {"w": np.array([3.0, 4.0, 12.0], np.float32), "b": np.float32(2)})
    write_checkpoint(run / "ckpt-10", {"w": np.array([0.0, 0.0, 0.0], np.float32), "b": np.float32(-1)})
    doc = json.loads(run_cli("trend", "--json", run).stdout)
    assert [c["step"] for c in doc["checkpoints"]] == [1, 2, 10]
    assert doc["variables"] == [
        {"key": "b", "shape": [], "dtype": "float32", "norm": [None, 2.0, 1.0], "change": [None, None, 3.0],
         "nonfinite": [None, 0, 0], "nonfinite_from": None, "mean": [None, 2.0, -1.0], "std": [None, 0.0, 0.0],
         "min": [None, 2.0, -1.0], "max": [None, 2.0, -1.0]},
        {"key": "w", "shape": [3], "dtype": "float32", "norm": [5.0, 13.0, 0.0], "change": [None, None, 13.0],
         "nonfinite": [0, 0, 0], "nonfinite_from": None, "mean": [3.5, 19 / 3, 0.0],
         "std": [0.5, pytest.approx(float(np.std([3.0, 4.0, 12.0])), rel=1e-12), 0.0], "min": [3.0, 3.0, 0.0],
         "max": [4.0, 12.0, 0.0]}]


def test_filters_and_unreadable_checkpoints(run_cli, tmp_path):
    run = tmp_path / "run"
    for step in (1, 2):
        write_checkpoint(run / f"ckpt-{step}", {"a/k": np.full(4, step, np.float32), "b": np.ones(1, np.float32)})
    (run / "ckpt-3.index").write_bytes(b"not an index")
    result = run_cli("trend", "--json", run, "a/*")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert [v["key"] for v in doc["variables"]] == ["a/k"]
    assert doc["variables"][0]["norm"] == [2.0, 4.0] and doc["variables"][0]["change"] == [None, 2.0]
    assert result.stderr.startswith(f"ckpt: warning: skipped {run / 'ckpt-3'}: ")


def test_not_a_directory(run_cli):
    result = run_cli("trend", CORPUS / "tf1_estimator/model.ckpt-1")
    assert result.exit_code == 3 and "not a directory" in result.stderr


def test_sparkline():
    assert sparkline([1, 2, 3]) == "▁▅█"
    assert sparkline([0, None, 7]) == "▁ █"
    assert sparkline([5, 5]) == "▁▁" and sparkline([None]) == " "


def test_golden_table(run_cli, monkeypatch):
    monkeypatch.chdir(CORPUS)
    assert run_cli("trend", "seed_slots/tf_ckpts").stdout == (GOLDEN / "trend_seed_slots.txt").read_text()


def _run(tmp_path, values):
    """A run directory with one checkpoint per step (``ckpt-1``, ``ckpt-2``...) holding ``w``."""
    for step, w in enumerate(values, start=1):
        write_checkpoint(str(tmp_path / "run" / f"ckpt-{step}"), {"w": np.array(w, np.float32)})
    return tmp_path / "run"


def test_trend_flags_nan_and_inf(run_cli, tmp_path):
    """Issue 14 #7: [1, 2, 3] -> [1, nan, inf] is flagged with the step it began at; --check-finite exits 1."""
    run = _run(tmp_path, [[1, 2, 3], [1, np.nan, np.inf], [1, np.nan, 5]])
    doc = json.loads(run_cli("trend", "--json", run).stdout)
    (w,) = doc["variables"]
    assert w["nonfinite"] == [0, 2, 1] and w["nonfinite_from"] == 1 and doc["diverged"] == ["w"]
    assert w["norm"][0] == pytest.approx(float(np.linalg.norm([1, 2, 3])))
    assert w["norm"][1] == 1.0 and w["change"][1] is None  # norms over finite elements; a NaN change is None
    table = run_cli("trend", run)
    # these checkpoints hold no step variable: the checkpoint is named by the number in its name (issue 36)
    assert table.exit_code == 0 and "NaN/Inf from save 2" in table.stdout
    assert "diverged w: 1 NaN/Inf at the last checkpoint, first at save 2" in table.stdout
    assert table.stdout.endswith(": 3 checkpoints (steps -, -, -; saves 1, 2, 3), 1 variables\n")
    assert run_cli("trend", "--check-finite", run).exit_code == 1
    healthy = _run(tmp_path / "ok", [[1, 2], [2, 3]])
    assert run_cli("trend", "--check-finite", healthy).exit_code == 0


def test_trend_of_an_empty_directory_is_an_error(run_cli, tmp_path):
    (tmp_path / "empty").mkdir()
    result = run_cli("trend", tmp_path / "empty")
    assert result.exit_code == 3
    assert result.stderr == f"ckpt: error: {tmp_path / 'empty'}: no checkpoint in this directory (trend needs a run's checkpoints)\n"


def test_trend_leaves_out_checkpoints_of_other_runs(run_cli, tmp_path):
    run = _run(tmp_path, [[1], [2], [3]])
    write_checkpoint(str(run / "other-7"), {"z": np.array([1], np.float32)})
    result = run_cli("trend", "--json", run)
    doc = json.loads(result.stdout)
    assert [c["step"] for c in doc["checkpoints"]] == [1, 2, 3]
    assert [v["key"] for v in doc["variables"]] == ["w"]
    assert doc["notes"] == ["left out other-7: not a checkpoint of this run"]
