"""``verify``: read every tensor, check every checksum, and check that data files are whole."""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from formats.core.errors import CheckpointError
from formats.core.model import Checkpoint

__all__ = ["Problem", "VerifyReport", "verify_checkpoint", "Progress"]

Progress = Callable[[int, int], None]
"""Called as ``progress(bytes_done, tensors_done)`` while work goes on."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong: where (a key or a file) and what."""

    where: str
    message: str


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
    """Check ``ckpt`` thoroughly; formats with their own structure checks (bundles) add those."""
    from formats.tf_bundle.checkpoint import BundleCheckpoint

    if isinstance(ckpt, BundleCheckpoint):
        from formats.tf_bundle.verify import verify_bundle

        return verify_bundle(ckpt, progress)
    report = VerifyReport(ckpt.path, ckpt.format, files=[os.path.basename(f) for f in ckpt.files])
    structure = getattr(ckpt, "structure_problems", None)  # e.g. Keras layer lists naming missing datasets
    report.problems += [Problem(where, message) for where, message in (structure() if structure else [])]
    for key, entry in ckpt.items():
        storage = getattr(entry, "storage_problem", None)  # declared shape vs. what the file stores
        problem = storage() if storage else None
        if problem is not None:
            report.problems.append(Problem(key, problem))
        else:
            try:
                check = getattr(entry, "check", None)  # formats that can read without keeping the value
                check() if check is not None else entry.read()
            except CheckpointError as exc:
                report.problems.append(Problem(key, exc.message))
        report.tensors += 1
        report.bytes += entry.nbytes
        if progress:
            progress(report.bytes, report.tensors)
    return report
