"""Keras 2 training resumes in Keras 3 after ``ckpt convert --to keras3-h5`` (issue 26, item 3).

tf-keras trains each model (a Dense MLP, a CNN with BatchNormalization, an LSTM) 5 steps with Adam and with
SGD(momentum=0.9), saves ``tf.train.Checkpoint(model=, optimizer=)`` and TF-format ``save_weights`` (which
holds the compiled model's optimizer too), and goes on 3 steps uninterrupted. Keras 3 writes templates for
the same model and optimizer (``.weights.h5`` after ``optimizer.build``, and ``.keras``); ckpt converts each
source onto each template (``-o OUT.weights.h5`` / ``-o OUT.keras``); Keras 3 loads the output
(``load_weights`` / ``keras.models.load_model``) and trains the same 3 steps.

- Every optimizer array Keras 3 holds after loading equals, bit for bit, the tf-keras optimizer's value after
  5 steps (slots tied by Keras' own variable names, not by ckpt's), and Keras warns of nothing skipped.
- The weights after the 3 resumed steps equal those of a Keras 3 model whose weights and optimizer variables
  were assigned by hand from tf-keras' values and trained the same 3 steps (the best a conversion can do:
  tf-keras and Keras 3 compute the same steps with different kernels), and both are near the uninterrupted
  tf-keras run.

The programs (tests/interop/programs/keras_resume.py) run in three subprocesses: tf-keras training and the
Keras 3 templates side by side, then every Keras 3 resume in one process.
"""
from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from .conftest import keras_env

pytest.importorskip("tensorflow")
pytest.importorskip("tf_keras")
pytestmark = pytest.mark.interop

PROGRAM = Path(__file__).parent / "programs" / "keras_resume.py"
N, M = 5, 3
MODELS = ("mlp", "cnn", "lstm")
OPTIMIZERS = ("adam", "sgd")
SOURCES = ("checkpoint", "save_weights")
TEMPLATES = ("weights.h5", "keras")
INPUTS = {"mlp": (6,), "cnn": (8, 8, 2), "lstm": (5, 3)}
SAME = 1e-6
"""How near the resumed weights must come to the by-hand reference (the same state trained by the same
Keras 3 in the same process: equal in practice)."""
NEAR = 1e-2
"""How near the by-hand reference comes to the uninterrupted tf-keras run (tf-keras and Keras 3 compute a
step with different kernels; BatchNormalization's differ most)."""


def _keras3() -> bool:
    try:
        return importlib.metadata.version("keras").startswith("3")
    except importlib.metadata.PackageNotFoundError:
        return False


class Workspace:
    """Every program run and conversion, done once for the module; the tests read the results."""

    def __init__(self, root: Path) -> None:
        self.root = root
        rng = np.random.default_rng(26)
        data = {}
        for model, shape in INPUTS.items():
            data[f"{model}:x"] = rng.normal(size=(16, *shape)).astype("float32")
            data[f"{model}:y"] = rng.normal(size=(16, 3)).astype("float32")
        np.savez(root / "data.npz", **data)
        self.status: dict[str, str] = {}
        self.converted: dict[str, tuple[int, str, str]] = {}

    def path(self, *parts: str) -> Path:
        out = self.root.joinpath(*parts)
        out.parent.mkdir(parents=True, exist_ok=True)
        return out

    def source(self, model: str, opt: str, kind: str) -> Path:
        return self.path("k2", model, opt, kind, "ckpt")

    def template(self, model: str, opt: str, kind: str) -> Path:
        return self.path("k3", model, opt, f"model.{kind}")

    def output(self, case: str, kind: str) -> Path:
        return self.path("out", case, f"model.{kind}")

    def dump(self, name: str, when: str) -> Path:
        return self.path("dumps", f"{name}.{when}.npz")

    def run(self) -> None:
        train, templates = [], []
        for model in MODELS:
            for opt in OPTIMIZERS:
                base = dict(model=model, optimizer=opt)
                train.append(dict(base, id=f"k2-{model}-{opt}", mode="train", n=N, m=M,
                                  checkpoint=str(self.source(model, opt, "checkpoint")),
                                  save_weights=str(self.source(model, opt, "save_weights")),
                                  state=str(self.dump(f"k2-{model}-{opt}", "state")),
                                  after=str(self.dump(f"k2-{model}-{opt}", "after"))))
                templates.append(dict(base, id=f"tpl-{model}-{opt}", mode="template",
                                      weights=str(self.template(model, opt, "weights.h5")),
                                      keras=str(self.template(model, opt, "keras"))))
        self._programs([("k2", train, True), ("k3-templates", templates, False)])
        resumes = []
        for model in MODELS:
            for opt in OPTIMIZERS:
                base = dict(model=model, optimizer=opt, mode="resume", m=M)
                name = f"hand-{model}-{opt}"
                resumes.append(dict(base, id=name, load="by_hand", path=str(self.dump(f"k2-{model}-{opt}", "state")),
                                    state=str(self.dump(name, "state")), after=str(self.dump(name, "after"))))
                for source in SOURCES:
                    for kind in TEMPLATES:
                        case = f"{model}-{opt}-{source}-{kind}"
                        out = self.output(case, kind)
                        self._convert(case, self.source(model, opt, source), out, self.template(model, opt, kind))
                        if self.converted[case][0] == 0:
                            resumes.append(dict(base, id=case, load=kind, path=str(out),
                                                state=str(self.dump(case, "state")),
                                                after=str(self.dump(case, "after"))))
        self._programs([("k3-resume", resumes, False)])

    def _convert(self, case: str, src: Path, out: Path, template: Path) -> None:
        from click.testing import CliRunner

        from ckpt_cli.main import cli

        args = ["convert", str(src), "-o", str(out), "--to", "keras3-h5", "--template", str(template), "--json"]
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
        self.converted[case] = (result.exit_code, result.stdout, result.stderr)

    def _programs(self, batches: list[tuple[str, list[dict], bool]]) -> None:
        running = []
        for name, jobs, legacy in batches:
            spec = self.root / f"{name}.json"
            spec.write_text(json.dumps({"data": str(self.root / "data.npz"), "jobs": jobs}))
            running.append(subprocess.Popen([sys.executable, str(PROGRAM), str(spec)], stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, text=True, env=keras_env(legacy)))
        for proc in running:
            out, err = proc.communicate(timeout=600)
            assert proc.returncode == 0, err[-3000:]
            self.status.update(json.loads(out.strip().splitlines()[-1]))

    def load(self, name: str, when: str) -> dict[str, np.ndarray]:
        assert self.status.get(name) == "ok", self.status.get(name)
        return dict(np.load(self.dump(name, when)))


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    if not _keras3():
        pytest.skip("Keras 3 is not installed")
    space = Workspace(tmp_path_factory.mktemp("keras3_resume"))
    space.run()
    return space


