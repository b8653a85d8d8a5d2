"""Training resumes where it stopped after `ckpt convert`: TF1, tf-keras (legacy and current optimizers) and
Keras 3, compared with an uninterrupted run.

For each optimizer and direction: the source program trains N steps, saves, trains M more without
stopping and dumps every variable and slot (the uninterrupted run); ckpt converts the checkpoint saved
after N steps; the target program restores it into its own optimizer and trains M steps. Every weight,
every slot and the step count must equal the uninterrupted run within 1e-5. Slots are compared by
meaning through a mapping written here from the optimizers' update rules (TF1 Momentum's accumulator
is ``m / -lr`` of Keras'), independent of ckpt's table.

The programs run in few subprocesses (tests/interop/programs): one per framework to write sources,
uninterrupted runs and templates, one per framework to resume; TF1 graph mode, tf-keras
(``TF_USE_LEGACY_KERAS=1``) and Keras 3 cannot share a process.
"""
from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from .conftest import keras_env

pytest.importorskip("tensorflow")
pytest.importorskip("tf_keras")
pytestmark = pytest.mark.interop

PROGRAMS = Path(__file__).parent / "programs"
N, M = 5, 3
LR_MOMENTUM = 0.05
OPTIMIZERS = ["momentum", "adam", "adagrad", "rmsprop", "ftrl", "adadelta"]
WEIGHTS = ("dense/kernel", "dense/bias")


def _has_keras3() -> bool:
    try:
        return importlib.metadata.version("keras").startswith("3")
    except importlib.metadata.PackageNotFoundError:
        return False


KERAS3 = _has_keras3()

# What each framework calls each slot, by meaning (from the update rules; "velocity" is stored as -lr x
# TF1's accumulator by every Keras SGD).
TF1_SLOTS = {"momentum": {"Momentum": "velocity"}, "adam": {"Adam": "m", "Adam_1": "v"},
             "adagrad": {"Adagrad": "acc"}, "rmsprop": {"RMSProp": "ms", "RMSProp_1": "mom"},
             "ftrl": {"Ftrl": "acc", "Ftrl_1": "linear"}, "adadelta": {"Adadelta": "grad2", "Adadelta_1": "delta2"}}
LEGACY_SLOTS = {"momentum": {"momentum": "velocity"}, "adam": {"m": "m", "v": "v"}, "adagrad": {"accumulator": "acc"},
                "rmsprop": {"rms": "ms", "momentum": "mom"}, "ftrl": {"accumulator": "acc", "linear": "linear"},
                "adadelta": {"accum_grad": "grad2", "accum_var": "delta2"}, "nadam": {"m": "m", "v": "v"}}
CURRENT_SLOTS = {"momentum": {"m": "velocity"}, "adam": {"m": "m", "v": "v"}, "adagrad": {"accumulator": "acc"},
                 "rmsprop": {"velocity": "ms", "momentum": "mom"}, "ftrl": {"accumulator": "acc", "linear": "linear"},
                 "adadelta": {"accumulated_grad": "grad2", "accumulated_delta_var": "delta2"},
                 "nadam": {"m": "m", "v": "v"}}
KERAS3_SLOTS = {"momentum": {"momentum": "velocity"}, "adam": {"momentum": "m", "velocity": "v"},
                "adagrad": {"accumulator": "acc"}, "rmsprop": {"velocity": "ms", "momentum": "mom"},
                "ftrl": {"accumulator": "acc", "linear": "linear"},
                "adadelta": {"accumulated_grad": "grad2", "accumulated_delta_var": "delta2"}}


