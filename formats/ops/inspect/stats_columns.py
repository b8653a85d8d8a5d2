"""One tensor's statistics (:class:`TensorStats`), and the result of ``stats`` held as columns: about 53 bytes
per tensor instead of a Python object per tensor.

A small tensor's statistics come from :func:`~formats.ops.inspect.row_stats.row_columns` as numpy columns;
:class:`StatsPart` keeps them so (one part per unit of ``stats``), with the
:class:`~formats.ops.inspect.stats.TensorStats` of the tensors the per-tensor path read beside them, and
:class:`StatsRows` joins the parts of a run into one read-only sequence of ``TensorStats``. A ``TensorStats`` is
made when a row is read (a slice of rows a column at a time), holding the very Python numbers the per-tensor path
gives: min and max are kept as their 8 bytes (float64, int64 or uint64, as the dtype's statistics are), so an
int64 extreme stays exact. A million tiny tensors: 53 MB of columns where the objects cost about 260 MB.
"""
from __future__ import annotations

from collections.abc import Sequence

from formats.core.records import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    import numpy as np

    from formats.ops.inspect.histogram import Histogram

__all__ = ["TensorStats", "StatsPart", "StatsRows", "READ_AT_ONCE"]


@record(slots=True)  # one per tensor: a dict per tensor cost more than its fields
class TensorStats:
    """Statistics of one tensor; the float fields are None when there is no finite element (or no number)."""

    key: str
    dtype: str
    shape: tuple[int, ...]
    size: int = 0
    min: float | int | None = None
    max: float | int | None = None
    mean: float | None = None
    std: float | None = None
    l2: float | None = None
    zeros: int | None = None
    nan: int | None = None
    inf: int | None = None
    histograms: dict[str, Histogram] | None = None
    """Histograms by scale (``linear``, ``log``) when asked for (empty for a string or unreadable tensor)."""

    @property
    def finite(self) -> bool:
        """False when the tensor holds a NaN or an Inf."""
        return not (self.nan or self.inf)

    def to_json(self) -> dict[str, Any]:
        """``{"key", "dtype", "shape", "size", "min", "max", "mean", "std", "l2", "zeros", "nan", "inf"}``, and
        ``"histograms": {scale: Histogram.to_json()}`` (empty for a string tensor) when they were asked for."""
        out = {"key": self.key, "dtype": self.dtype, "shape": list(self.shape), "size": self.size, "min": self.min,
               "max": self.max, "mean": self.mean, "std": self.std, "l2": self.l2, "zeros": self.zeros,
               "nan": self.nan, "inf": self.inf}
        if self.histograms is not None:
            out["histograms"] = {scale: h.to_json() for scale, h in self.histograms.items()}
        return out



READ_AT_ONCE = 4096
"""Rows a :class:`StatsRows` makes at a time when iterated."""

_REST = 255
"""The dtype code of a row not held in the columns (its ``TensorStats`` is in ``rest``)."""


