"""The two kinds of tensor an Orbax or T5X checkpoint holds: a zarr array read through tensorstore
(:class:`ZarrEntry`), and a small array stored inline in T5X's msgpack file (:class:`InlineEntry`)."""
from __future__ import annotations

import math

from formats.core.dtypes import by_name
from formats.core.errors import CorruptCheckpointError
from formats.core.model import CHUNK_ELEMENTS, Role, TensorEntry
from formats.orbax import store

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any
    from collections.abc import Iterator
    from concurrent.futures import Executor

    import numpy as np

    from formats.orbax.zarr import ZarrArray

__all__ = ["ZarrEntry", "InlineEntry", "nbytes_of"]


def nbytes_of(shape: tuple[int, ...], dtype: str) -> int:
    """Bytes of the value in memory (int4 and other sub-byte types take a byte an element, as numpy holds them)."""
    return math.prod(shape) * by_name(dtype).itemsize


class ZarrEntry(TensorEntry):
    """A zarr array (in an OCDBT database or its own directory), opened by tensorstore on the first read.

    ``declared`` is what the array's own metadata says; ``shape``/``dtype`` are what the tree says (Orbax's
    ``_METADATA`` write shape, T5X's spec) when it says them, else the array's; :meth:`problem` names any
    disagreement, missing chunks, or an array too large to hold, before anything is read."""

    __slots__ = ("_path", "_spec", "_store", "_declared", "_problem", "_files")

    concurrent_reads = True

    def __init__(self, key: str, path: str, spec: dict[str, Any], declared: ZarrArray, problem: str | None,
                 files: tuple[str, ...], shape: tuple[int, ...] | None = None, dtype: str | None = None,
                 role: str = Role.VARIABLE, **slot: Any) -> None:
        shape = declared.shape if shape is None else shape
        dtype = dtype or declared.dtype or declared.stored_dtype
        try:
            size = nbytes_of(shape, dtype)
        except ValueError:
            size = 0
        super().__init__(key, shape, dtype, size, None, role, **slot)
        self._path = path
        self._spec = spec
        self._store: Any = None
        self._declared = declared
        self._files = files
        if problem is None and (tuple(shape), dtype) != (declared.shape, declared.dtype):
            problem = (f"the checkpoint's tree says {dtype}{list(shape)} but the array stores "
                       f"{declared.dtype or declared.stored_dtype}{list(declared.shape)}")
        self._problem = problem

    @property
    def files(self) -> tuple[str, ...]:
        """The files the value is read from."""
        return self._files

    def problem(self) -> str | None:
        """Why the array cannot be what its metadata declares (found without reading), or None."""
        return self._problem

    def _open(self) -> Any:
        if self._problem is not None:
            raise CorruptCheckpointError(self._path, f"{self.key}: {self._problem}")
        if self._store is None:
            opened = store.open_array(self._path, self._spec, self.key)
            if tuple(opened.shape) != self.shape or opened.dtype.name != self.dtype:
                raise CorruptCheckpointError(self._path, f"{self.key}: tensorstore opens {opened.dtype.name}"
                                                         f"{list(opened.shape)}, not {self.dtype}{list(self.shape)}")
            self._store = opened
        return self._store

    def read(self) -> np.ndarray:
        """The whole value, every chunk decoded by tensorstore."""
        import numpy as np

        value = np.asarray(store.read(self._path, self._open(), self.key), dtype=by_name(self.dtype).numpy())
        return value if value.flags.c_contiguous else value.copy()

    def iter_chunks(self, chunk_elements: int = CHUNK_ELEMENTS, pool: Executor | None = None) -> Iterator[np.ndarray]:
        """The elements in C order, read by tensorstore a block of leading rows at a time, whole stored chunks per
        block (a value larger than ``chunk_elements`` is held a block, not whole, at a time)."""
        import numpy as np

        if len(self.shape) == 0 or self.size <= chunk_elements:
            yield from super().iter_chunks(chunk_elements, pool)
            return
        row = math.prod(self.shape[1:]) or 1
        step = self._declared.chunks[0] if self._declared.chunks and self._declared.chunks[0] > 0 else 1
        rows = -(-max(1, chunk_elements // row) // step) * step  # whole stored chunks: each decoded once
        numpy_dtype = by_name(self.dtype).numpy()
        for start in range(0, self.shape[0], rows):
            block = np.asarray(store.read(self._path, self._open(), self.key, (slice(start, min(start + rows, self.shape[0])),)),
                               dtype=numpy_dtype).reshape(-1)
            for at in range(0, block.size, max(1, chunk_elements)):
                yield block[at:at + chunk_elements]

    def read_slice(self, index: tuple[Any, ...] | None) -> np.ndarray:
        """``value[index]``; plain integer/slice indexes are read by tensorstore alone (only the chunks they
        touch), anything else from the whole value."""
        import numpy as np

        if index is not None and all(isinstance(i, int) or (isinstance(i, slice) and (i.step in (None, 1))) for i in index) \
                and len(index) <= len(self.shape) and all(
                    not isinstance(i, int) or -d <= i < d for i, d in zip(index, self.shape)):
            fixed = tuple(i % d if isinstance(i, int) else slice(*i.indices(d)[:2]) for i, d in zip(index, self.shape))
            if all(isinstance(i, int) or i.start <= i.stop for i in fixed):
                value = np.asarray(store.read(self._path, self._open(), self.key, fixed))
                return value if value.flags.c_contiguous else value.copy()
        return super().read_slice(index)


class InlineEntry(TensorEntry):
    """A value stored in the msgpack file itself (T5X's unpartitioned leaves: flax's ndarray ext)."""

    __slots__ = ("_path", "_data", "_problem", "_file")

    concurrent_reads = True

    def __init__(self, key: str, path: str, file: str, shape: tuple[int, ...], dtype: str, data: bytes,
                 role: str = Role.VARIABLE, **slot: Any) -> None:
        super().__init__(key, shape, dtype, nbytes_of(shape, dtype), None, role, **slot)
        self._path = path
        self._data = data
        self._file = file
        want = self.nbytes
        self._problem = None if len(data) == want else \
            f"declares {dtype}{list(shape)} ({want:,} bytes) but stores {len(data):,} bytes"

    @property
    def files(self) -> tuple[str, ...]:
        """The msgpack file."""
        return (self._file,)

    def problem(self) -> str | None:
        """Why the stored bytes cannot be the declared value, or None."""
        return self._problem

    def read(self) -> np.ndarray:
        """The value (a copy of the stored bytes)."""
        import numpy as np

        if self._problem:
            raise CorruptCheckpointError(self._path, f"{self.key}: {self._problem}")
        return np.frombuffer(self._data, dtype=by_name(self.dtype).numpy()).reshape(self.shape).copy()
