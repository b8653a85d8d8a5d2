"""Find every checkpoint in a directory (or a tree of runs) and summarise each one.

Directories are listed as real runs leave them: each checkpoint once however the directory or
the state file spells its path (``.``, ``a//b``, absolute paths that exist); a state file that
names checkpoints which are gone still lets the others be listed, each stale name on its own row
with an error; hidden files count (``Saver.save(sess, "dir/")`` writes ``dir/.index``); a
SavedModel is one row (its ``variables/`` are part of it), and a model base directory lists its
versions with the highest one as the latest, as TF Serving serves it.
"""
from __future__ import annotations

import os
import re

from formats.concepts.state import CheckpointState, read_state
from formats.concepts.step import own_step
from formats.core.errors import CheckpointError
from formats.discover.resolve import (Target, claim, claim_directory, find_checkpoints, identity, latest_version,
                                      locate_named, normalize)
from formats.core.parallel import map_ordered
from formats.io import storage

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["CheckpointInfo", "scan_directory", "count_below", "step_of"]

REMOTE_REQUESTS = 16
"""Checkpoints of a bucket prefix summarised at once (their indexes fetched concurrently)."""
# Patterns compiled by ``re``'s cache on first use, not at import (start-up).
_STEP = r"(\d+)$"
_METRIC = r"[-_](?:[A-Za-z_]+=)?\d+\.\d+$"  # a trailing metric value such as -0.23
_SHARDS = r"-\?{5}-of-\d{5}$"  # a sharded V1 save's pattern: model.ckpt-200-?????-of-00003


class CheckpointInfo:
    """One row of a directory listing; ``error`` is set when it cannot be read whole (counts are then
    what could be read: 0 when it cannot be opened at all). ``step`` is the number in the checkpoint's name
    (:func:`step_of`: ``ckpt-5`` -> 5, how many times a ``CheckpointManager`` saved); ``own_step`` the value of
    its own step variable (:func:`formats.concepts.step.own_step`: ``step``, ``global_step``, the optimizer's
    iterations), None when it has none."""

    __slots__ = ("path", "step", "format", "tensors", "nbytes", "mtime", "latest", "error", "own_step")

    def __init__(self, path: str, step: int | None, format: str, tensors: int, nbytes: int, mtime: float,
                 latest: bool, error: str | None = None, own_step: int | None = None) -> None:
        self.path = path
        self.step = step
        self.format = format
        self.tensors = tensors
        self.nbytes = nbytes
        self.mtime = mtime
        self.latest = latest
        self.error = error
        self.own_step = own_step

    def __repr__(self) -> str:
        return f"CheckpointInfo({', '.join(f'{k}={getattr(self, k)!r}' for k in self.__slots__)})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    __hash__ = None  # type: ignore[assignment]

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict: ``step`` the number in the name (the save number), ``own_step`` the checkpoint's
        own step (null when it has no step variable)."""
        out: dict[str, object] = {"path": self.path, "step": self.step, "own_step": self.own_step,
                                  "format": self.format, "tensors": self.tensors, "nbytes": self.nbytes,
                                  "mtime": self.mtime, "latest": self.latest}
        if self.error:
            out["error"] = self.error
        return out


def step_of(path: str) -> int | None:
    """The trailing number of a checkpoint prefix (``ckpt-10`` -> 10, a SavedModel version ``00000123``
    -> 123; a sharded V1 pattern ``model.ckpt-200-?????-of-00003`` -> 200), or None."""
    stem = re.sub(_SHARDS, "", os.path.basename(path.rstrip(os.sep)))
    for suffix in (".weights.h5", ".h5", ".hdf5", ".keras"):
        if stem.endswith(suffix):
            stem = stem[:-len(suffix)]
            while re.search(_METRIC, stem):  # Keras ModelCheckpoint names: weights.05-0.23 -> epoch 5
                stem = re.sub(_METRIC, "", stem)
            break
    match = re.search(_STEP, stem)
    return int(match.group(1)) if match else None


class _Folder:
    """What one folder holds: checkpoints found, the latest's path, and the state file's stale names
    (``(path as named, is it the latest)``)."""

    def __init__(self, targets: list[Target], latest: str | None = None) -> None:
        self.targets = targets
        self.latest = latest
        self.stale: list[tuple[str, bool]] = []


def _folder(directory: str) -> _Folder:
    own = claim_directory(directory)
    if own is not None:  # a SavedModel directory is one checkpoint
        return _Folder([own])
    targets = find_checkpoints(directory)
    state = read_state(directory)
    if state is None:
        version = latest_version(targets)
        return _Folder(targets, version.path if version is not None else None)
    return _with_state(directory, targets, state)


def _with_state(directory: str, targets: list[Target], state: CheckpointState) -> _Folder:
    known = {identity(t.path) for t in targets}
    folder = _Folder(targets)
    for named in dict.fromkeys([*state.all_model_checkpoint_paths, state.model_checkpoint_path]):
        is_latest = named == state.model_checkpoint_path
        found = locate_named(directory, named, {t.path for t in targets})
        if found is None:
            folder.stale.append((named, is_latest))
            continue
        if is_latest:
            folder.latest = found
        if identity(found) not in known:
            known.add(identity(found))
            claimed = claim(found, plugins=False)
            if claimed is not None:
                targets.append(Target(claimed.format, normalize(claimed.path)))
    return folder


def _stale_row(directory: str, named: str, is_latest: bool) -> CheckpointInfo:
    path = named if os.path.isabs(named) or storage.is_url(named) else storage.join(directory, named)
    which = "as the latest checkpoint" if is_latest else "among its checkpoints"
    return CheckpointInfo(path, step_of(named), "missing", 0, 0, 0.0, is_latest,
                          f"the checkpoint state file names {named!r} {which}, but it does not exist")


def _summarise(target: Target, latest: str | None) -> CheckpointInfo:
    is_latest = latest is not None and identity(target.path) == identity(latest)
    info = CheckpointInfo(target.path, step_of(target.path), target.format, 0, 0, 0.0, is_latest)
    try:
        with target.open() as ckpt:
            info.format = ckpt.format
            info.tensors = len(ckpt)
            info.nbytes = sum(e.nbytes for e in ckpt.values())
            info.own_step = own_step(ckpt)[0]  # one scalar read
            files = ckpt.files
            gone = storage.missing_files(ckpt.files)
    except CheckpointError as exc:
        info.error = str(exc.message)
        files, gone = [target.path + ".index", target.path], []
    info.mtime = next((storage.mtime(f) for f in files if f not in gone and _exists(f)), 0.0)
    if gone:
        info.error = "missing " + ", ".join(os.path.basename(f) for f in gone)
    return info


def _exists(path: str) -> bool:
    return storage.is_url(path) or os.path.exists(path)


def _sort_key(info: CheckpointInfo) -> tuple[str, int, str]:
    return (storage.dirname(info.path.rstrip(os.sep)), info.step if info.step is not None else -1, info.path)


def _walk(directory: str) -> list[str]:
    """Every folder of the tree, a SavedModel's own folders (``variables/``, ``assets/``) left out."""
    folders = []
    for root, dirs, _ in os.walk(directory):
        folders.append(root)
        if claim_directory(root) is not None:
            dirs[:] = []
        dirs.sort()  # deterministic order
    return folders