CASES = [(m, o, s, k) for m in MODELS for o in OPTIMIZERS for s in SOURCES for k in TEMPLATES]


def _optimizer_arrays(dump: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k: v for k, v in dump.items() if k.startswith("o:") and k != "o:learning_rate"}


def _weights(dump: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k: v for k, v in dump.items() if k.startswith("w:")}


def _max_difference(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> float:
    assert sorted(a) == sorted(b)
    return max(float(np.max(np.abs(a[k].astype(np.float64) - b[k]))) if a[k].size else 0.0 for k in a)


@pytest.mark.parametrize("model,opt,source,kind", CASES, ids=["-".join(c) for c in CASES])
def test_keras3_resumes_keras2_training(workspace: Workspace, model: str, opt: str, source: str, kind: str) -> None:
    case = f"{model}-{opt}-{source}-{kind}"
    code, stdout, stderr = workspace.converted[case]
    assert code == 0, stdout + stderr
    problems = json.loads(stdout)["problems"]
    assert [p for p in problems if p["severity"] == "error"] == []
    assert {p["key"] for p in problems if p["kind"] == "unused"} <= {"object_graph", "save_counter"}, problems
    keras2 = workspace.load(f"k2-{model}-{opt}", "state")
    resumed = workspace.load(case, "state")
    assert list(resumed["warnings"]) == [""], list(resumed["warnings"])
    want, got = _optimizer_arrays(keras2), _optimizer_arrays(resumed)
    assert sorted(got) == sorted(want) and int(got["o:iterations"]) == N
    restored = [k for k in want if got[k].dtype == want[k].dtype and got[k].tobytes() == want[k].tobytes()]
    assert sorted(restored) == sorted(want), f"{len(restored)} of {len(want)} optimizer arrays restored"
    assert float(resumed["o:learning_rate"]) == float(keras2["o:learning_rate"])
    for key, value in _weights(keras2).items():
        assert resumed[key].tobytes() == value.tobytes(), key
    after = _weights(workspace.load(case, "after"))
    by_hand = _weights(workspace.load(f"hand-{model}-{opt}", "after"))
    uninterrupted = _weights(workspace.load(f"k2-{model}-{opt}", "after"))
    reference = _max_difference(by_hand, uninterrupted)
    print(f"{case}: {len(restored)}/{len(want)} optimizer arrays restored; after {M} steps: "
          f"{_max_difference(after, by_hand):.3g} from the by-hand reference, "
          f"{_max_difference(after, uninterrupted):.3g} from tf-keras' (by hand: {reference:.3g})")
    assert _max_difference(after, by_hand) <= SAME
    assert _max_difference(after, uninterrupted) <= reference + SAME
    assert reference <= NEAR
