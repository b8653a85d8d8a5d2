"""The files of a bundle being written: their temporary and final names, flushes to disk that overlap the read-back, and the publication (:mod:`formats.tf_bundle.publish`).

Data files: in copy mode (the default) one, ``data-00000-of-00001``, that starts with the input data
files taken over whole (copied by the kernel) and goes on with the tensors written fresh; with
``link``, each input data file taken over is a shard of its own (a hard link), and the fresh
tensors, if any, go to one more shard. With a shard ``count`` (the writer's ``shards``), nothing is
taken over and the tensors go to ``count`` data files. Where the checkpoint being replaced has the same
shard count, the bundle is put in place with empty data files added at the end (so that no name is the old
checkpoint's), then settled under its own count (:func:`~formats.tf_bundle.publish.settle`).
"""
from __future__ import annotations

import os

from formats.io.atomic import ignoring, publishing, temp_name
from formats.tf_bundle.layout import Layout
from formats.tf_bundle.publish import publish, settle, unused_shard_count
from formats.tf_bundle.reader import data_file_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO

__all__ = ["BundleFiles", "SYNCING"]

SYNCING = 16
"""Finished files flushed to disk in the background (each on a thread, held open) at once."""


class BundleFiles:
    """Names and handles of one bundle write; a context manager that removes the temporaries unless published."""

    def __init__(self, prefix: str, layout: Layout, link: bool, fresh: bool, count: int | None = None) -> None:
        self.prefix, self.layout = prefix, layout
        self.link = link and bool(layout.files)
        self.directory = os.path.dirname(os.path.abspath(prefix))
        self.final_index = prefix + ".index"
        linked = len(layout.files) if self.link else 0
        self.shards = linked + (1 if fresh or not linked else 0) if count is None else count
        self.fresh_shard = (self.shards - 1 if fresh or not linked else None) if count is None else 0
        self.finals = [data_file_name(prefix, i, self.shards) for i in range(self.shards)]
        self.empty = unused_shard_count(prefix, self.shards) - self.shards
        """Empty data files added at the end while the bundle is put in place, so that its data file names are
        not the old checkpoint's (the same shard count): see :mod:`formats.tf_bundle.publish`."""
        self.shards += self.empty
        self.temp = temp_name(prefix)
        self.temp_index = self.temp + ".index"
        self.staged = [data_file_name(prefix, i, self.shards) for i in range(self.shards)]
        self.temps = [data_file_name(self.temp, i, self.shards) for i in range(self.shards)]
        self.settled_index = self.temp + ".settled.index" if self.empty else None
        """The index under the final shard count, written beside the staged one (see :meth:`publish`)."""
        self.warnings: list[str] = []
        self.index: BinaryIO | None = None
        self.data: BinaryIO | None = None
        self._opened: list[BinaryIO] = []
        self._syncs: list[_Sync] = []
        self._published = False

    def __enter__(self) -> BundleFiles:
        self.index = open(self.temp_index, "xb")  # noqa: SIM115 - closed on exit
        if self.fresh_shard is None:  # else the writer goes through every shard from the fresh one on
            for temp in self.temps[self.shards - self.empty:]:
                open(temp, "xb").close()  # the empty data files: TensorFlow opens every shard the header counts
        return self

    def open_data(self, shard: int) -> BinaryIO:
        """Create the temporary data file of ``shard`` for writing (the one :attr:`data` then names)."""
        self.data = open(self.temps[shard], "xb", buffering=1 << 20)  # noqa: SIM115 - closed on exit
        self._opened.append(self.data)
        return self.data

    def sync_in_background(self, f: BinaryIO) -> None:
        """Start flushing a finished file to disk while the write goes on (see :meth:`finish_syncs`). At most
        :data:`SYNCING` files are flushed (and held open) at once: beyond, the oldest flush is waited for and
        its file closed (a bundle may have thousands of data files, a process a thousand descriptors)."""
        f.flush()
        self._syncs.append(_Sync(f.fileno(), f))
        while len(self._syncs) > SYNCING:
            done = self._syncs.pop(0)
            done.join()
            if done.file is not self.index and done.file is not self.data:
                done.file.close()
                self._opened.remove(done.file)

    @property
    def syncing(self) -> bool:
        """Whether files are being flushed to disk in the background."""
        return bool(self._syncs)

    def finish_syncs(self) -> None:
        """Wait for the background flushes; raise what one of them met."""
        syncs, self._syncs = self._syncs, []
        for sync in syncs:
            sync.join()

    def publish(self, replace: bool = True) -> None:
        """Put the bundle in place: it replaces the old checkpoint, if any, in one step - under the staged names
        (empty data files padding the count), then under the final ones. Without ``replace`` an index put in
        place meanwhile (by another writer) fails the write as if it had existed."""
        self.finish_syncs()
        with publishing(self.directory):
            publish(self.temp_index, self.final_index, list(zip(self.temps, self.staged)), replace=replace)
            self._published = True
            if self.settled_index is not None:
                settle(self.settled_index, self.final_index, self.staged, self.finals, self.temp)

    def __exit__(self, *exc: object) -> None:
        with ignoring(BaseException):
            self.finish_syncs()
        for f in (*self._opened, self.index):
            if f is not None:
                with ignoring(OSError):
                    f.close()
        if not self._published:
            for path in [*self.temps, self.temp_index, *([self.settled_index] if self.settled_index else [])]:
                with ignoring(FileNotFoundError):
                    os.unlink(path)


class _Sync:
    """``fsync(fd)`` on a thread; :meth:`join` re-raises its error. (The interpreter's own thread and lock, as
    :mod:`formats.core.parallel`'s pool: importing ``threading`` costs a small write more than its flushes' CPU.)"""

    def __init__(self, fd: int, file: BinaryIO) -> None:
        import _thread  # only a write with new bytes flushes them (a linked rename has none)

        self.fd, self.file = fd, file
        self.error: OSError | None = None
        self.running = _thread.allocate_lock()
        self.running.acquire()  # released when the flush is done
        _thread.start_new_thread(self._run, ())  # like a daemon thread: never keeps the process alive

    def _run(self) -> None:
        try:
            os.fsync(self.fd)
        except OSError as exc:
            self.error = exc
        finally:
            self.running.release()

    def join(self) -> None:
        with self.running:  # waits for the flush
            pass
        if self.error is not None:
            raise self.error
