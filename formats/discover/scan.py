"""Find every checkpoint in a directory (or a tree of runs) and summarise each one."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

from formats.io import storage
from formats.core.errors import CheckpointError
from formats.discover.resolve import Target, claim, find_checkpoints, latest_from_state, locate_named
from formats.concepts.state import read_state

__all__ = ["CheckpointInfo", "scan_directory", "step_of"]

_STEP = re.compile(r"(\d+)$")
_METRIC = re.compile(r"[-_](?:[A-Za-z_]+=)?\d+\.\d+$")  # a trailing metric value such as -0.23
_SHARDS = re.compile(r"-\?{5}-of-\d{5}$")  # a sharded V1 save's pattern: model.ckpt-200-?????-of-00003


@dataclass
class CheckpointInfo:
    """One row of a directory listing; ``error`` is set (and counts are 0) when it cannot be read."""

    path: str
    step: int | None
    format: str
    tensors: int
    nbytes: int
    mtime: float
    latest: bool
    error: str | None = None

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict."""
        out: dict[str, object] = {"path": self.path, "step": self.step, "format": self.format,
                                  "tensors": self.tensors, "nbytes": self.nbytes, "mtime": self.mtime,
                                  "latest": self.latest}
        if self.error:
            out["error"] = self.error
        return out


def step_of(path: str) -> int | None:
    """The trailing number of a checkpoint prefix (``ckpt-10`` -> 10), or None."""
    stem = _SHARDS.sub("", os.path.basename(path))
    for suffix in (".weights.h5", ".h5", ".hdf5", ".keras"):
        if stem.endswith(suffix):
            stem = stem[:-len(suffix)]
            while _METRIC.search(stem):  # Keras ModelCheckpoint names: weights.05-0.23 -> epoch 5
                stem = _METRIC.sub("", stem)
            break
    match = _STEP.search(stem)
    return int(match.group(1)) if match else None


def _targets(directory: str) -> tuple[list[Target], str | None]:
    targets = find_checkpoints(directory)
    state = read_state(directory)
    latest = latest_from_state(directory, state) if state else None
    known = {t.path for t in targets}
    for named in state.all_model_checkpoint_paths if state else []:
        found = locate_named(directory, named, known)
        if found is not None and found not in known:
            known.add(found)
            claimed = claim(found, plugins=False)
            if claimed is not None:
                targets.append(claimed)
    return targets, latest


def _summarise(target: Target, latest: str | None) -> CheckpointInfo:
    files = [f for f in (target.path + ".index", target.path) if storage.isfile(f)] if not storage.is_url(target.path) \
        else [target.path + ".index"]
    mtime = storage.mtime(files[0]) if files else 0.0
    is_latest = latest is not None and _same(target.path, latest)
    info = CheckpointInfo(target.path, step_of(target.path), target.kind, 0, 0, mtime, is_latest)
    try:
        with target.open() as ckpt:
            info.format = ckpt.format
            info.tensors = len(ckpt)
            info.nbytes = sum(e.nbytes for e in ckpt.values())
            if not files and ckpt.files and not storage.is_url(target.path):  # a pattern names no one file
                info.mtime = max(storage.mtime(f) for f in ckpt.files)
    except CheckpointError as exc:
        info.error = str(exc.message)
    return info


def _same(a: str, b: str) -> bool:
    if storage.is_url(a):
        return a.rstrip("/") == b.rstrip("/")
    return os.path.normpath(a) == os.path.normpath(b)


def _sort_key(info: CheckpointInfo) -> tuple[str, int, str]:
    return (storage.dirname(info.path), info.step if info.step is not None else -1, info.path)


def _walk(directory: str) -> list[str]:
    folders = []
    for root, dirs, _ in os.walk(directory):
        dirs.sort()  # deterministic order
        folders.append(root)
    return folders


def scan_directory(directory: str, recursive: bool = False) -> list[CheckpointInfo]:
    """Every checkpoint in ``directory`` (and below it when ``recursive``), sorted by folder and step."""
    if storage.is_url(directory):
        folders = [directory]  # recursion over buckets is not supported: list one prefix
    else:
        folders = _walk(directory) if recursive else [directory]
    infos: list[CheckpointInfo] = []
    for folder in folders:
        try:
            targets, latest = _targets(folder)
        except CheckpointError as exc:
            infos.append(CheckpointInfo(folder, None, "unknown", 0, 0, 0.0, False, str(exc.message)))
            continue
        infos += [_summarise(t, latest) for t in targets]
    return sorted(infos, key=_sort_key)
