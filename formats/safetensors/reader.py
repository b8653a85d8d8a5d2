"""Lazy tensors over a safetensors file: the header is read on open, values when asked (with plain
positioned reads, not a memory map, so a file truncated later is an error, not a crash)."""
from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from formats.core.arrays import array_from_chunks
from formats.core.dtypes import by_name
from formats.core.errors import CorruptCheckpointError
from formats.core.model import (CHUNK_BYTES, CHUNK_ELEMENTS, Checkpoint, FormatName, CheckpointProblem, TensorEntry,
                                UnreadableEntry)
from formats.core.provenance import (OBJECT_GRAPH_METADATA, PROVENANCE_KEY, Provenance, TensorRecord, in_record_order,
                                     parse_provenance, restored_dtype)
from formats.safetensors.header import (TF_DTYPES, Header, TensorSpec, loader_refusals, overlaps, read_header,
                                        size_problem)

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from concurrent.futures import Executor
    from typing import Any
    import numpy as np

__all__ = ["SafetensorsTensor", "SafetensorsCheckpoint", "open_safetensors"]

_BLOCK = 8 << 20


class _Data:
    """The open file and where its data starts; positioned reads that do not share a file position."""

    def __init__(self, path: str, header: Header) -> None:
        self.path = path
        self.start = header.data_start
        self.file = open(path, "rb")  # noqa: SIM115 - closed by the checkpoint

    def read(self, offset: int, n: int) -> bytes:
        """``n`` bytes at ``offset`` into the data (fewer at the end of the file)."""
        position = self.start + offset
        if hasattr(os, "pread"):
            return os.pread(self.file.fileno(), n, position)
        self.file.seek(position)  # pragma: no cover - platforms without pread
        return self.file.read(n)


class SafetensorsTensor(TensorEntry):
    """One tensor of a safetensors file; nothing is read until :meth:`read`."""

    __slots__ = ("_data", "_spec", "_stored", "_view", "_size_problem")

    def __init__(self, spec: TensorSpec, data: _Data, data_size: int, record: TensorRecord | None) -> None:
        stored = TF_DTYPES[spec.code]
        dtype, _ = restored_dtype(stored, spec.shape, record)
        itemsize = by_name(stored).itemsize
        super().__init__(spec.key, spec.shape, dtype, spec.end - spec.begin,
                         record.full_name if record is not None else None,
                         record.role if record is not None else "variable")
        self._data = data
        self._spec = spec
        self._stored = stored
        self._view = None if dtype == stored else by_name(dtype).numpy()
        self._size_problem = size_problem(spec, itemsize, data_size)

    @property
    def files(self) -> tuple[str, ...]:
        """The safetensors file."""
        return (self._data.path,)

    def problem(self) -> str | None:
        """Why the offsets cannot hold the declared shape, or run past the file; else None."""
        return self._size_problem

    def byte_chunks(self, chunk: int = CHUNK_BYTES, check: bool = True) -> Iterator[memoryview]:
        """The stored bytes (already little-endian, C order), at most ``chunk`` at a time."""
        if self._size_problem is not None:
            raise CorruptCheckpointError(self._data.path, f"{self.key}: {self._size_problem}")
        position, end = self._spec.begin, self._spec.end
        while position < end:
            piece = self._data.read(position, min(max(1, chunk), end - position))
            if not piece:
                raise CorruptCheckpointError(self._data.path, f"{self.key}: the file ends at data byte {position:,}")
            position += len(piece)
            yield memoryview(piece)

    def _numpy(self) -> Any:
        return self._view if self._view is not None else by_name(self._stored).numpy()

    def read(self) -> np.ndarray:
        """The whole value."""
        if self._size_problem is not None:  # before allocating what the header claims
            raise CorruptCheckpointError(self._data.path, f"{self.key}: {self._size_problem}")
        return array_from_chunks(self.shape, self._numpy(), self.byte_chunks(_BLOCK))

    def iter_chunks(self, chunk_elements: int = CHUNK_ELEMENTS, pool: Executor | None = None) -> Iterator[np.ndarray]:
        """The elements in C order, read ``chunk_elements`` at a time."""
        import numpy as np

        dtype = self._numpy()
        for piece in self.byte_chunks(max(1, chunk_elements) * dtype.itemsize):
            yield np.frombuffer(piece, dtype=dtype)

    def check(self) -> None:
        """Read every byte of the tensor, keeping nothing."""
        for _ in self.byte_chunks(_BLOCK):
            pass


