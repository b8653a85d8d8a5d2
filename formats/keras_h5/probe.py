"""What runs inside the isolated child (:func:`formats.io.sandbox.run_isolated`): every call into
libhdf5 on a file ckpt did not write.

- :func:`describe_file` walks the file once and answers, as JSON, everything the reader needs without
  the library: each group's Keras attributes, each dataset's shape, type, layout, storage address and
  filters (and the bytes of small compact datasets).
- :func:`chunk_tables` lists where each chunk of the named chunked datasets is stored.
- :func:`dataset_values` reads what ckpt does not decode itself (variable-length strings, filters other
  than deflate and shuffle, types whose stored bytes are not numpy's): through libhdf5, in the child.

The parent checks every address and size it gets from here before reading a byte (``storage.py``).
"""
from __future__ import annotations

import base64
import json
import re
import struct
from collections.abc import Callable

from formats.core.dtypes import from_numpy
from formats.core.errors import CorruptCheckpointError

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["describe_file", "chunk_tables", "dataset_values", "h5py_error_message", "H5_ERRORS", "KERAS_ATTRIBUTES"]

H5_ERRORS = (OSError, ValueError, KeyError, RuntimeError, TypeError, IndexError, OverflowError)
"""What h5py raises on a damaged file."""
KERAS_ATTRIBUTES = re.compile(r"(layer_names|weight_names)\d*|name|keras_version|backend|model_config|"
                              r"training_config|ckpt_generation")
"""The group attributes the Keras layouts read (no others are read from a file)."""
_LAYOUTS = {0: "compact", 1: "contiguous", 2: "chunked", 3: "virtual"}
_COMPACT_LIMIT = 1 << 16
_ROWS_PER_BEAT = 1 << 16


def h5py_error_message(exc: BaseException) -> str:
    """A short message for an h5py failure: ``truncated (1,000 of 65,908 bytes present)`` or h5py's detail."""
    text = str(exc)
    trunc = re.search(r"eof = (\d+).*stored_eof = (\d+)", text)
    if trunc:
        have, want = int(trunc.group(1)), int(trunc.group(2))
        return f"HDF5 file is truncated ({have:,} of {want:,} bytes present)"
    inner = re.search(r"\(([^()]*)\)[\s'\")]*$", text)
    detail = inner.group(1) if inner else text
    detail = " ".join(detail.split()) or type(exc).__name__
    return f"damaged HDF5 file ({detail})"


def _opened(open_file: Callable[[], Any], path: str) -> Any:
    try:
        return open_file()
    except H5_ERRORS as exc:
        raise CorruptCheckpointError(path, h5py_error_message(exc)) from None


