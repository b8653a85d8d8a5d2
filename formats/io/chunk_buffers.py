"""Memory a streaming writer reuses from one chunk to the next, so that no page of it is zeroed twice.

A fresh array for every chunk a writer computes (a transposed kernel's rows) costs the kernel a zeroed page
per 4 KiB, and the copy into it a cache miss per line: measured at a sixth of ``convert --to hf``'s CPU.
:class:`ChunkBuffers` holds a few page-aligned buffers of one chunk each: the thread that computes takes
one (:meth:`~ChunkBuffers.take`, waiting while all are in use), fills it and hands it to the thread that
writes, which gives it back (:meth:`~ChunkBuffers.give`) once the bytes are in the file; and one scratch
area (:meth:`~ChunkBuffers.scratch`) the computing thread reuses for what it reads (a whole kernel), grown
to the largest asked for. :func:`filled_chunks` puts a tensor's bytes in them: computed there by its source
(``fill_chunks``), or read there by its format (:meth:`~formats.core.model.TensorEntry.read_into`).
"""
from __future__ import annotations

import mmap
import os
from _queue import SimpleQueue  # queue's own C class: queue.py imports threading (start-up)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

__all__ = ["ChunkBuffers", "filled_chunks"]


class ChunkBuffers:
    """``count`` buffers of ``size`` bytes (page-aligned, zeroed once) and scratch areas; the memory goes when the
    last view of it does. Where the system has ``memfd_create`` the buffers are pages of one memory file, so
    the writer can have the kernel copy a buffer into the output (:meth:`place`, ``sendfile``) instead of
    ``write``-ing it from user memory: measured at a third of the CPU here, as cheap as ``cp``'s own copy."""

    def __init__(self, count: int, size: int) -> None:
        self.size = size
        self._free: SimpleQueue[memoryview] = SimpleQueue()
        self._fd, self._places = _memory_file(count * size), {}
        area = mmap.mmap(-1, count * size) if self._fd is None else mmap.mmap(self._fd, count * size)
        whole = memoryview(area)
        for i in range(count):
            view = whole[i * size:(i + 1) * size]
            self._places[id(view)] = i * size
            self._free.put(view)
        self._scratch: dict[int, memoryview] = {}

    def take(self) -> memoryview:
        """A free buffer (``size`` bytes, writable), waiting until the writer gives one back."""
        return self._free.get()

    def give(self, buffer: memoryview) -> None:
        """``buffer``'s bytes are written: it may be filled again."""
        self._free.put(buffer)

    def place(self, buffer: memoryview) -> tuple[int, int] | None:
        """``(fd, offset)`` of ``buffer``'s bytes in the memory file (for ``sendfile``); None without one."""
        return None if self._fd is None else (self._fd, self._places[id(buffer)])

    def scratch(self, nbytes: int, slot: int = 0) -> memoryview:
        """``nbytes`` of scratch memory: a view of one area per ``slot``, grown to the largest asked for (what
        it held before is not kept). Only the computing thread uses it."""
        view = self._scratch.get(slot)
        if view is None or view.nbytes < nbytes:
            view = self._scratch[slot] = memoryview(mmap.mmap(-1, max(nbytes, mmap.PAGESIZE)))
        return view[:nbytes]

    def close(self) -> None:
        """Close the memory file (the mapped pages stay until their last view goes)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> ChunkBuffers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _memory_file(size: int) -> int | None:
    """A memory file of ``size`` bytes (``memfd_create``), or None where there is none."""
    create = getattr(os, "memfd_create", None)
    if create is None or size <= 0:
        return None
    try:
        fd: int = create("ckpt-chunks", getattr(os, "MFD_CLOEXEC", 0))
    except OSError:
        return None
    try:
        os.ftruncate(fd, size)
    except OSError:
        os.close(fd)
        return None
    return fd


def filled_chunks(source: Any, dtype: str, size: int, buffers: ChunkBuffers) -> Iterator[tuple[memoryview, int]] | None:
    """The ``size`` bytes of ``dtype`` a writer wants of ``source``, put in ``buffers``' chunks: computed there (a
    source's ``fill_chunks``: a transposed kernel) or read there (a tensor whose format reads its bytes straight
    into memory, :meth:`~formats.core.model.TensorEntry.read_into`): ``(buffer, bytes filled)`` for the writer
    to write and give back; None for a source that can do neither."""
    from formats.core.model import TensorEntry

    fill = getattr(source, "fill_chunks", None)
    if fill is not None:
        filled: Iterator[tuple[memoryview, int]] | None = fill(buffers)
        return filled
    if not isinstance(source, TensorEntry) or source.dtype != dtype or source.nbytes != size:
        return None
    first = buffers.take()
    n = min(buffers.size, size)
    if not source.read_into(first[:n], 0):
        buffers.give(first)
        return None
    return _read_chunks(source, buffers, first, n)


def _read_chunks(source: Any, buffers: ChunkBuffers, first: memoryview, n: int
                 ) -> Iterator[tuple[memoryview, int]]:
    """The first chunk (read already), then each next one read into a buffer as it is asked for."""
    yield first, n
    for start in range(n, source.nbytes, buffers.size):
        buffer = buffers.take()
        size = min(buffers.size, source.nbytes - start)
        try:
            if not source.read_into(buffer[:size], start):
                raise ValueError(f"{source.key}: its bytes from {start} cannot be read straight into memory")
        except BaseException:
            buffers.give(buffer)
            raise
        yield buffer, size
