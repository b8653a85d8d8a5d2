"""Lazy tensors over HDF5 datasets and the :class:`KerasCheckpoint` that holds them.

Values are read by ckpt from the file's bytes (:mod:`formats.keras_h5.storage`) in bounded blocks of
rows: ``iter_chunks``, ``byte_chunks``, ``check`` and ``read_slice`` never hold more than a block (or
the rows a slice needs) of a large tensor.
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

from formats.core.errors import CheckpointError, CorruptCheckpointError, UnsupportedError
from formats.core.model import CHUNK_BYTES, CHUNK_ELEMENTS, Checkpoint, CheckpointProblem, Role, TensorEntry
from formats.keras_h5 import storage
from formats.keras_h5.image import H5Image
from formats.keras_h5.tree import DatasetInfo

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any
    from concurrent.futures import Executor

    import numpy as np

__all__ = ["H5Tensor", "KerasCheckpoint"]

_BLOCK = 8 << 20


class H5Tensor(TensorEntry):
    """A tensor stored as one HDF5 dataset; nothing is read until asked."""

    __slots__ = ("_info", "_image", "_path")

    def __init__(self, key: str, info: DatasetInfo, image: H5Image, path: str, name: str | None = None,
                 role: str = Role.VARIABLE, *, slot_of: str | None = None, slot_name: str | None = None,
                 optimizer: str | None = None) -> None:
        shape = info.shape or ()
        nbytes = info.stored if info.tf == "string" else math.prod(shape) * info.dtype.itemsize
        super().__init__(key, shape, info.tf or "unknown", nbytes, name, role, slot_of=slot_of, optimizer=optimizer,
                         slot_name=slot_name)
        self._info = info
        self._image = image
        self._path = path

    @property
    def files(self) -> tuple[str, ...]:
        """The HDF5 file (or ``.keras`` archive) the value is read from."""
        return (self._path,)

    def problem(self) -> str | None:
        """Why the declared shape cannot be what the file stores, or None when they agree."""
        return storage.storage_problem(self._info, self.nbytes, self._image.size)

    def _refuse(self) -> None:
        problem = self.problem()
        if problem is not None:
            cls = UnsupportedError if problem.startswith("stored in") else CorruptCheckpointError
            raise cls(self._path, f"{self.key}: {problem}")

    def read(self) -> np.ndarray:
        """The whole value as numpy (bfloat16 via ml_dtypes, strings as an object array of bytes)."""
        self._refuse()
        return self._finish(storage.read_whole(self._image, self._info))

    def _blocks(self, start: int, stop: int, block_bytes: int) -> Iterator[np.ndarray]:
        """Rows ``start:stop`` in blocks (finished: viewed, strings as bytes); the whole value at once
        when it is not read natively or is a scalar."""
        self._refuse()
        if not storage.native(self._info) or not self.shape:
            whole = self.read()
            yield whole[start:stop] if self.shape else whole
            return
        for block in storage.read_rows(self._image, self._info, start, stop, block_bytes):
            yield self._finish(block, check_shape=False)

    def iter_chunks(self, chunk_elements: int = CHUNK_ELEMENTS, pool: Executor | None = None) -> Iterator[np.ndarray]:
        """The elements in C order, at most ``chunk_elements`` at a time, read a block of rows at a time."""
        step = max(1, chunk_elements)
        block = max(_BLOCK, step * self._info.dtype.itemsize)
        for rows in self._blocks(0, self.shape[0] if self.shape else 1, block):
            flat = rows.reshape(-1)
            for start in range(0, flat.size, step):
                yield flat[start:start + step]

    def byte_chunks(self, chunk: int = CHUNK_BYTES, check: bool = True) -> Iterator[memoryview]:
        """Canonical little-endian bytes, a block of rows at a time (at most ``chunk`` bytes each)."""
        from formats.core.arrays import array_chunks

        for rows in self._blocks(0, self.shape[0] if self.shape else 1, max(chunk, _BLOCK)):
            yield from array_chunks(rows, chunk)

    def _plain(self) -> bool:
        """Whether the stored bytes are the canonical ones, in one piece: a contiguous dataset of little-endian
        numbers."""
        info = self._info
        return info.layout == "contiguous" and info.offset is not None and storage.native(info) \
            and info.view in (None, "bfloat16") and info.dtype.kind in "biufc" and info.dtype.str[0] in "<|"

    def read_into(self, out: memoryview, offset: int = 0) -> bool:
        """A contiguous dataset of little-endian values: its bytes read straight into ``out`` (one ``pread``)."""
        if not self._plain() or offset < 0 or offset + memoryview(out).nbytes > self.nbytes:
            return False
        self._refuse()
        self._image.read_into((self._info.offset or 0) + offset, out)
        return True

    def mapped_bytes(self) -> memoryview | None:
        """A contiguous dataset of little-endian values in a file: a view of its pages."""
        if not self._plain():
            return None
        self._refuse()
        return self._image.mapped(self._info.offset or 0, self.nbytes)

    def check(self) -> None:
        """Read (and decode) every stored byte, a block at a time, keeping nothing."""
        for _ in self._blocks(0, self.shape[0] if self.shape else 1, _BLOCK):
            pass

    def read_slice(self, index: tuple[Any, ...] | None) -> np.ndarray:
        """``value[index]``: only the rows the first index selects are read."""
        import numpy as np

        from formats.core.arrays import apply_index

        if index is None or not self.shape or not storage.native(self._info):
            return TensorEntry.read_slice(self, index)
        apply_index(np.broadcast_to(np.zeros((), np.uint8), self.shape), index, self)  # a bad index fails here
        rows = _row_range(index[0] if index else slice(None), self.shape[0])
        if rows is None:
            return TensorEntry.read_slice(self, index)
        lo, hi, first = rows
        part = np.concatenate(list(self._blocks(lo, hi, _BLOCK))) if hi > lo else self._empty_rows()
        return apply_index(part, (first, *index[1:]), self)

    def _empty_rows(self) -> np.ndarray:
        import numpy as np

        return self._finish(np.empty((0, *self.shape[1:]), dtype=self._info.dtype), check_shape=False)

    def _finish(self, value: Any, check_shape: bool = True) -> np.ndarray:
        import numpy as np

        arr = np.asarray(value)
        if self._info.view == "bfloat16":
            import ml_dtypes

            arr = arr.view(ml_dtypes.bfloat16)
        elif self.dtype == "string" and arr.dtype != object:
            flat = [bytes(x) for x in arr.reshape(-1)]
            arr = np.array(flat + [None], dtype=object)[:-1].reshape(arr.shape)
        if check_shape and arr.shape != self.shape:
            raise CorruptCheckpointError(self._path, f"{self.key}: read shape {arr.shape}, declared {self.shape}")
        return arr


def _row_range(first: Any, rows: int) -> tuple[int, int, Any] | None:
    """``(lo, hi, index into rows lo:hi)`` for a first-axis index that is an int or a slice, else None."""
    import numpy as np

    if isinstance(first, (int, np.integer)) and not isinstance(first, bool):
        at = int(first) + rows if first < 0 else int(first)
        return at, at + 1, 0
    if not isinstance(first, slice):
        return None
    picked = range(*first.indices(rows))
    if not picked:
        return 0, 0, slice(0, 0)
    lo, hi = min(picked[0], picked[-1]), max(picked[0], picked[-1]) + 1
    return lo, hi, slice(picked[0] - lo, None if picked.step < 0 else hi - lo, picked.step)


class KerasCheckpoint(Checkpoint):
    """An opened Keras (or any) HDF5 checkpoint: ``format`` is keras2-h5, keras3-h5, keras-zip, keras3-dir,
    keras3-sharded or hdf5. ``images`` are the opened HDF5 files (several for sharded weights), ``files``
    every file it is made of (default: ``path``)."""

    def __init__(self, path: str, format: str, entries: dict[str, TensorEntry], images: H5Image | Sequence[H5Image],
                 metadata: dict[str, Any], problems: list[tuple[str, str]], files: Sequence[str] | None = None) -> None:
        super().__init__(path, format, entries)
        self._images = [images] if isinstance(images, H5Image) else list(images)
        self._image = self._images[0] if self._images else None
        self._metadata = metadata
        self._problems = problems
        self._files = list(files) if files is not None else [path]

    @property
    def files(self) -> list[str]:
        """Every file the checkpoint is made of (the weights file, its JSON files, every shard)."""
        return list(self._files)

    @property
    def metadata(self) -> dict[str, Any]:
        """Layout, Keras version, backend, layer order, model config (when the file has them)."""
        return self._metadata

    def problems(self) -> list[CheckpointProblem]:
        """What is inconsistent beyond single tensors (layer lists naming missing datasets, a bad archive CRC)."""
        found = [CheckpointProblem(where, message) for where, message in self._problems]
        for image in self._images:
            if image.crc_check is None:
                continue
            try:
                message = image.crc_check()
            except OSError as exc:
                message = f"cannot re-read the archive ({exc.strerror})"
            except CheckpointError as exc:
                message = exc.message
            if message:
                found.append(CheckpointProblem("model.weights.h5", message))
        return found

    def vars_groups(self) -> list[tuple[str, str | None]]:
        """``(object path, name attribute)`` of every Keras 3 ``vars`` group, in file order (across
        shards, each group once, with the name from the shard that carries it)."""
        found: dict[str, str | None] = {}
        for image in self._images:
            groups = image.tree.groups
            for path in sorted(groups, key=lambda p: p != "vars"):  # the root's vars first, then file order
                if path == "vars" or path.endswith("/vars"):
                    value = groups[path].attrs.get("name")
                    owner = path[:-len("vars")].rstrip("/")
                    if found.get(owner) is None:
                        found[owner] = value if isinstance(value, str) else None
        return list(found.items())

    def close(self) -> None:
        """Close the HDF5 files (and the archive they came from)."""
        for image in self._images:
            image.close()

