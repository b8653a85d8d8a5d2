"""``--to npz`` and ``--to safetensors``: leave the TensorFlow world with the original keys.

Every fixed-width tensor is written under its key (rename rules apply to keys), streamed in
bounded chunks, and a provenance record goes with the file: for each tensor its output key,
source key, object path, full name (the TF1-style/Keras name), role, dtype and shape.

- npz: written by :func:`formats.io.npy.write_npz`, with the dtype policy ``extract`` shares: an
  uncompressed zip of ``<key>.npy`` members plus ``__ckpt_provenance__.npy`` (a 0-d unicode array
  holding the JSON record; ``numpy.load`` reads it without pickle). Types numpy cannot describe
  (bfloat16, float8, int4, ...) are stored as their bits, unsigned integers of the same width; the
  record keeps the real dtype. Strings and variants are stored as fixed-width bytes; one with an
  element ending in NUL (which numpy would drop) is left out with a warning.
- safetensors: the documented layout (8-byte header length, JSON header with ``__metadata__``,
  then the data); ``__metadata__["ckpt.provenance"]`` holds the record. Written without the
  ``safetensors`` package (which reads it back).

Both are written the one way (:mod:`formats.io.writing`): guarded, atomically, read back, compared
with their sources, and reported as a :class:`~formats.io.writing.WriteReport`.
"""
from __future__ import annotations

import functools
import json
import math
import struct
from typing import Any

from formats.ops.convert.sources import is_object_based
from formats.concepts.object_graph import ATTRIBUTES, OBJECT_GRAPH_KEY
from formats.core.dtypes import by_name
from formats.core.errors import InvalidOutputError, VerificationError
from formats.core.model import Checkpoint, TensorEntry, array_problem
from formats.core.roundtrip import compare_checkpoints
from formats.core.sources import CHUNK, elements, fixed_chunks
from formats.core.provenance import PROVENANCE_KEY, PROVENANCE_MEMBER
from formats.io.npy import fixed_width_problem, member_name, stored_dtype, stores_bits, write_npz
from formats.io.writing import Stored, StoredBytes, WriteReport, guard_output
from formats.ops.convert.plan import WARNING, ConversionPlan, ConvertOptions
from formats.safetensors.header import DTYPES as SAFETENSORS_DTYPES

__all__ = ["plan_npz", "plan_safetensors", "PROVENANCE_MEMBER", "PROVENANCE_KEY", "SAFETENSORS_DTYPES",
           "provenance_entry"]



def _object_path(source: Checkpoint, key: str) -> str:
    marker = f"/{ATTRIBUTES}/"
    if marker in key and is_object_based(source):
        return key.split(marker, 1)[0]
    if "/vars/" in key and source.format in ("keras3-h5", "keras-zip", "keras3-dir", "keras3-sharded"):
        return key.rsplit("/vars/", 1)[0]
    return ""


def provenance_entry(source: Checkpoint, key: str, entry: TensorEntry, out: str | None = None) -> dict[str, Any]:
    """One tensor's provenance record: output key, source key, object path, full name, role, dtype, shape."""
    return {"key": key if out is None else out, "source_key": key, "object_path": _object_path(source, key),
            "full_name": str(entry.name), "role": str(entry.role), "dtype": entry.dtype, "shape": list(entry.shape)}


def _storable(target: str, entry: TensorEntry) -> str | None:
    """Why ``entry`` cannot be stored in ``target`` (None when it can)."""
    if entry.unreadable:
        return entry.unreadable
    try:
        dt = by_name(entry.dtype)
    except ValueError:
        dt = None
    unfit = array_problem(tuple(entry.shape), dt.itemsize if dt is not None and dt.fixed_width else 8)
    if unfit is not None:
        return f"tensor has {unfit}"
    if target == "safetensors":
        return None if entry.dtype in SAFETENSORS_DTYPES else f"{entry.dtype} tensors cannot be stored in safetensors"
    if dt is None or dt.numpy_name is None:
        return f"{entry.dtype} tensors cannot be stored in npz"
    return None if dt.fixed_width else fixed_width_problem(entry.dtype, elements(entry))