def _name(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _encoded(path: str) -> bytes:
    return path.encode("utf-8", "surrogateescape")


# -- the walk --------------------------------------------------------------------------------------
def describe_file(open_file: Callable[[], Any], path: str, beat: Callable[[], None]) -> bytes:
    """The file's groups (with their Keras attributes) and datasets, as JSON (see ``tree.py``)."""
    import h5py

    h5 = _opened(open_file, path)
    try:
        groups: list[bytes] = [b""]
        datasets: list[bytes] = []

        def visit(name: bytes, info: Any) -> None:
            beat()
            if name == b".":
                return
            if info.type == h5py.h5o.TYPE_GROUP:
                groups.append(name)
            elif info.type == h5py.h5o.TYPE_DATASET:
                datasets.append(name)

        h5py.h5o.visit(h5.id, visit, info=True)
        doc = {"groups": [_group(h5, g, beat) for g in groups], "datasets": [_dataset(h5, d, beat) for d in datasets]}
    except H5_ERRORS as exc:
        raise CorruptCheckpointError(path, h5py_error_message(exc)) from None
    finally:
        h5.close()
    return json.dumps(doc).encode()


def _group(h5: Any, name: bytes, beat: Callable[[], None]) -> list[Any]:
    import h5py

    beat()
    group = h5 if not name else h5py.Group(h5py.h5g.open(h5.id, name))
    attrs = {}
    for key in group.attrs:
        if KERAS_ATTRIBUTES.fullmatch(key):
            attrs[key] = _attribute(group.attrs, key)
    return [_name(name), attrs]


def _attribute(attrs: Any, key: str) -> dict[str, Any]:
    """``{"s": [text...], "scalar": bool}`` for strings, ``{"n": dtype, "size": n}`` for numbers,
    ``{"error": message}`` when it cannot be read."""
    import numpy as np

    try:
        value = attrs[key]
    except H5_ERRORS as exc:
        return {"error": h5py_error_message(exc)}
    if isinstance(value, (bytes, str)):
        return {"s": [_text(value)], "scalar": True}
    arr = np.asarray(value)
    if arr.dtype.kind in "OSU":
        return {"s": [_text(x) for x in arr.reshape(-1)], "scalar": arr.ndim == 0}
    return {"n": str(arr.dtype), "size": int(arr.size)}


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return str(value)


def _dataset(h5: Any, name: bytes, beat: Callable[[], None]) -> dict[str, Any]:
    import h5py

    beat()
    doc: dict[str, Any] = {"path": _name(name)}
    try:
        dsid = h5py.h5d.open(h5.id, name)
        doc.update(_dataset_type(dsid))
        doc.update(_dataset_storage(dsid, doc))
    except H5_ERRORS as exc:
        doc["error"] = h5py_error_message(exc)
    return doc


def _dataset_type(dsid: Any) -> dict[str, Any]:
    """Shape, numpy type, TensorFlow dtype (or why there is none) and whether the stored bytes are numpy's."""
    import numpy as np

    import h5py

    dtype = dsid.dtype
    space = dsid.get_space()
    shape = None if space.get_simple_extent_type() == h5py.h5s.NULL else space.shape
    doc: dict[str, Any] = {"shape": list(shape) if shape is not None else None, "np": dtype.str,
                           "text": str(dtype), "vlen": False, "raw": False}
    string = h5py.check_string_dtype(dtype)
    if string is not None and string.length is None:
        doc["vlen"] = True
    elif dtype.kind == "O":
        doc["skip"] = f"HDF5 type {dtype} has no TensorFlow dtype"
        return doc
    doc["raw"] = not doc["vlen"] and _raw_bytes(dsid.get_type(), dtype)
    if shape is None:
        doc["skip"] = "HDF5 null dataspace: holds no value"
        return doc
    marked = h5py.Dataset(dsid).attrs.get("dtype") if h5py.h5a.exists(dsid, b"dtype") else None
    if isinstance(marked, bytes):
        marked = marked.decode("utf-8", "replace")
    if marked == "bfloat16" and dtype.itemsize == 2 and dtype.kind in "Vui":
        doc["tf"], doc["view"] = "bfloat16", "bfloat16"
        return doc
    try:
        doc["tf"] = from_numpy(dtype).name
    except (ValueError, TypeError):
        doc["skip"] = f"HDF5 type {np.dtype(dtype)} has no TensorFlow dtype"
    return doc


def _raw_bytes(ftype: Any, dtype: Any) -> bool:
    """Whether the stored bytes of this HDF5 type are exactly numpy's bytes of ``dtype``."""
    import h5py

    if ftype.get_size() != dtype.itemsize:
        return False
    kind = ftype.get_class()
    if kind == h5py.h5t.OPAQUE:
        return True
    if kind == h5py.h5t.STRING:
        return not ftype.is_variable_str() and ftype.get_strpad() != h5py.h5t.STR_SPACEPAD
    try:
        return bool(ftype.equal(h5py.h5t.py_create(dtype)))
    except H5_ERRORS:
        return False


def _dataset_storage(dsid: Any, kind: dict[str, Any]) -> dict[str, Any]:
    """Layout, bytes stored, address (contiguous), chunk shape and filters, user fill value, compact bytes."""
    import numpy as np

    import h5py

    plist = dsid.get_create_plist()
    layout = _LAYOUTS.get(plist.get_layout(), "other")
    if plist.get_external_count() > 0:
        layout = "external"
    doc: dict[str, Any] = {"layout": layout, "stored": int(dsid.get_storage_size())}
    if layout == "contiguous":
        doc["offset"] = dsid.get_offset()
    elif layout == "chunked":
        doc["chunk"] = list(plist.get_chunk())
        doc["filters"] = [[int(f[0]), int(f[1]), [int(v) for v in f[2]]]
                          for f in (plist.get_filter(i) for i in range(plist.get_nfilters()))]
    if kind.get("raw") and plist.fill_value_defined() == h5py.h5d.FILL_VALUE_USER_DEFINED:
        fill = np.zeros((), dtype=dsid.dtype)
        plist.get_fill_value(fill)
        doc["fill"] = base64.b64encode(fill.tobytes()).decode()
    if layout == "compact" and kind.get("raw") and "skip" not in kind and 0 < doc["stored"] <= _COMPACT_LIMIT:
        doc["compact"] = base64.b64encode(np.ascontiguousarray(h5py.Dataset(dsid)[()]).tobytes()).decode()
    return doc


# -- chunk tables and values -----------------------------------------------------------------------
def chunk_tables(open_file: Callable[[], Any], path: str, keys: list[str], beat: Callable[[], None]) -> bytes:
    """``{key: [[chunk offset, filter mask, address, size], ...]}`` for chunked datasets ``keys``, as JSON."""
    import h5py

    h5 = _opened(open_file, path)
    tables: dict[str, list[list[Any]]] = {}
    try:
        for key in keys:
            dsid = h5py.h5d.open(h5.id, _encoded(key))
            rows: list[list[Any]] = []

            def add(info: Any, rows: list[list[Any]] = rows) -> None:
                rows.append([list(info.chunk_offset), int(info.filter_mask), int(info.byte_offset), int(info.size)])
                if len(rows) % 4096 == 0:
                    beat()

            if hasattr(dsid, "chunk_iter"):
                dsid.chunk_iter(add)
            else:  # pragma: no cover - h5py < 3.8
                for i in range(dsid.get_num_chunks()):
                    add(dsid.get_chunk_info(i))
            tables[key] = rows
            beat()
    except H5_ERRORS as exc:
        raise CorruptCheckpointError(path, h5py_error_message(exc)) from None
    finally:
        h5.close()
    return json.dumps(tables).encode()


def dataset_values(open_file: Callable[[], Any], path: str, key: str, beat: Callable[[], None]) -> bytes:
    """A dataset's value read by libhdf5: for variable-length strings each element as an 8-byte
    little-endian length and its bytes; for anything else numpy's C-order bytes of h5py's type."""
    import numpy as np

    import h5py

    h5 = _opened(open_file, path)
    try:
        ds = h5py.Dataset(h5py.h5d.open(h5.id, _encoded(key)))
        string = h5py.check_string_dtype(ds.dtype)
        if string is None or string.length is not None:
            return np.ascontiguousarray(ds[()]).tobytes()
        out = bytearray()
        if not ds.shape:
            _append(out, [ds[()]])
            return bytes(out)
        for start in range(0, ds.shape[0], _ROWS_PER_BEAT):
            _append(out, np.asarray(ds[start:start + _ROWS_PER_BEAT], dtype=object).reshape(-1))
            beat()
        return bytes(out)
    except H5_ERRORS as exc:
        raise CorruptCheckpointError(path, f"{key}: {h5py_error_message(exc)}") from None
    finally:
        h5.close()


def _append(out: bytearray, values: Any) -> None:
    for value in values:
        raw = value if isinstance(value, bytes) else str(value).encode("utf-8", "surrogateescape")
        out += struct.pack("<Q", len(raw)) + raw
