"""Putting a written bundle in place so that a reader only ever sees the old checkpoint or the new one,
whole - never the new data files beside the old index, never no checkpoint - and cleaning up after a killed
write.

A bundle is several files under fixed names (``prefix.index``, ``prefix.data-NNNNN-of-MMMMM``), and the
index names its data files only through their count ``MMMMM`` (the header's ``num_shards``). So the new
data files are given names no existing file has: :func:`unused_shard_count` picks a shard count whose names
are all free (the writer pads the data files with empty ones at the end to reach it - TensorFlow reads a
shard that holds no tensor as it reads any other). The writer puts everything under temporary names first
(one :func:`~formats.io.atomic.temp_name` stem, which names this host and process), then :func:`publish`
(:mod:`formats.io.publish`, which every output of several files named by an index shares):

1. renames the data files into place, under names the old index does not use (replacing data files a
   killed write left, which no index names), and flushes the directory - the old index still names the old
   data files, which nothing has touched;
2. renames the index into place, replacing the old one in one ``rename(2)`` - the new checkpoint appears
   whole, and the old one is gone, at the same instant - and flushes the directory;
3. removes every data file of the prefix the new index does not name (the old checkpoint's, and those a
   killed write left under final names).

A write killed at any point leaves the old checkpoint (before 2) or the new one (from 2 on), plus files
no index names: temporaries, which the next write of the prefix removes when their writer is gone
(:func:`~formats.io.atomic.sweep_temporaries`) and ``ckpt ls DIR`` reports, and data files under final
names, which the next publication removes (step 3). A state file (``--update-state``) is written after
the publication, so it always names a checkpoint that opens.
"""
from __future__ import annotations

import os

from formats.io.publish import publish_set, settle_set
from formats.io.writing import bundle_file_part

__all__ = ["publish", "settle", "data_files_of", "unused_shard_count"]


def data_files_of(prefix: str) -> list[str]:
    """The existing ``prefix.data-NNNNN-of-MMMMM`` files, whatever their shard count."""
    directory, base = os.path.split(os.path.abspath(prefix))
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return sorted(os.path.join(os.path.dirname(prefix), n) for n in names
                  if (bundle_file_part(n, base) or "").startswith("data-"))


def unused_shard_count(prefix: str, shards: int) -> int:
    """``shards``, or more when the checkpoint at ``prefix`` has that many data files (their names are in use):
    the smallest count from ``shards`` on whose names no live data file has. Data files of another count than
    the index's are no checkpoint's (a killed write left them) and may be replaced; where the index cannot be
    read, every existing data file counts as live."""
    live = _live_shard_count(prefix)
    taken = {live} if live is not None else {int(os.path.basename(p).rsplit("-of-", 1)[1])
                                             for p in data_files_of(prefix)}
    while shards in taken:
        shards += 1
    return shards


def _live_shard_count(prefix: str) -> int | None:
    """The data file count the index at ``prefix`` names (its header's ``num_shards``); None without a readable one."""
    import mmap

    from formats.core.errors import CheckpointError
    from formats.io.sstable.table import Table
    from formats.tf_bundle.reader import parse_header

    path = prefix + ".index"
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            table = Table(data, path)
            try:
                value = table.get(b"")
                return None if value is None else parse_header(bytes(value), path).num_shards
            finally:
                table.close()
    except (OSError, ValueError, CheckpointError):
        return None


def publish(temp_index: str, final_index: str, data: list[tuple[str, str]], *, replace: bool = True) -> None:
    """Rename the written bundle into place (:func:`~formats.io.publish.publish_set`): ``data`` is
    ``[(temporary, final)]`` of its data files, whose final names no existing file has
    (:func:`unused_shard_count`); the prefix's data files the new index does not name are removed after."""
    prefix = final_index[:-len(".index")]
    publish_set(temp_index, final_index, data, stale=lambda: data_files_of(prefix), replace=replace)


def settle(settled_index: str, final_index: str, staged: list[str], finals: list[str], temp: str) -> None:
    """After :func:`publish` put a bundle in place under a padded shard count (``staged`` data files, the last
    ones empty), give it its own count (:func:`~formats.io.publish.settle_set`: the index swapped in names
    ``finals``); where the file system has no hard links the staged layout stays (TensorFlow reads it as it
    is)."""
    settle_set(settled_index, final_index, staged, finals, temp)
