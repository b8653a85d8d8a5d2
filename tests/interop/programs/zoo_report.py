"""Keras 2 -> Keras 3 with ckpt's plain ``convert``, model by model: the harness behind
tests/interop/test_keras3_zoo.py, and a program that prints its table.

    python tests/interop/programs/zoo_report.py DIR [MODEL...]

builds the zoo of ``keras_zoo.py`` into DIR, runs ``ckpt convert SRC -o OUT --to keras3-h5 --template T``
from a shell as a user would, for every model, each Keras 2 file (``h5``: save_weights .h5, ``tf``:
save_weights in TF format, ``full``: model.save .h5) and each Keras 3 template (``weights``: t.weights.h5,
``keras``: t.keras), loads every OUT with Keras 3's ``model.load_weights`` and compares the predictions with
the Keras 2 model's. It also records Keras 3's own legacy loader on the Keras 2 ``.h5`` files
(``model.load_weights("w.h5")``): the floor ckpt must match or beat.

    python tests/interop/programs/zoo_report.py --keep DIR [MODEL...]

Two Python processes ask Keras, side by side: tf-keras builds and saves the models, and Keras 3 saves the
templates and loads. A model's conversions start (two at a time, one per core) as soon as both have saved it, and
its loads as soon as those are done, while the builders go on with the next models, at most ``AHEAD`` models
ahead of the loads (``DIR/allowed``, see keras_zoo.py).

In DIR: ``MODEL/k2``, ``MODEL/k3``, ``MODEL/out/SRC-TEMPLATE.weights.h5`` with ckpt's output beside it (``.log``),
the processes' logs and JSON-lines reports, ``report.json`` and ``report.txt`` (the table printed). A model's
weight files (``MODEL_FILES``: 11 copies of its weights, 1.4 GB for VGG16, 7.8 GB for the whole zoo) are removed
as soon as its loads are done, unless ``--keep``; its inputs, predictions and logs stay. Expected values come only
from Keras. Exit status 0 when every combination passes, 1 otherwise.
"""
from __future__ import annotations

import concurrent.futures
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
TOLERANCE = 1e-5  # max|a - b| / max|b| between the Keras 3 predictions and the Keras 2 ones
AHEAD = 2  # models the builders may have built beyond those whose loads are done
MODEL_FILES = ("k2/w.h5", "k2/full.h5", "k2/tf", "k3", "out/*.weights.h5")  # a model's weights, under DIR/MODEL