def scan_directory(directory: str, recursive: bool = False) -> list[CheckpointInfo]:
    """Every checkpoint in ``directory`` (and below it when ``recursive``), sorted by folder and step. Behind a
    URL, :data:`REMOTE_REQUESTS` checkpoints are read at once."""
    infos: list[CheckpointInfo] = []
    for folder, found in _folders_found(directory, recursive):
        if isinstance(found, CheckpointError):
            infos.append(CheckpointInfo(folder, None, "unknown", 0, 0, 0.0, False, str(found.message)))
            continue
        # behind a URL each checkpoint is a few requests: fetch many indexes at once (order kept)
        jobs = REMOTE_REQUESTS if storage.is_url(folder) else 1
        latest = found.latest
        infos += map_ordered(lambda target, latest=latest: _summarise(target, latest), found.targets, jobs)  # type: ignore[misc]
        infos += [_stale_row(folder, named, is_latest) for named, is_latest in found.stale]
    return sorted(infos, key=_sort_key)


def count_below(directory: str) -> int:
    """How many rows ``scan_directory(directory, recursive=True)`` would have, none of the checkpoints
    opened: what ``ckpt ls DIR`` mentions when DIR itself holds none (0 behind a URL, which is not walked)."""
    if storage.is_url(directory):
        return 0
    return sum(1 if isinstance(found, CheckpointError) else len(found.targets) + len(found.stale)
               for _, found in _folders_found(directory, True))


def _folders_found(directory: str, recursive: bool) -> Iterator[tuple[str, _Folder | CheckpointError]]:
    """Each folder scanned (``directory``, and those below it when ``recursive``) with what it holds (each
    checkpoint in the first folder that finds it), or the error that keeps it from being read."""
    directory = normalize(directory)
    if storage.is_url(directory):
        folders = [directory]  # recursion over buckets is not supported: list one prefix
    else:
        folders = _walk(directory) if recursive else [directory]
    listed: set[str] = set()  # a SavedModel is found in its model base and is a folder of the walk itself
    for folder in folders:
        try:
            found = _folder(folder)
        except CheckpointError as exc:
            yield folder, exc
            continue
        fresh = []
        for target in found.targets:
            if identity(target.path) not in listed:
                listed.add(identity(target.path))
                fresh.append(target)
        found.targets = fresh
        yield folder, found
