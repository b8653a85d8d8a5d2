"""Tensors written one after another at planned places of one file, and checked on the way back by checksum.

A single-file writer whose layout is known before a byte is written (safetensors: a header, then every
tensor's bytes at the offsets the header gives) hands its tensors here as :class:`Placed` items:

- **copied**: a tensor whose canonical bytes lie unchanged in a local file
  (:meth:`~formats.core.model.TensorEntry.stored_range`: a bundle tensor, or one a model map only reshapes)
  is copied by the kernel (``copy_file_range``; adjacent ones in one call), its bytes never passing through
  Python. The checksum it must have in the output is the one stored with it in its input (CRC32C);
- **filled**: a tensor whose source computes its bytes into the writer's chunk buffers (``fill_chunks``: a
  transposed kernel) or whose format reads them straight into memory
  (:meth:`~formats.core.model.TensorEntry.read_into`: an HDF5 dataset) is put, a chunk at a time, in
  :class:`~formats.io.chunk_buffers.ChunkBuffers` - pages of one memory file, reused, never zeroed twice -
  checksummed (CRC32C) by the thread that filled it while the chunk is in its cache, and copied into the output
  by the kernel (``sendfile``: as cheap as ``cp``'s copy, a third of what ``write`` from user memory costs
  here);
- **streamed**: any other is streamed from its source in bounded chunks (its own checks - a bundle's
  CRC32C - made on the way) and written, and the CRC32C of the very bytes written is taken on the way out.

Sources are read (and transforms computed) on the calling thread while a second one writes the bytes before
them. Pieces go to disk while the next ones are written (:class:`~formats.io.background_sync.BackgroundSync`),
and the last ones while the file is read back, so the fsync before publication is short. :func:`check_placed`
(the writer's ``then``, run once every byte is written) reads every tensor back from the file
(``pread`` into a page-aligned buffer, on every core, no mapping) and compares its CRC32C with the one
expected - nothing is read from the sources again and no transform is computed twice. A computed tensor is
also spot-checked on the way: its source's ``spot_check()`` names byte positions and the bytes they must hold,
worked out from the source apart from the writing (a transposed kernel: three of its stored rows, each a whole
column of the output), so a transform computed wrongly is caught, which the CRC32C alone (taken of what was
computed) cannot. A copied tensor whose bytes do not match is looked up in its input, so that a damaged input
is reported as such.
"""
from __future__ import annotations

import errno
import os

from formats.core.model import TensorEntry
from formats.core.sources import CHUNK, fixed_chunks
from formats.io.background_sync import BackgroundSync
from formats.io.chunk_buffers import ChunkBuffers, filled_chunks
from formats.io.crc import crc32c, crc32c_range
from formats.io.zerocopy import copy_range

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, BinaryIO

__all__ = ["Placed", "write_placed", "check_placed", "stored_unchanged", "stored_unchanged_all", "UNASKED",
           "ThreadedSink", "PIPELINE_BYTES", "Copied", "write_copied", "check_copied"]

UNASKED: Any = object()
"""``Placed(stored=UNASKED)``, the default: where its source's bytes lie is asked as it is written."""


class Placed:
    """One tensor of an output file: its ``key``, its ``source``, where its bytes go (``offset``, ``size``), and,
    once written, the CRC32C they must have (``crc``) and whether they were ``copied`` by the kernel. ``stored``:
    :func:`stored_unchanged` of it where the writer has asked already (a range, or None), else :data:`UNASKED`."""

    __slots__ = ("key", "source", "offset", "size", "crc", "copied", "dtype", "stored")

    def __init__(self, key: str, source: Any, offset: int, size: int, dtype: str, stored: Any = UNASKED) -> None:
        self.key, self.source, self.offset, self.size, self.dtype = key, source, offset, size, dtype
        self.stored: tuple[int, int, int, int] | None = stored
        self.crc: int | None = None
        self.copied = False

    def stored_unchanged(self) -> tuple[int, int, int, int] | None:
        """:func:`stored_unchanged` of its source."""
        stored = self.stored
        return stored_unchanged(self.source, self.dtype, self.size) if stored is UNASKED else stored


