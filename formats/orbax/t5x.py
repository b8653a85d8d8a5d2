"""T5X checkpoints into the common model.

T5X's ``Checkpointer.save`` (``t5x/checkpoints.py``) writes ``checkpoint_<N>/checkpoint``: flax msgpack of
``{"version": 3, "optimizer": {"target": <params>, "state": {"step": ..., "param_states": ...}}}``. A partitioned
leaf is a ``ts.Spec`` dict (``{"driver": "zarr", "dtype": ..., "kvstore": {"driver": "file", "path":
"target.encoder.layers_0.mlp.wi.kernel"}, "metadata": {"shape": ..., "chunks": ..., "compressor": ...}}``) whose
path is relative to the checkpoint directory (older tensorstore put ``path`` beside ``kvstore``; a ``gcs``
kvstore names the path the same way); any other leaf is stored inline (flax's ndarray ext type 1, a numpy
scalar ext 3, or a plain msgpack number). Keys are the tree's path under ``optimizer`` joined with ``/``
(``target/encoder/layers_0/mlp/wi/kernel``); ``state/param_states/<param>/<slot>`` is an optimizer slot of
``target/<param>``.
"""
from __future__ import annotations

import os

from formats.core.errors import CorruptCheckpointError
from formats.core.model import CheckpointProblem, Role, TensorEntry, UnreadableEntry
from formats.orbax.entries import InlineEntry, ZarrEntry
from formats.orbax.layout import MAX_KEY_DEPTH, T5X_FILE, check_links, inside, zarr_dtype
from formats.orbax.msgpack import Ext, MsgpackError, unpack
from formats.orbax.reader import OrbaxCheckpoint
from formats.orbax.zarr import METADATA_NAMES, chunk_problem, parse_zarr_metadata

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["open_t5x", "T5X_LAYOUT", "MAX_T5X_BYTES"]

T5X_LAYOUT = "t5x"
MAX_T5X_BYTES = 1 << 34
"""Largest ``checkpoint`` file read (16 GiB: a T5X checkpoint without tensorstore holds every value inline)."""
_SLOTS = "state/param_states/"
_CHUNKED = "__msgpack_chunked_array__"


def _walk(node: Any, path: tuple[str, ...], out: list[tuple[tuple[str, ...], Any]]) -> None:
    if len(path) > MAX_KEY_DEPTH:
        raise MsgpackError(f"the tree is deeper than {MAX_KEY_DEPTH} levels")
    if isinstance(node, dict) and not _is_spec(node) and _CHUNKED not in node:
        for name, child in node.items():
            _walk(child, (*path, str(name)), out)
    elif isinstance(node, list):
        for i, child in enumerate(node):
            _walk(child, (*path, str(i)), out)
    else:
        out.append((path, node))


def _unchunk(root: str, key: str, node: dict[Any, Any]) -> tuple[tuple[int, ...], str, bytes]:
    """flax's chunked array (an inline array above 1 GiB: ``{"__msgpack_chunked_array__": True, "shape": {"0": d0,
    ...}, "chunks": {"0": <ndarray>, ...}}``) as ``(shape, dtype name, bytes)``, the chunks' bytes in order."""
    shape, chunks = node.get("shape"), node.get("chunks")
    try:
        if not isinstance(shape, dict) or not isinstance(chunks, dict):
            raise KeyError("shape")
        dims = tuple(shape[str(i)] for i in range(len(shape)))
        parts = [_ndarray(root, key, chunks[str(i)]) for i in range(len(chunks))]
    except (KeyError, AttributeError):
        raise CorruptCheckpointError(root, f"{T5X_FILE}: {key} is a malformed chunked array") from None
    dtypes = {part[1] for part in parts}
    if len(dtypes) != 1 or not all(isinstance(d, int) and d >= 0 for d in dims):
        raise CorruptCheckpointError(root, f"{T5X_FILE}: {key} is a malformed chunked array")
    return dims, dtypes.pop(), b"".join(part[2] for part in parts)


def _is_spec(node: dict[Any, Any]) -> bool:
    return "driver" in node and ("kvstore" in node or "path" in node)


def _ndarray(root: str, key: str, ext: Ext) -> tuple[tuple[int, ...], str, bytes]:
    """flax's ndarray (``(shape, dtype name, bytes)``) or numpy scalar (``(dtype name, bytes)``) ext."""
    try:
        inner = unpack(ext.data)
    except MsgpackError as exc:
        raise CorruptCheckpointError(root, f"{T5X_FILE}: {key}: {exc}") from None
    if ext.code == 1 and isinstance(inner, list) and len(inner) == 3:
        shape, dtype, data = inner
    elif ext.code == 3 and isinstance(inner, list) and len(inner) == 2:
        (dtype, data), shape = inner, []
    else:
        raise CorruptCheckpointError(root, f"{T5X_FILE}: {key} is msgpack ext type {ext.code}, not an array")
    if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape) \
            or not isinstance(data, bytes) or not isinstance(dtype, (str, bytes)):
        raise CorruptCheckpointError(root, f"{T5X_FILE}: {key} is a malformed ndarray")
    name = dtype.decode("utf-8", "replace") if isinstance(dtype, bytes) else dtype
    return tuple(shape), name, data


