"""Mutation test: random truncations, byte flips and splices of corpus files (bundles, V1 files, sharded
Keras 3 weights, a Keras model directory) and of the npz and safetensors files ckpt writes.

Every case must end in success or a CheckpointError with a message - never another exception,
a hang, or an allocation larger than a small multiple of the files' size. Seeded, so a failure
is reproducible: the case number and seed are in the assertion message.
"""
from __future__ import annotations

import fnmatch
import io
import os
import random
import shutil
import signal
import tracemalloc
from pathlib import Path

import pytest

import formats
from formats.core.errors import CheckpointError
from formats.io.sstable.table import read_table
from formats.io.sstable.writer import TableWriter
from formats.ops.compare.verify import verify_checkpoint

from ..conftest import CORPUS

CASES = int(os.environ.get("CKPT_MUTATION_CASES", "3000"))
SEED = int(os.environ.get("CKPT_MUTATION_SEED", "20261122"))
V1_CASES = int(os.environ.get("CKPT_V1_MUTATION_CASES", "300"))
SECONDS_PER_CASE = 5
TARGETS = [
    "tf1_partitioned/model.ckpt-1", "tf2_mixed/all_dtypes/ckpt-1", "seed_slots/tf_ckpts/ckpt-5",
    "tf1_adam/model.ckpt-200", "keras2_tagger/tagger_tf/ckpt",
    "tf1_v1_adam/model.ckpt-1", "tf1_v1_sharded/model.ckpt-?????-of-00003",
]
"""Bundle prefixes and V1 checkpoints in the corpus (their files are ``<prefix>.*`` or match the pattern)."""
FILE_SETS = {"keras3_more/sharded": "scorer.weights.json", "keras3_more/scorer_unzipped": "."}
"""Folders in the corpus opened as one checkpoint (what to open in them): a sharded index, a model directory."""
EXPORTS = {"all.npz": ("tf2_mixed/all_dtypes/ckpt-1", "npz"), "tagger.npz": ("keras3_tagger/tagger.weights.h5", "npz"),
           "all.safetensors": ("tf2_mixed/all_dtypes/ckpt-1", "safetensors")}
"""Files ckpt writes (npz, safetensors), made once for the test."""


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


def _exercise(prefix: Path) -> None:
    with formats.open_checkpoint(prefix) as ckpt:
        for key, entry in ckpt.items():
            _ = (entry.shape, entry.dtype, entry.nbytes, key)
        verify_checkpoint(ckpt)
        for entry in ckpt.values():
            try:
                entry.read()
            except CheckpointError as exc:
                assert exc.message


def _files_of(src: Path) -> list[Path]:
    """The files of a corpus checkpoint: a bundle's prefix.*, a V1 file itself, a V1 pattern's shards."""
    return sorted(p for p in src.parent.iterdir()
                  if p.name.startswith(src.name + ".") or fnmatch.fnmatchcase(p.name, src.name))


class _Timeout(Exception):
    pass


def _alarm(signum, frame):  # pragma: no cover - only on a hang
    raise _Timeout()


def _check_case(target: Path, what: str, files: Path | None = None) -> str:
    """Exercise one mutated checkpoint within the time and memory budget (16 x the bytes of the files in
    ``files``, default the target's folder, plus 1 MiB); "ok" or "error"."""
    budget = 16 * sum(f.stat().st_size for f in (files or target.parent).iterdir()) + (1 << 20)
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    signal.alarm(SECONDS_PER_CASE)
    try:
        _exercise(target)
        outcome = "ok"
    except CheckpointError as exc:
        assert str(exc) and exc.message, f"{what}: empty message"
        outcome = "error"
    except _Timeout:
        pytest.fail(f"{what}: hang")
    except Exception as exc:  # noqa: BLE001 - the point of the test
        pytest.fail(f"{what}: {type(exc).__name__}: {exc}")
    finally:
        signal.alarm(0)
    peak = tracemalloc.get_traced_memory()[1] - base
    assert peak <= budget, f"{what}: allocated {peak} bytes, budget {budget}"
    return outcome


