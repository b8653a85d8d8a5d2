"""Putting a written bundle in place so that a reader only ever sees the old checkpoint or the new one,
whole - never the new data files beside the old index, never no checkpoint - and cleaning up after a killed
write.

A bundle is several files under fixed names (``prefix.index``, ``prefix.data-NNNNN-of-MMMMM``), and the
index names its data files only through their count ``MMMMM`` (the header's ``num_shards``). So the new
data files are given names no existing file has: :func:`unused_shard_count` picks a shard count whose names
are all free (the writer pads the data files with empty ones at the end to reach it - TensorFlow reads a
shard that holds no tensor as it reads any other). The writer puts everything under temporary names first
(one :func:`~formats.io.atomic.temp_name` stem, which names this host and process), then :func:`publish`:

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

from formats.io.atomic import fsync_dir, ignoring
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


def publish(temp_index: str, final_index: str, data: list[tuple[str, str]]) -> None:
    """Rename the written bundle into place: ``data`` is ``[(temporary, final)]`` of its data files, whose final
    names no existing file has (:func:`unused_shard_count`)."""
    prefix = final_index[:-len(".index")]
    directory = os.path.dirname(os.path.abspath(final_index))
    finals = {os.path.abspath(final) for _, final in data}
    placed: list[str] = []
    try:
        for temp, final in data:
            os.replace(temp, final)
            if os.path.lexists(temp):  # both were links of one input file: rename(2) leaves both names
                os.unlink(temp)
            placed.append(final)
        fsync_dir(directory)  # the new data files are on disk before an index names them
        os.replace(temp_index, final_index)  # old checkpoint -> new checkpoint, in one step
    except BaseException:  # nothing names these data files
        for final in placed:
            with ignoring(OSError):
                os.unlink(final)
        raise
    fsync_dir(directory)
    for path in data_files_of(prefix):
        if os.path.abspath(path) not in finals:
            with ignoring(FileNotFoundError):
                os.unlink(path)


def settle(settled_index: str, final_index: str, staged: list[str], finals: list[str], temp: str) -> None:
    """After :func:`publish` put a bundle in place under a padded shard count (``staged`` data files, the last
    ones empty), give it its own count: hard-link each non-empty data file under its final name (replacing the
    old checkpoint's dead files), swap in ``settled_index`` (the same index, the header counting ``finals``),
    then remove the staged names. Every instant shows the new checkpoint, under one count or the other; where
    the file system has no hard links the staged layout stays (TensorFlow reads it as it is)."""
    directory = os.path.dirname(os.path.abspath(final_index))
    try:
        for i, (source, final) in enumerate(zip(staged, finals)):
            link = f"{temp}.settle-{i}"
            os.link(source, link)
            os.replace(link, final)
            if os.path.lexists(link):  # final was already a link of the same file (an earlier --link output's)
                os.unlink(link)
    except OSError:
        with ignoring(OSError):
            os.unlink(settled_index)
        return
    fsync_dir(directory)
    os.replace(settled_index, final_index)
    fsync_dir(directory)
    keep = {os.path.abspath(f) for f in finals}
    for path in staged:
        if os.path.abspath(path) not in keep:
            with ignoring(FileNotFoundError):
                os.unlink(path)