def canonical(dump: dict[str, np.ndarray], framework: str, optimizer: str) -> dict[str, np.ndarray]:
    """``{"dense/kernel", "dense/kernel:<meaning>", "step"}`` from a program's dump (Keras velocity / -lr)."""
    out: dict[str, np.ndarray] = {}
    for var in WEIGHTS:
        out[var] = dump[var] if framework == "tf1" else dump[f"var:{var}"]
    if framework == "tf1":
        out["step"] = dump["global_step"]
        for suffix, meaning in TF1_SLOTS[optimizer].items():
            for var in WEIGHTS:
                out[f"{var}:{meaning}"] = dump[f"{var}/{suffix}"]
        return out
    out["step"] = dump["step"]
    for key, value in dump.items():
        found = _keras_slot(key, framework, optimizer)
        if found is not None:
            var, meaning = found
            out[f"{var}:{meaning}"] = value / -LR_MOMENTUM if meaning == "velocity" else value
    return out


def _keras_slot(key: str, framework: str, optimizer: str) -> tuple[str, str] | None:
    if framework == "legacy" and key.startswith("slot:"):
        _, var, slot = key.split(":")
        return var, LEGACY_SLOTS[optimizer][slot]
    if framework == "current" and key.startswith("opt:") and "/dense/" in key:
        slot, var = key[4:].split("/dense/")
        return f"dense/{var}", CURRENT_SLOTS[optimizer][slot.rsplit("/", 1)[-1]]
    if framework == "keras3" and key.startswith("opt:"):
        for var in WEIGHTS:
            marker = var.replace("/", "_") + "_"
            if marker in key:
                return var, KERAS3_SLOTS[optimizer][key.split(marker, 1)[1]]
    return None


@dataclass
class Case:
    """One direction for one optimizer: the source run, the conversion, the target run."""

    id: str
    optimizer: str
    source: str                   # tf1, legacy, current, keras3
    target: str
    convert: list[str]            # arguments after SRC -o OUT
    kind: str = "checkpoint"      # the target's template / restore kind
    error: str | None = None      # the plan error a pair without an equivalent must report
    via_object: bool = False      # TF1 -> tf-object -> tf-name -> TF1


def _cases() -> list[Case]:
    cases = []
    for flavor in ("legacy", "current"):
        for opt in OPTIMIZERS:
            for kind in ("checkpoint", "save_weights"):
                cases.append(Case(f"tf1-to-{flavor}-{kind}-{opt}", opt, "tf1", flavor, ["--to", "tf-object"], kind))
            hparams = ["--hparam", "beta_1=0.9", "--hparam", "beta_2=0.999"] if flavor == "current" else []
            cases.append(Case(f"{flavor}-to-tf1-{opt}", opt, flavor, "tf1",
                              ["--to", "tf-name", "--slot-names", "tf1", *hparams]))
    for opt in OPTIMIZERS:
        cases.append(Case(f"tf1-generic-object-{opt}", opt, "tf1", "tf1", ["--to", "tf-object"]))
        cases.append(Case(f"tf1-object-and-back-{opt}", opt, "tf1", "tf1", ["--to", "tf-object"], via_object=True))
        cases.append(Case(f"current-to-keras3-{opt}", opt, "current", "keras3", ["--to", "keras3-h5"], "weights.h5"))
        cases.append(Case(f"keras3-to-current-{opt}", opt, "keras3", "current", ["--to", "tf-object"]))
    cases += [Case(f"legacy-to-keras3-{opt}", opt, "legacy", "keras3", ["--to", "keras3-h5"], "weights.h5")
              for opt in ("momentum", "adam")]
    cases += [
        Case("no-equivalent-tf1-adagrad-into-adam", "adagrad", "tf1", "legacy", ["--to", "tf-object"],
             error="Adagrad state has no mathematical equivalent in Adam"),
        Case("no-equivalent-legacy-nadam-into-nadam", "nadam", "legacy", "current", ["--to", "tf-object"],
             error="are different algorithms: no state of one continues the other"),
        Case("no-equivalent-nadam-into-tf1", "nadam", "current", "tf1", ["--to", "tf-name", "--slot-names", "tf1"],
             error="TF1 (tf.compat.v1.train) has no Nadam optimizer"),
    ]
    return [c for c in cases if KERAS3 or "keras3" not in (c.source, c.target)]


