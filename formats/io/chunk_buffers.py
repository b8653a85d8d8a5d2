"""Memory a streaming writer reuses from one chunk to the next, so that no page of it is zeroed twice.

A fresh array for every chunk a writer computes (a transposed kernel's rows) costs the kernel a zeroed page
per 4 KiB, and the copy into it a cache miss per line: measured at a sixth of ``convert --to hf``'s CPU.
:class:`ChunkBuffers` holds a few page-aligned buffers of one chunk each: the thread that computes takes
one (:meth:`~ChunkBuffers.take`, waiting while all are in use), fills it and hands it to the thread that
writes, which gives it back (:meth:`~ChunkBuffers.give`) once the bytes are in the file; and one scratch
area (:meth:`~ChunkBuffers.scratch`) the computing thread reuses for what it reads (a whole kernel), grown
to the largest asked for.
"""
from __future__ import annotations

import mmap
import queue

__all__ = ["ChunkBuffers"]


class ChunkBuffers:
    """``count`` buffers of ``size`` bytes (anonymous maps: page-aligned, zeroed once) and scratch areas; the
    memory goes when the last view of it does."""

    def __init__(self, count: int, size: int) -> None:
        self.size = size
        self._free: queue.SimpleQueue[memoryview] = queue.SimpleQueue()
        for _ in range(count):
            self._free.put(memoryview(mmap.mmap(-1, size)))
        self._scratch: dict[int, memoryview] = {}

    def take(self) -> memoryview:
        """A free buffer (``size`` bytes, writable), waiting until the writer gives one back."""
        return self._free.get()

    def give(self, buffer: memoryview) -> None:
        """``buffer``'s bytes are written: it may be filled again."""
        self._free.put(buffer)

    def scratch(self, nbytes: int, slot: int = 0) -> memoryview:
        """``nbytes`` of scratch memory: a view of one area per ``slot``, grown to the largest asked for (what
        it held before is not kept). Only the computing thread uses it."""
        view = self._scratch.get(slot)
        if view is None or view.nbytes < nbytes:
            view = self._scratch[slot] = memoryview(mmap.mmap(-1, max(nbytes, mmap.PAGESIZE)))
        return view[:nbytes]