def stored_unchanged(source: Any, dtype: str, size: int) -> tuple[int, int, int, int] | None:
    """``(fd, offset, size, crc32c)`` where ``source`` holds exactly the ``size`` canonical bytes of ``dtype`` the
    output wants, unchanged in a local file; else None."""
    if not isinstance(source, TensorEntry) or source.dtype != dtype:
        return None
    where = source.stored_range()
    return where if where is not None and where[2] == size else None


def stored_unchanged_all(sources: Sequence[Any], dtypes: Sequence[str],
                         sizes: Sequence[int]) -> list[tuple[int, int, int, int] | None] | None:
    """:func:`stored_unchanged` of each of ``sources`` (as ``dtypes`` and of ``sizes``) where their class finds their
    stored ranges at once and they stay true while the sources' checkpoint is open
    (:meth:`~formats.core.model.TensorEntry.stored_ranges`: a bundle's tensors, from its index's columns), to be
    carried to the copy (``Placed(stored=...)``); else None, and each is asked as it is copied."""
    first = sources[0] if len(sources) else None
    ranges = type(first).stored_ranges(sources) if isinstance(first, TensorEntry) else None
    if ranges is None:
        return None
    return [where if where is not None and where[2] == size and source.dtype == dtype else None
            for where, source, dtype, size in zip(ranges, sources, dtypes, sizes)]


PIPELINE_BYTES = 16 << 20
"""Streamed bytes from which a second thread writes (and checksums) while this one reads and computes."""
BUFFERS = 3
"""Chunk buffers of a write on two threads: one being filled, one waiting in the queue, one being written."""


def write_placed(out: BinaryIO, items: Sequence[Placed], chunk: int = CHUNK,
                 progress: Callable[[Placed], None] | None = None, then: Callable[[], None] | None = None,
                 streamed: int | None = None) -> None:
    """Write ``items`` to ``out`` (a file opened for writing, positioned at the first item's offset; the items
    follow one another without gaps), filling in each one's ``crc`` and ``copied``; ``progress(item)`` after
    each. Sources are read on the calling thread, one after the other; where there is enough to stream, the
    bytes are checksummed and written on a second thread meanwhile (one chunk handed over at a time). Once the
    last byte is written, ``then()`` runs (the read-back: :func:`check_placed`) while the bytes not yet on disk
    are flushed, and this returns when both are done. Raises the source's own error (a ``ChecksumError`` of a
    damaged input) or ``CorruptCheckpointError`` when a source gives another number of bytes than planned.
    ``streamed``: the bytes of the items whose source is not :func:`stored_unchanged`, where the caller has asked
    already (else asked here: a call a tensor)."""
    if streamed is None:
        streamed = sum(item.size for item in items if item.stored_unchanged() is None)
    threaded = streamed >= PIPELINE_BYTES
    buffers = ChunkBuffers(BUFFERS if threaded else 1, chunk) if streamed else None
    with BackgroundSync(out.fileno()) as syncer:
        sink = _Sink(out, syncer)
        if threaded:
            sink = ThreadedSink(sink)
        try:
            _produce(items, chunk, sink, progress, buffers)
            sink.finish()
        finally:
            sink.close()
            if buffers is not None:
                buffers.close()
        out.flush()
        syncer.flush_rest()  # the last pieces go to disk while ``then`` reads the file back
        if then is not None:
            then()


def _produce(items: Sequence[Placed], chunk: int, sink: _Sink, progress: Callable[[Placed], None] | None,
             buffers: ChunkBuffers | None = None) -> None:
    """Hand every item's bytes to ``sink`` in order: runs of stored bytes as kernel copies, values computed into
    ``buffers`` (a source's ``fill_chunks``) as those buffers, others as chunks."""
    from formats.core.errors import CorruptCheckpointError

    i = 0
    while i < len(items):
        item = items[i]
        where = item.stored_unchanged()
        if where is not None:
            run = _adjacent_run(items, i, where)
            sink.copy(where[0], where[1], item.offset, sum(x.size for x in run))
            for done in run:
                done.copied = True
                if progress is not None:
                    progress(done)
            i += len(run)
            continue
        size = 0
        filled = filled_chunks(item.source, item.dtype, item.size, buffers) if buffers is not None else None
        crc = None
        if filled is not None:  # checksummed here, while the bytes just computed are in this core's cache
            crc = 0
            for buffer, n in filled:
                crc = crc32c(buffer[:n], crc)
                sink.filled(item, buffer, n, buffers)  # type: ignore[arg-type]
                size += n
        else:
            for piece in fixed_chunks(item.source, chunk):
                sink.piece(item, piece)
                size += len(piece)
        if size != item.size:
            raise CorruptCheckpointError(item.key, f"source gave {size} bytes, expected {item.size}")
        sink.end(item, crc)
        if progress is not None:
            progress(item)
        i += 1


