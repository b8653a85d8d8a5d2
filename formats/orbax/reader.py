"""Orbax checkpoints into the common model: an item directory (one PyTree) or a step directory (its items).

An item's tree comes from ``_METADATA`` (``tree_metadata``: each leaf's PyTree path and value type; the key is
the path joined with ``/``, ``params/layers/0/w``); each array's shape and dtype from its zarr metadata, read from
the item's files (per-array layout) or its OCDBT database (through tensorstore). Values are read by tensorstore
when asked. An item written without ``_METADATA`` is listed from its arrays' names (``a.b.c`` -> ``a/b/c``).

A step directory with one item lists that item's keys as they are; with several, each key starts with its
item's name (``params/...``, ``opt_state/...``).
"""
from __future__ import annotations

import os

from formats.core.bounded_json import load_json
from formats.core.errors import CorruptCheckpointError
from formats.core.model import Checkpoint, CheckpointProblem, TensorEntry, UnreadableEntry, natural_key
from formats.orbax import store
from formats.orbax.entries import ZarrEntry
from formats.orbax.layout import (CHECKPOINT_METADATA_FILE, ITEM, MAX_KEY_DEPTH, METADATA_FILE, check_links, inside,
                                  items_of, kind_of)
from formats.orbax.zarr import METADATA_NAMES, ZarrArray, chunk_problem, parse_zarr_metadata

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["OrbaxCheckpoint", "open_orbax", "ORBAX_LAYOUT"]

ORBAX_LAYOUT = "orbax"
_MAX_TREE_BYTES = 256 << 20
_MAX_ARRAY_META = 1 << 20
_ARRAY_VALUES = ("jax.Array", "np.ndarray", "scalar")


class OrbaxCheckpoint(Checkpoint):
    """An opened Orbax item or step: entries, the files that make it up, what ``_METADATA`` and
    ``_CHECKPOINT_METADATA`` say. Entries may be read from several threads (tensorstore is thread-safe)."""

    concurrent_reads = True

    def __init__(self, path: str, layout: str, entries: dict[str, TensorEntry], files: list[str],
                 metadata: dict[str, Any], problems: list[CheckpointProblem]) -> None:
        super().__init__(path, layout, entries, metadata=metadata, problems=problems)
        self._files = files

    @property
    def files(self) -> list[str]:
        """Every regular file under the checkpoint's directory."""
        return list(self._files)


class _Item:
    """One item directory: its files, its tree, and a view of its stored keys (files or OCDBT)."""

    def __init__(self, root: str, directory: str, files: list[str]) -> None:
        self.root = root
        self.directory = directory
        self.files = [f for f in files if f.startswith(directory.rstrip(os.sep) + os.sep)]
        self.tree = _read_tree(root, os.path.join(directory, METADATA_FILE))
        flag = self.tree.get("use_ocdbt") if isinstance(self.tree, dict) else None
        self.ocdbt = bool(flag) if isinstance(flag, bool) else os.path.isfile(os.path.join(directory, "manifest.ocdbt"))
        if self.ocdbt:
            self.keys = set(store.list_keys(root, directory))
        else:
            self.keys = {os.path.relpath(f, directory).replace(os.sep, "/") for f in self.files}
        self.shared_files = tuple(self.files)
        self.groups: dict[str, list[str]] = {}  # keys by their first component (an array's name, mostly)
        for key in self.keys:
            self.groups.setdefault(key.split("/", 1)[0], []).append(key)

    def under(self, array: str) -> list[str]:
        """The keys under ``array/`` (its metadata and chunks)."""
        prefix = array + "/"
        return [k for k in self.groups.get(array.split("/", 1)[0], ()) if k.startswith(prefix)]

    def metadata_files(self) -> dict[str, bytes]:
        names = [k for k in sorted(self.keys) if k.rsplit("/", 1)[-1] in METADATA_NAMES and "/" in k]
        if self.ocdbt:
            return store.read_values(self.root, self.directory, names, _MAX_ARRAY_META)
        out = {}
        for name in names:
            with open(os.path.join(self.directory, *name.split("/")), "rb") as f:
                out[name] = f.read(_MAX_ARRAY_META + 1)
        return out

    def arrays(self) -> dict[str, ZarrArray]:
        out = {}
        for name, raw in self.metadata_files().items():
            array, meta = name.rsplit("/", 1)
            where = f"{os.path.relpath(self.directory, self.root) if self.directory != self.root else '.'}/{array}"
            out[array] = parse_zarr_metadata(raw, meta, f"{self.root}: {where}")
        return out

    def chunks(self, array: str) -> set[str]:
        """The chunk keys of ``array``, relative to it."""
        skip = len(array) + 1
        return {k[skip:] for k in self.under(array) if k[skip:] not in METADATA_NAMES}


def _read_tree(root: str, path: str) -> dict[str, Any]:
    if not os.path.isfile(path):
        return {}
    if os.path.getsize(path) > _MAX_TREE_BYTES:
        raise CorruptCheckpointError(root, f"{METADATA_FILE} is {os.path.getsize(path):,} bytes, more than the "
                                           f"{_MAX_TREE_BYTES:,} accepted")
    with open(path, "rb") as f:
        tree = load_json(f.read(), root, METADATA_FILE, max_bytes=_MAX_TREE_BYTES)
    if not isinstance(tree, dict):
        raise CorruptCheckpointError(root, f"{METADATA_FILE} is not a JSON object")
    return tree


