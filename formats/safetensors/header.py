"""The safetensors header, parsed by hand and checked against the file.

Layout (https://github.com/huggingface/safetensors): 8 bytes little-endian ``N``, then ``N`` bytes of
UTF-8 JSON ``{"__metadata__": {str: str}, "<name>": {"dtype": "F32", "shape": [..],
"data_offsets": [begin, end]}, ...}`` (offsets relative to the byte after the header), then the data,
little-endian, C order.
"""
from __future__ import annotations

import math
import os
import struct

from formats.core.bounded_json import load_json
from formats.core.errors import CorruptCheckpointError
from formats.core.records import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["DTYPES", "TF_DTYPES", "TensorSpec", "Header", "read_header", "size_problem", "overlaps", "MAX_HEADER_BYTES",
           "looks_like_safetensors", "loader_refusals"]

MAX_HEADER_BYTES = 100_000_000
"""The safetensors library's own limit on the header."""
DTYPES = {
    "bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "uint16": "U16", "float16": "F16",
    "bfloat16": "BF16", "int32": "I32", "uint32": "U32", "float32": "F32", "float64": "F64", "int64": "I64",
    "uint64": "U64", "float8_e5m2": "F8_E5M2", "float8_e4m3fn": "F8_E4M3",
}
"""TensorFlow dtype name -> safetensors dtype code (what ckpt writes and reads)."""
TF_DTYPES = {code: name for name, code in DTYPES.items()}
"""safetensors dtype code -> TensorFlow dtype name."""
_LENGTH = struct.Struct("<Q")


@record(frozen=True)
class TensorSpec:
    """One tensor of the header: safetensors dtype code, shape, and ``[begin, end)`` in the data."""

    key: str
    code: str
    shape: tuple[int, ...]
    begin: int
    end: int


@record
class Header:
    """A parsed header: its JSON length, where the data starts and how long it is, the tensors in
    header order, ``__metadata__``."""

    length: int
    data_start: int
    data_size: int
    tensors: list[TensorSpec] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)
    duplicates: dict[str, int] = field(default_factory=dict)
    """Keys the header names more than once, and how many times (the last one is read)."""


METADATA = "__metadata__"
"""The header's own key: its metadata, never a tensor."""


def key_problem(key: str) -> str | None:
    """Why ``key`` cannot name a tensor in a safetensors header (None when it can): ``__metadata__`` is the header's
    own, and a key that is not valid UTF-8 (an index's bytes kept as ``surrogateescape`` keeps them) cannot be JSON
    text - written as an escaped lone surrogate, safetensors' own reader refuses the whole header."""
    if key == METADATA:
        return f"{METADATA} names the safetensors header's metadata, not a tensor"
    if not key.isascii():
        try:
            key.encode("utf-8")
        except UnicodeEncodeError:
            from formats.core.names import quoted_text

            return f"key {quoted_text(key, 120)} is not valid UTF-8, which a safetensors header (JSON text) must be"
    return None


def looks_like_safetensors(head: bytes, size: int) -> bool:
    """Whether the first 9 bytes of a ``size``-byte file start a safetensors header."""
    if len(head) < 9:
        return False
    (length,) = _LENGTH.unpack_from(head)
    return 2 <= length <= min(size - 8, MAX_HEADER_BYTES) and head[8:9] == b"{"


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _spec(key: str, value: Any, path: str) -> TensorSpec:
    if not isinstance(value, dict):
        raise CorruptCheckpointError(path, f"header entry {key!r} is not an object")
    code, shape, offsets = value.get("dtype"), value.get("shape"), value.get("data_offsets")
    if not isinstance(code, str):
        raise CorruptCheckpointError(path, f"header entry {key!r} has no dtype")
    if not isinstance(shape, list) or len(shape) > 64 or not all(_int(d) and d < 1 << 63 for d in shape):
        raise CorruptCheckpointError(path, f"header entry {key!r}: shape {str(shape)[:80]} is not a list of sizes")
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(_int(o) for o in offsets) \
            or offsets[0] > offsets[1]:
        raise CorruptCheckpointError(path, f"header entry {key!r}: data_offsets {str(offsets)[:80]} are not "
                                           "[begin, end] with begin <= end")
    return TensorSpec(key, code, tuple(shape), offsets[0], offsets[1])