class _Sink:
    """Writes what :func:`_produce` hands over, on the calling thread: each streamed piece written and added to
    its item's CRC32C, each run of stored bytes copied by the kernel; the bytes counted for the background
    flush."""

    def __init__(self, out: BinaryIO, syncer: BackgroundSync) -> None:
        self.out, self.syncer = out, syncer
        self.crc = 0

    def copy(self, src_fd: int, src_offset: int, dst_offset: int, size: int) -> None:
        """Copy ``size`` stored bytes in the kernel to ``dst_offset`` (where the file is positioned), a piece of
        :attr:`BackgroundSync.EVERY` at a time: each goes to disk while the next is copied (one copy of a whole
        run left all of it to the final fsync)."""
        self.out.flush()
        fd, step = self.out.fileno(), self.syncer.EVERY
        for start in range(0, size, step):
            n = min(step, size - start)
            copy_range(src_fd, fd, n, src_offset + start, dst_offset + start)
            self.syncer.wrote(n)
        self.out.seek(dst_offset + size)

    def piece(self, item: Placed, piece: Any) -> None:
        """Write one chunk of ``item``'s bytes."""
        self.out.write(piece)
        self.crc = crc32c(piece, self.crc)
        self.syncer.wrote(len(piece))

    def filled(self, item: Placed, buffer: memoryview, n: int, buffers: ChunkBuffers) -> None:
        """Write the first ``n`` bytes of ``buffer`` (a chunk of ``item`` computed into it, checksummed by the
        caller; copied by the kernel from the buffers' memory file where they have one), then give it back."""
        try:
            where = buffers.place(buffer)
            if where is None or not self._send(where[0], where[1], n):
                self._write_plain(buffer[:n])
            self.syncer.wrote(n)
        finally:
            buffers.give(buffer)

    def _write_plain(self, data: memoryview) -> None:
        self.out.write(data)

    def _send(self, src_fd: int, src_offset: int, n: int) -> bool:
        """Copy ``n`` bytes of ``src_fd`` from ``src_offset`` to where the file is positioned, by ``sendfile``;
        False (nothing written) where the system refuses it for these files."""
        self.out.flush()
        at, fd, done = self.out.tell(), self.out.fileno(), 0
        try:
            while done < n:
                sent = os.sendfile(fd, src_fd, src_offset + done, n - done)
                if sent <= 0:
                    raise OSError(errno.EIO, f"sendfile wrote nothing ({n - done} bytes left)")
                done += sent
        except OSError as exc:
            if done or exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
                raise
            self.out.seek(at)
            return False
        self.out.seek(at + n)
        return True

    def end(self, item: Placed, crc: int | None = None) -> None:
        """``item``'s bytes are all written: it gets their CRC32C (``crc`` when the caller took it)."""
        item.crc, self.crc = (self.crc if crc is None else crc), 0

    def finish(self) -> None:
        """Everything handed over is written."""

    def close(self) -> None:
        """Stop (after an error too)."""


