"""Access to a bundle's files: the index read whole (a large local one a block at a time), data files
memory-mapped (local) or read by byte range (URLs), and the madvise calls that keep streamed reads fast and their
memory bounded."""
from __future__ import annotations

import os
import sys

from formats.io import storage
from formats.io.sstable.block import RangeReader
from formats.core.errors import CheckpointNotFoundError

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["open_data_file", "RemoteFile", "advise", "is_map", "read_index_bytes", "open_index", "IndexFile",
           "STREAMED_INDEX"]


SMALL_FILE = 1 << 20
"""A local data file of at most this many bytes is read whole instead of mapped (a map holds a descriptor
until the last array viewing it is gone: a bundle of thousands of small shards would hold them all)."""


def open_data_file(path: str, size: int | None = None) -> tuple[Any, int | None]:
    """A read-only map of a local data file (its bytes when at most :data:`SMALL_FILE`) and a descriptor of the same file, kept
    open for ``pread`` (the caller closes it); or a :class:`RemoteFile` for a URL (of ``size`` bytes when
    known), and None."""
    if storage.is_url(path):
        return RemoteFile(path, size), None
    try:
        with storage.open_regular(path) as f:
            size = os.fstat(f.fileno()).st_size
            m: Any
            if size <= SMALL_FILE:  # read whole: no descriptor stays behind a map that arrays may outlive
                m = f.read()
            else:
                import mmap  # (a shared library: not loaded until a file is mapped, which a small one never is)

                m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            return m, os.dup(f.fileno())
    except OSError as exc:
        raise CheckpointNotFoundError(path, f"cannot open data file ({exc.strerror})") from None


def is_map(m: object) -> bool:
    """Whether ``m`` is a memory map (none is before :mod:`mmap` is imported: a file is mapped first)."""
    mapping = sys.modules.get("mmap")
    return mapping is not None and isinstance(m, mapping.mmap)


def advise(m: Any, start: int, stop: int, option: str) -> None:
    """``madvise`` a byte range of a data file's map (page-aligned) with :mod:`mmap`'s constant ``option``
    (``"MADV_DONTNEED"``); a no-op for bytes read whole, and where unsupported.

    Dropping streamed pages (MADV_DONTNEED on a read-only file map) loses nothing: they stay in
    the page cache and are mapped again on the next access."""
    if not is_map(m):
        return
    import mmap

    aligned = start - start % mmap.PAGESIZE
    try:
        m.madvise(getattr(mmap, option), aligned, stop - aligned)
    except (OSError, ValueError, AttributeError):
        pass


class RemoteFile:
    """A data file behind a URL: its size (one metadata request, unless known) and ranged reads."""

    def __init__(self, path: str, size: int | None = None) -> None:
        self.path = path
        self.size = storage.file_size(path) if size is None else size

    def __len__(self) -> int:
        return self.size

    def read(self, start: int, stop: int) -> bytes:
        """Bytes ``[start, stop)``, fetched with one ranged request."""
        return storage.read_range(self.path, start, stop)


def read_index_bytes(path: str) -> bytes:
    try:
        return storage.read_bytes(path)
    except OSError as exc:
        raise _unreadable(path, exc) from None


def _unreadable(path: str, exc: OSError) -> CheckpointNotFoundError:
    """The error of an index that cannot be opened or read (``exc``)."""
    if isinstance(exc, FileNotFoundError):
        return CheckpointNotFoundError(path, "no such file")
    if isinstance(exc, IsADirectoryError):
        return CheckpointNotFoundError(path, "is a directory, not an index file")
    return CheckpointNotFoundError(path, f"cannot read ({exc.strerror})")


STREAMED_INDEX = 1 << 22
"""A local index larger than this (bytes; about 150,000 tensors) is read a block at a time, not whole: at a million
tensors, 26 MB not held while its entries are decoded."""


def open_index(path: str) -> bytes | IndexFile:
    """An index's bytes (:func:`read_index_bytes`), or for a local one larger than :data:`STREAMED_INDEX` an
    :class:`IndexFile` reading them as asked for (the caller closes it)."""
    if storage.is_url(path):
        return read_index_bytes(path)
    try:
        f = storage.open_regular(path)
        with f:
            size = os.fstat(f.fileno()).st_size
            return f.read(size) if size <= STREAMED_INDEX else IndexFile(os.dup(f.fileno()), size)
    except OSError as exc:
        raise _unreadable(path, exc) from None


class IndexFile(RangeReader):
    """A local index read with ``pread`` as the table reader asks for its pieces (its footer, each block with its
    trailer), of the ``size`` it had when opened; :meth:`close` closes its descriptor."""

    def __init__(self, fd: int, size: int) -> None:
        self._fd, self._size = fd, size

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, span: slice) -> bytes:
        if not isinstance(span, slice):
            raise TypeError("an index file is read by slices")
        start, stop, step = span.indices(self._size)
        if step != 1:
            raise ValueError("an index file is read by contiguous slices")
        return os.pread(self._fd, max(0, stop - start), start) if stop > start else b""

    def close(self) -> None:
        """Close the descriptor (once)."""
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)
