"""Values computed while they are written: the mean of several checkpoints' tensors, and a tensor cast
to another floating-point dtype.

:class:`MeanTensor` and :class:`CastTensor` are :class:`~formats.core.model.TensorEntry` objects, so
every writer streams them like stored tensors: a few chunks per input at a time, whatever the
tensor's size, and the writer's read-back compares the file with the same computation done again
from the inputs. The mean is accumulated in float64 and rounded once to the tensor's dtype;
casts go through float64 too. Rounding is to nearest, ties to even, done once
(:func:`round_float64`: ml_dtypes' own cast from float64 to bfloat16 rounds twice, through float32).
"""
from __future__ import annotations

from formats.core.dtypes import by_name
from formats.core.model import CHUNK_BYTES, CHUNK_ELEMENTS, TensorEntry
from formats.core.records import record
from formats.core.sources import Source, array_chunks

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from concurrent.futures import Executor
    from typing import Any

    import numpy as np

__all__ = ["MeanTensor", "CastTensor", "CastStats", "round_float64", "aligned_chunks", "is_lossless",
           "STEP_ELEMENTS"]

STEP_ELEMENTS = 1 << 18
"""Elements computed at a time (per input: one chunk of its dtype and one float64 copy)."""


def round_float64(values: np.ndarray, dtype: Any) -> np.ndarray:
    """float64 ``values`` rounded to ``dtype`` to nearest, ties to even, in one rounding.

    numpy's own casts do this; ml_dtypes types (bfloat16, float8) are reached through float32
    rounded to odd (truncated, the last bit set when anything was cut off), which float32's 16 or
    more extra bits make exact: the final rounding then sees every bit that matters.
    """
    import numpy as np

    target = np.dtype(dtype)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is infinity, as rounding says
        if target.kind in "fc" or values.dtype == target:
            return values.astype(target)
        narrow = values.astype(np.float32)
    wide = narrow.astype(np.float64)
    inexact = (wide != values) & np.isfinite(values)
    toward_zero = inexact & (np.abs(wide) > np.abs(values))
    narrow[toward_zero] = np.nextafter(narrow[toward_zero], np.float32(0))
    bits = narrow.view(np.uint32)
    bits[inexact] |= np.uint32(1)
    with np.errstate(over="ignore", invalid="ignore"):
        return narrow.astype(target)


def aligned_chunks(streams: Sequence[Iterator[np.ndarray]]) -> Iterator[tuple[np.ndarray, ...]]:
    """Pieces of equal length from several chunk streams over tensors of one size, whatever chunk
    sizes each yields (:func:`formats.core.values.paired_chunks` for any number of streams).

    A stream is advanced only once its current chunk is used up (chunks may be views valid until
    then), and every stream is run to its end, which is when formats compare their checksums.
    """
    current: list[Any] = [None] * len(streams)
    while True:
        for i, stream in enumerate(streams):
            while current[i] is None or not current[i].size:
                current[i] = next(stream, None)
                if current[i] is None:
                    break
        if any(c is None for c in current) or not streams:
            break
        n = min(c.size for c in current)
        yield tuple(c[:n] for c in current)
        current = [c[n:] for c in current]
    for stream in streams:
        for _ in stream:
            pass


def _fixed_chunks_of(source: Source, chunk_elements: int) -> Iterator[np.ndarray]:
    """A fixed-width source's elements in C order as flat arrays (an entry streams; anything else is
    an array already in memory, cut up)."""
    if isinstance(source, TensorEntry):
        yield from source.iter_chunks(chunk_elements)
        return
    import numpy as np

    from formats.core.sources import TensorValue

    value = source.value if isinstance(source, TensorValue) else source
    flat = np.asarray(value).reshape(-1)
    for start in range(0, flat.size, max(1, chunk_elements)):
        yield flat[start:start + chunk_elements]