def _plan(source: Checkpoint, options: ConvertOptions, target: str) -> ConversionPlan:
    plan = ConversionPlan(source.path, target, options.template)
    if options.template:
        plan.add("unsupported", options.template, f"--to {target} takes no --template")
    records: list[dict[str, Any]] = []
    for key in source:
        entry = source[key]
        if key == OBJECT_GRAPH_KEY:
            plan.add("unused", key, "the object graph is not a tensor; left out", WARNING)
            continue
        why = _storable(target, entry)
        if why is not None:
            plan.add("unsupported", key, f"{why}; left out", WARNING)
            continue
        out = options.rules.apply(key) if options.rules else key
        note = f"renamed from {key}" if out != key else ""
        if target == "npz" and by_name(entry.dtype).fixed_width and stores_bits(entry.dtype):
            note = (note + "; " if note else "") + f"stored as {stored_dtype(entry.dtype).name} bits"
        plan.add_row(key, out, entry, entry.shape, entry.dtype, note)
        records.append(provenance_entry(source, key, entry, out))
    if target == "npz":
        for row in plan.rows:
            try:
                member_name(row.key)
            except InvalidOutputError as exc:
                plan.add("unsupported", row.key, exc.message)
    plan.report_unused_rules(options.rules)
    plan.check_collisions()
    provenance = {"source": source.path, "format": source.format, "tensors": records}
    writer = _write_npz if target == "npz" else _write_safetensors
    plan.writer = functools.partial(writer, provenance=provenance)
    return plan


def plan_npz(source: Checkpoint, options: ConvertOptions) -> ConversionPlan:
    """Plan an ``.npz`` export of every tensor of ``source`` numpy can hold (see :mod:`formats.io.npy`)."""
    return _plan(source, options, "npz")


def plan_safetensors(source: Checkpoint, options: ConvertOptions) -> ConversionPlan:
    """Plan a ``.safetensors`` export of every tensor whose dtype safetensors has."""
    return _plan(source, options, "safetensors")


def _write_npz(plan: ConversionPlan, output: str, force: bool, verify: bool, inputs: list[Any], *,
               provenance: dict[str, Any]) -> WriteReport:
    return write_npz(output, [(r.key, r.value) for r in plan.rows], provenance=provenance, inputs=inputs,
                     force=force, verify=verify, progress=plan.progress)


def _write_safetensors(plan: ConversionPlan, output: str, force: bool, verify: bool, inputs: list[Any], *,
                       provenance: dict[str, Any]) -> WriteReport:
    from formats.io.atomic import atomic_output, refuse_url

    refuse_url(output)
    header: dict[str, Any] = {"__metadata__": {PROVENANCE_KEY: json.dumps(provenance), "format": "np"}}
    offset = 0
    for row in plan.rows:
        size = math.prod(row.shape) * by_name(row.dtype).itemsize
        header[row.key] = {"dtype": SAFETENSORS_DTYPES[row.dtype], "shape": list(row.shape),
                           "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    guard_output(output, inputs=inputs, sources=[r.value for r in plan.rows], force=force)
    report = WriteReport(output, "safetensors", [output])
    with atomic_output(output, offset) as temp:
        with open(temp, "xb") as out:
            out.write(struct.pack("<Q", len(raw)))
            out.write(raw)
            for row in plan.rows:
                for piece in fixed_chunks(row.value, CHUNK):
                    out.write(piece)
                report.add(Stored(row.key, row.key, row.dtype, row.dtype, row.shape),
                           header[row.key]["data_offsets"][1] - header[row.key]["data_offsets"][0])
                if plan.progress is not None:
                    plan.progress(report.bytes, report.tensors)
        if verify:
            _verify_safetensors(temp, output, plan, raw, report)
    return report


def _verify_safetensors(temp: str, output: str, plan: ConversionPlan, raw: bytes, report: WriteReport) -> None:
    with open(temp, "rb") as f:
        head = f.read(8 + len(raw))
    if head[:8] != struct.pack("<Q", len(raw)) or head[8:] != raw:
        raise VerificationError(output, "verification failed: the safetensors header is not the planned one")
    header = json.loads(raw)
    written = {row.key: StoredBytes(row.key, row.shape, row.dtype, math.prod(row.shape) * by_name(row.dtype).itemsize,
                                    lambda: open(temp, "rb"), 8 + len(raw) + header[row.key]["data_offsets"][0])
               for row in plan.rows}
    expected = {row.key: row.value for row in plan.rows}
    report.accept(compare_checkpoints(written, expected, path=output, against="sources"))
