"""Seeded mutation run: truncations, byte flips and splices of every reader's files - TF2/TF1 bundles, V1
checkpoints (whole files, and single entries behind valid block checksums), SavedModels, sharded Keras 3
weights and a Keras model directory, and the npz and safetensors files ckpt writes - each exercised by one
command family in turn (ls, ls --tree, ls --names, verify, show, stats, diff, extract, convert).

Every case runs in a forked child (tests/hostile/forked.py) with an address-space limit, a Python
allocation budget of 16x the case's files plus a little for the command line, and a time limit, so a
hang, a crash or a runaway allocation fails that case cleanly. Each command must end with a documented
exit code, and when it fails, one ``ckpt: error:`` line (plus a hint) naming a file of the case, no
traceback, no output left under the final name and no temporary left behind.

``CKPT_MUTATION_CASES`` (default 1200, about a minute in CI), ``CKPT_V1_MUTATION_CASES`` (240) and
``CKPT_MUTATION_SEED`` run more cases locally; a failure names its case number and seed and keeps the
case's files; ``CKPT_MUTATION_FIRST=N`` replays the seed's draws up to case N without running them.

HDF5 files are not mutated here: libhdf5's own safety (issue 14 #19) is exercised by
``tests/hostile/test_hdf5_*.py``; the Keras folders are still opened, with their ``.json`` mutated.
"""
from __future__ import annotations

import fnmatch
import io
import os
import random
import re
import shutil
import signal
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import formats
from formats.io.sstable.table import read_table
from formats.io.sstable.writer import TableWriter

from ..conftest import CORPUS
from .forked import Verdict, can_fork, run_forked

CASES = int(os.environ.get("CKPT_MUTATION_CASES", "1200"))
FIRST = int(os.environ.get("CKPT_MUTATION_FIRST", "0"))
SEED = int(os.environ.get("CKPT_MUTATION_SEED", "20261122"))
V1_CASES = int(os.environ.get("CKPT_V1_MUTATION_CASES", "240"))
SECONDS_PER_CASE = 30
HEADROOM = 384 << 20
"""Address space a case may map beyond the parent's, on top of 16x its files (thread stacks, numpy)."""
CLI_BUDGET = 8 << 20
"""Python allocations a case may make beyond 16x its files (the command line's own tables and text)."""

BUNDLES = ["tf1_partitioned/model.ckpt-1", "tf2_mixed/all_dtypes/ckpt-1", "seed_slots/tf_ckpts/ckpt-5",
           "tf1_adam/model.ckpt-200", "keras2_tagger/tagger_tf/ckpt"]
V1 = ["tf1_v1_adam/model.ckpt-1", "tf1_v1_sharded/model.ckpt-?????-of-00003"]
FOLDERS = {"keras3_more/sharded": "scorer.weights.json", "keras3_more/scorer_unzipped": ".",
           "saved_models/module/1": ".", "saved_models/tf_keras_model": ".",
           "saved_models/tf1_builder/00000123": "."}
"""Folders opened as one checkpoint (what to open in them): sharded Keras 3 weights, a model directory, SavedModels."""
EXPORTS = {"all.npz": ("tf2_mixed/all_dtypes/ckpt-1", "npz"), "tagger.npz": ("keras3_tagger/tagger.weights.h5", "npz"),
           "all.safetensors": ("tf2_mixed/all_dtypes/ckpt-1", "safetensors")}
"""Files ckpt writes, made once for the run."""
FAMILIES = ["ls", "tree", "names", "verify", "show", "stats", "diff", "extract", "convert"]
MUTATED_ELSEWHERE = (".h5",)
"""Files whose mutation belongs to another run (see the module doc)."""
EXIT_CODES = {0, 1, 3, 4}


@dataclass
class Target:
    """One checkpoint to mutate: ``files`` (relative to ``root``) are copied, ``opened`` is opened in the copy."""

    label: str
    root: Path
    files: list[str]
    opened: str
    keys: list[str] = field(default_factory=list)

    @property
    def pristine(self) -> Path:
        return self.root / self.opened


def _mutate(data: bytes, rng: random.Random) -> bytes:
    kind = rng.choice(["truncate", "flip", "flips", "splice", "zero", "dup"])
    if not data:
        return data
    if kind == "truncate":
        return data[:rng.randrange(len(data))]
    buf = bytearray(data)
    if kind == "flip":
        buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
    elif kind == "flips":
        for _ in range(rng.randint(2, 16)):
            buf[rng.randrange(len(buf))] = rng.randrange(256)
    elif kind == "zero":
        start = rng.randrange(len(buf))
        buf[start:start + rng.randint(1, 64)] = bytes(min(64, len(buf) - start))
    elif kind == "dup":
        start = rng.randrange(len(buf))
        chunk = buf[start:start + rng.randint(1, 32)]
        at = rng.randrange(len(buf))
        buf[at:at] = chunk
    else:  # splice: a run of bytes from elsewhere in the file overwrites another run
        a, b = rng.randrange(len(buf)), rng.randrange(len(buf))
        n = rng.randint(1, 48)
        buf[a:a + n] = data[b:b + n]
    return bytes(buf)