def _inline(root: str, file: str, key: str, leaf: Any, **how: Any) -> TensorEntry:
    import struct

    if isinstance(leaf, (Ext, dict)):
        shape, dtype, data = _ndarray(root, key, leaf) if isinstance(leaf, Ext) else _unchunk(root, key, leaf)
        ours = zarr_dtype(dtype)
        if ours is None:
            return UnreadableEntry(key, shape, dtype, len(data), f"inline dtype {dtype!r} is not read", root)
        return InlineEntry(key, root, file, shape, ours, data, **how)
    if isinstance(leaf, bool):
        return InlineEntry(key, root, file, (), "bool", bytes([leaf]), **how)
    if isinstance(leaf, int) and -(1 << 63) <= leaf < 1 << 63:
        return InlineEntry(key, root, file, (), "int64", struct.pack("<q", leaf), **how)
    if isinstance(leaf, float):
        return InlineEntry(key, root, file, (), "float64", struct.pack("<d", leaf), **how)
    return UnreadableEntry(key, (), type(leaf).__name__, 0, f"a {type(leaf).__name__} leaf, not an array", root)


def _spec_entry(root: str, key: str, spec: dict[Any, Any], files: dict[str, list[str]], **how: Any) -> TensorEntry:
    """A leaf T5X wrote through tensorstore; ``files``: the checkpoint's files by their folder under it."""
    kvstore = spec.get("kvstore")
    name = kvstore.get("path") if isinstance(kvstore, dict) and "path" in kvstore else spec.get("path")
    if not isinstance(name, str):
        raise CorruptCheckpointError(root, f"{T5X_FILE}: {key}'s tensorstore spec names no path")
    if isinstance(kvstore, dict) and kvstore.get("driver") not in ("file", "gfile", "gcs"):
        raise CorruptCheckpointError(root, f"{T5X_FILE}: {key}'s tensorstore spec uses the "
                                           f"{kvstore.get('driver')!r} kvstore; ckpt reads local files only")
    directory = inside(root, name.rstrip("/"), f"{T5X_FILE}: {key}'s tensorstore spec")
    given = spec.get("metadata")
    meta = given if isinstance(given, dict) else {}
    declared_shape = meta.get("shape")
    dtype = zarr_dtype(spec.get("dtype"))
    found = [n for n in METADATA_NAMES if os.path.isfile(os.path.join(directory, n))]
    if not found:
        return UnreadableEntry(key, tuple(declared_shape) if isinstance(declared_shape, list) else (),
                               str(spec.get("dtype")), 0, f"its array directory {name!r} holds no zarr metadata", root)
    with open(os.path.join(directory, found[0]), "rb") as f:
        array = parse_zarr_metadata(f.read(1 << 20), found[0], f"{root}: {name}")
    base = directory + os.sep
    mine = [f for f in files.get(os.path.relpath(directory, root).split(os.sep, 1)[0], ()) if f.startswith(base)]
    stored = {os.path.relpath(f, directory).replace(os.sep, "/") for f in mine}
    problem = chunk_problem(array, stored - set(METADATA_NAMES))
    shape = tuple(declared_shape) if isinstance(declared_shape, list) and all(
        isinstance(d, int) and d >= 0 for d in declared_shape) else None
    ts_spec = {"driver": array.driver, "kvstore": {"driver": "file", "path": directory + os.sep},
               "recheck_cached_data": False, "recheck_cached_metadata": False}
    return ZarrEntry(key, root, ts_spec, array, problem, tuple(mine),
                     shape=shape, dtype=dtype, **how)


def _roles(key: str, keys: set[str]) -> dict[str, Any]:
    if key.startswith(_SLOTS):
        param, _, slot = key[len(_SLOTS):].rpartition("/")
        if param and "target/" + param in keys:
            return {"role": Role.SLOT, "slot_of": "target/" + param, "slot_name": slot, "optimizer": "t5x"}
    if key.startswith("state/"):
        return {"role": Role.OPTIMIZER}
    return {}


def open_t5x(path: str) -> OrbaxCheckpoint:
    """Open a T5X checkpoint directory (``checkpoint_<N>``)."""
    files = check_links(path)
    file = os.path.join(path, T5X_FILE)
    size = os.path.getsize(file)
    if size > MAX_T5X_BYTES:
        raise CorruptCheckpointError(path, f"{T5X_FILE} is {size:,} bytes, more than the {MAX_T5X_BYTES:,} read")
    with open(file, "rb") as f:
        raw = f.read()
    try:
        top = unpack(raw)
        if not isinstance(top, dict) or not isinstance(top.get("optimizer"), dict):
            raise MsgpackError("it holds no 'optimizer' tree")
        leaves: list[tuple[tuple[str, ...], Any]] = []
        _walk(top["optimizer"], (), leaves)
    except MsgpackError as exc:
        raise CorruptCheckpointError(path, f"{T5X_FILE} is not a T5X checkpoint ({exc})") from None
    keys = {"/".join(p) for p, _ in leaves}
    folders: dict[str, list[str]] = {}
    for one in files:
        folders.setdefault(os.path.relpath(one, path).split(os.sep, 1)[0], []).append(one)
    entries: dict[str, TensorEntry] = {}
    empty: list[str] = []
    for parts, leaf in leaves:
        key = "/".join(parts)
        if leaf is None or leaf == {}:
            empty.append(key)
            continue
        how = _roles(key, keys)
        if isinstance(leaf, dict) and _CHUNKED in leaf:
            entries[key] = _inline(path, file, key, leaf, **how)
        elif isinstance(leaf, dict):
            entries[key] = _spec_entry(path, key, leaf, folders, **how)
        else:
            entries[key] = _inline(path, file, key, leaf, **how)
    meta: dict[str, Any] = {"version": top.get("version"), "storage": "t5x"}
    problems: list[CheckpointProblem] = []
    if empty:
        meta["empty_leaves"] = empty
    return OrbaxCheckpoint(path, T5X_LAYOUT, entries, files, meta, problems)
