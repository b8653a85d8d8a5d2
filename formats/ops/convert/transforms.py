"""Values a conversion computes instead of copying: a tensor scaled by a number, zeros, a derived scalar.

:class:`ScaledEntry` and :class:`ZerosEntry` are :class:`~formats.core.model.TensorEntry` objects, so
every writer streams them like stored tensors: chunk by chunk, in bounded memory, and the writer's
read-back compares the file with the same computation. Scaling is done in float64 and rounded once
to the tensor's dtype (``x * (-0.05)``, ``x / (-0.05)``).
"""
from __future__ import annotations

from formats.core.model import CHUNK_BYTES, CHUNK_ELEMENTS, TensorEntry

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any
    from collections.abc import Iterator
    from concurrent.futures import Executor  # concurrent.futures imports logging: not at start-up

    import numpy as np

__all__ = ["ScaledEntry", "ZerosEntry", "scalar_value"]

_FLOATS = ("float16", "bfloat16", "float32", "float64")


class ScaledEntry(TensorEntry):
    """``base * factor`` (``op="mul"``) or ``base / factor`` (``op="div"``) of a floating-point entry."""

    __slots__ = ("base", "op", "factor")

    def __init__(self, base: TensorEntry, op: str, factor: float) -> None:
        if base.dtype not in _FLOATS:
            raise ValueError(f"{base.key}: cannot scale a {base.dtype} tensor")
        if op not in ("mul", "div"):
            raise ValueError(f"unknown scaling {op!r}")
        super().__init__(base.key, tuple(base.shape), base.dtype, base.size * _itemsize(base.dtype), base.name,
                         base.role, slot_of=base.slot_of, optimizer=base.optimizer, slot_name=base.slot_name)
        self.base, self.op, self.factor = base, op, float(factor)

    @property
    def files(self) -> tuple[str, ...]:
        """The files of the scaled entry."""
        return self.base.files

    def _apply(self, values: np.ndarray) -> np.ndarray:
        import numpy as np

        wide = values.astype(np.float64)
        out = wide * self.factor if self.op == "mul" else wide / self.factor
        return out.astype(values.dtype)

    def read(self) -> np.ndarray:
        """The scaled value."""
        return self._apply(self.base.read())

    def iter_chunks(self, chunk_elements: int = CHUNK_ELEMENTS, pool: Executor | None = None) -> Iterator[np.ndarray]:
        """The base's chunks, scaled."""
        for piece in self.base.iter_chunks(chunk_elements, pool):
            yield self._apply(piece)

    def byte_chunks(self, chunk: int = CHUNK_BYTES, check: bool = True) -> Iterator[memoryview]:
        """Canonical bytes of the scaled value, streamed from the base's chunks."""
        from formats.core.sources import array_chunks

        for piece in self.iter_chunks(max(1, chunk // _itemsize(self.dtype))):
            yield from array_chunks(piece, chunk)


class ZerosEntry(TensorEntry):
    """A tensor of zeros of a given key, shape and dtype (a slot the source never had)."""

    def __init__(self, key: str, shape: tuple[int, ...], dtype: str) -> None:
        import math

        super().__init__(key, tuple(shape), dtype, math.prod(shape) * _itemsize(dtype))

    def read(self) -> np.ndarray:
        """Zeros."""
        import numpy as np

        from formats.core.dtypes import by_name

        return np.zeros(self.shape, dtype=by_name(self.dtype).numpy())

    def iter_chunks(self, chunk_elements: int = CHUNK_ELEMENTS, pool: Executor | None = None) -> Iterator[np.ndarray]:
        """Zeros, at most ``chunk_elements`` at a time."""
        import numpy as np

        from formats.core.dtypes import by_name

        left = self.size
        while left > 0:
            n = min(left, max(1, chunk_elements))
            yield np.zeros(n, dtype=by_name(self.dtype).numpy())
            left -= n

    def byte_chunks(self, chunk: int = CHUNK_BYTES, check: bool = True) -> Iterator[memoryview]:
        """Zero bytes in chunks."""
        from formats.core.sources import array_chunks

        for piece in self.iter_chunks(max(1, chunk // _itemsize(self.dtype))):
            yield from array_chunks(piece, chunk)


def scalar_value(value: Any, dtype: str) -> np.ndarray:
    """A 0-d array of ``dtype`` (a TF dtype name) holding ``value``."""
    import numpy as np

    from formats.core.dtypes import by_name

    return np.asarray(value, dtype=by_name(dtype).numpy()).reshape(())


def _itemsize(dtype: str) -> int:
    from formats.core.dtypes import by_name

    return int(by_name(dtype).itemsize)
