"""``ckpt report`` as units (:func:`formats.ops.units.run_units`): on local threads the report is, to the byte,
the one ckpt wrote before its work became units. The golden files ``tests/golden/report/*.json`` were written by
the code before that change (``python -m tests.test_report_units`` rewrites them: only ever from a known-good
tree), with the corpus folder written as ``CORPUS``."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import formats

from .conftest import CORPUS

GOLDEN = Path(__file__).parent / "golden" / "report"
CASES: dict[str, tuple[tuple[str, ...], bool]] = {
    "checkpoint_seed_slots_ckpt5": (("seed_slots/tf_ckpts/ckpt-5",), True),
    "checkpoint_all_dtypes": (("tf2_mixed/all_dtypes/ckpt-1",), True),
    "checkpoint_partitioned": (("tf1_partitioned/model.ckpt-200",), False),
    "diff_seed_slots_3_5": (("seed_slots/tf_ckpts/ckpt-3", "seed_slots/tf_ckpts/ckpt-5"), False),
    "diff_tf1_adam_1_200": (("tf1_adam/model.ckpt-1", "tf1_adam/model.ckpt-200"), False),
}
"""Golden file name -> (corpus paths, log bins)."""
RUNS = {"run_seed_slots": "seed_slots/tf_ckpts", "run_tf1_adam": "tf1_adam", "run_tf1_estimator": "tf1_estimator"}
"""Golden file name -> a run directory of the corpus."""


def report_text(rels: tuple[str, ...], log_bins: bool, **kwargs: Any) -> str:
    """The report's JSON as ``ckpt report --json`` would hold it, keys sorted, the corpus folder as ``CORPUS``
    (a run's checkpoints without their ``mtime``: when the corpus was checked out)."""
    doc = formats.report(*[CORPUS / rel for rel in rels], log_bins=log_bins, **kwargs).to_json()
    for row in (doc["run"] or {}).get("checkpoints", []) if doc["kind"] == "run" else []:
        row.pop("mtime")
    return json.dumps(doc, sort_keys=True, indent=0).replace(str(CORPUS), "CORPUS") + "\n"


NUMPY_OF_THE_GOLDEN = 2
"""The numpy major version the golden files were written with: another one (CI's oldest tier runs numpy 1.24)
computes some histogram edges in the last bit differently, so there the floats are compared to 1e-12."""


def _close(got: Any, want: Any, where: str = "") -> None:
    """``got == want``, but floats to a relative 1e-12."""
    if isinstance(want, float) and isinstance(got, (float, int)):
        assert got == pytest.approx(want, rel=1e-12, abs=1e-300), where
    elif isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), where
        for key in want:
            _close(got[key], want[key], f"{where}/{key}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for i, (a, b) in enumerate(zip(got, want)):
            _close(a, b, f"{where}[{i}]")
    else:
        assert got == want, where


@pytest.mark.parametrize("jobs", [1, 3])
@pytest.mark.parametrize("name", sorted(CASES))
def test_local_threads_give_the_report_ckpt_gave_before_units(name: str, jobs: int) -> None:
    import numpy as np

    rels, log_bins = CASES[name]
    got, want = report_text(rels, log_bins, jobs=jobs), (GOLDEN / f"{name}.json").read_text()
    if int(np.__version__.split(".")[0]) == NUMPY_OF_THE_GOLDEN:
        assert got == want  # to the byte
    else:
        _close(json.loads(got), json.loads(want))


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_runs_report_is_the_one_ckpt_gave_before_units(name: str) -> None:
    """Exactly, but for the norms of the changes: their squares are now summed by numpy's pairwise sum (the same
    bits on any machine), before by BLAS's dot; they may differ in the last bit or two."""
    got = json.loads(report_text((RUNS[name],), False, jobs=3))
    want = json.loads((GOLDEN / f"{name}.json").read_text())
    for mine, golden in zip(got["run"]["variables"], want["run"]["variables"]):
        assert [c is None for c in mine["change"]] == [c is None for c in golden["change"]]
        assert [c for c in mine["change"] if c is not None] == pytest.approx(
            [c for c in golden["change"] if c is not None], rel=1e-14)
        mine["change"] = golden["change"] = None
    assert got == want


if __name__ == "__main__":  # regenerate the golden files (see the module doc)
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for name, (rels, log_bins) in CASES.items():
        (GOLDEN / f"{name}.json").write_text(report_text(rels, log_bins, jobs=1))
    for name, rel in RUNS.items():
        (GOLDEN / f"{name}.json").write_text(report_text((rel,), False, jobs=1))