class ThreadedSink(_Sink):
    """The work of a sink (a :class:`_Sink`, or any object with its ``piece``, ``copy``, ``end`` methods: an npz
    member's writer) run by a second thread: the caller hands work over through a queue of one entry (so
    memory stays at three chunks: one queued, one written, one read) and goes on reading; an error of the
    writing thread (a full disk) is raised in the caller at its next hand-over."""

    DEPTH = 1

    def __init__(self, sink: Any) -> None:
        import queue
        import threading

        self.sink = sink
        self.work: Any = queue.Queue(self.DEPTH)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="ckpt-write", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            task = self.work.get()
            if task is None:
                return
            if self.error is not None:
                if task[0] == "filled":
                    task[4].give(task[2])  # the buffer goes back: the caller may be waiting for one
                continue  # drain: the caller stops at its next hand-over
            try:
                getattr(self.sink, task[0])(*task[1:])
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                self.error = exc

    def _put(self, *task: Any) -> None:
        if self.error is not None:
            raise self.error
        self.work.put(task)

    def copy(self, src_fd: int, src_offset: int, dst_offset: int, size: int) -> None:
        self._put("copy", src_fd, src_offset, dst_offset, size)

    def piece(self, item: Any, piece: Any) -> None:
        import mmap

        if isinstance(getattr(piece, "obj", None), mmap.mmap):  # a view of a memory map, whose pages the reader
            piece = bytes(piece)  # drops as it goes on: touched again here they would stay resident
        self._put("piece", item, piece)

    def filled(self, item: Placed, buffer: memoryview, n: int, buffers: ChunkBuffers) -> None:
        try:
            self._put("filled", item, buffer, n, buffers)
        except BaseException:
            buffers.give(buffer)
            raise

    def end(self, item: Placed, crc: int | None = None) -> None:
        self._put(*(("end", item) if crc is None else ("end", item, crc)))

    def finish(self) -> None:
        self.close()
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        if self.thread.is_alive():
            self.work.put(None)
            self.thread.join()


def _adjacent_run(items: Sequence[Placed], i: int, first: tuple[int, int, int, int]) -> list[Placed]:
    """``items[i]`` and the items after it whose stored bytes follow one another in the same input file, as
    their places in the output do (one kernel copy for all of them); each gets the checksum it must have."""
    fd, offset, size, crc = first
    items[i].crc = crc
    run = [items[i]]
    for j in range(i + 1, len(items)):  # not items[i + 1:]: a copy of the rest per run was quadratic in runs of one
        item = items[j]
        where = item.stored_unchanged()
        if where is None or where[0] != fd or where[1] != offset + size:
            break
        item.crc = where[3]
        run.append(item)
        offset, size = where[1], where[2]
    return run


def check_placed(path: str, items: Sequence[Placed], jobs: int | None = None) -> list[tuple[str, str]]:
    """Read every item back from the file at ``path`` and compare its CRC32C with the one :func:`write_placed`
    gave it (and a computed item's bytes with its source's ``spot_check()``), on ``jobs`` threads (None: every core; one for a file of less than :data:`PIPELINE_BYTES`);
    ``(key, problem)`` for each that differs, in order. A copied
    item that differs has its input checked: a damaged input raises the input's own error."""
    from formats.core.parallel import map_ordered

    if sum(item.size for item in items) < PIPELINE_BYTES:
        jobs = 1  # a small file is read back sooner than threads are started and handed its pieces
    fd = os.open(path, os.O_RDONLY)
    try:
        checked = map_ordered(lambda unit: _problems(fd, unit), _units(items), jobs,
                              weight=lambda unit: unit[-1].offset + unit[-1].size - unit[0].offset)
        problems = [problem for unit in checked for problem in unit]
    finally:
        os.close(fd)
    return [(item.key, problem) for item, problem in zip(items, problems) if problem is not None]


SMALL_CHECK = 1 << 16
"""An item of at most this many bytes (and no spot check) is read back with its neighbours: one ``pread`` of at most
:data:`CHECK_BLOCK` bytes for a run of them (10^5 tiny tensors: a few hundred reads, not 10^5)."""
CHECK_BLOCK = 1 << 20


def _units(items: Sequence[Placed]) -> list[list[Placed]]:
    """``items`` in order, in units read back at once: a run of small items each right after the one before, or one
    item alone."""
    units: list[list[Placed]] = []
    run: list[Placed] = []
    end = size = 0
    for item in items:
        if item.size > SMALL_CHECK or (not item.copied and hasattr(item.source, "spot_check")):
            if run:
                units.append(run)
                run = []
            units.append([item])
            continue
        if run and item.offset == end and size + item.size <= CHECK_BLOCK:
            run.append(item)
            size += item.size
        else:
            if run:
                units.append(run)
            run, size = [item], item.size
        end = item.offset + item.size
    if run:
        units.append(run)
    return units


