"""Writer for TensorFlow tensor bundles (``prefix.index`` + ``prefix.data-00000-of-00001``).

Byte-compatible with TensorFlow's ``BundleWriter``: tensors go to the data file in the order
they are given (densely packed, no alignment), the index lists them in bytewise key order
after the header, and every entry carries the masked CRC32C TensorFlow would compute.
Tensors stream from their source to the file in bounded chunks; ``shards`` spreads them over
several data files (``prefix.data-0000k-of-0000N``) as TensorFlow's sharded saving leaves them. Like every writer
(:mod:`formats.io.writing`), the output is guarded against replacing an input, written under
temporary names in the output directory, flushed to disk, verified (every tensor read back and
compared with its source) and only then renamed into place: data file first, index last.
"""
from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

from formats.core import dtypes
from formats.core.errors import (CorruptCheckpointError, InvalidOutputError, OutputExistsError, OutputIsInputError,
                                 VerificationError)
from formats.core.model import Checkpoint, TensorEntry
from formats.core.roundtrip import Digest, RoundTripReport, compare_checkpoints, digest_update
from formats.core.sources import CHUNK, Source, TensorValue, describe, elements, fixed_chunks
from formats.io.atomic import ensure_space, fsync_dir, make_parents, remove_created, temp_name, sweep_temporaries
from formats.io.crc import crc32c, mask, unmask
from formats.io.writing import (OutputGuard, Stored, WriteReport, check_roundtrip, guard_output, planned_bytes,
                                sources_of)
from formats.tf_bundle.checkpoint import BundleTensor
from formats.tf_bundle.encode import HEADER, encode_entry, encode_header, string_layout, variant_layout
from formats.tf_bundle.reader import OBJECT_GRAPH_KEY, data_file_name
from formats.io.sstable.writer import TableWriter

__all__ = ["write_checkpoint", "WriteReport", "OutputExistsError", "OutputIsInputError", "InvalidOutputError",
           "VerificationError"]


@dataclass
class _Record:
    key: bytes
    entry: bytes
    size: int
    dtype: str
    shape: tuple[int, ...]
    expected: Any = None  # the source itself, or a Digest of what was written
    shard: int = 0


def write_checkpoint(prefix: str | os.PathLike[str], tensors: Mapping[str, Source] | Iterable[tuple[str, Source]],
                     object_graph: Any = None, *, force: bool = False, verify: bool = True,
                     inputs: Iterable[str | Checkpoint] = (), chunk: int = CHUNK,
                     progress: Callable[[int, int], None] | None = None,
                     shards: Sequence[int] | None = None) -> WriteReport:
    """Write a TensorFlow checkpoint at ``prefix`` that ``tf.train.load_checkpoint`` reads.

    ``tensors`` maps key -> source (numpy array, :class:`~formats.core.sources.TensorValue`, or a
    :class:`~formats.core.model.TensorEntry` of an opened checkpoint, streamed from its file), or is an
    iterable of ``(key, source)`` pairs; data is written in that order. ``object_graph`` (a
    serialized ``TrackableObjectGraph`` or the message) is stored as ``_CHECKPOINTABLE_OBJECT_GRAPH``.
    An existing output is refused unless ``force``; an output that would replace a file of an
    input (any bundle tensor's checkpoint, or ``inputs``) is always refused. With ``verify`` the
    result is read back and compared with every source before it is renamed into place.
    ``progress(bytes_done, tensors_done)`` is called after each tensor. A URL prefix (``s3://...``)
    is written and verified locally, then uploaded (:mod:`formats.io.remote_write`).
    ``shards`` spreads the data over N files as TensorFlow's sharded saving does: the data file of
    each tensor in the order written (the object graph, written last, included), never decreasing;
    N is the largest plus one. Default: one data file.
    """
    prefix = os.fspath(prefix)
    from formats.io import storage

    count = _shard_count(prefix, shards)
    final_index, finals = prefix + ".index", [data_file_name(prefix, k, count) for k in range(count)]
    sources, inputs = sources_of(tensors), list(inputs)
    guard = guard_output(prefix, [final_index, *finals], inputs=inputs, sources=sources, force=force,
                         what="output checkpoint", marker=final_index)
    if storage.is_url(prefix):
        from formats.io.remote_write import write_then_upload

        return write_then_upload(prefix, lambda local: write_checkpoint(
            local, tensors, object_graph, verify=verify, inputs=inputs, chunk=chunk, progress=progress,
            shards=shards), force=force)
    pairs = _pairs(tensors, object_graph)
    directory = os.path.dirname(os.path.abspath(prefix))
    created = make_parents(prefix)
    sweep_temporaries(prefix)  # what killed writes of this prefix left
    temp = temp_name(prefix)
    temp_index, temps = temp + ".index", [data_file_name(temp, k, count) for k in range(count)]
    report = WriteReport(prefix, "tf-name", [final_index, *finals])
    leftovers = [*temps, temp_index]
    try:
        ensure_space(directory, planned_bytes(sources))
        records = _write_data(temps, _sharded(pairs, shards, prefix), guard, chunk, verify,
                              isinstance(tensors, Mapping), progress)
        for r in records:
            key = r.key.decode("utf-8", "surrogateescape")
            report.add(Stored(key, key, r.dtype, r.dtype, r.shape), r.size)
            if key == OBJECT_GRAPH_KEY:
                report.format = "tf-object"
        _write_index(temp_index, records, count)
        if verify:
            report.accept(_verify(temp, prefix, records, chunk))
        _publish(prefix, temps, finals, temp_index, final_index, leftovers)
        fsync_dir(directory)
    except BaseException:
        for path in leftovers:
            if os.path.lexists(path):
                os.unlink(path)
        remove_created(created)
        raise
    return report