CASES = _cases()


def _template_optimizer(case: Case) -> str:
    return "adam" if case.id == "no-equivalent-tf1-adagrad-into-adam" else case.optimizer


class Workspace:
    """Runs every program once per phase and every conversion; tests read the results."""

    def __init__(self, root: Path) -> None:
        self.root = root
        rng = np.random.default_rng(0)
        np.savez(root / "data.npz", x=rng.normal(size=(8, 4)).astype("float32"),
                 y=rng.normal(size=(8, 3)).astype("float32"), kernel=rng.normal(size=(4, 3)).astype("float32"),
                 bias=(0.1 * rng.normal(size=3)).astype("float32"))
        self.status: dict[str, str] = {}
        self.converted: dict[str, object] = {}

    def source_ckpt(self, framework: str, optimizer: str) -> Path:
        name = {"tf1": "model.ckpt", "keras3": "model.weights.h5"}.get(framework, "ckpt")
        return self.root / "src" / framework / optimizer / name

    def uninterrupted(self, framework: str, optimizer: str) -> Path:
        return self.root / "src" / framework / f"{optimizer}.npz"

    def template(self, case: Case) -> Path:
        name = "t.weights.h5" if case.target == "keras3" else "ckpt"
        return self.root / "tpl" / case.target / case.kind / _template_optimizer(case) / name

    def output(self, case: Case) -> Path:
        name = "out.weights.h5" if case.target == "keras3" else "ckpt"
        return self.root / "out" / case.id / name

    def resumed(self, case: Case) -> Path:
        return self.root / "resumed" / f"{case.id}.npz"

    def run(self) -> None:
        self._phase(self._sources())
        for case in CASES:
            self._convert(case)
        self._phase(self._resumes())

    def _sources(self) -> dict[str, list[dict]]:
        jobs: dict[str, list[dict]] = {"tf1": [], "tf-keras": [], "keras3": []}
        seen = set()
        for case in CASES:
            if (case.source, case.optimizer) not in seen:
                seen.add((case.source, case.optimizer))
                job = dict(mode="train", optimizer=case.optimizer, n=N, m=M, ckpt=str(self.source_ckpt(
                    case.source, case.optimizer)), out=str(self.uninterrupted(case.source, case.optimizer)))
                jobs[_program(case.source)].append(self._keras_job(job, case.source, "checkpoint"))
            if case.target != "tf1" and (case.target, case.kind, _template_optimizer(case)) not in seen:
                seen.add((case.target, case.kind, _template_optimizer(case)))
                job = dict(mode="template", optimizer=_template_optimizer(case), path=str(self.template(case)))
                jobs[_program(case.target)].append(self._keras_job(job, case.target, case.kind))
        return jobs

    @staticmethod
    def _keras_job(job: dict, framework: str, kind: str) -> dict:
        if framework == "tf1":
            return job
        return {**job, "flavor": framework, "kind": "weights.h5" if framework == "keras3" else kind}

    def _convert(self, case: Case) -> None:
        from click.testing import CliRunner

        from ckpt_cli.main import cli

        src, out = self.source_ckpt(case.source, case.optimizer), self.output(case)
        template = ["--template", str(self.template(case))] if case.target != "tf1" else []
        args = ["convert", str(src), "-o", str(out), *case.convert, *template, "--json"]
        if case.via_object:
            middle = out.parent / "object" / "ckpt"
            first = CliRunner().invoke(cli, ["convert", str(src), "-o", str(middle), "--to", "tf-object"])
            assert first.exit_code == 0, first.output
            args = ["convert", str(middle), "-o", str(out), "--to", "tf-name", "--slot-names", "tf1", "--json"]
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
        self.converted[case.id] = (result.exit_code, result.stdout, result.stderr)

    def _resumes(self) -> dict[str, list[dict]]:
        jobs: dict[str, list[dict]] = {"tf1": [], "tf-keras": [], "keras3": []}
        for case in CASES:
            if case.error is None and self.converted[case.id][0] == 0:
                job = dict(mode="resume", optimizer=case.optimizer, m=M, ckpt=str(self.output(case)),
                           out=str(self.resumed(case)))
                jobs[_program(case.target)].append(self._keras_job(job, case.target, case.kind))
        return jobs

    def _phase(self, jobs: dict[str, list[dict]]) -> None:
        running = []
        for program, todo in jobs.items():
            if not todo:
                continue
            spec = self.root / f"{program}-{len(self.status)}.json"
            spec.write_text(json.dumps({"data": str(self.root / "data.npz"), "jobs": todo}))
            for job in todo:
                for key in ("out", "path") + (("ckpt",) if job["mode"] == "train" else ()):
                    if key in job:
                        Path(job[key]).parent.mkdir(parents=True, exist_ok=True)
            running.append(subprocess.Popen([sys.executable, str(PROGRAMS / _script(program)), str(spec)],
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                            env=keras_env(program == "tf-keras")))
        for proc in running:
            out, err = proc.communicate(timeout=600)
            assert proc.returncode == 0, err[-3000:]
            self.status.update(json.loads(out.strip().splitlines()[-1]))


