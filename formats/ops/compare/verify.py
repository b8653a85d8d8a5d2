"""``verify``: read every tensor, check every checksum, and check that data files are whole."""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from formats.core.errors import CheckpointError
from formats.core.model import Checkpoint, Problem, TensorEntry

__all__ = ["Problem", "VerifyReport", "verify_checkpoint", "Progress"]

Progress = Callable[[int, int], None]
"""Called as ``progress(bytes_done, tensors_done)`` while work goes on."""


@dataclass
class VerifyReport:
    """What ``verify`` checked and what it found wrong (``ok`` when nothing)."""

    path: str
    format: str
    tensors: int = 0
    bytes: int = 0
    files: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no problem was found."""
        return not self.problems

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {"path": self.path, "format": self.format, "ok": self.ok, "tensors": self.tensors,
                "bytes": self.bytes, "files": self.files,
                "problems": [{"where": p.where, "message": p.message} for p in self.problems]}


def total_bytes(ckpt: Checkpoint) -> int:
    """Bytes ``verify`` will read: the sum of every entry's stored size."""
    return sum(e.nbytes for e in ckpt.values())


def verify_checkpoint(ckpt: Checkpoint, progress: Progress | None = None) -> VerifyReport:
    """Check ``ckpt`` thoroughly through the contract: the checkpoint's structure problems, then every
    entry's storage problem or, when it has none, a full read with the format's checks."""
    report = VerifyReport(ckpt.path, ckpt.format, files=[os.path.basename(f) for f in ckpt.files])
    report.problems += ckpt.problems()
    broken = {p.where for p in report.problems}
    for key, entry in ckpt.items():
        if key not in broken:
            problem = _entry_problem(entry)
            if problem is not None:
                report.problems.append(Problem(key, problem))
        report.tensors += 1
        report.bytes += entry.nbytes
        if progress:
            progress(report.bytes, report.tensors)
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