def _publish(prefix: str, temps: list[str], finals: list[str], temp_index: str, final_index: str,
             leftovers: list[str]) -> None:
    """Put the written files in place so that a reader only ever sees the old checkpoint, the new one or
    none: the old index goes first (the old bundle is then gone as a whole), the data files follow, and
    the index, which makes the bundle, comes last. Data files of the prefix that no index names any more
    (the old bundle's, or those a killed write left) are removed."""
    if os.path.lexists(final_index):
        os.unlink(final_index)
        fsync_dir(os.path.dirname(os.path.abspath(final_index)))
    for orphan in _data_files(prefix):
        if orphan not in finals:
            os.unlink(orphan)
    for temp_data, final_data in zip(temps, finals):
        leftovers.append(final_data)  # ours once renamed: removed again if the index cannot follow
        os.replace(temp_data, final_data)
    os.replace(temp_index, final_index)


def _data_files(prefix: str) -> list[str]:
    """The ``prefix.data-NNNNN-of-NNNNN`` files that exist (of any shard count)."""
    import glob
    import re

    pattern = re.compile(re.escape(os.path.basename(prefix)) + r"\.data-\d{5}-of-\d{5}$")
    return [f for f in glob.glob(glob.escape(prefix) + ".data-*") if pattern.match(os.path.basename(f))]


def _pairs(tensors: Mapping[str, Source] | Iterable[tuple[str, Source]], object_graph: Any) -> Iterator[tuple[Any, Source]]:
    yield from tensors.items() if isinstance(tensors, Mapping) else tensors
    if object_graph is not None:
        graph = object_graph if isinstance(object_graph, bytes) else object_graph.SerializeToString()
        yield OBJECT_GRAPH_KEY, TensorValue(graph, "string")


def _shard_count(prefix: str, shards: Sequence[int] | None) -> int:
    """How many data files ``shards`` asks for (1 when None)."""
    if shards is None:
        return 1
    if any(not isinstance(s, int) or s < 0 for s in shards):
        raise InvalidOutputError(prefix, "shard numbers must be integers from 0")
    return max(shards, default=0) + 1


def _sharded(pairs: Iterator[tuple[Any, Source]], shards: Sequence[int] | None,
             prefix: str) -> Iterator[tuple[int, Any, Source]]:
    """``(shard, key, source)`` for every pair: the shards given (never decreasing, one per pair), else 0."""
    numbers = iter(shards) if shards is not None else itertools.repeat(0)
    previous = 0
    for key, source in pairs:
        shard = next(numbers, None)
        if shard is None or shard < previous:
            raise InvalidOutputError(prefix, "shards must give a never-decreasing data file number for every "
                                     "tensor, the object graph included" if shard is not None else
                                     "fewer shard numbers than tensors (the object graph included)")
        previous = shard
        yield shard, key, source
    if shards is not None and next(numbers, None) is not None:
        raise InvalidOutputError(prefix, "more shard numbers than tensors (the object graph included)")


def _key_bytes(key: Any, prefix: str) -> bytes:
    raw = key if isinstance(key, bytes) else str(key).encode("utf-8", "surrogateescape")
    if not raw:
        raise InvalidOutputError(prefix, "the empty key is reserved for the bundle header")
    return raw