class SafetensorsCheckpoint(Checkpoint):
    """An opened safetensors file."""

    def __init__(self, path: str, entries: dict[str, TensorEntry], data: _Data, metadata: dict[str, Any],
                 problems: list[tuple[str, str]], refusals: Iterable[tuple[str, str]] = (),
                 graph: str | None = None) -> None:
        """``metadata``: header size, ``__metadata__`` (the provenance record summarised);
        ``problems``: overlapping tensors, keys named twice, a damaged provenance record, dtypes the record
        disagrees with; ``refusals``: what the safetensors library refuses (gaps, trailing bytes, misplaced
        empty tensors); ``graph``: the base64 text of the object graph the file carries, if any."""
        super().__init__(path, FormatName.SAFETENSORS, entries, metadata=metadata,
                         problems=[CheckpointProblem(where, message) for where, message in problems],
                         refusals=[CheckpointProblem(where, message) for where, message in refusals])
        self._data = data
        self._graph = graph

    def carried_object_graph(self, keep: bool = True) -> bytes | None:
        """``__metadata__["ckpt.object_graph"]`` decoded from base64 (see :meth:`Checkpoint.carried_object_graph`)."""
        if self._graph is None:
            return None
        import base64
        import binascii

        try:
            data = base64.b64decode(self._graph, validate=True)
            return data if keep else None
        except (binascii.Error, ValueError) as exc:
            raise CorruptCheckpointError(self.path, f"{OBJECT_GRAPH_METADATA} is not base64 ({exc})") from None

    def close(self) -> None:
        """Close the file."""
        self._data.file.close()


def _provenance(header: Header, path: str) -> Provenance:
    raw = header.metadata.get(PROVENANCE_KEY)
    return Provenance() if raw is None else parse_provenance(raw, path)


def open_safetensors(path: str) -> SafetensorsCheckpoint:
    """Open a safetensors file: parse its header; values are read when asked."""
    header = read_header(path)
    provenance = _provenance(header, path)
    problems = [(PROVENANCE_KEY, p) for p in provenance.problems or []]
    records = provenance.tensors or {}
    data = _Data(path, header)
    entries: dict[str, TensorEntry] = {}
    for spec in header.tensors:
        if spec.code not in TF_DTYPES:
            entries[spec.key] = UnreadableEntry(spec.key, spec.shape, spec.code, spec.end - spec.begin,
                                                f"safetensors dtype {spec.code} has no TensorFlow counterpart", path)
            continue
        record = records.get(spec.key)
        _, problem = restored_dtype(TF_DTYPES[spec.code], spec.shape, record)
        if problem:
            problems.append((spec.key, problem))
        entries[spec.key] = SafetensorsTensor(spec, data, header.data_size, record)
    problems += overlaps(header.tensors)
    problems += [(key, f"is named {n} times in the header; the last is read (as the safetensors library does)")
                 for key, n in header.duplicates.items()]
    graph = header.metadata.get(OBJECT_GRAPH_METADATA)
    meta: dict[str, Any] = {"header_bytes": header.length, "metadata": {
        k: v for k, v in header.metadata.items() if k != PROVENANCE_KEY and k != OBJECT_GRAPH_METADATA}}
    if provenance.tensors is not None:
        meta["provenance"] = provenance.to_json()
    if isinstance(graph, str):
        meta["object_graph"] = f"{len(graph):,} base64 characters"
    return SafetensorsCheckpoint(path, in_record_order(entries, records), data, meta, problems,
                                 loader_refusals(header, os.path.basename(path)), graph if isinstance(graph, str) else None)
