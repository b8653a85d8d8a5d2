"""``--to npz`` and ``--to safetensors``: leave the TensorFlow world with the original keys.

Every fixed-width tensor is written under its key (rename rules apply to keys), streamed in
bounded chunks, and a provenance record goes with the file: for each tensor its output key,
source key, object path, full name (the TF1-style/Keras name), role, dtype and shape.

- npz: an uncompressed zip of ``<key>.npy`` members, plus ``__ckpt_provenance__.npy`` (a 0-d
  unicode array holding the JSON record; ``numpy.load`` reads it without pickle). Types numpy
  cannot describe portably (bfloat16, float8, int4, ...) are stored as unsigned integers of the
  same width; the record keeps the real dtype.
- safetensors: the documented layout (8-byte header length, JSON header with ``__metadata__``,
  then the data); ``__metadata__["ckpt.provenance"]`` holds the record. Written without the
  ``safetensors`` package (which reads it back).
"""
from __future__ import annotations

import functools
import json
import math
import struct
import zipfile
from typing import Any

from formats.ops.convert.plan import WARNING, ConversionPlan, ConvertOptions
from formats.ops.convert.sources import is_object_based
from formats.core.dtypes import by_name
from formats.core.errors import CheckpointError
from formats.core.model import Checkpoint
from formats.concepts.object_graph import ATTRIBUTES, OBJECT_GRAPH_KEY
from formats.core.sources import CHUNK, describe, fixed_chunks

__all__ = ["plan_npz", "plan_safetensors", "PROVENANCE_MEMBER", "PROVENANCE_KEY", "SAFETENSORS_DTYPES",
           "ExportReport"]

PROVENANCE_MEMBER = "__ckpt_provenance__"
PROVENANCE_KEY = "ckpt.provenance"
SAFETENSORS_DTYPES = {
    "bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "uint16": "U16", "float16": "F16",
    "bfloat16": "BF16", "int32": "I32", "uint32": "U32", "float32": "F32", "float64": "F64", "int64": "I64",
    "uint64": "U64", "float8_e5m2": "F8_E5M2", "float8_e4m3fn": "F8_E4M3",
}
_NPZ_NATIVE = {"bool", "uint8", "int8", "int16", "uint16", "float16", "int32", "uint32", "float32", "float64",
               "int64", "uint64", "complex64", "complex128"}
_UINT = {1: "<u1", 2: "<u2", 4: "<u4", 8: "<u8"}


class ExportReport:
    """What an export wrote: path, format, tensor count, data bytes, and whether it was read back."""

    def __init__(self, path: str, layout: str, tensors: int, nbytes: int, verified: bool | None) -> None:
        self.path, self.layout, self.tensors, self.bytes, self.verified = path, layout, tensors, nbytes, verified

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {"path": self.path, "layout": self.layout, "tensors": self.tensors, "bytes": self.bytes,
                "verified": self.verified}


def _object_path(source: Checkpoint, key: str) -> str:
    marker = f"/{ATTRIBUTES}/"
    if marker in key and is_object_based(source):
        return key.split(marker, 1)[0]
    if "/vars/" in key and source.format in ("keras3-h5", "keras-zip"):
        return key.rsplit("/vars/", 1)[0]
    return ""


def _plan(source: Checkpoint, options: ConvertOptions, target: str, allowed: set[str]) -> ConversionPlan:
    plan = ConversionPlan(source.path, target, options.template)
    if options.template:
        plan.add("unsupported", options.template, f"--to {target} takes no --template")
    records: list[dict[str, Any]] = []
    for key in source:
        entry = source[key]
        if key == OBJECT_GRAPH_KEY:
            plan.add("unused", key, "the object graph is not a tensor; left out", WARNING)
            continue
        if entry.dtype not in allowed:
            plan.add("unsupported", key, f"{entry.dtype} tensors cannot be stored in {target}; left out", WARNING)
            continue
        out = options.rules.apply(key) if options.rules else key
        note = f"renamed from {key}" if out != key else ""
        if target == "npz" and entry.dtype not in _NPZ_NATIVE:
            note = (note + "; " if note else "") + f"stored as {_UINT[by_name(entry.dtype).itemsize][1:]} bits"
        plan.add_row(key, out, entry, entry.shape, entry.dtype, note)
        records.append({"key": out, "source_key": key, "object_path": _object_path(source, key),
                        "full_name": str(entry.name), "role": entry.role, "dtype": entry.dtype,
                        "shape": list(entry.shape)})
    if target == "npz":
        for row in plan.rows:
            if row.key == PROVENANCE_MEMBER or row.key.endswith("/"):
                plan.add("unsupported", row.key, "this key cannot be an npz member name")
    plan.report_unused_rules(options.rules)
    plan.check_collisions()
    provenance = {"source": source.path, "format": source.format, "tensors": records}
    writer = _write_npz if target == "npz" else _write_safetensors
    plan.writer = functools.partial(writer, provenance=provenance)
    return plan


def plan_npz(source: Checkpoint, options: ConvertOptions) -> ConversionPlan:
    """Plan an ``.npz`` export of every fixed-width tensor of ``source``."""
    allowed = {d for d in _NPZ_NATIVE} | {n for n in ("bfloat16", "float8_e5m2", "float8_e4m3fn",
                                                      "float8_e4m3fnuz", "float8_e4m3b11fnuz", "float8_e5m2fnuz",
                                                      "qint8", "quint8", "qint16", "quint16", "qint32")}
    return _plan(source, options, "npz", allowed)


