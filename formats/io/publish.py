"""Putting a set of files that an index names in place, so that a reader only ever sees the old output or the
new one, whole - never new files beside the old index, never no output - and cleaning up after a killed write.

Such an output (a TensorFlow bundle: ``prefix.index`` and its data files; sharded Keras 3 weights:
``m.weights.json`` and its ``m_NNNNN.weights.h5`` shards) is several files beside others in a directory, and
the index is what makes them one output. The writer puts every file under temporary names first (one
:func:`~formats.io.atomic.temp_name` stem, which names this host and process), with data files under names
no live index uses (the format picks them: a bundle pads its shard count, Keras shards take a generation
name), then :func:`publish_set`:

1. renames the data files into place (replacing files a killed write left, which no index names), and
   flushes the directory - the old index still names the old files, which nothing has touched;
2. renames the index into place, replacing the old one in one ``rename(2)`` - the new output appears whole,
   and the old one is gone, at the same instant - and flushes the directory (without ``replace`` the rename
   is exclusive: an index another writer put there meanwhile fails the write as if it had existed);
3. removes every file of the output's family (``stale``) the new index does not name (the old output's, and
   those a killed write left under final names).

Where the data files were published under stand-in names, :func:`settle_set` then gives them their own:
hard links under the final names, a second index naming those, then the stand-ins removed - every instant
shows the new output. Both run inside :class:`~formats.io.atomic.publishing`, so cooperating writers of one
directory take turns. A write killed at any point leaves the old output (before 2) or the new one (from 2
on), plus files no index names: temporaries, which the next write removes when their writer is gone
(:func:`~formats.io.atomic.sweep_temporaries`), and data files under final names, which the next
publication removes (step 3).
"""
from __future__ import annotations

import os

from formats.core.errors import OutputExistsError
from formats.io.atomic import exists_error, fsync_dir, ignoring, publish_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["publish_set", "settle_set"]


def publish_set(temp_index: str, final_index: str, data: list[tuple[str, str]], *,
                stale: Callable[[], list[str]], replace: bool = True, what: str = "output checkpoint") -> None:
    """Rename a written set into place: ``data`` is ``[(temporary, final)]`` of its data files, whose final names
    no live index names; ``stale()`` lists the family's files in the directory (those the new index does not
    name are removed after). Without ``replace`` an existing index raises
    :func:`~formats.io.atomic.exists_error` before anything is renamed (and the index's rename is exclusive)."""
    directory = os.path.dirname(os.path.abspath(final_index))
    finals = {os.path.abspath(final) for _, final in data}
    if not replace and os.path.lexists(final_index):  # put there since the check (by a writer that went first)
        raise exists_error(final_index.removesuffix(".index"), what)
    placed: list[str] = []
    try:
        for temp, final in data:
            os.replace(temp, final)
            if os.path.lexists(temp):  # both were links of one input file: rename(2) leaves both names
                os.unlink(temp)
            placed.append(final)
        fsync_dir(directory)  # the new data files are on disk before an index names them
        publish_file(temp_index, final_index, replace=replace, what=what)  # old output -> new output, one step
    except BaseException as exc:  # nothing names these data files
        for final in placed:
            with ignoring(OSError):
                os.unlink(final)
        if isinstance(exc, OutputExistsError):  # named as the guard names the output
            raise exists_error(final_index.removesuffix(".index"), what) from None
        raise
    fsync_dir(directory)
    for path in stale():
        if os.path.abspath(path) not in finals:
            with ignoring(FileNotFoundError):
                os.unlink(path)


def settle_set(settled_index: str, final_index: str, staged: list[str], finals: list[str], temp: str) -> bool:
    """After :func:`publish_set` put a set in place under stand-in names (``staged``), give it its own: hard-link
    each of the first ``len(finals)`` staged files under its final name (replacing the old output's dead
    files), swap in ``settled_index`` (the index naming ``finals``), then remove the staged names not among the
    finals. Every instant shows the new output, under one set of names or the other; where the file system has
    no hard links the staged names stay (False)."""
    directory = os.path.dirname(os.path.abspath(final_index))
    try:
        for i, (source, final) in enumerate(zip(staged, finals)):
            if os.path.abspath(source) == os.path.abspath(final):
                continue
            link = f"{temp}.settle-{i}"
            os.link(source, link)
            os.replace(link, final)
            if os.path.lexists(link):  # final was already a link of the same file (an earlier --link output's)
                os.unlink(link)
    except OSError:
        with ignoring(OSError):
            os.unlink(settled_index)
        return False
    fsync_dir(directory)
    os.replace(settled_index, final_index)
    fsync_dir(directory)
    keep = {os.path.abspath(f) for f in finals}
    for path in staged:
        if os.path.abspath(path) not in keep:
            with ignoring(FileNotFoundError):
                os.unlink(path)
    return True
