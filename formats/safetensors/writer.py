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

import json
import math
import os
import struct

from formats.core.dtypes import by_name
from formats.core.errors import VerificationError
from formats.core.model import FormatName
from formats.core.provenance import PROVENANCE_KEY, as_written
from formats.core.roundtrip import Mismatch, RoundTripReport
from formats.core.sources import CHUNK
from formats.io.placed import Placed, check_placed, write_placed
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
    metadata = {PROVENANCE_KEY: json.dumps(record)} if record else {}
    header: dict[str, Any] = {"__metadata__": {**metadata, "format": "np", **(options or {}).get("metadata", {})}}
    offset = 0
    for row in rows:
        size = math.prod(row.shape) * by_name(row.dtype).itemsize
        header[row.key] = {"dtype": DTYPES[row.dtype], "shape": list(row.shape),
                           "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    guard_output(output, inputs=list(inputs), sources=[r.value for r in rows], force=force)
    report = WriteReport(output, FormatName.SAFETENSORS.value, [output])
    start = 8 + len(raw)
    items = [Placed(row.key, row.value, start + header[row.key]["data_offsets"][0],
                    header[row.key]["data_offsets"][1] - header[row.key]["data_offsets"][0], row.dtype)
             for row in rows]
    shapes = {row.key: tuple(row.shape) for row in rows}

    def count(item: Placed) -> None:
        report.add(Stored(item.key, item.key, item.dtype, item.dtype, shapes[item.key]), item.size)
        if progress is not None:
            progress(report.bytes, report.tensors)

    with atomic_output(output, offset, replace=force) as temp:
        with open(temp, "xb") as out:
            out.write(struct.pack("<Q", len(raw)))
            out.write(raw)
            write_placed(out, items, CHUNK, count)
        if verify:
            _verify(temp, output, raw, items, report, jobs)
    return report


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
