"""The zarr arrays inside Orbax items and T5X checkpoints: their metadata (``.zarray``, zarr v3 ``zarr.json``) and
whether every chunk the metadata declares is stored.

A missing chunk is no error to zarr (it reads as the fill value), but Orbax and T5X write every chunk, so a
missing one is data lost: :func:`chunk_problem` says so without reading any value. A declared shape or chunk
too large to hold is refused before tensorstore allocates it.
"""
from __future__ import annotations

import math

from formats.core.bounded_json import load_json
from formats.core.dtypes import by_name
from formats.core.errors import CorruptCheckpointError
from formats.core.shapes import array_problem
from formats.core.value_tuples import ValueTuple
from formats.orbax.layout import zarr_dtype

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ZarrArray", "parse_zarr_metadata", "chunk_problem", "METADATA_NAMES", "MAX_CHUNK_BYTES"]

METADATA_NAMES = (".zarray", "zarr.json")
MAX_CHUNK_BYTES = 1 << 33
"""Largest chunk read (8 GiB decoded): a bigger one is refused rather than allocated."""
_MAX_METADATA_BYTES = 1 << 20


class ZarrArray(ValueTuple):
    """One array's declared metadata: ``driver`` (``zarr`` or ``zarr3``), ``shape``, ckpt ``dtype``, ``chunks``,
    the chunk key ``separator`` and ``prefix`` (zarr v3's default ``c/``), the dtype as the file names it
    (``stored_dtype``), and whether it declares a fill value (``fills``: a missing chunk then reads as it)."""

    driver: str
    shape: tuple[int, ...]
    dtype: str | None
    chunks: tuple[int, ...]
    separator: str
    stored_dtype: str
    prefix: str = ""
    fills: bool = False


def _dims(value: Any, what: str, where: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in value):
        raise CorruptCheckpointError(where, f"{what} is not a list of non-negative integers: {str(value)[:80]}")
    return tuple(value)


def parse_zarr_metadata(raw: bytes, name: str, where: str) -> ZarrArray:
    """The metadata file ``name`` (``.zarray`` or ``zarr.json``) of the array at ``where``."""
    meta = load_json(raw, where, name, max_bytes=_MAX_METADATA_BYTES)
    if not isinstance(meta, dict):
        raise CorruptCheckpointError(where, f"{name} is not a JSON object")
    if name == ".zarray":
        default = False
        shape = _dims(meta.get("shape"), "its shape", where)
        chunks = _dims(meta.get("chunks"), "its chunks", where)
        separator = meta.get("dimension_separator", ".")
        stored, driver = str(meta.get("dtype")), "zarr"
    else:
        default = True
        shape = _dims(meta.get("shape"), "its shape", where)
        grid = meta.get("chunk_grid", {})
        config = grid.get("configuration", {}) if isinstance(grid, dict) else {}
        chunks = _dims(config.get("chunk_shape", list(shape)) if isinstance(config, dict) else None, "its chunks", where)
        stored, driver = str(meta.get("data_type")), "zarr3"
        encoding = meta.get("chunk_key_encoding", {})
        encoding = encoding if isinstance(encoding, dict) else {}
        settings = encoding.get("configuration", {}) if isinstance(encoding.get("configuration"), dict) else {}
        default = encoding.get("name", "default") == "default"
        separator = settings.get("separator", "/" if default else ".")
    if len(chunks) != len(shape):
        raise CorruptCheckpointError(where, f"{name} declares {len(chunks)} chunk dimensions for a rank-{len(shape)} "
                                            "array")
    if separator not in (".", "/"):
        raise CorruptCheckpointError(where, f"{name} declares the dimension separator {separator!r}")
    prefix = "c" + separator if driver == "zarr3" and default else ""
    return ZarrArray(driver, shape, zarr_dtype(stored), chunks, separator, stored, prefix,
                     meta.get("fill_value") is not None)


def chunk_problem(array: ZarrArray, stored: set[str] | None, promised: bool = False) -> str | None:
    """Why the array cannot hold what it declares, found without reading it: a shape too large for numpy, a chunk
    above :data:`MAX_CHUNK_BYTES`, or chunks missing from ``stored`` (the chunk keys present, relative to the
    array; None: not known). A missing chunk of an array with a fill value is a problem only when the writer
    ``promised`` to store every chunk (Orbax's ``store_array_data_equal_to_fill_value``); else None."""
    itemsize = by_name(array.dtype).itemsize if array.dtype else 1
    problem = array_problem(array.shape, itemsize)
    if problem:
        return f"declares {problem}"
    if array.dtype is None:
        return f"stores dtype {array.stored_dtype!r}, which ckpt does not read"
    chunk_bytes = math.prod(array.chunks) * itemsize
    if chunk_bytes > MAX_CHUNK_BYTES:
        return f"declares chunks of {chunk_bytes:,} bytes (more than the {MAX_CHUNK_BYTES:,} read)"
    if stored is None or 0 in array.shape or (array.fills and not promised):
        return None
    grid = [-(-s // c) if c else 0 for s, c in zip(array.shape, array.chunks)]
    expected = math.prod(grid)
    if expected > 1_000_000:
        return f"at least {expected - len(stored):,} of its {expected:,} chunks are missing" \
            if expected > len(stored) else None
    missing = [n for n in (_key(i, array) for i in _indices(grid)) if n not in stored]
    if missing:
        return f"{len(missing):,} of its {expected:,} chunks are missing ({missing[0]!r} first)"
    return None


def _key(index: tuple[int, ...], array: ZarrArray) -> str:
    if not index:
        return array.prefix.rstrip("./") or "0"  # zarr v3: "c"; v2: "0"
    return array.prefix + array.separator.join(map(str, index))


def _indices(grid: list[int]) -> Any:
    if not grid:
        yield ()
        return
    total = math.prod(grid)
    for flat in range(total):
        index = []
        for size in reversed(grid):
            index.append(flat % size)
            flat //= size
        yield tuple(reversed(index))