class _Timeout(Exception):
    pass


def _alarm(signum, frame):  # pragma: no cover - only on a hang (used by in-process runs elsewhere)
    raise _Timeout()


# -- targets -------------------------------------------------------------------------------------------
def _targets(made: Path) -> list[Target]:
    from formats.ops.convert.cross import convert_file

    targets = []
    for rel in BUNDLES + V1:
        src = CORPUS / rel
        files = sorted(p.name for p in src.parent.iterdir()
                       if p.name.startswith(src.name + ".") or fnmatch.fnmatchcase(p.name, src.name))
        targets.append(Target(rel, src.parent, files, src.name))
    for rel, opened in FOLDERS.items():
        root = CORPUS / rel
        files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
        targets.append(Target(rel, root, files, opened))
    made.mkdir()
    for name, (rel, to) in EXPORTS.items():
        assert convert_file(CORPUS / rel, made / name, to, skip_unreadable=True).ok
        targets.append(Target(name, made, [name], name))
    for target in targets:
        with formats.open_checkpoint(target.pristine) as ckpt:
            target.keys = sorted(ckpt)
    return targets


# -- one command, checked --------------------------------------------------------------------------------
def _commands(family: str, target: Target, opened: Path, out: Path, rng: random.Random) -> list[tuple[list[str], Path | None]]:
    """The command lines of one family for the mutated ``opened`` (and the output each must not leave on failure)."""
    if family == "extract":
        dest = out / "x.npz" if rng.random() < 0.5 else out / "dir"
        return [(["extract", str(opened), "-o", str(dest) + ("/" if dest.name == "dir" else "")], dest)]
    if family == "convert":
        to = rng.choice(["npz", "safetensors", "tf-object"])
        dest = out / {"npz": "c.npz", "safetensors": "c.safetensors", "tf-object": "ckpt-1"}[to]
        return [(["convert", str(opened), "-o", str(dest), "--to", to], dest)]
    args = {"ls": ["ls"], "tree": ["ls", "--tree"], "names": ["ls", "--names", "--json"], "verify": ["verify"],
            "stats": ["stats"]}.get(family)
    if args is not None:
        return [([*args, str(opened)], None)]
    if family == "show":
        return [(["show", str(opened), rng.choice(target.keys)], None)]
    return [(["diff", str(target.pristine), str(opened)], None)]  # diff


def _written(dest: Path) -> bool:
    return dest.exists() or Path(f"{dest}.index").exists()


_PLAN_SUMMARY = re.compile(r"(\d+ transformed; )?\d+ errors?, \d+ warnings?; nothing written")


def _plan_report(lines: list[str]) -> bool:
    """Whether stderr holds a refused plan's errors as ckpt words them: a line per error (``error: KIND: ...``),
    perhaps the line saying that --verbose lists more, then the summary (``N errors, M warnings; nothing
    written``)."""
    body = [line for line in lines[:-1] if not line.startswith("--verbose (or --json) lists")]
    return bool(body) and all(line.startswith("error: ") for line in body) and \
        _PLAN_SUMMARY.fullmatch(lines[-1]) is not None


