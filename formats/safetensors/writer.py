"""The ``safetensors`` format's writer: the documented layout (8-byte header length, JSON header with
``__metadata__``, then the data), written without the ``safetensors`` package (which reads it back);
``options["provenance"]`` goes in ``__metadata__["ckpt.provenance"]``; ``options["metadata"]`` adds to (or
replaces) ``__metadata__``'s other fields (``{"format": "pt"}`` for transformers). Guarded, atomically, read back
and compared; :func:`write` is the one signature of :mod:`formats.core.format`.
"""
from __future__ import annotations

import json
import math
import struct

from formats.core.dtypes import by_name
from formats.core.errors import VerificationError
from formats.core.model import FormatName
from formats.core.provenance import PROVENANCE_KEY, as_written
from formats.core.roundtrip import compare_checkpoints
from formats.core.sources import CHUNK, fixed_chunks
from formats.io.writing import Stored, StoredBytes, WriteReport, guard_output
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
    """Write ``rows`` (fixed-width dtypes safetensors names) as a ``.safetensors`` file at ``output``;
    ``jobs`` and ``link`` do not apply."""
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
    with atomic_output(output, offset, replace=force) as temp:
        with open(temp, "xb") as out:
            out.write(struct.pack("<Q", len(raw)))
            out.write(raw)
            for row in rows:
                for piece in fixed_chunks(row.value, CHUNK):
                    out.write(piece)
                report.add(Stored(row.key, row.key, row.dtype, row.dtype, row.shape),
                           header[row.key]["data_offsets"][1] - header[row.key]["data_offsets"][0])
                if progress is not None:
                    progress(report.bytes, report.tensors)
        if verify:
            _verify(temp, output, rows, raw, report)
    return report


def _verify(temp: str, output: str, rows: Sequence[Row], raw: bytes, report: WriteReport) -> None:
    with open(temp, "rb") as f:
        head = f.read(8 + len(raw))
    if head[:8] != struct.pack("<Q", len(raw)) or head[8:] != raw:
        raise VerificationError(output, "verification failed: the safetensors header is not the planned one")
    header = json.loads(raw)
    written = {row.key: StoredBytes(row.key, row.shape, row.dtype, math.prod(row.shape) * by_name(row.dtype).itemsize,
                                    lambda: open(temp, "rb"), 8 + len(raw) + header[row.key]["data_offsets"][0])
               for row in rows}
    expected = {row.key: row.value for row in rows}
    report.accept(compare_checkpoints(written, expected, path=output, against="sources"))
