"""Keras 2 -> Keras 3 with ckpt's plain ``convert``, model by model: the harness behind
tests/interop/test_keras3_zoo.py, and a program that prints its table.

    python tests/interop/programs/zoo_report.py DIR [MODEL...]

builds the zoo of ``keras_zoo.py`` into DIR (one tf-keras process, one Keras 3 process, side by side), runs
``ckpt convert SRC -o OUT --to keras3-h5 --template T`` from a shell as a user would, for every model, each
Keras 2 file (``w.h5``: save_weights, ``tf``: save_weights in TF format, ``full``: model.save .h5) and each
Keras 3 template (``weights``: t.weights.h5, ``keras``: t.keras), then loads every OUT in one Keras 3 process
(``model.load_weights``) and compares the predictions with the Keras 2 model's. It also records Keras 3's own
legacy loader on the Keras 2 ``.h5`` files (``model.load_weights("w.h5")``): the floor ckpt must match or beat.
Everything stays in DIR: ``MODEL/k2``, ``MODEL/k3``, ``MODEL/out/SRC-TEMPLATE.weights.h5`` with ckpt's output
beside it (``.log``), the processes' logs, ``report.json`` and ``report.txt`` (the table printed). Expected
values come only from Keras. Exit status 0 when every combination passes, 1 otherwise.
"""
from __future__ import annotations

import concurrent.futures
import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TOLERANCE = 1e-5  # max|a - b| / max|b| between the Keras 3 predictions and the Keras 2 ones


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
    with open(root / f"{mode}.log", "wb") as log:  # the child holds its own copy of the handle
        return subprocess.Popen([sys.executable, str(HERE / "keras_zoo.py"), mode, str(root), *args],
                                stdout=log, stderr=subprocess.STDOUT, env=_env(mode == "keras2"))


def _wait(proc: subprocess.Popen[bytes], root: Path, mode: str, timeout: float) -> None:
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        code = -9
    if code != 0:
        tail = (root / f"{mode}.log").read_text(errors="replace")[-3000:]
        raise RuntimeError(f"keras_zoo.py {mode} exited {code} (log {root / f'{mode}.log'}):\n{tail}")


def build(root: Path, models: list[str]) -> dict[str, dict[str, dict[str, Any]]]:
    """The Keras 2 files and the Keras 3 templates of every model (the two processes run side by side);
    ``{"keras2": {model: {"error": first line or None, "seconds": ...}}, "keras3": {...}}``."""
    root.mkdir(parents=True, exist_ok=True)
    procs = {mode: _keras(mode, root, models) for mode in ("keras2", "keras3")}
    for mode, proc in procs.items():
        _wait(proc, root, mode, timeout=1800)
    return {mode: json.loads((root / f"{mode}.json").read_text()) for mode in procs}


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


def load(root: Path, jobs: list[dict[str, str]]) -> dict[str, dict[str, Any]]:
    """One Keras 3 process loads every job's weights (``keras_zoo.py load``)."""
    if not jobs:
        return {}
    (root / "load_jobs.json").write_text(json.dumps(jobs, indent=1))
    proc = _keras("load", root, [str(root / "load_jobs.json"), str(root / "load_results.json")])
    _wait(proc, root, "load", timeout=1800)
    results: dict[str, dict[str, Any]] = json.loads((root / "load_results.json").read_text())
    return results


def verdict(load_result: dict[str, Any] | None) -> tuple[bool, str]:
    """(passed, what Keras 3's load gave) for one load result."""
    if load_result is None:
        return False, "not loaded"
    if load_result["error"]:
        return False, f"load error: {load_result['error']}"
    if load_result["unloaded"]:
        return False, f"{len(load_result['unloaded'])}/{load_result['n_variables']} variables not loaded"
    err = load_result["rel_err"]
    if err is None:
        return False, "loaded; predictions not finite or of another shape"
    return err <= TOLERANCE, "loaded"


def run(root: Path, models: list[str] | None = None, workers: int | None = None) -> dict[str, Any]:
    """Build, convert and load everything; ``report.json`` (and the returned dict): ``cases`` maps
    ``model:source:template`` to ``{exit, first_error, warnings, load, passed, status}``, ``floor`` maps
    ``model:source`` to Keras 3's legacy loader on the Keras 2 .h5 file, ``built`` the build errors."""
    models = models or list(zoo.ZOO)
    timings: dict[str, float] = {}
    start = time.perf_counter()
    built = build(root, models)
    timings["build"] = time.perf_counter() - start

    ids = case_ids(models)
    broken = {m: f"{side} build failed: {r['error']}" for side in ("keras2", "keras3")
              for m, r in built[side].items() if r["error"]}
    todo = [c for c in ids if c[0] not in broken]
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(workers or os.cpu_count() or 2) as pool:
        converted = dict(zip(todo, pool.map(lambda c: convert(root, *c), todo)))
    timings["convert"] = time.perf_counter() - start

    jobs = [{"id": ":".join(c), "model": c[0], "weights": r["out"]} for c, r in converted.items()
            if r["exit"] == 0 and r["out"]]
    floor_ids = [(m, s) for m in models if m not in broken for s in ("h5", "full") if s in zoo.sources(m)]
    jobs += [{"id": f"{m}:{s}:floor", "model": m, "weights": str(source_path(root, m, s))} for m, s in floor_ids]
    jobs.sort(key=lambda job: models.index(job["model"]))  # stable: each model is built once
    start = time.perf_counter()
    loaded = load(root, jobs)
    timings["load"] = time.perf_counter() - start

    cases: dict[str, dict[str, Any]] = {}
    for c in ids:
        key = ":".join(c)
        if c[0] in broken:
            cases[key] = {"exit": None, "first_error": broken[c[0]], "warnings": 0, "load": None,
                          "passed": False, "status": "not built"}
            continue
        r = dict(converted[c])
        r["load"] = loaded.get(key)
        passed, status = verdict(r["load"]) if r["exit"] == 0 else (False, "not loaded (ckpt failed)")
        r.update(passed=passed, status=status)
        cases[key] = r
    floor = {}
    for m, s in floor_ids:
        passed, status = verdict(loaded.get(f"{m}:{s}:floor"))
        floor[f"{m}:{s}"] = {"load": loaded.get(f"{m}:{s}:floor"), "passed": passed, "status": status}
    report = {"models": models, "tolerance": TOLERANCE, "built": built, "skipped": zoo.NO_FULL_H5,
              "cases": cases, "floor": floor, "seconds": timings}
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
    root = Path(argv[0]).resolve()
    unknown = [m for m in argv[1:] if m not in zoo.ZOO]
    if unknown:
        print(f"unknown model(s): {', '.join(unknown)}; the zoo: {', '.join(zoo.ZOO)}", file=sys.stderr)
        return 2
    report = run(root, argv[1:] or None)
    print(table(report), end="")
    return 0 if all(r["passed"] for r in report["cases"].values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
