"""Mutation test for the HDF5 readers: random truncations, byte flips and splices of Keras ``.h5`` /
``.weights.h5`` files, a generic HDF5 file with gzip+shuffle chunks, strings and a compact dataset, and
``.keras`` archives (stored and deflated).

Each case runs in a forked child with an address-space limit and a timeout (:func:`run_forked`), doing
what the commands do (list, verify, show a slice, stream values as stats/diff/trend do, stream bytes as
extract/convert do). It must end in success or CheckpointErrors with one-line messages - never another
exception, a crash, a hang or an allocation beyond the limit. Seeded: the case number and seed are in
the failure message.
"""
from __future__ import annotations

import functools
import os
import random
import shutil
import zipfile
from pathlib import Path

import h5py
import ml_dtypes
import numpy as np
import pytest

import formats
import formats.io.sandbox as sandbox
from formats.core.errors import CheckpointError
from formats.ops.compare.verify import verify_checkpoint

from ..conftest import CORPUS
from .forked_h5 import run_forked
from .test_mutation import SEED, _mutate

pytestmark = pytest.mark.skipif(not Path("/proc/self/statm").exists() or not hasattr(os, "fork"),
                                reason="needs Linux /proc and fork")

CASES = int(os.environ.get("CKPT_HDF5_MUTATION_CASES", "300"))
SECONDS_PER_CASE = 30
HEADROOM = 160 << 20
"""Address space a case may add (the isolated HDF5 reader's children inherit the limit)."""
CORPUS_FILES = ["keras2_tagger/tagger_weights.h5", "keras2_tagger/tagger_model.h5", "keras3_tagger/tagger.weights.h5",
                "keras3_tagger/tagger.keras", "seed_slots/easy_weights.h5"]


def _generic(path: Path) -> Path:
    """An HDF5 file using what Keras files do not: gzip+shuffle chunks (with a partial edge chunk),
    strings fixed and variable, a compact dataset, a bfloat16 mark, a scalar, a never-written dataset."""
    rng = np.random.default_rng(7)
    with h5py.File(path, "w") as f:
        f.create_dataset("g/f32", data=rng.standard_normal((37, 11)).astype("f4"), chunks=(8, 4),
                         compression="gzip", shuffle=True)
        f.create_dataset("g/i64", data=np.arange(300, dtype="<i8"), chunks=(64,), compression="gzip")
        f.create_dataset("g/be", data=np.arange(20, dtype=">i4").reshape(4, 5), chunks=(2, 5), shuffle=True)
        f.create_dataset("s/fixed", data=np.array([b"ab", b"cde", b""], dtype="S3"))
        f.create_dataset("s/vlen", data=np.array([b"hello", b"", b"hdf5"], dtype=object),
                         dtype=h5py.string_dtype("ascii"))
        space = h5py.h5s.create_simple((6,))
        plist = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        plist.set_layout(h5py.h5d.COMPACT)
        h5py.h5d.create(f.id, b"compact", h5py.h5t.STD_I16LE, space, dcpl=plist).write(
            h5py.h5s.ALL, h5py.h5s.ALL, np.arange(6, dtype="<i2"))
        bf = f.create_dataset("bf16", data=np.arange(4, dtype="f4").astype(ml_dtypes.bfloat16).view("<u2"))
        bf.attrs["dtype"] = "bfloat16"
        f["scalar"] = np.float64(2.5)
        f.create_dataset("unwritten", shape=(10, 10), dtype="f4", chunks=(5, 5), fillvalue=1.5)
    return path


def _deflated(path: Path) -> Path:
    with zipfile.ZipFile(CORPUS / "keras3_tagger/tagger.keras") as src, \
            zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
    return path


def _exercise(path: Path) -> str:
    """What the commands do with a checkpoint; "ok" when it opens, "error" when opening fails cleanly."""
    try:
        ckpt = formats.open_checkpoint(path)
    except CheckpointError as exc:
        _one_line(exc)
        return "error"
    with ckpt:
        _ = [(e.shape, e.dtype, e.nbytes, e.name, e.role) for e in ckpt.values()], ckpt.metadata, ckpt.files
        ckpt.vars_groups()
        verify_checkpoint(ckpt)
        for entry in ckpt.values():
            uses = [lambda e: e.read(), lambda e: e.read_slice((slice(-2, None),) if e.shape else None),
                    lambda e: list(e.iter_chunks(97))]
            if entry.dtype != "string":
                uses.append(lambda e: list(e.byte_chunks(1000)))
            for use in uses:
                try:
                    use(entry)
                except CheckpointError as exc:
                    _one_line(exc)
    return "ok"


def _one_line(exc: CheckpointError) -> None:
    assert exc.message and "\n" not in str(exc), repr(str(exc))


def _case(target: Path) -> str:
    sandbox.STALL_SECONDS = 2.0  # in the child only: a library stuck on a file gives up quickly
    return _exercise(target)


def _targets(made: Path) -> list[Path]:
    made.mkdir()
    return [CORPUS / rel for rel in CORPUS_FILES] + [_generic(made / "generic.h5"), _deflated(made / "deflated.keras")]


def test_every_target_reads_whole_before_mutation(tmp_path):
    for target in _targets(tmp_path / "made"):
        assert run_forked(functools.partial(_exercise, target), HEADROOM, SECONDS_PER_CASE) == ("ok", "ok"), target


def test_mutated_hdf5_and_keras_files_fail_cleanly(tmp_path):
    rng = random.Random(SEED)
    targets = _targets(tmp_path / "made")
    _exercise(targets[0])  # imports made before the cases fork
    work = tmp_path / "m"
    outcomes = {"ok": 0, "error": 0}
    for case in range(CASES):
        source = rng.choice(targets)
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        victim = work / source.name
        victim.write_bytes(_mutate(source.read_bytes(), rng))
        kind, value = run_forked(functools.partial(_case, victim), HEADROOM, SECONDS_PER_CASE)
        if kind != "ok":
            keep = tmp_path / f"case{case}_{source.name}"
            shutil.copyfile(victim, keep)
            pytest.fail(f"case {case} (seed {SEED}, {source.name}, kept as {keep}): {kind}: {value}")
        outcomes[value] += 1
    print(f"HDF5 mutation cases: {outcomes}")
    assert outcomes["error"] > CASES // 10  # the mutations really do damage files
