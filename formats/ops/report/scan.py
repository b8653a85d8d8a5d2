"""One pass over many tensors for a summary report: per tensor its NaN, Inf and zero counts, the largest finite
|x| and the sum of squares of the finite values, held as numpy columns rather than one object per tensor.

Small tensors are read whole and gathered by dtype into batches of about :data:`BATCH_ELEMENTS` values; each
batch is converted to float64 once and reduced per tensor with ``ufunc.reduceat``, so a checkpoint of a
million tiny tensors costs a few numpy calls per batch instead of a dozen per tensor. A tensor larger than
:data:`SMALL_ELEMENTS` streams in chunks (:func:`~formats.core.values.iter_chunks`), each chunk reduced the
same way, so memory stays bounded by one batch and one chunk. Strings, variants and unreadable tensors get
their flags only (``unreadable``; counts 0).
"""
from __future__ import annotations

from formats.core.values import CHUNK_ELEMENTS, as_float, iter_chunks, value_kind

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    import numpy as np

    from formats.core.model import Checkpoint, TensorEntry

__all__ = ["TensorColumns", "scan_keys", "SMALL_ELEMENTS", "BATCH_ELEMENTS", "STREAM_ELEMENTS"]

SMALL_ELEMENTS = 1 << 16
"""Tensors of at most this many elements are read whole and batched; larger ones stream in chunks."""
BATCH_ELEMENTS = 1 << 20
"""Values gathered before a batch is reduced (one float64 copy of them at a time: 8 MiB)."""
STREAM_ELEMENTS = 1 << 18
"""Elements per chunk of a large tensor (its float64 copy and the temporaries: about 12 MiB)."""
BATCH_TENSORS = 8192
"""Arrays gathered before a batch is reduced (each a small numpy object until then)."""
SPAN_BUDGET = 64 << 10
"""Stored bytes of small tensors read at once (4,096 of 16 bytes: a few objects each, held until they are
batched)."""


class TensorColumns:
    """Per-tensor results of :func:`scan_keys`, one numpy column each, in the order of the keys."""

    def __init__(self, count: int) -> None:
        import numpy as np

        self.nan = np.zeros(count, np.int64)
        self.inf = np.zeros(count, np.int64)
        self.zeros = np.zeros(count, np.int64)
        self.absmax = np.zeros(count, np.float64)
        """The largest finite |x| (0.0 when none)."""
        self.sumsq = np.zeros(count, np.float64)
        """Sum of squares of the finite values (the L2 norm squared)."""
        self.numeric = np.zeros(count, bool)
        """Whether the values were read (numeric and readable)."""
        self.unreadable = np.zeros(count, bool)

    @property
    def nonfinite(self) -> np.ndarray:
        """Whether each tensor holds a NaN or an Inf."""
        return (self.nan + self.inf) > 0


class _Batches:
    """Arrays gathered by dtype with the index of the tensor each belongs to, reduced into ``cols``."""

    def __init__(self, cols: TensorColumns) -> None:
        self.cols = cols
        self.pending: dict[Any, tuple[list[np.ndarray], list[int]]] = {}
        self.held = self.arrays = 0

    def add(self, index: int, values: np.ndarray) -> None:
        arrays, owners = self.pending.setdefault(values.dtype, ([], []))
        arrays.append(values.reshape(-1))
        owners.append(index)
        self.held += values.size
        self.arrays += 1
        if self.held >= BATCH_ELEMENTS or self.arrays >= BATCH_TENSORS:
            self.flush()

    def flush(self) -> None:
        for arrays, owners in self.pending.values():
            _reduce(self.cols, arrays, owners)
        self.pending.clear()
        self.held = self.arrays = 0


def _reduce(cols: TensorColumns, arrays: list[np.ndarray], owners: list[int]) -> None:
    """Fold ``arrays`` (one dtype, none empty) into the columns of their ``owners`` (an owner may repeat)."""
    import numpy as np

    sizes = np.fromiter((a.size for a in arrays), np.int64, len(arrays))
    _reduce_flat(cols, np.concatenate(arrays) if len(arrays) > 1 else arrays[0], sizes, owners)


