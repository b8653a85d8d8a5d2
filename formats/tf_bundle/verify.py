"""Thorough checks of a bundle: every entry's checksum, and every data file's byte ranges."""
from __future__ import annotations

import os

from formats.core.errors import CheckpointError
from formats.ops.compare.verify import Problem, Progress, VerifyReport
from formats.tf_bundle.checkpoint import BundleCheckpoint
from formats.tf_bundle.reader import BundleReader, RawEntry

__all__ = ["verify_bundle"]


def verify_bundle(ckpt: BundleCheckpoint, progress: Progress | None = None) -> VerifyReport:
    """Check every stored entry (slices included) and the layout of every data file."""
    reader = ckpt.reader
    report = VerifyReport(ckpt.path, ckpt.format, files=[os.path.basename(f) for f in ckpt.files])
    report.problems += _check_layout(reader)
    broken = {p.where for p in report.problems}
    done = 0
    for raw in reader.entries.values():
        if raw.name in broken:
            continue
        problem = _check_entry(reader, raw)
        if problem:
            report.problems.append(problem)
        done += 1
        report.bytes += raw.size
        if progress:
            progress(report.bytes, done)
    report.tensors = len(ckpt)
    return report


def _check_entry(reader: BundleReader, raw: RawEntry) -> Problem | None:
    try:
        if raw.slices:
            reader.slice_parts(raw)
        else:
            reader.check(raw)
    except CheckpointError as exc:
        return Problem(raw.name, exc.message)
    return None


def _check_layout(reader: BundleReader) -> list[Problem]:
    """Byte ranges that run past their file or overlap, and bytes after the last tensor."""
    problems: list[Problem] = []
    ranges: dict[int, list[tuple[int, int, str]]] = {}
    for raw in reader.entries.values():
        if not raw.slices and raw.size:
            ranges.setdefault(raw.shard_id, []).append((raw.offset, raw.offset + raw.size, raw.name))
    for shard, path in enumerate(reader.data_paths):
        size = reader.file_size(shard)
        name = os.path.basename(path)
        end = 0
        last = ""
        for start, stop, key in sorted(ranges.get(shard, [])):
            if stop > size:
                problems.append(Problem(key, f"bytes [{start}, {stop}) run past the end of {name} "
                                        f"({size} bytes): truncated?"))
            if start < end:
                problems.append(Problem(key, f"bytes [{start}, {stop}) overlap {last!r} in {name}"))
            if stop > end:
                end, last = stop, key
        if size > end:
            problems.append(Problem(name, f"{size - end} bytes after the last tensor"))
    return problems
