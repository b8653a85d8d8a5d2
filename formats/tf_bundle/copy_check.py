"""Tensors copied by the kernel into a new bundle, checked against their CRC32Cs while the copy goes on.

A rename or a name <-> object conversion copies an input data file into the output piece by piece
(:func:`formats.tf_bundle.writer._copy_flushing`). :class:`CopyCheck` reads back, on one thread of its own, each
copied tensor as soon as the copy has passed its last byte (``pread`` from the output file, the pages just
written, into a page-aligned buffer: no mapping, no GIL) and compares its CRC32C with the one its entry
carries - the check :mod:`formats.tf_bundle.readback` makes of copied tensors, done while the kernel copies
the next pieces instead of after the whole copy. The read-back then takes each result (:meth:`CopyCheck.matched`)
and reads again only what did not match (to say whether the input is what is damaged).
"""
from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["CopyCheck"]


class CopyCheck:
    """Checks ``spans`` (``(offset, size, crc32c)`` in the output data file at ``path``) as :meth:`copied` says
    the copy has passed them; :meth:`matched` waits for the result of one."""

    def __init__(self, path: str, spans: list[tuple[int, int, int]]) -> None:
        self.path = path
        self.todo = sorted(spans, key=lambda span: span[0] + span[1], reverse=True)  # next to finish last
        self.results: dict[int, bool] = {}
        self.fd: int | None = None
        self.thread: Any = None
        self.work: Any = None

    def copied(self, end: int) -> None:
        """The copy has reached output offset ``end``: the spans that lie before it are checked (on the thread)."""
        ready = []
        while self.todo and self.todo[-1][0] + self.todo[-1][1] <= end:
            ready.append(self.todo.pop())
        if not ready:
            return
        if self.thread is None:
            self._start()
        self.work.put(ready)

    def _start(self) -> None:
        import queue
        import threading

        self.fd = os.open(self.path, os.O_RDONLY)
        self.work = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._run, name="ckpt-copy-check", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        from formats.io.crc import crc32c_range

        while True:
            spans = self.work.get()
            if spans is None:
                return
            for offset, size, crc in spans:
                try:
                    self.results[offset] = (crc32c_range(self.fd, offset, size) if size else 0) == crc  # type: ignore[arg-type]
                except OSError:  # the read-back reads it again and says what is wrong
                    self.results[offset] = False

    def matched(self, offset: int) -> bool:
        """Whether the span at ``offset`` was checked and matched its CRC32C (waits for the checks)."""
        self.close()
        return self.results.get(offset, False)

    def close(self) -> None:
        """Wait for the checks in progress and release the file."""
        if self.thread is not None:
            self.work.put(None)
            self.thread.join()
            self.thread = None
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
