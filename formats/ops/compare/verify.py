"""``verify``: read every tensor, check every checksum, and check that data files are whole."""
from __future__ import annotations

from _collections_abc import Callable  # collections.abc's classes, without the collections package
import os

from formats.core.errors import CheckpointError
from formats.core.model import Checkpoint, CheckpointProblem, TensorEntry
from formats.core.parallel import map_ordered

__all__ = ["CheckpointProblem", "VerifyReport", "verify_checkpoint", "Progress"]

Progress = Callable[[int, int], None]
"""Called as ``progress(bytes_done, tensors_done)`` while work goes on."""


class VerifyReport:
    """What ``verify`` checked and what it found wrong (``ok`` when nothing). A plain class: ``verify``
    starts without importing ``dataclasses``."""

    __slots__ = ("path", "format", "tensors", "bytes", "files", "problems", "loader_refusals", "refusals_allowed")

    def __init__(self, path: str, format: str, tensors: int = 0, bytes: int = 0, files: list[str] | None = None,
                 problems: list[CheckpointProblem] | None = None, loader_refusals: list[CheckpointProblem] | None = None,
                 refusals_allowed: bool = False) -> None:
        self.path = path
        self.format = format
        self.tensors = tensors
        self.bytes = bytes
        self.files = [] if files is None else files
        self.problems = [] if problems is None else problems
        self.loader_refusals = [] if loader_refusals is None else loader_refusals
        self.refusals_allowed = refusals_allowed

    def __repr__(self) -> str:
        return (f"VerifyReport(path={self.path!r}, tensors={self.tensors}, problems={self.problems!r}, "
                f"loader_refusals={self.loader_refusals!r})")

    @property
    def ok(self) -> bool:
        """True when no problem was found, nor anything the format's own loader refuses (unless allowed)."""
        return not self.problems and (self.refusals_allowed or not self.loader_refusals)

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {"path": self.path, "format": self.format, "ok": self.ok, "tensors": self.tensors,
                "bytes": self.bytes, "files": self.files,
                "problems": [{"where": p.where, "message": p.message} for p in self.problems],
                "loader_refusals": [{"where": p.where, "message": p.message} for p in self.loader_refusals],
                "loader_refusals_allowed": self.refusals_allowed}


def total_bytes(ckpt: Checkpoint) -> int:
    """Bytes ``verify`` will read: the sum of every entry's stored size."""
    return sum(e.nbytes for e in ckpt.values())


def verify_checkpoint(ckpt: Checkpoint, progress: Progress | None = None, jobs: int | None = 1, *,
                      allow_loader_refusals: bool = False) -> VerifyReport:
    """Check ``ckpt`` thoroughly through the contract: the checkpoint's structure problems, then every
    entry's storage problem or, when it has none, a full read with the format's checks. What the format's
    own loader refuses (:meth:`Checkpoint.loader_refusals`) is reported too, and makes the report not ``ok``
    unless ``allow_loader_refusals``.

    Entries are checked on ``jobs`` threads (None: every core) when the format allows concurrent reads;
    the report is the same whatever ``jobs`` is."""
    report = VerifyReport(ckpt.path, ckpt.format, files=[os.path.basename(f) for f in ckpt.files],
                          loader_refusals=ckpt.loader_refusals(), refusals_allowed=allow_loader_refusals)
    report.problems += ckpt.problems()
    broken = {p.where for p in report.problems}
    entries = list(ckpt.items())
    done = [0, 0]

    def check(item: tuple[str, TensorEntry]) -> str | None:
        return None if item[0] in broken else _entry_problem(item[1])

    def advance(item: tuple[str, TensorEntry], _: str | None) -> None:
        done[0] += item[1].nbytes
        done[1] += 1
        if progress:
            progress(done[0], done[1])

    found = map_ordered(check, entries, jobs if ckpt.concurrent_reads else 1, weight=lambda kv: kv[1].nbytes,
                        done=advance)
    report.problems += [CheckpointProblem(key, problem) for (key, _), problem in zip(entries, found) if problem is not None]
    report.tensors, report.bytes = len(entries), sum(e.nbytes for _, e in entries)
    return report


def _entry_problem(entry: TensorEntry) -> str | None:
    problem = entry.problem()
    if problem is not None:
        return problem
    try:
        entry.check()
    except CheckpointError as exc:
        return exc.message
    return None
