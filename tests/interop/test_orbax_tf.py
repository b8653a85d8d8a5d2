"""Optional tier: a TensorFlow checkpoint and its Orbax successor. TensorFlow itself (``tf.raw_ops.SaveV2``) writes a
bundle holding an Orbax step's tensors under the same keys (the values checked against the goldens of Orbax's own
``restore()`` first); ``ckpt diff`` finds them identical, and names the tensors that changed against the next step.
Needs tensorflow and tensorstore; skipped where either is missing."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.interop

pytest.importorskip("tensorstore")
tf = pytest.importorskip("tensorflow")

import formats  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data" / "orbax"


def test_a_tensorflow_bundle_and_the_orbax_step_it_holds(run_cli: Any, tmp_path: Path) -> None:
    want = json.loads((DATA / "goldens.json").read_text())["run/2"]["restore"]
    names, values = [], []
    with formats.open_checkpoint(DATA / "run/2") as step:
        for key, entry in step.items():
            value = entry.read()
            assert hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest() == want[key]["sha256"], key
            names.append(key)
            values.append(tf.constant(value))
    prefix = str(tmp_path / "tf" / "ckpt")
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names), tensors=values)
    same = run_cli("diff", "--quiet", prefix, DATA / "run/2")
    assert same.exit_code == 0, same.output
    changed = run_cli("diff", "--json", prefix, DATA / "run/3")
    assert changed.exit_code == 1, changed.output
    three = json.loads((DATA / "goldens.json").read_text())["run/3"]["restore"]
    differ = {k for k in want if want[k]["sha256"] != three[k]["sha256"]}
    assert differ and all(k in changed.stdout for k in differ)
