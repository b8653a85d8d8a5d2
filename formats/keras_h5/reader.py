"""Lazy tensors over h5py datasets and the :class:`KerasCheckpoint` that holds them."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from formats.core.dtypes import from_numpy
from formats.core.errors import CheckpointError, CorruptCheckpointError, UnsupportedError
from formats.core.model import Checkpoint, Problem, Role, TensorEntry
from formats.io.zipped import MAX_EXPANSION
from formats.keras_h5.source import H5Image, h5py_error_message

if TYPE_CHECKING:
    import numpy as np

__all__ = ["H5Tensor", "KerasCheckpoint", "tensor_dtype"]

_SLACK = 64 << 20
"""Unallocated chunks read as the fill value, so a little more than what is stored is fine."""
_H5_ERRORS = (OSError, ValueError, KeyError, RuntimeError, TypeError, IndexError)


def tensor_dtype(ds: Any) -> tuple[str, Any] | None:
    """``(TF dtype name, numpy dtype to view as or None)`` for a dataset; None when it has no TF counterpart."""
    import numpy as np

    import h5py

    marked = ds.attrs.get("dtype") if h5py.h5a.exists(ds.id, b"dtype") else None
    if isinstance(marked, bytes):
        marked = marked.decode("utf-8", "replace")
    if marked == "bfloat16" and ds.dtype.itemsize == 2 and ds.dtype.kind in "Vui":
        import ml_dtypes

        return "bfloat16", np.dtype(ml_dtypes.bfloat16)
    try:
        return from_numpy(ds.dtype).name, None
    except (ValueError, TypeError):
        return None


class H5Tensor(TensorEntry):
    """A tensor stored as one HDF5 dataset; nothing is read until :meth:`read`."""

    __slots__ = ("_ds", "_view", "_image_size", "_path")

    def __init__(self, key: str, ds: Any, dtype: str, view: Any, image_size: int, path: str,
                 name: str | None = None, role: str = Role.VARIABLE, *, slot_of: str | None = None,
                 slot_name: str | None = None, optimizer: str | None = None) -> None:
        shape = tuple(int(d) for d in ds.shape) if ds.shape is not None else ()
        nbytes = math.prod(shape) * ds.dtype.itemsize if dtype != "string" else _storage_size(ds)
        super().__init__(key, shape, dtype, nbytes, name, role, slot_of=slot_of, optimizer=optimizer,
                         slot_name=slot_name)
        self._ds = ds
        self._view = view
        self._image_size = image_size
        self._path = path

    @property
    def files(self) -> tuple[str, ...]:
        """The HDF5 file (or ``.keras`` archive) the value is read from."""
        return (self._path,)

    def problem(self) -> str | None:
        """Why the declared shape cannot be what the file stores, or None when they agree."""
        try:
            return _storage_problem(self._ds, self.nbytes, self.dtype, self._image_size)
        except _H5_ERRORS as exc:
            return h5py_error_message(exc)

    def read(self) -> np.ndarray:
        """The whole value as numpy (bfloat16 via ml_dtypes, strings as an object array of bytes)."""
        problem = self.problem()
        if problem is not None:
            cls = UnsupportedError if problem.startswith("stored in") else CorruptCheckpointError
            raise cls(self._path, f"{self.key}: {problem}")
        try:
            value = self._ds[()]
        except _H5_ERRORS as exc:
            raise CorruptCheckpointError(self._path, f"{self.key}: {h5py_error_message(exc)}") from None
        return self._finish(value)

    def check(self, block_bytes: int = 8 << 20) -> None:
        """Read every stored value without keeping it: large datasets in row blocks through one reused
        buffer (no fresh memory per tensor); raises like :meth:`read`."""
        import numpy as np

        if self.dtype == "string" or len(self.shape) == 0 or self.nbytes <= block_bytes or not self.shape[0]:
            self.read()
            return
        problem = self.problem()
        if problem is not None:
            cls = UnsupportedError if problem.startswith("stored in") else CorruptCheckpointError
            raise cls(self._path, f"{self.key}: {problem}")
        rows = self.shape[0]
        step = max(1, block_bytes // max(1, self.nbytes // rows))
        buf = np.empty((min(step, rows), *self.shape[1:]), dtype=self._ds.dtype)
        try:
            for start in range(0, rows, step):
                n = min(step, rows - start)
                self._ds.read_direct(buf, np.s_[start:start + n], np.s_[0:n])
        except _H5_ERRORS as exc:
            raise CorruptCheckpointError(self._path, f"{self.key}: {h5py_error_message(exc)}") from None

    def _finish(self, value: Any) -> np.ndarray:
        import numpy as np

        arr = np.asarray(value)
        if self._view is not None:
            arr = arr.view(self._view)
        elif self.dtype == "string":
            flat = [x if isinstance(x, bytes) else str(x).encode() for x in arr.reshape(-1)]
            arr = np.array(flat + [None], dtype=object)[:-1].reshape(arr.shape)
        if arr.shape != self.shape:
            raise CorruptCheckpointError(self._path, f"{self.key}: read shape {arr.shape}, declared {self.shape}")
        return arr


def _storage_size(ds: Any) -> int:
    try:
        return int(ds.id.get_storage_size())
    except _H5_ERRORS:
        return 0


def _storage_problem(ds: Any, nbytes: int, dtype: str, image_size: int) -> str | None:
    import h5py

    plist = ds.id.get_create_plist()
    if plist.get_external_count() > 0:
        return "stored in external file(s): not read"
    layout = plist.get_layout()
    if layout == h5py.h5d.VIRTUAL:
        return "stored in a virtual dataset mapping other files: not read"
    if dtype == "string":
        return None
    stored = int(ds.id.get_storage_size())
    if layout == h5py.h5d.CONTIGUOUS:
        return _contiguous_problem(ds, nbytes, stored, image_size)
    if layout == h5py.h5d.CHUNKED and nbytes > stored * MAX_EXPANSION + _SLACK:
        return (f"declares shape {tuple(ds.shape)} ({nbytes:,} bytes) but stores only {stored:,} bytes; "
                "refusing to allocate it")
    if layout == h5py.h5d.COMPACT and stored < nbytes:
        return f"declares {nbytes:,} bytes but stores {stored:,}"
    return None


def _contiguous_problem(ds: Any, nbytes: int, stored: int, image_size: int) -> str | None:
    offset = ds.id.get_offset()
    if offset is None:  # never written: reads as the fill value
        return None if nbytes <= _SLACK else f"declares {nbytes:,} bytes but none are stored"
    if stored != nbytes:
        return f"declares shape {tuple(ds.shape)} ({nbytes:,} bytes) but stores {stored:,} bytes"
    if offset + stored > image_size:
        return (f"data at bytes {offset:,}..{offset + stored:,} runs past the end of the file "
                f"({image_size:,} bytes): truncated?")
    return None


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

    def problems(self) -> list[Problem]:
        """What is inconsistent beyond single tensors (layer lists naming missing datasets, a bad archive CRC)."""
        found = [Problem(where, message) for where, message in self._problems]
        for image in self._images:
            if image.crc_check is None:
                continue
            try:
                message = image.crc_check()
            except OSError as exc:
                message = f"cannot re-read the archive ({exc.strerror})"
            if message:
                found.append(Problem("model.weights.h5", message))
        return found

    def vars_groups(self) -> list[tuple[str, str | None]]:
        """``(object path, name attribute)`` of every Keras 3 ``vars`` group, in file order (across
        shards, each group once, with the name from the shard that carries it)."""
        import h5py

        found: dict[str, str | None] = {}

        def visit(name: str, obj: Any) -> None:
            if isinstance(obj, h5py.Group) and (name == "vars" or name.endswith("/vars")):
                value = obj.attrs.get("name")
                owner = name[:-len("vars")].rstrip("/")
                if found.get(owner) is None:
                    found[owner] = value.decode() if isinstance(value, bytes) else value

        for image in self._images:
            if "vars" in image.file:
                visit("vars", image.file["vars"])
            image.file.visititems(lambda n, o: None if n == "vars" else visit(n, o))
        return list(found.items())

    def close(self) -> None:
        """Close the HDF5 files (and the archive they came from)."""
        for image in self._images:
            image.close()


def wrap_errors(path: str, exc: BaseException) -> CheckpointError:
    """A CheckpointError for an h5py failure while walking a file's structure."""
    return CorruptCheckpointError(path, h5py_error_message(exc))