@pytest.fixture
def budgeted():
    """SIGALRM and tracemalloc around a run of cases (imports made first, so they are not counted)."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    for rel in TARGETS:
        _exercise(CORPUS / rel)
    tracemalloc.start()
    try:
        yield
    finally:
        tracemalloc.stop()
        signal.signal(signal.SIGALRM, previous)


def _targets(made: Path) -> list[tuple[str, list[Path], str]]:
    """``(label, files to copy, what to open relative to the copy)`` for every target."""
    from formats.ops.convert.cross import convert_file

    targets = [(rel, _files_of(CORPUS / rel), (CORPUS / rel).name) for rel in TARGETS]
    targets += [(rel, sorted((CORPUS / rel).iterdir()), opened) for rel, opened in FILE_SETS.items()]
    made.mkdir()
    for name, (rel, to) in EXPORTS.items():
        assert convert_file(CORPUS / rel, made / name, to).ok
        targets.append((name, [made / name], name))
    return targets


@pytest.mark.skipif(not hasattr(signal, "SIGALRM"), reason="needs SIGALRM")
def test_mutated_checkpoints_fail_cleanly(tmp_path, budgeted):
    rng = random.Random(SEED)
    work = tmp_path / "m"
    targets = _targets(tmp_path / "made")
    outcomes = {"ok": 0, "error": 0}
    for case in range(CASES):
        rel, files, opened = rng.choice(targets)
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        for f in files:
            shutil.copyfile(f, work / f.name)
        victim = work / rng.choice(files).name
        victim.write_bytes(_mutate(victim.read_bytes(), rng))
        outcomes[_check_case(work / opened, f"case {case} (seed {SEED}, {rel}, {victim.name})", work)] += 1
    print(f"mutation cases: {outcomes}")
    assert outcomes["ok"] + outcomes["error"] == CASES
    assert outcomes["error"] > CASES // 10  # the mutations really do damage files


V1_FILES = [CORPUS / "tf1_v1_adam" / "model.ckpt-1", *sorted((CORPUS / "tf1_v1_sharded").glob("model.ckpt-0*"))]


def _rewritten(pairs: list[tuple[bytes, bytes]]) -> bytes:
    """A table of ``pairs`` with valid block checksums (TensorFlow's layout, via ckpt's table writer)."""
    out = io.BytesIO()
    writer = TableWriter(out)
    for key, value in sorted(dict(pairs).items()):
        writer.add(key, value)
    writer.finish()
    return out.getvalue()


@pytest.mark.skipif(not hasattr(signal, "SIGALRM"), reason="needs SIGALRM")
def test_v1_entries_mutated_behind_valid_checksums_fail_cleanly(tmp_path, budgeted):
    """V1 files hold their values in the table: mutate one entry's key or value and write the table
    again with valid checksums, so the meta and slice decoding (not the CRC) meets the damage."""
    rng = random.Random(SEED)
    work = tmp_path / "m"
    outcomes = {"ok": 0, "error": 0}
    for case in range(V1_CASES):
        src = rng.choice(V1_FILES)
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(src.parent, work)
        pairs = read_table(src.read_bytes(), str(src))
        at = rng.randrange(len(pairs))
        key, value = pairs[at]
        pairs[at] = (_mutate(key, rng), value) if key and rng.random() < 0.2 else (key, _mutate(bytes(value), rng))
        (work / src.name).chmod(0o644)
        (work / src.name).write_bytes(_rewritten(pairs))
        target = work / ("model.ckpt-?????-of-00003" if "-of-" in src.name else src.name)
        outcomes[_check_case(target, f"case {case} (seed {SEED}, {src.name}, entry {at})")] += 1
    print(f"V1 entry mutation cases: {outcomes}")
    assert outcomes["error"] > V1_CASES // 10