def _program(framework: str) -> str:
    return {"tf1": "tf1", "keras3": "keras3"}.get(framework, "tf-keras")


def _script(program: str) -> str:
    return "tf1_train.py" if program == "tf1" else "keras_train.py"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    space = Workspace(tmp_path_factory.mktemp("optimizer_resume"))
    space.run()
    return space


@pytest.mark.parametrize("case", [c for c in CASES if c.error is None], ids=lambda c: c.id)
def test_training_resumes_like_the_uninterrupted_run(workspace: Workspace, case: Case) -> None:
    code, stdout, stderr = workspace.converted[case.id]
    assert code == 0, stdout + stderr
    assert workspace.status.get(str(workspace.resumed(case))) == "ok", workspace.status.get(str(workspace.resumed(case)))
    want = canonical(dict(np.load(workspace.uninterrupted(case.source, case.optimizer))), case.source, case.optimizer)
    got = canonical(dict(np.load(workspace.resumed(case))), case.target, case.optimizer)
    assert int(got["step"]) == int(want["step"]) == N + M
    expected = {k for k in want if k != "step"}
    assert expected == set(got) - {"step"}, sorted(expected ^ set(got))
    for key in sorted(expected):
        np.testing.assert_allclose(got[key], want[key], rtol=1e-5, atol=1e-5, err_msg=key)


@pytest.mark.parametrize("case", [c for c in CASES if c.error is not None], ids=lambda c: c.id)
def test_pairs_without_an_equivalent_are_a_plan_error(workspace: Workspace, case: Case) -> None:
    code, stdout, _ = workspace.converted[case.id]
    assert code == 1
    plan = json.loads(stdout)
    errors = [p for p in plan["problems"] if p["severity"] == "error"]
    assert [p["kind"] for p in errors] == ["optimizer"]
    assert case.error in errors[0]["message"]
    assert not workspace.output(case).parent.exists() or not any(workspace.output(case).parent.iterdir())


def test_plans_show_the_transforms(workspace: Workspace) -> None:
    code, stdout, _ = workspace.converted["tf1-to-current-checkpoint-momentum"]
    plan = json.loads(stdout)
    transforms = sorted((r["source"], r["transform"]) for r in plan["rows"] if r["transform"])
    assert transforms == [("dense/bias/Momentum", "x (-0.05)"), ("dense/kernel/Momentum", "x (-0.05)"),
                          ("global_step", "= global_step")]
    assert plan["transformed"] == 3
    code, stdout, _ = workspace.converted["current-to-tf1-adam"]
    rows = {r["key"]: r for r in json.loads(stdout)["rows"]}
    assert rows["beta1_power"]["transform"] == f"= 0.9^(step+1), step iterations = {N}"
    assert rows["global_step"]["transform"] == "= iterations"
