"""``stats`` of many small tensors at once, bit for bit what the per-tensor path gives.

:func:`small_stats` reads the small tensors of a unit a span at a time (:func:`formats.io.spans.small_pieces`:
one ``pread`` per span, each tensor's CRC32C checked), gathers those of one dtype and one element count into
one ``(k, n)`` array, converts it once and computes every row's statistics with one numpy call chain
(:func:`row_stats`) instead of one per tensor.

The results are the very bits :func:`formats.ops.inspect.stats.tensor_stats` gives for a tensor read in one
chunk, because every reduction runs the same loop on the same numbers: numpy reduces each row of a C-ordered
``(k, n)`` array along its last axis with the pairwise summation (and min/max loops) it runs on a flat
array of ``n`` elements, so ``x.sum(axis=1)[i]`` is ``x[i].sum()`` to the last bit (``numpy.add.reduceat``,
which sums sequentially, is not); the running update of a fresh accumulator (``_Running.add``) is then
repeated elementwise, operation for operation. ``tests/test_batched_units.py`` checks this on random values.

A tensor this path does not take - bigger than :data:`~formats.io.spans.SMALL_BYTES` or than one chunk,
not stored as a plain range of a local file, not numeric, holding a NaN or an Inf, or with a checksum that
does not match - is left to the per-tensor path (None), which reads it again and says what is wrong.
"""
from __future__ import annotations

from formats.core import dtypes
from formats.core.values import as_float, value_kind
from formats.io.spans import SMALL_BYTES, SPAN_BYTES, small_groups, small_pieces

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import numpy as np

    from formats.core.model import Checkpoint, TensorEntry
    from formats.ops.inspect.stats_columns import StatsPart

    Fields = tuple[float | int, float | int, float, float, float, int]

__all__ = ["small_stats", "small_stats_into", "row_stats", "row_columns"]

_NUMERIC = ("float", "int", "bool", "complex")


def small_stats(entries: Sequence[TensorEntry], chunk_elements: int, budget: int = SPAN_BYTES) -> list[Fields | None]:
    """For each of ``entries``, ``(min, max, mean, std, l2, zeros)`` of a small numeric tensor of finite values
    read in one chunk of ``chunk_elements`` (NaN and Inf counts are 0), or None for the per-tensor path.
    At most about ``budget`` bytes of tensors are held at once."""
    out: list[Fields | None] = [None] * len(entries)
    kinds: dict[str, str] = {}
    want = _wanted(chunk_elements, kinds)

    def numeric(entry: TensorEntry) -> bool:
        return entry.unreadable is None and want(entry.dtype, entry.shape)

    for batch in small_pieces(entries, numeric, budget):
        groups: dict[tuple[str, int], list[tuple[int, memoryview]]] = {}
        for i, piece in batch:
            groups.setdefault((entries[i].dtype, entries[i].size), []).append((i, piece))
        for (dtype, n), members in groups.items():
            _fill(out, [i for i, _ in members], [piece for _, piece in members], dtype, n, kinds[dtype])
    return out


def small_stats_into(ckpt: Checkpoint, keys: Sequence[str], chunk_elements: int, part: StatsPart,
                     budget: int = SPAN_BYTES) -> None:
    """:func:`small_stats` of the tensors of ``keys`` of ``ckpt``, found without an entry per tensor where the
    checkpoint can (:func:`formats.io.spans.small_groups`) and written straight into the columns of ``part`` (a
    :class:`~formats.ops.inspect.stats_columns.StatsPart` of ``keys``): no Python number per statistic; the
    tensors left to the per-tensor path stay unfilled."""
    import math

    import numpy as np

    kinds: dict[str, str] = {}
    for batch in small_groups(ckpt, keys, _wanted(chunk_elements, kinds), budget):
        for dtype, shape, positions, pieces in batch:
            n = math.prod(shape)
            raw = np.frombuffer(b"".join(pieces), dtype=dtypes.by_name(dtype).numpy()).reshape(len(pieces), n)
            rows, columns = row_columns(raw, kinds[dtype] in ("int", "bool"))
            part.put([positions[r] for r in rows] if rows is not None else positions, dtype, shape, columns)