def _problems(fd: int, unit: list[Placed]) -> list[str | None]:
    """:func:`_problem` of each item of ``unit`` (see :func:`_units`); a run read with one ``pread``, an item whose
    bytes differ (or a run the file ends within) asked alone, which says what is wrong."""
    if len(unit) == 1:
        return [_problem(fd, unit[0])]
    start = unit[0].offset
    data = os.pread(fd, unit[-1].offset + unit[-1].size - start, start)
    if len(data) != unit[-1].offset + unit[-1].size - start:
        return [_problem(fd, item) for item in unit]
    view = memoryview(data)
    return [None if crc32c(view[item.offset - start:item.offset - start + item.size]) == item.crc else
            _problem(fd, item) for item in unit]


def _problem(fd: int, item: Placed) -> str | None:
    spot = _Spot(item.source) if not item.copied and hasattr(item.source, "spot_check") else None
    if spot is not None and spot.expected is None:
        spot = None
    got = crc32c_range(fd, item.offset, item.size, each=spot) if item.size else 0
    if got is None:
        return "the output ends before this tensor's bytes"
    if got == item.crc:
        return spot.problem() if spot is not None else None
    if item.copied:
        item.source.check()  # the input's bytes: a ChecksumError here names the input
        return "copied bytes do not match their input's checksum"
    return "the bytes read back differ from the bytes written (CRC32C)"


class _Spot:
    """A computed tensor's spot check (its source's ``spot_check()``: byte positions in the tensor, sorted, and the
    byte each must be, worked out from the source apart from the writing), met piece by piece as the read-back
    reads the tensor."""

    def __init__(self, source: Any) -> None:
        self.expected = source.spot_check()
        self.got: Any = None
        if self.expected is not None:
            import numpy as np

            self.got = np.zeros(len(self.expected[1]), dtype=np.uint8)
            self.seen = 0

    def __call__(self, piece: memoryview, at: int) -> None:
        if self.expected is None:
            return
        import numpy as np

        positions = self.expected[0]
        lo, hi = np.searchsorted(positions, [at, at + len(piece)])
        if hi > lo:
            self.got[lo:hi] = np.frombuffer(piece, dtype=np.uint8)[positions[lo:hi] - at]
            self.seen += hi - lo

    def problem(self) -> str | None:
        """Why the bytes read back are not what the source says they must be at the places looked at, or None."""
        if self.expected is None:
            return None
        import numpy as np

        positions, want = self.expected
        wrong = np.flatnonzero(self.got != want)
        if self.seen == len(want) and not len(wrong):
            return None
        first = int(positions[wrong[0]]) if len(wrong) else 0
        return (f"the bytes written differ from the source's values at {len(wrong):,} of {len(want):,} bytes "
                f"checked (first at byte {first:,} of the tensor): the value was computed wrongly")


class Copied:
    """The tensors of an output file when every one's bytes lie unchanged in an input file, as arrays in the order
    their bytes are written, none an object (a :class:`Placed` and its stored range were about 250 bytes a tensor:
    250 MB of a safetensors file of 10^6): per tensor the input's descriptor ``fd``, its offset there ``src``, its
    ``size``, the CRC32C stored with its bytes ``crc`` and its offset in the output ``dst`` (each right after the
    one before), integer arrays; ``row``, its position among the caller's rows, and ``key(row)`` and
    ``source(row)``, asked only of a tensor whose bytes do not read back (to say which and check its input)."""

    def __init__(self, fd: Any, src: Any, size: Any, crc: Any, dst: Any, row: Any, key: Callable[[int], str],
                 source: Callable[[int], Any]) -> None:
        self.fd, self.src, self.size, self.crc, self.dst, self.row = fd, src, size, crc, dst, row
        self.key, self.source = key, source

    def __len__(self) -> int:
        return len(self.size)

    @property
    def nbytes(self) -> int:
        """The bytes of them all."""
        return int(self.size.sum())

    def placed(self, i: int) -> Placed:
        """The ``i``-th as a :class:`Placed` written by a kernel copy (for :func:`_problem`)."""
        row = int(self.row[i])
        item = Placed(self.key(row), self.source(row), int(self.dst[i]), int(self.size[i]), "",
                      (int(self.fd[i]), int(self.src[i]), int(self.size[i]), int(self.crc[i])))
        item.crc, item.copied = int(self.crc[i]), True
        return item