class _Computed(TensorEntry):
    """A tensor whose chunks are computed from other tensors: bytes and ``read`` follow ``iter_chunks``."""

    def byte_chunks(self, chunk: int = CHUNK_BYTES, check: bool = True) -> Iterator[memoryview]:
        """Canonical bytes of the computed value, at most ``chunk`` at a time."""
        for piece in self.iter_chunks(max(1, chunk // by_name(self.dtype).itemsize)):
            yield from array_chunks(piece, chunk)

    def read(self) -> np.ndarray:
        """The whole computed value."""
        import numpy as np

        pieces = list(self.iter_chunks())
        dtype = by_name(self.dtype).numpy()
        flat = np.concatenate(pieces) if pieces else np.empty(0, dtype=dtype)
        return flat.astype(dtype, copy=False).reshape(self.shape)


class MeanTensor(_Computed):
    """The element-wise mean of ``entries`` (same shape and floating-point dtype), accumulated in float64
    and rounded once to the dtype. Name, role and slot labels are those of the last entry (the newest)."""

    def __init__(self, entries: Sequence[TensorEntry]) -> None:
        newest = entries[-1]
        super().__init__(newest.key, tuple(newest.shape), newest.dtype, newest.size * by_name(newest.dtype).itemsize,
                         newest.name, newest.role, slot_of=newest.slot_of, optimizer=newest.optimizer,
                         slot_name=newest.slot_name)
        self.entries = list(entries)
        self.concurrent_reads = all(e.concurrent_reads for e in self.entries)  # computing keeps no state

    @property
    def files(self) -> tuple[str, ...]:
        """Every input's files (an output must replace none of them)."""
        return tuple(f for e in self.entries for f in e.files)

    def iter_chunks(self, chunk_elements: int = CHUNK_ELEMENTS, pool: Executor | None = None) -> Iterator[np.ndarray]:
        """The mean, at most ``chunk_elements`` (and :data:`STEP_ELEMENTS`) at a time."""
        from formats.core.values import as_float  # (values are read: not for planning an edit)

        step = max(1, min(chunk_elements, STEP_ELEMENTS))
        dtype = by_name(self.dtype).numpy()
        count = len(self.entries)
        for pieces in aligned_chunks([e.iter_chunks(step) for e in self.entries]):
            total = as_float(pieces[0])
            for piece in pieces[1:]:
                total += as_float(piece)
            total /= count
            yield round_float64(total, dtype)


@record
class CastStats:
    """What a cast did to one tensor: the largest absolute error and how many finite values became
    infinite (overflow), counted over one complete pass."""

    key: str
    source_dtype: str
    dtype: str
    lossless: bool
    max_error: float = 0.0
    overflow: int = 0
    done: bool = False

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {"key": self.key, "from": self.source_dtype, "to": self.dtype, "lossless": self.lossless,
                "max_error": self.max_error if self.done else None, "overflow": self.overflow if self.done else None}


def is_lossless(source_dtype: str, dtype: str) -> bool:
    """Whether every value of floating-point ``source_dtype`` is exactly a value of ``dtype``."""
    import ml_dtypes

    a, b = (ml_dtypes.finfo(by_name(d).numpy()) for d in (source_dtype, dtype))
    return bool(b.nmant >= a.nmant and b.maxexp >= a.maxexp and b.minexp - b.nmant <= a.minexp - a.nmant)


class CastTensor(_Computed):
    """``source`` (an entry or any fixed-width source) converted to floating-point ``dtype`` through
    float64, rounded once; ``stats`` records the largest error of the first complete pass."""

    def __init__(self, source: Source, like: TensorEntry, dtype: str, stats: CastStats | None = None) -> None:
        super().__init__(like.key, tuple(like.shape), dtype, like.size * by_name(dtype).itemsize, like.name,
                         like.role, slot_of=like.slot_of, optimizer=like.optimizer, slot_name=like.slot_name)
        self.source = source
        self.stats = stats

    @property
    def files(self) -> tuple[str, ...]:
        """The files of the source."""
        return self.source.files if isinstance(self.source, TensorEntry) else ()

    def iter_chunks(self, chunk_elements: int = CHUNK_ELEMENTS, pool: Executor | None = None) -> Iterator[np.ndarray]:
        """The cast values, at most ``chunk_elements`` (and :data:`STEP_ELEMENTS`) at a time."""
        from formats.core.values import as_float

        step = max(1, min(chunk_elements, STEP_ELEMENTS))
        dtype = by_name(self.dtype).numpy()
        stats = self.stats if self.stats is not None and not self.stats.done and not self.stats.lossless else None
        error, overflow = 0.0, 0
        for piece in _fixed_chunks_of(self.source, step):
            wide = as_float(piece)
            out = round_float64(wide, dtype)
            if stats is not None:
                e, o = _cast_error(wide, out)
                error, overflow = max(error, e), overflow + o
            yield out
        if stats is not None:
            stats.max_error, stats.overflow, stats.done = error, overflow, True


def _cast_error(wide: np.ndarray, out: np.ndarray) -> tuple[float, int]:
    """(largest |out - wide| where both are finite, how many finite values became infinite)."""
    import numpy as np

    from formats.core.values import as_float

    back = as_float(out)
    finite = np.isfinite(wide)
    both = finite & np.isfinite(back)
    error = float(np.max(np.abs(back[both] - wide[both]))) if both.any() else 0.0
    return error, int(np.count_nonzero(finite & ~both))
