"""The ``safetensors`` format's writer: the documented layout (8-byte header length, JSON header with
``__metadata__``, then the data), written without the ``safetensors`` package (which reads it back);
``options["provenance"]`` goes in ``__metadata__["ckpt.provenance"]``; ``options["metadata"]`` adds to (or
replaces) ``__metadata__``'s other fields (``{"format": "pt"}`` for transformers). Guarded, written atomically
(tensors stored unchanged in an input copied by the kernel, others streamed: :mod:`formats.io.placed`), and
read back: the header byte for byte, every tensor's bytes against the CRC32C of what was written (taken on
the way out, or the input's own for copied bytes), without reading the sources again. :func:`write` is the
one signature of :mod:`formats.core.format`.
"""
from __future__ import annotations

import math
import os
import struct

from formats.core.dtypes import by_name
from formats.core.errors import VerificationError
from formats.core.json_writer import dumps
from formats.core.model import FormatName
from formats.core.provenance import PROVENANCE_KEY, as_written
from formats.core.roundtrip import Mismatch, RoundTripReport
from formats.core.sources import CHUNK
from formats.io.placed import Placed, check_placed, stored_unchanged, write_placed
from formats.io.writing import Stored, WriteReport, guard_output
from formats.safetensors.header import DTYPES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

    from formats.core.format import Row

__all__ = ["write"]


def write(output: str, rows: Sequence[Row], *, layout: str = FormatName.SAFETENSORS.value, force: bool = False,
          verify: bool = True, inputs: Sequence[Any] = (), progress: Callable[[int, int], None] | None = None,
          jobs: int | None = None, link: bool = False, options: Mapping[str, Any] | None = None) -> WriteReport:
    """Write ``rows`` (fixed-width dtypes safetensors names) as a ``.safetensors`` file at ``output``, read back
    on ``jobs`` threads (None: every core); ``link`` does not apply."""
    from formats.io.atomic import atomic_output, refuse_url

    refuse_url(output)
    record = as_written((options or {}).get("provenance"), rows)  # each row's dtype and shape as written
    metadata = {PROVENANCE_KEY: dumps(record)} if record else {}
    header: dict[str, Any] = {"__metadata__": {**metadata, "format": "np", **(options or {}).get("metadata", {})}}
    sizes = [math.prod(row.shape) * by_name(row.dtype).itemsize for row in rows]
    stored = [stored_unchanged(row.value, row.dtype, size) for row, size in zip(rows, sizes)]
    for row in rows:
        header[row.key] = {"dtype": DTYPES[row.dtype], "shape": list(row.shape), "data_offsets": [0, 0]}
    offset = 0
    for i in _data_order(stored):
        header[rows[i].key]["data_offsets"] = [offset, offset + sizes[i]]
        offset += sizes[i]
    raw = dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * _padding(8 + len(raw), stored)
    guard_output(output, inputs=list(inputs), sources=[r.value for r in rows], force=force)
    report = WriteReport(output, FormatName.SAFETENSORS.value, [output])
    start = 8 + len(raw)
    items = sorted((Placed(row.key, row.value, start + header[row.key]["data_offsets"][0], size, row.dtype)
                    for row, size in zip(rows, sizes)), key=lambda item: item.offset)
    shapes = {row.key: tuple(row.shape) for row in rows}

    def count(item: Placed) -> None:
        report.add(Stored(item.key, item.key, item.dtype, item.dtype, shapes[item.key]), item.size)
        if progress is not None:
            progress(report.bytes, report.tensors)

    with atomic_output(output, offset, replace=force) as temp:
        with open(temp, "xb") as out:
            out.write(struct.pack("<Q", len(raw)))
            out.write(raw)
            # read back while the last pieces are flushed (the file still open, so the flush has its descriptor)
            write_placed(out, items, CHUNK, count,
                         then=(lambda: _verify(temp, output, raw, items, report, jobs)) if verify else None)
    position = {row.key: i for i, row in enumerate(rows)}
    report.contents.sort(key=lambda stored: position[stored.key])  # in the order given, as the header lists them
    return report


def _data_order(stored: list[tuple[int, int, int, int] | None]) -> list[int]:
    """The order of the tensors' bytes in the file: those stored unchanged in an input file first, in the order
    they lie there (so that a whole input data file becomes one kernel copy), then the others as given. The
    header lists every tensor in the order given; a reader goes by the offsets."""
    copied = sorted((i for i, where in enumerate(stored) if where is not None),
                    key=lambda i: (stored[i][0], stored[i][1]))  # type: ignore[index]
    return copied + [i for i, where in enumerate(stored) if where is None]


def _padding(start: int, stored: list[tuple[int, int, int, int] | None]) -> int:
    """Spaces after the header (which safetensors allows) so that the data starts 8-byte aligned and, where the
    first bytes come from an input file at an 8-byte-aligned offset, at the same offset modulo the page size
    as there: the kernel copies whole pages (an unaligned ``copy_file_range`` takes about twice as long)."""
    first = min((where for where in stored if where is not None), default=None, key=lambda w: (w[0], w[1]))
    if first is None or first[1] % 8:
        return -start % 8
    return (first[1] - start) % 4096


def _verify(temp: str, output: str, raw: bytes, items: Sequence[Placed], report: WriteReport,
            jobs: int | None) -> None:
    """The header read back byte for byte; every tensor's bytes read back and checked against the CRC32C of the
    bytes written (taken on the way out, or stored with the input's bytes the kernel copied)."""
    with open(temp, "rb") as f:
        head = f.read(8 + len(raw))
        size = os.fstat(f.fileno()).st_size
    if head[:8] != struct.pack("<Q", len(raw)) or head[8:] != raw:
        raise VerificationError(output, "verification failed: the safetensors header is not the planned one")
    planned = 8 + len(raw) + sum(item.size for item in items)
    if size != planned:
        raise VerificationError(output, f"verification failed: the file has {size} bytes, {planned} planned")
    found = RoundTripReport(output, "sources", tensors=len(items), bytes=sum(item.size for item in items))
    found.mismatches += [Mismatch(key, "value", problem) for key, problem in check_placed(temp, items, jobs)]
    report.accept(found)