def _write_data(paths: list[str], pairs: Iterator[tuple[int, Any, Source]], guard: OutputGuard, chunk: int,
                verify: bool, keep: bool, progress: Callable[[int, int], None] | None = None) -> list[_Record]:
    """Write every tensor to the data file of its shard, one file after the other."""
    records: list[_Record] = []
    seen: set[bytes] = set()
    groups = itertools.groupby(pairs, key=lambda item: item[0])
    group = next(groups, None)
    done = 0
    for shard, path in enumerate(paths):
        with open(path, "xb", buffering=1 << 20) as out, _BackgroundSync(out.fileno()) as syncer:
            offset = 0
            for _, key, source in group[1] if group is not None and group[0] == shard else ():
                raw_key = _key_bytes(key, guard.output)
                if raw_key in seen:
                    raise InvalidOutputError(guard.output,
                                             f"duplicate key {raw_key.decode('utf-8', 'surrogateescape')!r}")
                seen.add(raw_key)
                guard.check_source(source)
                record = _write_tensor(out, raw_key, source, offset, chunk, verify, keep, shard)
                records.append(record)
                offset += record.size
                done += record.size
                syncer.wrote(record.size)
                if progress is not None:
                    progress(done, len(records))
            if group is not None and group[0] == shard:
                group = next(groups, None)
            out.flush()
            syncer.close()
            os.fsync(out.fileno())
    return records


class _BackgroundSync:
    """Flushes a file to disk in a thread while it is being written, so the final fsync is short."""

    EVERY = 64 << 20

    def __init__(self, fd: int) -> None:
        import threading

        self.fd = fd
        self.pending = 0
        self.wake = threading.Event()
        self.done = False
        self.thread = threading.Thread(target=self._run, name="ckpt-fsync", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            self.wake.wait()
            self.wake.clear()
            if self.done:
                return
            try:
                os.fdatasync(self.fd)
            except OSError:  # the final fsync reports real trouble
                return

    def wrote(self, n: int) -> None:
        """Count bytes written; every ``EVERY`` bytes the thread starts flushing them."""
        self.pending += n
        if self.pending >= self.EVERY:
            self.pending = 0
            self.wake.set()

    def close(self) -> None:
        """Stop the thread (waiting for a flush in progress)."""
        if not self.done:
            self.done = True
            self.wake.set()
            self.thread.join()

    def __enter__(self) -> _BackgroundSync:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _write_tensor(out: BinaryIO, key: bytes, source: Source, offset: int, chunk: int,
                  verify: bool, keep: bool, shard: int = 0) -> _Record:
    dt, shape = describe(source)
    name = key.decode("utf-8", "surrogateescape")
    h = _sha256() if verify and not (keep or isinstance(source, TensorEntry)) else None
    if dt.fixed_width:
        size, crc = _copy_fixed(out, source, chunk, h)
        expected_size = math.prod(shape) * dt.itemsize
        if size != expected_size:
            raise CorruptCheckpointError(name, f"source gave {size} bytes for shape {list(shape)} of {dt.name}, "
                                         f"expected {expected_size}")
    else:
        values = elements(source)
        if len(values) != math.prod(shape):
            raise CorruptCheckpointError(name, f"source gave {len(values)} elements for shape {list(shape)}")
        pieces, crc = (string_layout if dt.enum == dtypes.STRING else variant_layout)(values)
        size = 0
        for piece in pieces:
            out.write(piece)
            size += len(piece)
        for value in values if h is not None else ():
            digest_update(h, value)
    entry = encode_entry(dt.enum, shape, offset, size, mask(crc), shard)
    expected = source if h is None else Digest(dt.name, shape, h.hexdigest())
    return _Record(key, entry, size, dt.name, tuple(shape), expected if verify else None, shard)


def _sha256() -> Any:
    import hashlib

    return hashlib.sha256()


def _copy_fixed(out: BinaryIO, source: Source, chunk: int, h: Any) -> tuple[int, int]:
    # bytes copied unchanged from a bundle: their CRC is the stored one, checked as they stream by
    same_bytes = (isinstance(source, BundleTensor) and not source.raw.slices
                  and not source.bundle.header.big_endian)
    size = crc = 0
    for piece in fixed_chunks(source, chunk):
        out.write(piece)
        if not same_bytes:
            crc = crc32c(piece, crc)
        size += len(piece)
        if h is not None:
            h.update(piece)
    return size, unmask(source.raw.crc32c) if same_bytes else crc


def _write_index(path: str, records: list[_Record], shards: int = 1) -> None:
    records.sort(key=lambda r: r.key)
    with open(path, "xb") as out:
        table = TableWriter(out)
        table.add(b"", HEADER if shards == 1 else encode_header(num_shards=shards))
        for record in records:
            table.add(record.key, record.entry)
        table.finish()
        out.flush()
        os.fsync(out.fileno())


def _verify(temp: str, prefix: str, records: list[_Record], chunk: int) -> RoundTripReport:
    from formats.tf_bundle.checkpoint import BundleCheckpoint

    expected = {r.key.decode("utf-8", "surrogateescape"): r.expected for r in records}
    with BundleCheckpoint(temp) as written:
        # sources were checked while copied, and output checksums computed from the bytes compared here
        report = compare_checkpoints(written, expected, path=prefix, against="sources", chunk=chunk, check_crc=False)
    return check_roundtrip(prefix, report)