def _wanted(chunk_elements: int, kinds: dict[str, str]) -> Callable[[str, tuple[int, ...]], bool]:
    """Whether a tensor of this dtype and shape is one :func:`row_stats` summarises: numeric, and read in one chunk
    of ``chunk_elements`` (``kinds`` remembers each dtype's :func:`~formats.core.values.value_kind`)."""
    import math

    any_size = chunk_elements >= 8 * SMALL_BYTES  # a small tensor has fewer elements than bits: one chunk

    def want(dtype: str, shape: tuple[int, ...]) -> bool:
        kind = kinds.get(dtype)
        if kind is None:
            kind = kinds[dtype] = value_kind(dtype)
        return kind in _NUMERIC and (any_size or math.prod(shape) <= chunk_elements)

    return want


def _fill(out: list[Fields | None], positions: list[int], pieces: list[memoryview], dtype: str, n: int,
          kind: str) -> None:
    """Compute the rows of one group (tensors of one dtype and ``n`` elements) and put them in ``out``."""
    import numpy as np

    data = b"".join(pieces)
    raw = np.frombuffer(data, dtype=dtypes.by_name(dtype).numpy()).reshape(len(pieces), n)
    for i, fields in zip(positions, row_stats(raw, kind in ("int", "bool"))):
        out[i] = fields


def row_stats(raw: np.ndarray, integral: bool) -> list[Fields | None]:
    """For each row of ``raw`` (``k`` tensors of ``n`` elements each, as stored), ``(min, max, mean, std, l2,
    zeros)`` exactly as ``tensor_stats`` computes them for a tensor read in one chunk (``integral``: min and
    max exact, as ints); None for a row holding a NaN or an Inf (or a complex NaN)."""
    k = raw.shape[0]
    rows, columns = row_columns(raw, integral)
    found = list(zip(*(column.tolist() for column in columns)))
    if rows is None:
        return found  # type: ignore[return-value]
    out: list[Fields | None] = [None] * k
    for row, fields in zip(rows, found):
        out[row] = fields
    return out


def row_columns(raw: np.ndarray, integral: bool) -> tuple[list[int] | None, tuple[np.ndarray, ...]]:
    """:func:`row_stats` as columns: ``(rows, (min, max, mean, std, l2, zeros))``, each column an array with a
    value per finite row of ``raw`` (min and max as the stored integers with ``integral``, else float64; zeros
    int64), and ``rows`` the positions of those rows in ``raw``, None when every row is finite. A column's
    ``tolist()`` gives the very Python numbers :func:`row_stats` gives."""
    import numpy as np

    k, n = raw.shape
    x = as_float(raw)
    if x.dtype.kind == "c":
        x = np.abs(x)
    finite = np.isfinite(x).all(axis=1)
    rows = None
    if not finite.all():
        rows = np.flatnonzero(finite).tolist()
        x, raw = x[finite], raw[finite]
    with np.errstate(over="ignore", invalid="ignore"):
        mean = x.sum(axis=1) / n  # float(x.sum()) / x.size
        d = x - mean[:, None]
        m2 = (d * d).sum(axis=1)
        sq = (x * x).sum(axis=1)
        # _Running.add into a fresh accumulator (n = 0, mean = m2 = sq = 0.0), operation for operation
        delta = mean - 0.0
        m2 = 0.0 + (m2 + 0.0)  # no correction for a first chunk
        mean = 0.0 + delta * n / n
        sq = 0.0 + sq
        std = np.sqrt(np.where(0.0 > m2, 0.0, m2) / n)  # math.sqrt(max(m2, 0.0) / n)
        l2 = np.sqrt(sq)
    if integral:
        as_int = raw.astype(np.int64) if raw.dtype.kind in "bV" else raw
        lo, hi = as_int.min(axis=1), as_int.max(axis=1)
    else:
        lo, hi = x.min(axis=1), x.max(axis=1)
    zeros = n - np.count_nonzero(x, axis=1).astype(np.int64)
    return rows, (lo, hi, mean, std, l2, zeros)
