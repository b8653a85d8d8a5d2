"""Mutation test: random truncations, byte flips and splices of corpus files (bundles, sharded Keras 3
weights, a Keras model directory) and of the npz and safetensors files ckpt writes.

Every case must end in success or a CheckpointError with a message - never another exception,
a hang, or an allocation larger than a small multiple of the files' size. Seeded, so a failure
is reproducible: the case number and seed are in the assertion message.
"""
from __future__ import annotations

import os
import random
import shutil
import signal
import tracemalloc
from pathlib import Path

import pytest

import formats
from formats.core.errors import CheckpointError
from formats.ops.compare.verify import verify_checkpoint

from ..conftest import CORPUS

CASES = int(os.environ.get("CKPT_MUTATION_CASES", "3000"))
SEED = int(os.environ.get("CKPT_MUTATION_SEED", "20261122"))
SECONDS_PER_CASE = 5
TARGETS = [
    "tf1_partitioned/model.ckpt-1", "tf2_mixed/all_dtypes/ckpt-1", "seed_slots/tf_ckpts/ckpt-5",
    "tf1_adam/model.ckpt-200", "keras2_tagger/tagger_tf/ckpt",
]
"""Bundle prefixes in the corpus (their files are ``<prefix>.*``)."""
FILE_SETS = ["keras3_more/sharded", "keras3_more/scorer_unzipped"]
"""Folders in the corpus opened as one checkpoint: the sharded index (with every shard) and a model directory."""
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


class _Timeout(Exception):
    pass


def _alarm(signum, frame):  # pragma: no cover - only on a hang
    raise _Timeout()


def _targets(made: Path) -> list[tuple[str, list[Path], str]]:
    """``(label, files to copy, what to open relative to the copy)`` for every target."""
    from formats.ops.convert.cross import convert_file

    targets = []
    for rel in TARGETS:
        src = CORPUS / rel
        targets.append((rel, sorted(p for p in src.parent.iterdir() if p.name.startswith(src.name + ".")), src.name))
    index = {"keras3_more/sharded": "scorer.weights.json", "keras3_more/scorer_unzipped": "."}
    for rel in FILE_SETS:
        targets.append((rel, sorted((CORPUS / rel).iterdir()), index[rel]))
    made.mkdir()
    for name, (rel, to) in EXPORTS.items():
        assert convert_file(CORPUS / rel, made / name, to).ok
        targets.append((name, [made / name], name))
    return targets


@pytest.mark.skipif(not hasattr(signal, "SIGALRM"), reason="needs SIGALRM")
def test_mutated_checkpoints_fail_cleanly(tmp_path):
    rng = random.Random(SEED)
    work = tmp_path / "m"
    targets = _targets(tmp_path / "made")
    outcomes = {"ok": 0, "error": 0}
    previous = signal.signal(signal.SIGALRM, _alarm)
    tracemalloc.start()
    try:
        for case in range(CASES):
            rel, files, opened = rng.choice(targets)
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir()
            for f in files:
                shutil.copyfile(f, work / f.name)
            victim = work / rng.choice(files).name
            victim.write_bytes(_mutate(victim.read_bytes(), rng))
            budget = 16 * sum(f.stat().st_size for f in work.iterdir()) + (1 << 20)
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            signal.alarm(SECONDS_PER_CASE)
            try:
                _exercise(work / opened)
                outcomes["ok"] += 1
            except CheckpointError as exc:
                assert str(exc) and exc.message, f"case {case} (seed {SEED}): empty message"
                outcomes["error"] += 1
            except _Timeout:
                pytest.fail(f"case {case} (seed {SEED}, {rel}, {victim.name}): hang")
            except Exception as exc:  # noqa: BLE001 - the point of the test
                pytest.fail(f"case {case} (seed {SEED}, {rel}, {victim.name}): {type(exc).__name__}: {exc}")
            finally:
                signal.alarm(0)
            peak = tracemalloc.get_traced_memory()[1] - base
            assert peak <= budget, f"case {case} (seed {SEED}, {rel}): allocated {peak} bytes, budget {budget}"
    finally:
        tracemalloc.stop()
        signal.signal(signal.SIGALRM, previous)
    print(f"mutation cases: {outcomes}")
    assert outcomes["ok"] + outcomes["error"] == CASES
    assert outcomes["error"] > CASES // 10  # the mutations really do damage files