def _load_zoo() -> Any:
    spec = importlib.util.spec_from_file_location("keras_zoo", HERE / "keras_zoo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


zoo = _load_zoo()


def case_ids(models: list[str] | None = None) -> list[tuple[str, str, str]]:
    """Every (model, source tag, template tag) the zoo converts."""
    return [(m, s, t) for m in (models or list(zoo.ZOO)) for s in zoo.sources(m) for t in zoo.TEMPLATES]


def _env(legacy: bool) -> dict[str, str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    if legacy:
        env["TF_USE_LEGACY_KERAS"] = "1"
    else:
        env.pop("TF_USE_LEGACY_KERAS", None)
    return env


def _keras(mode: str, root: Path, args: list[str]) -> subprocess.Popen[bytes]:
    """``keras_zoo.py MODE DIR ARGS...``, its output in ``DIR/MODE.log``."""
    with open(root / f"{mode}.log", "wb") as log:  # the child holds its own copy of the handle
        return subprocess.Popen([sys.executable, str(HERE / "keras_zoo.py"), mode, str(root), *args],
                                stdout=log, stderr=subprocess.STDOUT, env=_env(mode == "keras2"))


def _lines(path: Path) -> list[Any]:
    """The complete JSON lines of a file another process may still be appending to."""
    if not path.exists():
        return []
    text = path.read_text()
    return [json.loads(line) for line in text[:text.rfind("\n") + 1].splitlines() if line.strip()]


def ckpt_command() -> list[str]:
    """The ``ckpt`` console script beside this Python, or ``python -m ckpt_cli``."""
    script = Path(sys.executable).with_name("ckpt")
    return [str(script)] if script.exists() else [sys.executable, "-m", "ckpt_cli"]


def source_path(root: Path, model: str, source: str) -> Path:
    return root / model / "k2" / zoo.SOURCES[source]


def template_path(root: Path, model: str, template: str) -> Path:
    return root / model / "k3" / zoo.TEMPLATES[template]


def _first_error(text: str) -> str | None:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        if line.startswith(("error:", "ckpt: error:")) or "Error" in line.split(":")[0]:
            return line
    return None


def convert(root: Path, model: str, source: str, template: str) -> dict[str, Any]:
    """``ckpt convert SRC -o OUT --to keras3-h5 --template T``; its exit code, first error line, warnings."""
    out = root / model / "out" / f"{source}-{template}.weights.h5"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    command = [*ckpt_command(), "convert", str(source_path(root, model, source)), "-o", str(out),
               "--to", "keras3-h5", "--template", str(template_path(root, model, template))]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    seconds = time.perf_counter() - start
    text = done.stdout + done.stderr
    out.with_suffix("").with_suffix(".log").write_text(" ".join(command) + f"\n(exit {done.returncode})\n" + text)
    first = _first_error(text)
    if done.returncode != 0 and first is None:
        first = next((line for line in text.splitlines() if line.strip()), f"exit {done.returncode}, no output")
    return {"exit": done.returncode, "first_error": first, "out": str(out) if out.exists() else None,
            "warnings": sum(line.startswith("warning:") for line in text.splitlines()), "seconds": seconds}


def verdict(load_result: dict[str, Any] | None, loader_exit: int | None = 0) -> tuple[bool, str]:
    """(passed, what Keras 3's load gave) for one load result."""
    if load_result is None:
        return False, f"no load result (the Keras 3 process exited {loader_exit}; see keras3+load.log)"
    if load_result["error"]:
        return False, f"load error: {load_result['error']}"
    if load_result["unloaded"]:
        return False, f"{len(load_result['unloaded'])}/{load_result['n_variables']} variables not loaded"
    err = load_result["rel_err"]
    if err is None:
        return False, "loaded; predictions not finite or of another shape"
    return err <= TOLERANCE, "loaded"


class _Pipeline:
    """The two Keras processes and the conversions, overlapped: a model's conversions start as soon as both
    builders have reported it (``keras2.jsonl``, ``keras3.jsonl``), and its loads are handed to the Keras 3
    process (``load_jobs.jsonl``, which it follows once its templates are saved) as soon as they are done."""

    def __init__(self, root: Path, models: list[str], workers: int, keep: bool = False) -> None:
        self.root, self.models, self.keep = root, models, keep
        for name in ("keras2.jsonl", "keras3.jsonl", "load_results.jsonl"):
            (root / name).unlink(missing_ok=True)
        self.loading: dict[str, set[str]] = {}  # model -> its load jobs not answered yet
        self.finished = 0
        self.disk = {"peak": 0, "models": {}}  # bytes under DIR as each model finished, and each model's own
        self._allow(AHEAD)
        self.jobs = open(root / "load_jobs.jsonl", "w")  # closed by close()
        self.procs = {"keras2": _keras("keras2", root, models),
                      "keras3": _keras("keras3+load", root, [str(root / "load_jobs.jsonl"),
                                                             str(root / "load_results.jsonl"), *models])}
        self.pool = concurrent.futures.ThreadPoolExecutor(workers)
        self.broken: dict[str, str] = {}
        self.converted: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.floors: list[tuple[str, str]] = []
        self.loader_exit: int | None = None

    def run(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        started: set[str] = set()
        pending: dict[str, list[tuple[tuple[str, str, str], concurrent.futures.Future[dict[str, Any]]]]] = {}
        while len(started) < len(self.models) or pending:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the zoo took more than {timeout:.0f} s; logs in {self.root}")
            reported = {mode: {r["model"]: r for r in _lines(self.root / f"{mode}.jsonl")}
                        for mode in ("keras2", "keras3")}
            for model in self.models:
                if model in started:
                    continue
                why = self._why_not_built(model, reported)
                if why is None and not all(model in reported[mode] for mode in reported):
                    continue  # not built yet
                started.add(model)
                if why:
                    self.broken[model] = why
                    self._finish(model)
                else:
                    pending[model] = [(c, self.pool.submit(convert, self.root, *c)) for c in case_ids([model])]
            for model, futures in list(pending.items()):
                if all(future.done() for _, future in futures):
                    del pending[model]
                    self._hand_over(model, {c: future.result() for c, future in futures})
            self._collect_loads()
            time.sleep(0.1)
        self.jobs.write("null\n")
        self.jobs.flush()
        self.loader_exit = self.procs["keras3"].wait(timeout=max(deadline - time.monotonic(), 1))
        self._collect_loads()

    def _allow(self, count: int) -> None:
        """Lets the builders build the first ``count`` models (``DIR/allowed``, replaced whole)."""
        (self.root / "allowed.tmp").write_text(str(count))
        os.replace(self.root / "allowed.tmp", self.root / "allowed")

    def _collect_loads(self) -> None:
        """Finishes each model whose loads are all answered (or whose loader has exited)."""
        if not self.loading:
            return
        answered = {r["id"] for r in _lines(self.root / "load_results.jsonl")}
        loader_gone = self.procs["keras3"].poll() is not None
        for model, ids in list(self.loading.items()):
            if loader_gone or ids <= answered:
                del self.loading[model]
                self._finish(model)

    def _finish(self, model: str) -> None:
        """A model is done with: its weight files go (unless ``keep``), and the builders may build one more."""
        self.disk["peak"] = max(self.disk["peak"], bytes_under(self.root))
        self.disk["models"][model] = bytes_under(self.root / model)
        if not self.keep:
            remove_weights(self.root, model)
        self.finished += 1
        self._allow(self.finished + AHEAD)

    def _why_not_built(self, model: str, reported: dict[str, dict[str, Any]]) -> str | None:
        """Why a model will have no files (a builder's error, or its exit before the model), or None."""
        for mode, done in reported.items():
            if model in done:
                if done[model]["error"]:
                    return f"{mode} build failed: {done[model]['error']}"
            elif self.procs[mode].poll() is not None:  # read again: its line may have come just before the exit
                if model not in {r["model"] for r in _lines(self.root / f"{mode}.jsonl")}:
                    return f"{mode} build failed: keras_zoo.py {mode} exited {self.procs[mode].returncode} first"
        return None

    def _hand_over(self, model: str, converted: dict[tuple[str, str, str], dict[str, Any]]) -> None:
        self.converted.update(converted)
        jobs = [{"id": ":".join(c), "model": model, "weights": r["out"]} for c, r in converted.items()
                if r["exit"] == 0 and r["out"]]
        for source in ("h5", "full"):
            if source in zoo.sources(model):
                self.floors.append((model, source))
                jobs.append({"id": f"{model}:{source}:floor", "model": model,
                             "weights": str(source_path(self.root, model, source))})
        self.jobs.write("".join(json.dumps(job) + "\n" for job in jobs))
        self.jobs.flush()
        if jobs:
            self.loading[model] = {job["id"] for job in jobs}
        else:
            self._finish(model)

    def close(self) -> None:
        """Ends what is left (after an error): the processes this pipeline started, its pool, its file."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.jobs.close()


def bytes_under(folder: Path) -> int:
    """The bytes of the files under a folder (0 when it is not there)."""
    return sum(os.path.getsize(os.path.join(top, name)) for top, _, names in os.walk(folder) for name in names)


def remove_weights(root: Path, model: str) -> None:
    """A model's weight files (``MODEL_FILES``); its inputs, predictions and logs stay."""
    for pattern in MODEL_FILES:
        for path in (root / model).glob(pattern):
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)


def input_effect_of(root: Path, model: str) -> float | None:
    """max|pred[0] - pred[1]| / max|pred| of the Keras 2 predictions: how much the input shows in the outputs
    (near 0, the outputs would hardly tell weights put in the wrong place)."""
    path = root / model / "k2" / "pred.npy"
    if not path.exists():
        return None
    pred = np.load(path).astype("float64")
    return float(np.max(np.abs(pred[0] - pred[1])) / max(float(np.max(np.abs(pred))), 1e-30))


def run(root: Path, models: list[str] | None = None, workers: int | None = None,
        timeout: float = 1800, keep: bool = False) -> dict[str, Any]:
    """Build, convert and load everything (each model's weight files removed once loaded, unless ``keep``);
    ``report.json`` (and the returned dict): ``cases`` maps ``model:source:template`` to ``{exit, first_error,
    warnings, seconds, load, passed, status}``, ``floor`` maps ``model:source`` to Keras 3's legacy loader on the
    Keras 2 .h5 file, ``built`` each builder's report, ``input_effect`` each model's ``input_effect_of``, ``disk``
    the bytes under DIR (``peak``, as each model finished) and each model's (``models``, as it finished)."""
    models = models or list(zoo.ZOO)
    root.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    pipeline = _Pipeline(root, models, workers or os.cpu_count() or 2, keep)
    try:
        pipeline.run(timeout)
    finally:
        pipeline.close()
    built = {mode: {r["model"]: r for r in _lines(root / f"{mode}.jsonl")} for mode in ("keras2", "keras3")}
    loaded = {r["id"]: r for r in _lines(root / "load_results.jsonl")}

    cases: dict[str, dict[str, Any]] = {}
    for c in case_ids(models):
        key = ":".join(c)
        if c[0] in pipeline.broken:
            cases[key] = {"exit": None, "first_error": pipeline.broken[c[0]], "warnings": 0, "seconds": 0.0,
                          "load": None, "passed": False, "status": "not built"}
            continue
        r = dict(pipeline.converted[c])
        r["load"] = loaded.get(key)
        passed, status = (verdict(r["load"], pipeline.loader_exit) if r["exit"] == 0
                          else (False, "not loaded (ckpt failed)"))
        r.update(passed=passed, status=status)
        cases[key] = r
    floor = {}
    for m, s in sorted(pipeline.floors, key=lambda f: (models.index(f[0]), f[1] == "full")):
        passed, status = verdict(loaded.get(f"{m}:{s}:floor"), pipeline.loader_exit)
        floor[f"{m}:{s}"] = {"load": loaded.get(f"{m}:{s}:floor"), "passed": passed, "status": status}
    input_effect = {m: input_effect_of(root, m) for m in models if m not in pipeline.broken}
    seconds = {"wall": time.perf_counter() - start,
               "keras2 (sum)": sum(r["seconds"] for r in built["keras2"].values()),
               "keras3 (sum)": sum(r["seconds"] for r in built["keras3"].values()),
               "ckpt convert (sum)": sum(r["seconds"] for r in cases.values()),
               "keras3 loads (sum)": sum(r["seconds"] for r in loaded.values())}
    report = {"models": models, "tolerance": TOLERANCE, "built": built, "skipped": zoo.NO_FULL_H5,
              "cases": cases, "floor": floor, "input_effect": input_effect, "seconds": seconds, "disk": pipeline.disk}
    (root / "report.json").write_text(json.dumps(report, indent=1))
    (root / "report.txt").write_text(table(report))
    return report


def _err(result: dict[str, Any] | None) -> str:
    if not result or result.get("rel_err") is None:
        return "-"
    return f"{result['rel_err']:.1e}"


def table(report: dict[str, Any]) -> str:
    """The report as text: one row per (model, source, template), then Keras 3's legacy-loader floor."""
    rows = [("model", "source", "template", "ckpt", "keras3 load", "max rel err", "result", "ckpt's first error")]
    for key, r in report["cases"].items():
        model, source, template = key.split(":")
        rows.append((model, source, template, "-" if r["exit"] is None else str(r["exit"]), r["status"],
                     _err(r["load"]), "PASS" if r["passed"] else "FAIL", r["first_error"] or ""))
    lines = _columns(rows)
    passed = sum(r["passed"] for r in report["cases"].values())
    lines.append(f"\n{passed} of {len(report['cases'])} combinations pass (max relative error <= "
                 f"{report['tolerance']:g}).")
    for model, why in report["skipped"].items():
        if model in report["models"]:
            lines.append(f"Not run: {model} from full.h5 ({why}).")
    lines.append("\nFloor: Keras 3's own model.load_weights on the Keras 2 file (legacy .h5 loader), no ckpt:")
    floor_rows = [("model", "source", "keras3 load", "max rel err", "result")]
    for key, f in report["floor"].items():
        model, source = key.split(":")
        floor_rows.append((model, source, f["status"], _err(f["load"]), "PASS" if f["passed"] else "FAIL"))
    lines += _columns(floor_rows)
    effects = ", ".join(f"{m} {e:.1e}" for m, e in report["input_effect"].items() if e is not None)
    lines.append(f"\nInput effect (max|pred[0] - pred[1]| / max|pred| of the Keras 2 predictions): {effects}")
    secs = report["seconds"]
    lines.append("\nSeconds: " + ", ".join(f"{k} {v:.0f}" for k, v in secs.items()))
    return "\n".join(lines) + "\n"


def _columns(rows: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return ["  ".join([c.ljust(w) for c, w in zip(r, widths)] + [r[-1]]).rstrip() for r in rows]


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    keep = argv[0] == "--keep"
    argv = argv[1:] if keep else argv
    if not argv:
        print(__doc__)
        return 2
    root = Path(argv[0]).resolve()
    unknown = [m for m in argv[1:] if m not in zoo.ZOO]
    if unknown:
        print(f"unknown model(s): {', '.join(unknown)}; the zoo: {', '.join(zoo.ZOO)}", file=sys.stderr)
        return 2
    report = run(root, argv[1:] or None, keep=keep)
    print(table(report), end="")
    return 0 if all(r["passed"] for r in report["cases"].values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