def _reduce_flat(cols: TensorColumns, values: np.ndarray, sizes: np.ndarray, owners: list[int]) -> None:
    """Fold ``values`` (one dtype: the values of ``len(sizes)`` tensors one after another, ``sizes`` of each, none
    empty) into the columns of their ``owners``."""
    import numpy as np

    x = as_float(values)
    if x.dtype.kind == "c":
        x = np.abs(x)  # NaN when a part is NaN, Inf when a part is Inf and none NaN
    starts = np.zeros(len(sizes), np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    own = np.asarray(owners, np.int64)
    finite = np.isfinite(x)
    nan = np.isnan(x)
    np.add.at(cols.nan, own, np.add.reduceat(nan, starts))
    np.add.at(cols.inf, own, np.add.reduceat(~finite & ~nan, starts))
    np.add.at(cols.zeros, own, np.add.reduceat(x == 0, starts))
    clean = np.where(finite, x, 0.0)
    np.maximum.at(cols.absmax, own, np.maximum.reduceat(np.abs(clean), starts))
    np.add.at(cols.sumsq, own, np.add.reduceat(clean * clean, starts))


def scan_keys(ckpt: Checkpoint, keys: Sequence[str], progress: Callable[[int, int], None] | None = None,
              chunk_elements: int = CHUNK_ELEMENTS) -> tuple[TensorColumns, np.ndarray]:
    """The :class:`TensorColumns` of the tensors of ``keys`` of ``ckpt`` (each read once, checksums checked as the
    format reads), and each one's element count; ``progress(bytes, tensors)`` about every batch. An entry is made
    only for a tensor not found from the checkpoint's columns (:func:`formats.io.spans.small_groups`: a bundle's
    small tensors are located, read a span at a time, checked against their CRC32C and reduced a dtype at a time
    without a tensor object each)."""
    import math

    import numpy as np

    from formats.core import dtypes
    from formats.io.spans import small_groups

    cols = TensorColumns(len(keys))
    sizes = np.zeros(len(keys), np.int64)
    numeric: dict[str, bool] = {}
    kinds: dict[str, Any] = {}  # dtype name -> its numpy dtype, None when not numeric

    def want(dtype: str, shape: tuple[int, ...]) -> bool:
        kind = kinds.get(dtype, False)
        if kind is False:
            wanted = numeric[dtype] = value_kind(dtype) not in ("bytes", "other")
            kind = kinds[dtype] = dtypes.by_name(dtype).numpy() if wanted else None
        return kind is not None and 0 < math.prod(shape) <= SMALL_ELEMENTS

    taken = np.zeros(len(keys), bool)
    for batch in small_groups(ckpt, keys, want, SPAN_BUDGET):  # a batch's values a dtype at a time
        by_dtype: dict[str, tuple[list[int], list[memoryview], list[int]]] = {}
        done = 0
        for dtype, shape, positions, pieces in batch:
            members = by_dtype.get(dtype)
            if members is None:
                members = by_dtype[dtype] = ([], [], [])
            n = math.prod(shape)
            members[0].extend(positions)
            members[1].extend(pieces)
            members[2].extend([n] * len(positions))
            done += sum(map(len, pieces))
        for dtype, (owners, pieces, counts) in by_dtype.items():
            at = np.asarray(owners, np.intp)
            taken[at] = True
            cols.numeric[at] = True
            counted = np.asarray(counts, np.int64)
            sizes[at] = counted
            _reduce_flat(cols, np.frombuffer(b"".join(pieces), kinds[dtype]), counted, owners)
        if progress is not None and batch:
            progress(done, sum(len(owners) for owners, _, _ in by_dtype.values()))
    rest = np.flatnonzero(~taken).tolist()
    entries = ckpt.entries_of([keys[i] for i in rest])
    for i, entry in zip(rest, entries):
        sizes[i] = entry.size
    _scan_each(entries, rest, cols, numeric, progress, chunk_elements)
    return cols, sizes


def _scan_each(entries: Sequence[TensorEntry], rows: list[int], cols: TensorColumns, numeric: dict[str, bool],
               progress: Callable[[int, int], None] | None, chunk_elements: int) -> None:
    """Read and reduce, one by one, ``entries``: the tensors of the columns' ``rows``, in that order."""
    batches = _Batches(cols)
    done_bytes = done = 0
    for i, entry in zip(rows, entries):
        dtype = entry.dtype
        wanted = numeric.get(dtype)
        if wanted is None:
            wanted = numeric[dtype] = value_kind(dtype) not in ("bytes", "other")
        if entry.unreadable:
            cols.unreadable[i] = True
        elif wanted and entry.size:
            cols.numeric[i] = True
            if entry.size <= SMALL_ELEMENTS:  # a view into the file's map at most: held until its batch
                batches.add(i, entry.read())
            else:
                for chunk in iter_chunks(entry, min(chunk_elements, STREAM_ELEMENTS)):
                    _reduce(cols, [chunk], [i])  # now: the chunk may be a view valid only until the next
        done_bytes += entry.nbytes
        done += 1
        if progress is not None and batches.arrays == 0:
            progress(done_bytes, done)
            done_bytes = done = 0
    batches.flush()
    if progress is not None and done:
        progress(done_bytes, done)
