"""The floor under ``ckpt verify``: a bare Python that reads files with ``pread`` and extends a CRC32C over
every byte, on every core the process may use - no checkpoint parsing, no command line.

    python benchmarks/floor.py FILE [FILE ...]

:mod:`benchmarks.run` times it beside ``verify`` and ``cat``: ``verify`` cannot do its work in less time
than this takes (an interpreter's start plus one checksummed pass over the bytes), so the row says how much
of ``verify``'s time is ckpt's own. Each file is split into one range per core, each range checksummed on
its own thread by :func:`formats.io.crc.crc32c_range` (the one module of ckpt imported: ckpt's reader
reads the same way, and the ``crc32c`` package's own import costs tens of milliseconds).
"""
from __future__ import annotations

import os
import sys
import threading

from formats.io.crc import crc32c_range


def main(paths: list[str]) -> None:
    cores = len(os.sched_getaffinity(0))
    threads = []
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        size = os.fstat(fd).st_size
        step = -(-size // cores) or 1
        threads += [threading.Thread(target=crc32c_range, args=(fd, start, min(step, size - start)))
                    for start in range(0, size, step)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


if __name__ == "__main__":
    main(sys.argv[1:])
