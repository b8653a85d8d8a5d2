"""The bundle writer's read-back: is what was written under temporary names what was meant?

Each tensor is checked as its bytes got there (:mod:`formats.tf_bundle.writer`):

* written fresh: read back and compared with its source (or the digest taken while writing);
* copied by the kernel from an input data file: its bytes checked, straight from the memory map
  (no copy), against the checksum its entry carries - the input's own;
* in a hard-linked input data file: its entry checked to point at the input's bytes (same offset,
  size and checksum) in a file that is the input's own (same inode) - no byte is read.

Tensors are checked on ``jobs`` threads. A copied tensor whose bytes do not match is looked up in
its input: a damaged input is reported as such (not as a failed write).
"""
from __future__ import annotations

import os

from formats.core.errors import CheckpointError
from formats.core.parallel import map_ordered
from formats.core.roundtrip import Mismatch, RoundTripReport, compare_checkpoints
from formats.io.crc import crc32c, unmask
from formats.io.writing import check_roundtrip
from formats.tf_bundle.checkpoint import BundleCheckpoint
from formats.tf_bundle.origins import COPIED, FRESH

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["verify_written"]


def verify_written(temp: str, prefix: str, records: list[Any], chunk: int, jobs: int | None) -> RoundTripReport:
    """Check the bundle written at ``temp`` against its ``records``; raises VerificationError on a mismatch."""
    by_key = {r.key.decode("utf-8", "surrogateescape"): r for r in records}
    with BundleCheckpoint(temp) as written:
        fresh = {k: r.expected for k, r in by_key.items() if r.how == FRESH}
        report = compare_checkpoints({k: written[k] for k in fresh if k in written}, fresh, path=prefix,
                                     against="sources", chunk=chunk, check_crc=False, jobs=jobs)
        report.mismatches += [Mismatch(k, "missing", "not in the output") for k in by_key if k not in written]
        report.mismatches += [Mismatch(k, "unexpected", "not in the source") for k in written if k not in by_key]
        taken = [k for k, r in by_key.items() if r.how != FRESH and k in written]
        copied = [k for k in taken if by_key[k].how == COPIED]  # bytes read: on every core
        batches = _batches(copied, [by_key[k].size for k in copied])
        checked = map_ordered(lambda batch: _copied_problems(written, batch[0], by_key), batches, jobs,
                              weight=lambda batch: batch[1])
        found = dict(zip(copied, (problem for problems in checked for problem in problems)))
        inodes = _Inodes()
        for key in taken:  # linked: entries and inodes compared, no byte read
            problem = found[key] if key in found else _linked_problem(written[key], by_key[key].source, inodes)
            if problem is not None:
                report.mismatches.append(Mismatch(key, "value", problem))
        report.tensors += len(taken)
        report.bytes += sum(by_key[k].size for k in taken)
    return check_roundtrip(prefix, report)


BATCH_BYTES = 1 << 20
"""Copied tensors are checked on the threads in batches of about this many bytes (a tensor as large alone):
one task per tensor costs more than checking a tiny one."""


def _batches(keys: list[str], sizes: list[int]) -> list[tuple[list[str], int]]:
    """``keys`` in runs of consecutive keys of about :data:`BATCH_BYTES` together (at most 4096 keys), each
    with its bytes: the tasks of the read-back, in order."""
    out: list[tuple[list[str], int]] = []
    run: list[str] = []
    total = 0
    for key, size in zip(keys, sizes):
        if run and (total + size > BATCH_BYTES or len(run) >= 4096):
            out.append((run, total))
            run, total = [], 0
        run.append(key)
        total += size
    if run:
        out.append((run, total))
    return out


def _copied_problems(written: Any, keys: list[str], by_key: dict[str, Any]) -> list[str | None]:
    """:func:`_copied_problem` of each of ``keys``: the fixed-width tensors lying end to end in a data file read
    with one ``pread`` (of at most :data:`BATCH_BYTES`) and their CRC32Cs taken over it; any other tensor, and
    one whose bytes do not match, checked alone."""
    entries = [written[k] for k in keys]
    raws = [e.raw for e in entries]
    reader = written.reader
    whole = [reader.stored_range(raw) is not None and raw.size <= BATCH_BYTES for raw in raws]
    problems: list[str | None] = [None] * len(keys)
    i = 0
    while i < len(keys):
        if not whole[i]:
            problems[i] = _copied_problem(entries[i], by_key[keys[i]].source)
            i += 1
            continue
        shard, start = raws[i].shard_id, raws[i].offset
        end, j = start + raws[i].size, i + 1
        while j < len(keys) and whole[j] and raws[j].shard_id == shard and raws[j].offset == end \
                and end + raws[j].size - start <= BATCH_BYTES:
            end += raws[j].size
            j += 1
        fd = os.open(reader.data_paths[shard], os.O_RDONLY)
        try:
            view = memoryview(os.pread(fd, end - start, start))
        finally:
            os.close(fd)
        for k in range(i, j):
            at = raws[k].offset - start
            if at + raws[k].size > len(view) or crc32c(view[at:at + raws[k].size]) != unmask(raws[k].crc32c):
                problems[k] = _copied_problem(entries[k], by_key[keys[k]].source)
        i = j
    return problems


def _copied_problem(entry: Any, source: Any) -> str | None:
    """Why bytes copied from ``source``'s data file do not match its checksum; raises the input's own
    error when the input is what is damaged."""
    try:
        entry.check()
        return None
    except CheckpointError as exc:
        source.check()  # the input's bytes: a ChecksumError here names the input
        return f"copied bytes do not match their checksum: {exc.message}"


class _Inodes:
    """``(st_dev, st_ino)`` of data files, each looked up once per read-back."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[int, int]] = {}

    def of(self, path: str) -> tuple[int, int]:
        """The file's device and inode number."""
        if path not in self._known:
            st = os.stat(path)
            self._known[path] = (st.st_dev, st.st_ino)
        return self._known[path]


def _linked_problem(entry: Any, source: Any, inodes: _Inodes) -> str | None:
    """Why a tensor in a linked data file is not the input's: another entry, or another file."""
    raw, mine = source.raw, entry.raw
    if (raw.dtype, tuple(raw.shape), raw.offset, raw.size, raw.crc32c) != \
            (mine.dtype, tuple(mine.shape), mine.offset, mine.size, mine.crc32c):
        return "the index entry does not point at the input's bytes"
    ours = inodes.of(entry.bundle.data_paths[mine.shard_id])
    if ours != inodes.of(source.bundle.data_paths[raw.shard_id]):
        return "the data file is not the input's own (not a hard link of it)"
    return None