def _metadata(value: Any, path: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise CorruptCheckpointError(path, "__metadata__ is not an object of strings")
    return value


def read_header(path: str) -> Header:
    """Read and check the header of a local safetensors file (tensor sizes are checked per tensor)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        prefix = f.read(8)
        if len(prefix) != 8:
            raise CorruptCheckpointError(path, f"safetensors file is truncated ({size} bytes, no header length)")
        (length,) = _LENGTH.unpack(prefix)
        if length > MAX_HEADER_BYTES or length > size - 8:
            raise CorruptCheckpointError(path, f"safetensors header claims {length:,} bytes, but the file holds "
                                               f"{size - 8:,} after the length (at most {MAX_HEADER_BYTES:,} accepted)")
        raw = f.read(length)
    counted = _Counted()
    data = load_json(raw, path, "the safetensors header", max_bytes=MAX_HEADER_BYTES, max_depth=4,
                     object_pairs_hook=counted)
    if not isinstance(data, dict):
        raise CorruptCheckpointError(path, "the safetensors header is not a JSON object")
    header = Header(length, 8 + length, size - 8 - length, metadata=_metadata(data.get(METADATA), path),
                    duplicates=counted.duplicates)
    header.tensors = [_spec(key, value, path) for key, value in data.items() if key != METADATA]
    return header


class _Counted:
    """A :func:`json.loads` ``object_pairs_hook`` that builds dicts (the last of equal keys wins, as in the
    safetensors library) and keeps the repeated keys of the last object built: the outermost one."""

    def __init__(self) -> None:
        self.duplicates: dict[str, int] = {}

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        built = dict(pairs)
        counts: dict[str, int] = {}
        if len(built) != len(pairs):
            for key, _ in pairs:
                counts[key] = counts.get(key, 0) + 1
        self.duplicates = {key: n for key, n in counts.items() if n > 1}
        return built


def loader_refusals(header: Header, name: str) -> list[tuple[str, str]]:
    """``(where, why)`` for what the safetensors library refuses in a header ckpt reads: it requires the tensors,
    ordered by ``data_offsets``, to cover the data exactly - each beginning where the one before ends (the
    first at 0; an empty tensor too), the last ending where the file (``name``) ends."""
    found: list[tuple[str, str]] = []
    end = 0
    for spec in sorted(header.tensors, key=lambda s: (s.begin, s.end)):
        if spec.begin > end:
            found.append((spec.key, f"data bytes [{end:,}, {spec.begin:,}) before it belong to no tensor"))
        elif spec.begin < end and spec.begin == spec.end:
            found.append((spec.key, f"an empty tensor at data byte {spec.begin:,}, inside the bytes of the tensor "
                                    f"before it (which end at {end:,})"))
        end = max(end, spec.end)
    if header.data_size > end:
        found.append((name, f"{header.data_size - end:,} bytes after the last tensor"))
    refused = "; the safetensors library refuses the file"
    return [(where, why + refused) for where, why in found]


def size_problem(spec: TensorSpec, itemsize: int, data_size: int) -> str | None:
    """Why a tensor's offsets cannot hold its shape, or run past the data; None when they fit."""
    want = math.prod(spec.shape) * itemsize
    if spec.end - spec.begin != want:
        return (f"declares shape {list(spec.shape)} of {spec.code} ({want:,} bytes) but its data_offsets "
                f"span {spec.end - spec.begin:,} bytes")
    if spec.end > data_size:
        return (f"bytes [{spec.begin:,}, {spec.end:,}) run past the end of the data ({data_size:,} bytes): "
                "truncated?")
    return None


def overlaps(specs: list[TensorSpec]) -> list[tuple[str, str]]:
    """``(key, message)`` for every tensor whose bytes overlap an earlier one's."""
    found: list[tuple[str, str]] = []
    last: TensorSpec | None = None
    for spec in sorted((s for s in specs if s.end > s.begin), key=lambda s: (s.begin, s.end)):
        if last is not None and spec.begin < last.end:
            found.append((spec.key, f"bytes [{spec.begin:,}, {spec.end:,}) overlap {last.key!r}"))
        if last is None or spec.end > last.end:
            last = spec
    return found
