"""``verify``: read every tensor, check every checksum, and check that data files are whole."""
from __future__ import annotations

from _collections_abc import Callable  # collections.abc's classes, without the collections package
import os

from formats.core.errors import CheckpointError
from formats.core.gc_pause import gc_paused
from formats.core.model import Checkpoint, CheckpointProblem, TensorEntry
from formats.discover.units import SourceRef, each_in_unit, opened
from formats.io.spans import small_pieces
from formats.ops.units import run_units

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from formats.core.executors import Executor

__all__ = ["CheckpointProblem", "VerifyReport", "verify_checkpoint", "verify_unit", "Progress"]

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


@gc_paused  # a problem and an entry per tensor, none in a cycle
def verify_checkpoint(ckpt: Checkpoint, progress: Progress | None = None, jobs: int | None = 1, *,
                      allow_loader_refusals: bool = False, executor: str | Executor | None = None) -> VerifyReport:
    """Check ``ckpt`` thoroughly through the contract: the checkpoint's structure problems, then every
    entry's storage problem or, when it has none, a full read with the format's checks. What the format's
    own loader refuses (:meth:`Checkpoint.loader_refusals`) is reported too, and makes the report not ``ok``
    unless ``allow_loader_refusals``.

    Entries are checked in units (:func:`verify_unit`) on ``jobs`` threads (None: every core) when the format
    allows concurrent reads, or on the workers of ``executor`` (:func:`~formats.core.executors.executor_for`);
    the report is the same whatever ``jobs`` and ``executor`` are."""
    report = VerifyReport(ckpt.path, ckpt.format, files=[os.path.basename(f) for f in ckpt.files],
                          loader_refusals=ckpt.loader_refusals(), refusals_allowed=allow_loader_refusals)
    report.problems += ckpt.problems()
    try:
        ckpt.carried_object_graph(keep=False)  # (an export's: read, an npz member's CRC-32 checked; not decoded)
    except CheckpointError as exc:
        report.problems.append(CheckpointProblem("object graph", exc.message))
    broken = {p.where for p in report.problems}
    keys = list(ckpt)
    sizes = ckpt.nbytes_of(keys)  # from the index's columns: no entry made per tensor
    report.tensors, report.bytes = len(keys), sum(sizes)
    units = zip(keys, sizes) if not broken else ((k, n) for k, n in zip(keys, sizes) if k not in broken)  # no pair kept
    found = run_units((ckpt,), verify_unit, units, progress, jobs, executor)
    report.problems += [CheckpointProblem(*bad) for bad in found if bad is not None]
    return report


def verify_unit(ref: SourceRef, keys: tuple[str, ...]) -> list[tuple[str, str] | None]:
    """A unit of ``verify``: for each of ``keys`` of the checkpoint ``ref`` names, None when it is sound, else the
    key and its problem (nothing made per sound tensor: a million of them are a million Nones).
    Small tensors are read a span at a time, each checked against its CRC32C (:func:`formats.io.spans.small_pieces`);
    any other, or one whose checksum does not match, is checked on its own, which says what is wrong."""
    ckpt = opened(ref)
    entries = ckpt.entries_of(keys)  # made for this unit alone where the format can (not kept)
    sound = {i for batch in small_pieces(entries, _no_problem) for i, _ in batch}  # read in spans, checksums matched
    rest = [i for i in range(len(keys)) if i not in sound]
    checked = each_in_unit(ckpt, lambda i: _entry_problem(entries[i]), rest)
    found = {i: problem for i, problem in zip(rest, checked) if problem is not None}
    return [None if i not in found else (key, found[i]) for i, key in enumerate(keys)]


def _no_problem(entry: TensorEntry) -> bool:
    return entry.problem() is None


def _entry_problem(entry: TensorEntry) -> str | None:
    problem = entry.problem()
    if problem is not None:
        return problem
    try:
        entry.check()
    except CheckpointError as exc:
        return exc.message
    return None