def _check(args: list[str], dest: Path | None, case_dir: Path) -> tuple[str, str]:
    """Run one command in this (child) process: ("ok" | "error", "") or ("bad", why)."""
    from click.testing import CliRunner

    from ckpt_cli.main import cli

    result = CliRunner().invoke(cli, args)
    err = result.stderr
    where = " ".join(args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return "bad", f"{where}: escaped {type(result.exception).__name__}: {result.exception}"
    if result.exit_code not in EXIT_CODES or "Traceback" in err or "internal error" in err:
        return "bad", f"{where}: exit {result.exit_code}: {err[-1500:]}"
    lines = [line for line in err.splitlines() if not line.startswith("ckpt: warning: ")]
    if lines:
        one_error = lines[0].startswith("ckpt: error: ") and len(lines) <= 2 and \
            (len(lines) == 1 or lines[1].startswith("  hint: "))
        if not (one_error or _plan_report(lines)):
            return "bad", f"{where}: not one error line: {err[-1500:]}"
        if one_error and str(case_dir) not in lines[0] and str(CORPUS) not in lines[0]:  # (a plan's name keys)
            return "bad", f"{where}: the error names no file of the case: {lines[0][:500]}"
    if dest is not None:
        if result.exit_code != 0 and _written(dest):
            return "bad", f"{where}: exit {result.exit_code} but {dest} was written"
        litter = [p.name for p in dest.parent.iterdir() if ".tmp-" in p.name]
        if litter:
            return "bad", f"{where}: temporaries left: {litter}"
    return ("ok" if result.exit_code == 0 else "error"), ""


def _case(commands: list[tuple[list[str], Path | None]], case_dir: Path) -> tuple[str, str]:
    outcome = "ok"
    for args, dest in commands:
        kind, detail = _check(args, dest, case_dir)
        if kind == "bad":
            return kind, detail
        outcome = "error" if kind == "error" else outcome
    return outcome, ""


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _run(commands: list[tuple[list[str], Path | None]], case_dir: Path, what: str) -> str:
    size = _size(case_dir)
    verdict: Verdict = run_forked(lambda: _case(commands, case_dir), SECONDS_PER_CASE, HEADROOM + 16 * size,
                                  16 * size + CLI_BUDGET)
    if verdict.kind not in ("ok", "error"):
        kept = case_dir.with_name(case_dir.name + "-failed")
        shutil.copytree(case_dir, kept, dirs_exist_ok=True)
        pytest.fail(f"{what}: {verdict.kind}: {verdict.detail} (its files: {kept})")
    return verdict.kind


@pytest.fixture
def warmed(tmp_path):
    """Targets made, and every command family run once on each pristine target, so the modules a
    command imports on first use are in the parent before any case forks."""
    targets = _targets(tmp_path / "made")
    rng = random.Random(0)
    for target in targets:
        for family in FAMILIES:
            out = tmp_path / "warm"
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            kind, detail = _case(_commands(family, target, target.pristine, out, rng), tmp_path)
            assert kind != "bad", detail
    return targets


needs_fork = pytest.mark.skipif(not can_fork or not hasattr(signal, "SIGKILL"), reason="needs fork and /proc")


@needs_fork
def test_mutated_checkpoints_fail_cleanly(tmp_path, warmed):
    rng = random.Random(SEED)
    case_dir = tmp_path / "case"
    outcomes = {"ok": 0, "error": 0}
    by_family = dict.fromkeys(FAMILIES, 0)
    for case in range(CASES):
        target = rng.choice(warmed)
        family = FAMILIES[case % len(FAMILIES)]
        shutil.rmtree(case_dir, ignore_errors=True)
        (case_dir / "out").mkdir(parents=True)
        for rel in target.files:
            (case_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(target.root / rel, case_dir / rel)
        victim = rng.choice([f for f in target.files if not f.endswith(MUTATED_ELSEWHERE)])
        (case_dir / victim).write_bytes(_mutate((case_dir / victim).read_bytes(), rng))
        commands = _commands(family, target, case_dir / target.opened, case_dir / "out", rng)
        if case < FIRST:
            continue
        outcomes[_run(commands, case_dir, f"case {case} (seed {SEED}, {target.label}, {victim}, {family})")] += 1
        by_family[family] += 1
    print(f"mutation cases: {outcomes}, by command family: {by_family}")
    assert outcomes["error"] > (CASES - FIRST) // 10  # the mutations really do damage files


V1_FILES = [CORPUS / "tf1_v1_adam" / "model.ckpt-1", *sorted((CORPUS / "tf1_v1_sharded").glob("model.ckpt-0*"))]


def _rewritten(pairs: list[tuple[bytes, bytes]]) -> bytes:
    """A table of ``pairs`` with valid block checksums (TensorFlow's layout, via ckpt's table writer)."""
    out = io.BytesIO()
    writer = TableWriter(out)
    for key, value in sorted(dict(pairs).items()):
        writer.add(key, value)
    writer.finish()
    return out.getvalue()


@needs_fork
def test_v1_entries_mutated_behind_valid_checksums_fail_cleanly(tmp_path, warmed):
    """V1 files hold their values in the table: mutate one entry's key or value and write the table
    again with valid checksums, so the meta and slice decoding (not the CRC) meets the damage."""
    rng = random.Random(SEED)
    case_dir = tmp_path / "case"
    targets = {t.label: t for t in warmed}
    outcomes = {"ok": 0, "error": 0}
    for case in range(V1_CASES):
        src = rng.choice(V1_FILES)
        target = targets[V1[1] if "-of-" in src.name else V1[0]]
        shutil.rmtree(case_dir, ignore_errors=True)
        shutil.copytree(src.parent, case_dir)
        (case_dir / "out").mkdir()
        pairs = read_table(src.read_bytes(), str(src))
        at = rng.randrange(len(pairs))
        key, value = pairs[at]
        pairs[at] = (_mutate(key, rng), value) if key and rng.random() < 0.2 else (key, _mutate(bytes(value), rng))
        (case_dir / src.name).chmod(0o644)
        (case_dir / src.name).write_bytes(_rewritten(pairs))
        family = FAMILIES[case % len(FAMILIES)]
        commands = _commands(family, target, case_dir / target.opened, case_dir / "out", rng)
        outcomes[_run(commands, case_dir, f"case {case} (seed {SEED}, {src.name}, entry {at}, {family})")] += 1
    print(f"V1 entry mutation cases: {outcomes}")
    assert outcomes["error"] > V1_CASES // 10
