"""Round-trip verification: do two checkpoints (or a checkpoint and its sources) hold the same tensors?

Keys, shapes, dtypes and values are compared. Fixed-width values are compared as their
canonical bytes (C order, little-endian) chunk by chunk, so memory stays bounded whatever the
tensor size; bundle tensors have their CRC32C checked on the way. Strings and variants are
compared element by element. Where a source is no longer at hand (a writer fed from a one-shot
iterator), a :class:`Digest` recorded while writing stands in for it.

The comparison engine (:mod:`formats.core.comparison`) is imported by the functions that compare: a writer whose
read-back checks checksums (safetensors, npz) needs only :class:`Mismatch` and :class:`RoundTripReport`.
"""
from __future__ import annotations

from _collections_abc import Callable  # collections.abc's classes, without the collections package

from formats.core.records import field, record
from formats.core.model import shape_text
from formats.core.sources import CHUNK, Source

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

    from formats.core.comparison import Comparison, Digest, digest_update, tensor_digest

__all__ = ["Mismatch", "RoundTripReport", "Digest", "compare_checkpoints", "compare_tensor", "tensor_digest",
           "digest_update"]

Progress = Callable[[int, int], None]
"""Called as ``progress(bytes_done, tensors_done)``."""


@record(frozen=True)
class Mismatch:
    """One difference: the key, its kind (missing, unexpected, dtype, shape, value, unreadable) and a message."""

    key: str
    kind: str
    message: str


@record
class RoundTripReport:
    """The outcome of a comparison of ``path`` (the output) against ``against`` (the source)."""

    path: str
    against: str
    tensors: int = 0
    bytes: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What pairing the tensors left aside (names two keys share, rules that matched nothing): not mismatches."""

    @property
    def ok(self) -> bool:
        """True when every tensor matched."""
        return not self.mismatches

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {"path": self.path, "against": self.against, "same": self.ok, "tensors": self.tensors,
                "bytes": self.bytes,
                "mismatches": [{"key": m.key, "kind": m.kind, "message": m.message} for m in self.mismatches]}


def compare_checkpoints(actual: Mapping[str, Any], expected: Mapping[str, Any], *, path: str = "",
                        against: str = "", chunk: int = CHUNK, progress: Progress | None = None,
                        check_crc: bool = True, jobs: int | None = 1) -> RoundTripReport:
    """Compare every tensor of ``actual`` with the same key in ``expected`` (sources or :class:`Digest`).

    Stored checksums are checked on the way unless ``check_crc`` is False (a writer that has just
    checked its sources and computed the output's checksums from the very bytes compared here).
    Tensors are compared on ``jobs`` threads (None: every core) when both sides may be read from
    several threads at once; the report is the same whatever ``jobs`` is.
    """
    from formats.core.parallel import map_ordered

    report = RoundTripReport(path or str(getattr(actual, "path", "")), against or str(getattr(expected, "path", "")))
    for key in expected:
        if key not in actual:
            report.mismatches.append(Mismatch(key, "missing", "not in the output"))
    keys = [key for key in actual if key in expected]

    def advance(key: str, _: object) -> None:
        report.tensors += 1
        report.bytes += int(getattr(actual[key], "nbytes", 0) or 0)
        if progress:
            progress(report.bytes, report.tensors)

    parallel = _concurrent(actual.values()) and _concurrent(expected.values())
    problems = map_ordered(lambda key: compare_tensor(actual[key], expected[key], chunk, check_crc), keys,
                           jobs if parallel else 1, weight=lambda key: int(getattr(actual[key], "nbytes", 0) or 0),
                           done=advance)
    found = dict(zip(keys, problems))
    for key in actual:  # in the output's order, as a sequential comparison lists them
        problem = found[key] if key in found else ("unexpected", "not in the source")
        if problem is not None:
            report.mismatches.append(Mismatch(key, *problem))
    return report


def _concurrent(sources: Iterable[Any]) -> bool:
    """Whether every source may be read from several threads at once: in-memory values, digests, and entries
    of formats that say so (bundles)."""
    from formats.core.model import TensorEntry

    return all(not isinstance(s, TensorEntry) or s.concurrent_reads for s in sources)


def compare_tensor(actual: Source, expected: Source | Digest, chunk: int = CHUNK,
                   check_crc: bool = True) -> tuple[str, str] | None:
    """``None`` when both hold the same dtype, shape and value, else ``(kind, message)``: the one engine
    (:func:`~formats.core.comparison.compare_values`) asked whether anything differs."""
    from formats.core.comparison import compare_values

    found = compare_values(actual, expected, chunk=chunk, check_crc=check_crc)
    if found.kind is None:
        return None
    return found.kind, _message(found)


def _message(found: Comparison) -> str:
    if found.kind == "dtype":
        return f"dtype {found.dtypes[0]}, source has {found.dtypes[1]}"
    if found.kind == "shape":
        return f"shape {shape_text(found.shapes[0])}, source has {shape_text(found.shapes[1])}"
    if found.kind == "value" and found.digests is not None:
        got, want = found.digests
        return f"values differ (sha256 {got[:12]}..., source {want[:12]}...)"
    if found.kind == "value":
        return f"values differ, first at element {found.first} of {found.size}"
    return found.message




def __getattr__(name: str) -> Any:
    """``Digest``, ``tensor_digest`` and ``digest_update``: :mod:`formats.core.comparison`'s, imported when asked."""
    if name in ("Digest", "tensor_digest", "digest_update"):
        from formats.core import comparison

        return getattr(comparison, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
