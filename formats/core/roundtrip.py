"""Round-trip verification: do two checkpoints (or a checkpoint and its sources) hold the same tensors?

Keys, shapes, dtypes and values are compared. Fixed-width values are compared as their
canonical bytes (C order, little-endian) chunk by chunk, so memory stays bounded whatever the
tensor size; bundle tensors have their CRC32C checked on the way. Strings and variants are
compared element by element. Where a source is no longer at hand (a writer fed from a one-shot
iterator), a :class:`Digest` recorded while writing stands in for it.
"""
from __future__ import annotations

from _collections_abc import Callable  # collections.abc's classes, without the collections package
import math

from formats.core.records import field, record
from formats.core.errors import CheckpointError
from formats.core.model import shape_text
from formats.core.parallel import map_ordered
from formats.core.sources import CHUNK, Source, describe, elements, fixed_chunks

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping
    from typing import Any

__all__ = ["Mismatch", "RoundTripReport", "Digest", "compare_checkpoints", "compare_tensor", "tensor_digest",
           "digest_update"]

Progress = Callable[[int, int], None]
"""Called as ``progress(bytes_done, tensors_done)``."""


@record(frozen=True)
class Digest:
    """What a value was: dtype name, shape and the sha256 of its canonical bytes (see :func:`tensor_digest`)."""

    dtype: str
    shape: tuple[int, ...]
    sha256: str


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
    """``None`` when both hold the same dtype, shape and value, else ``(kind, message)``."""
    try:
        return _compare(actual, expected, chunk, check_crc)
    except CheckpointError as exc:
        return "unreadable", exc.message
    except ValueError as exc:
        return "unreadable", str(exc)


def _compare(actual: Source, expected: Source | Digest, chunk: int, check_crc: bool) -> tuple[str, str] | None:
    dt_a, shape_a = describe(actual)
    if isinstance(expected, Digest):
        dt_name, shape_b = expected.dtype, expected.shape
    else:
        dt_b, shape_b = describe(expected)
        dt_name = dt_b.name
    if dt_a.name != dt_name:
        return "dtype", f"dtype {dt_a.name}, source has {dt_name}"
    if shape_a != tuple(shape_b):
        return "shape", f"shape {shape_text(shape_a)}, source has {shape_text(shape_b)}"
    if isinstance(expected, Digest):
        got = tensor_digest(actual, chunk)
        return None if got == expected.sha256 else ("value", f"values differ (sha256 {got[:12]}..., "
                                                               f"source {expected.sha256[:12]}...)")
    if dt_a.fixed_width:
        xs, ys = fixed_chunks(actual, chunk, check_crc), fixed_chunks(expected, chunk, check_crc)
        at = first_difference(xs, ys)
        if at is None:
            return None
        for _ in xs:  # read both to the end: a damaged stored tensor then says so (ChecksumError)
            pass
        for _ in ys:
            pass
        return "value", f"values differ, first at element {at // dt_a.itemsize} of {math.prod(shape_a)}"
    left, right = elements(actual), elements(expected)
    for i, (a, b) in enumerate(zip(left, right)):
        if a != b:
            return "value", f"values differ, first at element {i} of {len(left)}"
    return None




def first_difference(xs: Iterator[memoryview], ys: Iterator[memoryview]) -> int | None:
    """Byte offset of the first difference between two byte streams (their lengths included), else None."""
    empty = memoryview(b"")
    x, y, pos = empty, empty, 0
    while True:
        while not x:
            x = next(xs, None)  # type: ignore[arg-type]
            if x is None:
                break
        while not y:
            y = next(ys, None)  # type: ignore[arg-type]
            if y is None:
                break
        if x is None or y is None:
            return None if x is None and y is None else pos
        n = min(len(x), len(y))
        at = _first_unequal(x[:n], y[:n])
        if at is not None:
            return pos + at
        x, y, pos = x[n:], y[n:], pos + n


def _first_unequal(a: memoryview, b: memoryview) -> int | None:
    from formats.core.memcmp import same_bytes

    if same_bytes(a, b):  # the usual case, without the GIL; numpy only to find where they differ
        return None
    import numpy as np

    u = np.frombuffer(a, dtype=np.uint8)
    v = np.frombuffer(b, dtype=np.uint8)
    whole = len(u) // 8 * 8
    if np.array_equal(u[:whole].view(np.uint64), v[:whole].view(np.uint64)) and np.array_equal(u[whole:], v[whole:]):
        return None
    return int(np.flatnonzero(u != v)[0])


def digest_update(h: Any, element: bytes) -> None:
    """Feed one string/variant element to a digest: 8-byte little-endian length, then the bytes."""
    h.update(len(element).to_bytes(8, "little"))
    h.update(element)


def tensor_digest(source: Source, chunk: int = CHUNK) -> str:
    """sha256 of a value's canonical bytes (the corpus manifest's scheme), computed in bounded memory."""
    dt, _ = describe(source)
    import hashlib

    h = hashlib.sha256()
    if dt.fixed_width:
        for piece in fixed_chunks(source, chunk):
            h.update(piece)
    else:
        for element in elements(source):
            digest_update(h, element)
    return h.hexdigest()
