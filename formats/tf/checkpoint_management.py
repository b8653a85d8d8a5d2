"""TensorFlow's ``checkpoint_management``: the ``checkpoint`` state file and which prefixes exist.

Point by point as ``tensorflow/python/checkpoint/checkpoint_management.py`` behaves:

- :func:`get_checkpoint_state` returns None when the state file is missing or does not parse,
  raises ``ValueError`` when it names no ``model_checkpoint_path``, and joins relative paths to
  the directory (absolute ones are returned as written, even when they no longer exist).
- :func:`latest_checkpoint` returns the state file's latest prefix when ``<prefix>.index`` or a file
  matching ``<prefix>`` (a TF1 V1 checkpoint) exists, else None; it never raises for a missing
  directory or state file.
- :func:`checkpoint_exists` and :func:`get_checkpoint_mtimes` glob ``<prefix>.index``, then ``<prefix>``;
  mtimes are whole seconds for local files, as TensorFlow's POSIX file system reports them.

One deliberate leniency: a directory copied from another machine keeps the absolute paths its
state file was written with. Where TensorFlow finds nothing there, :func:`latest_checkpoint`
tries the same file name inside the directory and returns that prefix when it exists.
"""
from __future__ import annotations

import os

from formats.concepts.state import STATE_FILE, format_state, parse_state
from formats.concepts.state import CheckpointState as _State
from formats.core.errors import CheckpointError
from formats.io import storage
from formats.tf.io import gfile
from formats.tf.log import log

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["CheckpointState", "get_checkpoint_state", "latest_checkpoint", "checkpoint_exists",
           "get_checkpoint_mtimes"]

_MAX_STATE_BYTES = 1 << 20
_NO_LATEST = "names no model_checkpoint_path"


class CheckpointState(_State):
    """``tf.train.CheckpointState``: ``model_checkpoint_path``, ``all_model_checkpoint_paths``,
    ``all_model_checkpoint_timestamps``, ``last_preserved_timestamp``; ``str()`` is its text format."""

    def __str__(self) -> str:
        return format_state(self)


def _fspath(path: Any) -> str:
    path = os.fspath(path)
    return path.decode("utf-8", "surrogateescape") if isinstance(path, bytes) else path


def _join(directory: str, name: str) -> str:
    return storage.join(directory, name)


def _isabs(path: str) -> bool:
    return storage.is_url(path) or os.path.isabs(path)


def get_checkpoint_state(checkpoint_dir: Any, latest_filename: str | None = None) -> CheckpointState | None:
    """The directory's state file (``latest_filename``, default ``checkpoint``), or None when it is
    missing or unreadable; ``ValueError`` when it names no latest checkpoint."""
    checkpoint_dir = _fspath(checkpoint_dir)
    path = _join(checkpoint_dir, latest_filename or STATE_FILE)
    try:
        if not storage.isfile(path):
            return None
        parsed = parse_state(storage.read_bytes(path, limit=_MAX_STATE_BYTES), path)
    except CheckpointError as exc:
        if exc.message.endswith(_NO_LATEST):
            raise ValueError(f"Invalid checkpoint state loaded from {checkpoint_dir}") from None
        log.warning("%s: %s", type(exc).__name__, exc)
        log.warning("%s: Checkpoint ignored", path)
        return None
    except OSError as exc:
        log.warning("%s: %s", type(exc).__name__, exc)
        log.warning("%s: Checkpoint ignored", path)
        return None
    return CheckpointState(
        model_checkpoint_path=_absolute(checkpoint_dir, parsed.model_checkpoint_path),
        all_model_checkpoint_paths=[_absolute(checkpoint_dir, p) for p in parsed.all_model_checkpoint_paths],
        all_model_checkpoint_timestamps=list(parsed.all_model_checkpoint_timestamps),
        last_preserved_timestamp=parsed.last_preserved_timestamp)


def _absolute(directory: str, path: str) -> str:
    return path if _isabs(path) else _join(directory, path)


def checkpoint_exists(checkpoint_prefix: Any) -> bool:
    """Whether ``<prefix>.index`` (TF2 and TF1 V2) or a file matching ``<prefix>`` (TF1 V1) exists."""
    prefix = _fspath(checkpoint_prefix)
    return bool(gfile.glob(prefix + ".index") or gfile.glob(prefix))


def latest_checkpoint(checkpoint_dir: Any, latest_filename: str | None = None) -> str | None:
    """The prefix of the directory's latest checkpoint, or None (see the module docstring)."""
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state is None or not state.model_checkpoint_path:
        return None
    named = state.model_checkpoint_path
    if checkpoint_exists(named):
        return named
    moved = _join(_fspath(checkpoint_dir), storage.basename(named))
    if moved != named and checkpoint_exists(moved):
        return moved
    log.error("Couldn't match files for checkpoint %s", named)
    return None


def get_checkpoint_mtimes(checkpoint_prefixes: list[Any]) -> list[float]:
    """Modification times (seconds) of the checkpoints that exist, in order; missing ones are skipped."""
    mtimes = []
    for prefix in map(_fspath, checkpoint_prefixes):
        found = gfile.glob(prefix + ".index") or gfile.glob(prefix)
        if found:
            mtimes.append(_mtime(found[0]))
    return mtimes


def _mtime(path: str) -> float:
    if storage.is_url(path):
        return storage.mtime(path)
    return float(int(os.stat(path).st_mtime))
