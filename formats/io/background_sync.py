"""Flushing a file to disk while it is still being written, so that the fsync before it is published is short.

:class:`BackgroundSync` counts the bytes a writer puts in a file; every :attr:`BackgroundSync.EVERY` bytes a
thread calls ``fdatasync`` on it, so the disk works while the writer copies the next piece (as ``cp`` followed
by ``sync`` cannot: all of its bytes wait for the final flush). Small files never start the thread. Used by
every writer of large files (bundle data files, safetensors, the tensors of a transformers directory).
"""
from __future__ import annotations

import os

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["BackgroundSync"]


class BackgroundSync:
    """Flushes a file to disk in a thread while it is being written, so the final fsync is short."""

    EVERY = 64 << 20
    SMALL = 1 << 20
    """Bytes below which :meth:`flush_rest` starts no thread (the final fsync of so little is as quick)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.pending = 0
        self.done = False
        self.rest = False  # flush_rest() asked for a last flush, which close() waits for
        self.thread: Any = None  # started once EVERY bytes are written: a small file needs no thread

    def _start(self) -> None:
        import threading

        self.wake = threading.Event()
        self.thread = threading.Thread(target=self._run, name="ckpt-fsync", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            self.wake.wait()
            self.wake.clear()
            if self.done and not self.rest:
                return
            last = self.rest  # flush_rest() asked before this flush began: it covers every byte written
            try:
                os.fdatasync(self.fd)
            except OSError:  # the final fsync reports real trouble
                return
            if last or (self.done and not self.rest):
                return  # (flush_rest() during this flush set wake: the loop flushes once more)

    def wrote(self, n: int) -> None:
        """Count bytes written; every ``EVERY`` bytes the thread starts flushing them."""
        self.pending += n
        if self.pending >= self.EVERY:
            self.pending = 0
            if self.thread is None:
                self._start()
            self.wake.set()

    def flush_rest(self) -> None:
        """Start flushing every byte written so far (those since the last flush, under :attr:`EVERY`) and return
        at once: the caller goes on (reads the file back) while the disk works; :meth:`close` waits for it."""
        if self.thread is None:
            if self.pending < self.SMALL:
                return  # a small file: the final fsync alone is as quick
            self._start()
        self.pending = 0
        self.rest = True
        self.wake.set()

    def close(self) -> None:
        """Stop the thread (waiting for a flush in progress, or one :meth:`flush_rest` asked for)."""
        if not self.done:
            self.done = True
            if self.thread is not None:
                self.wake.set()
                self.thread.join()

    def __enter__(self) -> BackgroundSync:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
