"""Putting a written bundle in place so that a reader only ever sees the old checkpoint, the new one,
or none - never the new data files beside the old index - and cleaning up after a killed write.

A bundle is several files under fixed names (``prefix.index``, ``prefix.data-NNNNN-of-MMMMM``), so
no single rename publishes it. The writer puts everything under temporary names first (one
:func:`~formats.io.atomic.temp_name` stem, which names this host and process), then :func:`publish`:

1. removes the old index, if any - from here on the prefix names no checkpoint;
2. renames the data files into place;
3. renames the index into place - the new checkpoint appears whole;
4. removes data files of the old checkpoint the new one does not use (another shard count).

A write killed at any point leaves the old checkpoint (before 1), nothing (between 1 and 3) or the
new one (after 3), plus files under temporary names. A bundle exists when its index does, so data
files a killed write left under the final names never block the next write (the output guard looks
at the index), and the next write of the prefix removes the temporaries of writers that are gone
(:func:`~formats.io.atomic.sweep_temporaries`) and, here, data files no index names.
"""
from __future__ import annotations

import contextlib
import os
import re

from formats.io.atomic import fsync_dir

__all__ = ["publish", "data_files_of"]


def data_files_of(prefix: str) -> list[str]:
    """The existing ``prefix.data-NNNNN-of-MMMMM`` files, whatever their shard count."""
    directory, base = os.path.split(os.path.abspath(prefix))
    pattern = re.compile(re.escape(base) + r"\.data-\d{5}-of-\d{5}")
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return sorted(os.path.join(os.path.dirname(prefix), n) for n in names if pattern.fullmatch(n))


def publish(temp_index: str, final_index: str, data: list[tuple[str, str]]) -> None:
    """Rename the written bundle into place: ``data`` is ``[(temporary, final)]`` of its data files."""
    prefix = final_index[:-len(".index")]
    directory = os.path.dirname(os.path.abspath(final_index))
    finals = {os.path.abspath(final) for _, final in data}
    stale = [p for p in data_files_of(prefix) if os.path.abspath(p) not in finals]
    if os.path.lexists(final_index):
        os.unlink(final_index)
        fsync_dir(directory)  # the old checkpoint is gone before any of its data files changes
    placed: list[str] = []
    try:
        for temp, final in data:
            os.replace(temp, final)
            if os.path.lexists(temp):  # both were links of one input file: rename(2) leaves both names
                os.unlink(temp)
            placed.append(final)
        os.replace(temp_index, final_index)
    except BaseException:  # nothing names these data files any more
        for final in placed:
            with contextlib.suppress(OSError):
                os.unlink(final)
        raise
    fsync_dir(directory)
    for path in stale:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