def write_copied(out: BinaryIO, copied: Copied, progress: Callable[[int, int], None] | None = None,
                 then: Callable[[], None] | None = None) -> None:
    """:func:`write_placed` of tensors that are all copied (``out`` positioned at the first one's ``dst``): each run
    of them whose bytes follow one another in one input file one kernel copy (a bundle's data file taken in its
    order: one run), found with arrays; ``progress(tensors, bytes)`` after each run; ``then()`` (the read-back:
    :func:`check_copied`) while the last pieces are flushed."""
    import numpy as np

    fd, src, size, dst = copied.fd, copied.src, copied.size, copied.dst
    count = len(size)
    breaks = (np.flatnonzero((fd[1:] != fd[:-1]) | (src[1:] != src[:-1] + size[:-1])) + 1).tolist() if count else []
    bounds = [0, *breaks, count]
    with BackgroundSync(out.fileno()) as syncer:
        sink = _Sink(out, syncer)
        for lo, hi in zip(bounds, bounds[1:]):
            if lo == hi:
                continue
            nbytes = int(dst[hi - 1] + size[hi - 1] - dst[lo])
            sink.copy(int(fd[lo]), int(src[lo]), int(dst[lo]), nbytes)
            if progress is not None:
                progress(hi - lo, nbytes)
        out.flush()
        syncer.flush_rest()  # the last pieces go to disk while ``then`` reads the file back
        if then is not None:
            then()


def check_copied(path: str, copied: Copied, jobs: int | None = None) -> list[tuple[str, str]]:
    """:func:`check_placed` of tensors written by :func:`write_copied`: each read back from ``path`` and its CRC32C
    compared with the one stored with its input's bytes, the small ones a block of about :data:`CHECK_BLOCK` bytes
    a ``pread`` (blocks found with arrays); ``(key, problem)`` of each that differs, in order (a damaged input
    raises its own error)."""
    import numpy as np

    from formats.core.parallel import map_ordered

    size, dst, count = copied.size, copied.dst, len(copied)
    if not count:
        return []
    if copied.nbytes < PIPELINE_BYTES:
        jobs = 1
    big = size > SMALL_CHECK
    block = (dst - dst[0]) // CHECK_BLOCK
    starts = np.flatnonzero(np.concatenate([[True], (block[1:] != block[:-1]) | big[1:] | big[:-1]])).tolist()
    units = list(zip(starts, [*starts[1:], count]))
    fd = os.open(path, os.O_RDONLY)
    try:
        checked = map_ordered(lambda unit: _copied_problems(fd, copied, *unit), units, jobs,
                              weight=lambda unit: int(dst[unit[1] - 1] + size[unit[1] - 1] - dst[unit[0]]))
    finally:
        os.close(fd)
    return [problem for unit in checked for problem in unit]


def _copied_problems(fd: int, copied: Copied, lo: int, hi: int) -> list[tuple[str, str]]:
    """``(key, problem)`` of each of the tensors ``lo:hi`` of ``copied`` that does not read back (see
    :func:`check_copied`): several read with one ``pread``, tiny ones of one size checksummed together with arrays
    (:func:`~formats.io.crc_arrays.crc32c_pieces`, as a bundle's read-back checks them); one that differs asked
    alone (:func:`_problem`)."""
    start = int(copied.dst[lo])
    length = int(copied.dst[hi - 1] + copied.size[hi - 1]) - start
    data = os.pread(fd, length, start) if hi - lo > 1 else b""
    if len(data) == length:
        from formats.io.crc_arrays import PIECE_BYTES, crc32c_pieces

        at, sizes = copied.dst[lo:hi] - start, copied.size[lo:hi]
        size = int(sizes[0])
        if size <= PIECE_BYTES and bool((sizes == size).all()):
            import numpy as np

            wrong = (np.flatnonzero(crc32c_pieces(np, data, at, size) != copied.crc[lo:hi]) + lo).tolist()
        else:
            view = memoryview(data)
            wrong = [i for i, a, n, crc in zip(range(lo, hi), at.tolist(), sizes.tolist(), copied.crc[lo:hi].tolist())
                     if crc32c(view[a:a + n]) != crc]
    else:
        wrong = list(range(lo, hi))
    found = []
    for i in wrong:
        item = copied.placed(i)
        problem = _problem(fd, item)
        if problem is not None:
            found.append((item.key, problem))
    return found