class StatsPart:
    """The statistics of one unit's ``keys``: columns for the tensors :meth:`put` gave, a ``TensorStats`` in
    ``rest`` (by position) for the others. Picklable, as a unit's result crosses to a cluster's client."""

    __slots__ = ("keys", "dtypes", "views", "shapes", "sizes", "code", "shape_code", "lo", "hi", "mean", "std",
                 "l2", "zeros", "rest")

    def __init__(self, keys: Sequence[str]) -> None:
        import numpy as np

        n = len(keys)
        self.keys = keys
        self.dtypes: list[str] = []  # code -> dtype name
        self.views: list[str] = []  # code -> how min and max are stored: "f8", "i8" or "u8"
        self.shapes: list[tuple[int, ...]] = []
        self.sizes: list[int] = []
        self.code = np.full(n, _REST, np.uint8)
        self.shape_code = np.zeros(n, np.int32)
        self.lo, self.hi = np.zeros(n, np.int64), np.zeros(n, np.int64)  # 8 bytes each, read as views[code]
        self.mean, self.std, self.l2 = np.zeros(n), np.zeros(n), np.zeros(n)
        self.zeros = np.zeros(n, np.int64)
        self.rest: dict[int, TensorStats] = {}

    def __len__(self) -> int:
        return len(self.keys)

    def put(self, positions: Sequence[int], dtype: str, shape: tuple[int, ...], columns: tuple[np.ndarray, ...]) -> None:
        """Hold the statistics of the tensors at ``positions`` (of ``dtype`` and ``shape``, every one finite):
        ``columns`` as :func:`~formats.ops.inspect.row_stats.row_columns` gives them."""
        import math

        import numpy as np

        lo, hi, mean, std, l2, zeros = columns
        view = "f8" if lo.dtype.kind in "fc" else "u8" if lo.dtype.kind == "u" and lo.dtype.itemsize == 8 else "i8"
        code = self._code(dtype, view)
        if shape in self.shapes:
            shape_at = self.shapes.index(shape)
        else:
            shape_at = len(self.shapes)
            self.shapes.append(shape)
            self.sizes.append(math.prod(shape))
        at = np.asarray(positions, dtype=np.intp)
        self.code[at] = code
        self.shape_code[at] = shape_at
        self.lo.view(view)[at] = lo
        self.hi.view(view)[at] = hi
        self.mean[at], self.std[at], self.l2[at], self.zeros[at] = mean, std, l2, zeros

    def _code(self, dtype: str, view: str) -> int:
        for code, (name, kind) in enumerate(zip(self.dtypes, self.views)):
            if name == dtype and kind == view:
                return code
        if len(self.dtypes) == _REST:  # never: a unit holds a few dtypes
            raise ValueError("too many dtypes in one unit of stats")
        self.dtypes.append(dtype)
        self.views.append(view)
        return len(self.dtypes) - 1

    def rows(self, start: int, stop: int) -> list[TensorStats]:
        """The ``TensorStats`` of positions ``start`` to ``stop`` (made a column at a time)."""
        codes = self.code[start:stop].tolist()
        if not codes:
            return []
        shape_codes = self.shape_code[start:stop].tolist()
        views = {v: (self.lo[start:stop].view(v).tolist(), self.hi[start:stop].view(v).tolist())
                 for v in set(self.views)}
        mean, std = self.mean[start:stop].tolist(), self.std[start:stop].tolist()
        l2, zeros = self.l2[start:stop].tolist(), self.zeros[start:stop].tolist()
        keys, dtypes, kinds, shapes, sizes, rest = self.keys, self.dtypes, self.views, self.shapes, self.sizes, self.rest
        out: list[TensorStats] = []
        for j, code in enumerate(codes):
            if code == _REST:
                out.append(rest[start + j])
                continue
            lo, hi = views[kinds[code]]
            at = shape_codes[j]
            out.append(TensorStats(keys[start + j], dtypes[code], shapes[at], sizes[at], lo[j], hi[j], mean[j], std[j],
                                   l2[j], zeros[j], 0, 0))
        return out

    def __iter__(self) -> Iterator[TensorStats]:
        for a in range(0, len(self), READ_AT_ONCE):
            yield from self.rows(a, min(a + READ_AT_ONCE, len(self)))

    def missing(self) -> list[int]:
        """The positions :meth:`put` did not fill: for the per-tensor path."""
        import numpy as np

        return np.flatnonzero(self.code == _REST).tolist()

    def __getstate__(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        for name, value in zip(self.__slots__, state):
            setattr(self, name, value)


class StatsRows(Sequence[TensorStats]):
    """The ``TensorStats`` of a run's parts (:class:`StatsPart`, or lists of ``TensorStats``), in order: a
    read-only sequence that makes each row when it is read, equal to the list of the same rows."""

    def __init__(self, parts: Sequence[StatsPart | list[TensorStats]]) -> None:
        self._parts = [p for p in parts if len(p)]
        self._starts: list[int] = []
        total = 0
        for part in self._parts:
            self._starts.append(total)
            total += len(part)
        self._len = total

    def __len__(self) -> int:
        return self._len

    def _slice(self, start: int, stop: int) -> list[TensorStats]:
        from _bisect import bisect_right  # bisect's C half

        out: list[TensorStats] = []
        at = max(bisect_right(self._starts, start) - 1, 0)
        while at < len(self._parts) and self._starts[at] < stop:
            part, base = self._parts[at], self._starts[at]
            a, b = max(start - base, 0), min(stop - base, len(part))
            out += part.rows(a, b) if isinstance(part, StatsPart) else part[a:b]
            at += 1
        return out

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._len)
            if step != 1:
                return list(self)[index]
            return self._slice(start, stop) if start < stop else []
        i = index.__index__()
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError("stats row index out of range")
        return self._slice(i, i + 1)[0]

    def __iter__(self) -> Iterator[TensorStats]:
        for part in self._parts:
            yield from part

    def nonfinite(self) -> list[TensorStats]:
        """The rows holding a NaN or an Inf (none is in the columns: :func:`row_columns` takes finite rows only)."""
        out: list[TensorStats] = []
        for part in self._parts:
            rows = part.rest.values() if isinstance(part, StatsPart) else part
            out += [t for t in rows if not t.finite]
        return out

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (StatsRows, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"StatsRows({len(self)} tensors)"

    def __reduce__(self) -> tuple[Any, ...]:
        return StatsRows, (self._parts,)
