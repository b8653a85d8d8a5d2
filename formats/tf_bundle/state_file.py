"""Create or update a directory's ``checkpoint`` state file the way TensorFlow does.

Mirrors ``checkpoint_management.update_checkpoint_state_internal``: the new prefix becomes
``model_checkpoint_path`` and the last of ``all_model_checkpoint_paths`` (oldest first),
paths are stored relative to the directory when they lie inside it, timestamps are kept
(and one appended) when the existing file has them, and the file is replaced the way every
output is written (:func:`formats.io.writing.write_text`): never over a file being read,
atomically, read back.
"""
from __future__ import annotations

import os
import time

from formats.concepts.state import STATE_FILE, CheckpointState, format_state, read_state
from formats.io.writing import write_text

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any
    from collections.abc import Iterable

__all__ = ["update_state_file"]


def _stored_path(directory: str, prefix: str, relative: bool) -> str:
    absolute = os.path.abspath(prefix)
    if not relative:
        return absolute
    rel = os.path.relpath(absolute, os.path.abspath(directory))
    return absolute if rel.startswith(os.pardir) else rel


def _same(directory: str, a: str, b: str) -> bool:
    base = os.path.abspath(directory)
    return os.path.normpath(os.path.join(base, a)) == os.path.normpath(os.path.join(base, b))


def update_state_file(directory: str | os.PathLike[str], prefix: str | os.PathLike[str], *, keep_all: bool = True,
                      relative: bool = True, timestamp: float | None = None, inputs: Iterable[Any] = ()) -> CheckpointState:
    """Make ``prefix`` the latest checkpoint of ``directory``'s state file (created if absent).

    With ``keep_all`` the paths already listed stay (oldest first) and ``prefix`` is moved to the
    end; otherwise it is the only one listed. A state file that is a file of ``inputs`` (paths or
    opened checkpoints being read) is refused. Returns the state written.
    """
    directory, prefix = os.fspath(directory), os.fspath(prefix)
    path = _stored_path(directory, prefix, relative)
    old = read_state(directory) or CheckpointState()
    stamps = old.all_model_checkpoint_timestamps
    timed = bool(stamps) and len(stamps) == len(old.all_model_checkpoint_paths)
    kept = [(p, stamps[i] if timed else 0.0) for i, p in enumerate(old.all_model_checkpoint_paths)
            if keep_all and not _same(directory, p, path)]
    kept.append((path, time.time() if timestamp is None else timestamp))
    state = CheckpointState(path, [p for p, _ in kept], [t for _, t in kept] if timed else [],
                            old.last_preserved_timestamp)
    write_text(os.path.join(directory, STATE_FILE), format_state(state), format="state", inputs=inputs, force=True,
               what="state file")
    return state