def plan_safetensors(source: Checkpoint, options: ConvertOptions) -> ConversionPlan:
    """Plan a ``.safetensors`` export of every tensor whose dtype safetensors has."""
    return _plan(source, options, "safetensors", set(SAFETENSORS_DTYPES))


def _npz_dtype(dtype: str) -> str:
    dt = by_name(dtype)
    return dt.numpy().str if dtype in _NPZ_NATIVE else _UINT[dt.itemsize]


def _atomic(output: str, force: bool, inputs: list[Any], sources: list[Any], write: Any) -> None:
    from formats.io.atomic import atomic_output
    from formats.keras_h5.writer import check_output

    check_output(output, sources, inputs, force)
    with atomic_output(output, sum(_source_bytes(s) for s in sources)) as temp:
        write(temp)


def _write_npz(plan: ConversionPlan, output: str, force: bool, verify: bool, inputs: list[Any], *,
               provenance: dict[str, Any]) -> ExportReport:
    import numpy as np

    def write(temp: str) -> None:
        with zipfile.ZipFile(temp, "x", zipfile.ZIP_STORED, allowZip64=True) as zf:
            for row in plan.rows:
                header = {"descr": _npz_dtype(row.dtype), "fortran_order": False, "shape": tuple(row.shape)}
                with zf.open(row.key + ".npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array_header_1_0(member, header)
                    for piece in fixed_chunks(row.value, CHUNK):
                        member.write(piece)
            with zf.open(PROVENANCE_MEMBER + ".npy", "w") as member:
                np.lib.format.write_array(member, np.array(json.dumps(provenance)), allow_pickle=False)
        if verify:
            _verify_npz(temp, output, plan)

    _atomic(output, force, inputs, [r.value for r in plan.rows], write)
    return ExportReport(output, "npz", len(plan.rows), _bytes(plan), True if verify else None)


def _bytes(plan: ConversionPlan) -> int:
    return sum(math.prod(r.shape) * by_name(r.dtype).itemsize for r in plan.rows)


def _verify_npz(temp: str, output: str, plan: ConversionPlan) -> None:
    import numpy as np

    from formats.core.roundtrip import first_difference

    with np.load(temp, allow_pickle=False) as data:
        if sorted(data.files) != sorted([r.key for r in plan.rows] + [PROVENANCE_MEMBER]):
            raise CheckpointError(output, "verification failed: the npz members are not the planned keys")
        for row in plan.rows:
            arr = data[row.key]
            if arr.shape != tuple(row.shape) or arr.dtype.str != _npz_dtype(row.dtype):
                raise CheckpointError(output, f"verification failed: {row.key!r} reads as {arr.dtype}{list(arr.shape)}")
            got = iter([memoryview(np.ascontiguousarray(arr).reshape(-1).view(np.uint8))])
            if first_difference(got, fixed_chunks(row.value, CHUNK)) is not None:
                raise CheckpointError(output, f"verification failed: {row.key!r}: values differ")


def _write_safetensors(plan: ConversionPlan, output: str, force: bool, verify: bool, inputs: list[Any], *,
                       provenance: dict[str, Any]) -> ExportReport:
    header: dict[str, Any] = {"__metadata__": {PROVENANCE_KEY: json.dumps(provenance), "format": "np"}}
    offset = 0
    for row in plan.rows:
        size = math.prod(row.shape) * by_name(row.dtype).itemsize
        header[row.key] = {"dtype": SAFETENSORS_DTYPES[row.dtype], "shape": list(row.shape),
                           "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)

    def write(temp: str) -> None:
        with open(temp, "xb") as out:
            out.write(struct.pack("<Q", len(raw)))
            out.write(raw)
            for row in plan.rows:
                for piece in fixed_chunks(row.value, CHUNK):
                    out.write(piece)
        if verify:
            _verify_safetensors(temp, output, plan, len(raw))

    _atomic(output, force, inputs, [r.value for r in plan.rows], write)
    return ExportReport(output, "safetensors", len(plan.rows), offset, True if verify else None)


def _verify_safetensors(temp: str, output: str, plan: ConversionPlan, header_size: int) -> None:
    from formats.core.roundtrip import first_difference

    with open(temp, "rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(size))
        if size != header_size or sorted(k for k in header if k != "__metadata__") != sorted(r.key for r in plan.rows):
            raise CheckpointError(output, "verification failed: the safetensors header is not the planned one")
        for row in plan.rows:
            begin, end = header[row.key]["data_offsets"]
            f.seek(8 + size + begin)

            def pieces(remaining: int = end - begin) -> Any:
                while remaining > 0:
                    piece = f.read(min(CHUNK, remaining))
                    if not piece:
                        return
                    remaining -= len(piece)
                    yield memoryview(piece)

            if first_difference(pieces(), fixed_chunks(row.value, CHUNK)) is not None:
                raise CheckpointError(output, f"verification failed: {row.key!r}: values differ")


def _source_bytes(source: Any) -> int:
    dt, shape = describe(source)
    return math.prod(shape) * dt.itemsize
