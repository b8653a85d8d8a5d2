"""Sharded Keras 3 weights: ``model.weights.json`` naming the ``model_0000N.weights.h5`` shards.

Keras' ``save_weights(path.weights.json, max_shard_size=GB)`` (``ShardedH5IOStore``) writes::

    {"metadata": {"total_size": <bytes>},
     "weight_map": {"/layers/dense/vars": ["model_00000.weights.h5"],
                    "/optimizer/vars": ["model_00001.weights.h5", "model_00002.weights.h5"], ...}}

Each shard is a Keras 3 ``.weights.h5`` holding some ``<path>/vars/<i>`` datasets; a ``vars`` group
may be split over several shards (its ``name`` attribute is in the first). Keras loads an object's
variables from the shards its ``weight_map`` entry lists (a file name, or a list of them), resolved
beside the JSON file. Here every shard named is checked to exist and is opened; the datasets of all
shards make one checkpoint keyed like a single ``.weights.h5`` (``layers/dense/vars/0``).
"""
from __future__ import annotations

import os

from formats.core.errors import CheckpointNotFoundError, CorruptCheckpointError
from formats.core.model import FormatName
from formats.core.records import field, record
from formats.io.atomic import GENERATION_KEY
from formats.keras_h5.reader import KerasCheckpoint
from formats.keras_h5.source import read_json_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ShardMap", "read_shard_map", "open_sharded", "vars_group", "SHARD_SUFFIX"]

SHARD_SUFFIX = ".weights.h5"
MAX_SHARDS = 100_000


@record
class ShardMap:
    """A parsed ``*.weights.json``: shard file names in first-mention order, and for each ``vars``
    group (``layers/dense/vars``) the shards Keras looks in, in order."""

    path: str
    shards: list[str] = field(default_factory=list)
    groups: dict[str, list[str]] = field(default_factory=dict)
    total_size: float | None = None
    generation: str | None = None
    """The id of the write that made the set (``metadata.ckpt_generation``), which each shard then carries."""

    @property
    def directory(self) -> str:
        """Where the shards are (beside the JSON file)."""
        return os.path.dirname(self.path)

    def shard_path(self, name: str) -> str:
        """The path of shard ``name``."""
        return os.path.join(self.directory, name)


def vars_group(weight_map_key: str) -> str:
    """The ``vars`` group a ``weight_map`` key means: ``/layers/dense/vars`` (as Keras writes it) and
    ``layers/dense`` (as Keras also looks it up) both -> ``layers/dense/vars``; ``/vars`` -> ``vars``."""
    path = weight_map_key.strip("/")
    if path == "vars" or path.endswith("/vars"):
        return path
    return f"{path}/vars" if path else "vars"


def _shard_name(value: Any, path: str, key: str) -> str:
    if not isinstance(value, str) or not value:
        raise CorruptCheckpointError(path, f"weight_map[{key!r}] names {value!r}, not a shard file name")
    if value in (".", "..") or "/" in value or "\\" in value or "\x00" in value:
        raise CorruptCheckpointError(path, f"weight_map[{key!r}] names {value!r}: shards must be file names "
                                           "beside the JSON file (Keras resolves them there)")
    return value


def read_shard_map(path: str) -> ShardMap:
    """Parse and check a ``*.weights.json`` (bounded in size and depth; names must be plain file names)."""
    data = read_json_file(path, "the shard index")
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict):
        raise CorruptCheckpointError(path, "not a Keras shard index: no \"weight_map\" object")
    smap = ShardMap(path)
    seen: dict[str, None] = {}
    for key, value in weight_map.items():
        names = value if isinstance(value, list) else [value]
        group = vars_group(key)
        listed = smap.groups.setdefault(group, [])
        for name in (_shard_name(v, path, key) for v in names):
            if name not in listed:
                listed.append(name)
            seen.setdefault(name)
        if len(seen) > MAX_SHARDS:
            raise CorruptCheckpointError(path, f"names more than {MAX_SHARDS:,} shard files")
    smap.shards = list(seen)
    meta = data.get("metadata")
    size = meta.get("total_size") if isinstance(meta, dict) else None
    smap.total_size = float(size) if isinstance(size, (int, float)) and not isinstance(size, bool) else None
    generation = meta.get(GENERATION_KEY) if isinstance(meta, dict) else None
    smap.generation = generation if isinstance(generation, str) else None
    return smap


def _check_shards_exist(smap: ShardMap) -> None:
    """Every shard named must be a regular file (a FIFO or a device is never opened)."""
    missing = [name for name in smap.shards if not os.path.isfile(smap.shard_path(name))]
    if missing:
        first = smap.shard_path(missing[0])
        more = f" ({len(missing) - 1} more missing)" if len(missing) > 1 else ""
        index = os.path.basename(smap.path)
        if os.path.exists(first):
            raise CorruptCheckpointError(first, f"shard named in {index}'s weight_map is not a regular file{more}")
        raise CheckpointNotFoundError(first, f"shard named in {index}'s weight_map does not exist{more}")


def open_sharded(path: str) -> KerasCheckpoint:
    """Open a ``*.weights.json`` and every shard it names as one checkpoint (``keras3-sharded``)."""
    from formats.keras_h5.checkpoint import build_checkpoint
    from formats.keras_h5.source import open_hdf5_file

    smap = read_shard_map(path)
    _check_shards_exist(smap)
    parts: list[tuple[str, Any]] = []
    try:
        for name in smap.shards:
            shard = smap.shard_path(name)
            parts.append((shard, open_hdf5_file(shard)))
    except BaseException:
        for _, image in parts:
            image.close()
        raise
    meta: dict[str, Any] = {"shards": list(smap.shards)}
    if smap.total_size is not None:
        meta["total_size"] = smap.total_size
    ckpt = build_checkpoint(path, parts, [path, *(p for p, _ in parts)], FormatName.KERAS3_SHARDED, meta)
    ckpt._problems += _placement_problems(smap, ckpt) + _mix_problems(smap, parts)
    return ckpt


def _mix_problems(smap: ShardMap, parts: list[tuple[str, Any]]) -> list[tuple[str, str]]:
    """Shards whose generation id (root attribute ``ckpt_generation``) is not the index's: two writes' files."""
    if smap.generation is None:
        return []
    problems = []
    for shard, image in parts:
        theirs = image.tree.attrs.get(GENERATION_KEY)
        if theirs != smap.generation:
            problems.append((shard, (f"written by another write than {os.path.basename(smap.path)} names "
                                     f"(generation {theirs if isinstance(theirs, str) else 'none'}, the index's "
                                     f"{smap.generation}): a mix of two outputs' files")))
    return problems


def _placement_problems(smap: ShardMap, ckpt: KerasCheckpoint) -> list[tuple[str, str]]:
    """Where the shards and the weight_map disagree in a way that stops Keras loading a variable."""
    problems: list[tuple[str, str]] = []
    held: set[str] = set()
    for key, entry in ckpt.items():
        group = key.rpartition("/")[0]
        if not (group == "vars" or group.endswith("/vars")):
            continue
        held.add(group)
        name = os.path.basename(entry.files[0])
        if name not in smap.groups.get(group, ()):
            problems.append((key, (f"stored in {name}, which the weight_map does not list for /{group}: "
                                   "Keras will not load it")))
    for group, listed in smap.groups.items():
        if group not in held:
            problems.append((f"/{group}", (f"the weight_map lists {', '.join(listed)} for it, but no shard "
                                           "holds its variables")))
    return problems