def _leaves(root: str, tree: dict[str, Any]) -> list[tuple[tuple[str, ...], str, tuple[int, ...] | None]]:
    """``(path, value type, write shape)`` of each leaf of ``_METADATA``'s ``tree_metadata``."""
    leaves = tree.get("tree_metadata")
    if not isinstance(leaves, dict):
        raise CorruptCheckpointError(root, f"{METADATA_FILE} has no tree_metadata object")
    out = []
    for name, leaf in leaves.items():
        keys = leaf.get("key_metadata") if isinstance(leaf, dict) else None
        value = leaf.get("value_metadata") if isinstance(leaf, dict) else None
        if not isinstance(keys, list) or not isinstance(value, dict) or not all(isinstance(k, dict) for k in keys):
            raise CorruptCheckpointError(root, f"{METADATA_FILE}: leaf {name[:80]!r} has no key_metadata list")
        if len(keys) > MAX_KEY_DEPTH:
            raise CorruptCheckpointError(root, f"{METADATA_FILE}: leaf {name[:80]!r} is {len(keys)} levels deep "
                                               f"(at most {MAX_KEY_DEPTH} read)")
        path = tuple(str(k.get("key")) for k in keys)
        shape = value.get("write_shape")
        ok = isinstance(shape, list) and all(isinstance(d, int) and d >= 0 for d in shape)
        out.append((path, str(value.get("value_type")), tuple(shape) if ok and shape is not None else None))
    return out


def _item_entries(item: _Item, prefix: str, problems: list[CheckpointProblem]) -> dict[str, TensorEntry]:
    arrays = item.arrays()
    if item.tree:
        leaves = _leaves(item.root, item.tree)
    else:
        leaves = [(tuple(name.split(".")), "jax.Array", None) for name in arrays]
    entries: dict[str, TensorEntry] = {}
    used = set()
    for path, value_type, write_shape in sorted(leaves, key=lambda leaf: natural_key("/".join(leaf[0]))):
        key = prefix + "/".join(path)
        param = ".".join(path)
        inside(item.directory, param, f"the tree's leaf {key!r}")
        if value_type not in _ARRAY_VALUES:
            entries[key] = UnreadableEntry(key, write_shape or (), value_type, 0,
                                           f"an Orbax {value_type} leaf, not an array; not read", item.root)
            continue
        array = arrays.get(param)
        if array is None:
            entries[key] = UnreadableEntry(key, write_shape or (), "missing", 0,
                                           f"its array {param!r} is not in the checkpoint", item.root)
            continue
        used.add(param)
        entries[key] = _entry(item, key, param, array, write_shape)
    for extra in sorted(set(arrays) - used):
        problems.append(CheckpointProblem(extra, f"an array stored in {os.path.basename(item.directory)} that "
                                                 f"{METADATA_FILE} does not list; not read"))
    return entries


def _entry(item: _Item, key: str, param: str, array: ZarrArray, write_shape: tuple[int, ...] | None) -> ZarrEntry:
    problem = chunk_problem(array, item.chunks(param), item.tree.get("store_array_data_equal_to_fill_value") is True)
    if item.ocdbt:
        files = item.shared_files
    else:
        files = tuple(os.path.join(item.directory, *k.split("/")) for k in sorted(item.under(param)))
    spec = store.array_spec(array.driver, item.directory, param, item.ocdbt)
    if problem is None and write_shape is not None and (len(write_shape) != len(array.shape) or any(
            w > s for w, s in zip(write_shape, array.shape))):
        problem = (f"{METADATA_FILE} says it was written in pieces of {list(write_shape)}, which do not fit its "
                   f"shape {list(array.shape)}")
    return ZarrEntry(key, item.root, spec, array, problem, files)


def open_orbax(path: str) -> OrbaxCheckpoint:
    """Open an Orbax item or step directory."""
    kind = kind_of(path)
    files = check_links(path)
    items = [path] if kind == ITEM else [os.path.join(path, name) for name in items_of(path)]
    problems: list[CheckpointProblem] = []
    entries: dict[str, TensorEntry] = {}
    meta: dict[str, Any] = {"items": [os.path.basename(i) for i in items] if kind != ITEM else []}
    for directory in items:
        item = _Item(path, directory, files)
        meta.setdefault("storage", "ocdbt" if item.ocdbt else "zarr")
        prefix = os.path.basename(directory) + "/" if len(items) > 1 else ""
        entries.update(_item_entries(item, prefix, problems))
    state = os.path.join(path, CHECKPOINT_METADATA_FILE)
    if os.path.isfile(state):
        with open(state, "rb") as f:
            raw = f.read(_MAX_ARRAY_META + 1)
        try:  # facts about the save, not the data: a damaged file is a problem, not a refusal
            facts = load_json(raw, path, CHECKPOINT_METADATA_FILE, max_bytes=_MAX_ARRAY_META)
        except CorruptCheckpointError as exc:
            problems.append(CheckpointProblem(CHECKPOINT_METADATA_FILE, exc.message))
            facts = None
        if isinstance(facts, dict):
            meta["checkpoint_metadata"] = {k: facts[k] for k in ("item_handlers", "custom_metadata", "metrics")
                                           if k in facts}
    return OrbaxCheckpoint(path, ORBAX_LAYOUT, entries, files, meta, problems)
