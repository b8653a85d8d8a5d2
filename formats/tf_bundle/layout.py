"""Which data files an output bundle takes over whole from its input bundles.

A rename, a name <-> object conversion or a selection of every tensor of a data file writes the
same bytes again under other keys. :func:`plan_layout` finds the input data files whose every
stored byte goes to the output unchanged - each of their tensors is a source, once, and they tile
the file exactly - so the writer copies them in the kernel (``copy_file_range``) or hard-links
them, and writes only the index (and the tensors that are new) itself. Bytes are taken over only
from little-endian, local bundles, and never from a partitioned variable (its slices are
reassembled into one tensor).

A file may also hold the input's object graph (``_CHECKPOINTABLE_OBJECT_GRAPH``) when the output
does not take it over - a rename of an object-based checkpoint writes a new graph. Hard-linked
(``link``), the file is shared as it is and the new graph goes to a data file of its own: the old
one's bytes stay in the shared file, where no entry of the output's index points. Copied, the file
is taken over only when the old graph is last in it (as TensorFlow writes it), and only the bytes
before it are copied: a copy holds nothing but the output's tensors.
"""
from __future__ import annotations

import math
import os

from formats.core import dtypes
from formats.core.errors import CheckpointError
from formats.io import storage
from formats.tf_bundle.checkpoint import BundleTensor
from formats.tf_bundle.reader import OBJECT_GRAPH_KEY, BundleReader, RawEntry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["Reused", "Layout", "plan_layout", "stored_whole"]

_GRAPH = OBJECT_GRAPH_KEY.encode()


class Reused:
    """An input data file taken over whole: its path, size, the reader that knows its entries, and
    the positions (in the writer's list of sources) of the tensors stored in it."""

    __slots__ = ("path", "size", "reader", "shard", "positions")

    def __init__(self, path: str, size: int, reader: BundleReader, shard: int, positions: list[int]) -> None:
        self.path, self.size, self.reader, self.shard, self.positions = path, size, reader, shard, positions


class Layout:
    """``files``: the input data files taken over, in output order; ``placed``: source position ->
    (number of its file in ``files``, the tensor's stored entry)."""

    def __init__(self, files: list[Reused], placed: dict[int, tuple[int, RawEntry]]) -> None:
        self.files, self.placed = files, placed

    def reused_bytes(self) -> int:
        """Bytes taken over from input data files."""
        return sum(f.size for f in self.files)


def plan_layout(sources: Sequence[Any], link: bool = False) -> Layout:
    """The input data files that ``sources`` (in writing order) use whole and unchanged; with ``link``, files
    whose object graph is not among them too (see the module doc)."""
    groups: dict[tuple[int, int], list[int]] = {}
    empty: dict[tuple[int, int], list[int]] = {}  # tensors of no bytes: they keep their place in a file taken over
    readers: dict[int, BundleReader] = {}
    raws: dict[int, RawEntry] = {}  # position -> the index entry of a bundle tensor (each made once)
    for position, source in enumerate(sources):
        raw = stored_whole(source)
        if raw is not None:
            reader = source.bundle
            readers[id(reader)] = reader
            groups.setdefault((id(reader), raw.shard_id), []).append(position)
            raws[position] = raw
        elif isinstance(source, BundleTensor):
            raw = raws[position] = source.raw
            if not raw.slices and raw.size == 0:
                empty.setdefault((id(source.bundle), raw.shard_id), []).append(position)
    files = []
    for (reader_id, shard), positions in groups.items():
        reused = _whole_file(readers[reader_id], shard, positions, sources, raws, link)
        if reused is not None:
            reused.positions = sorted(positions + [p for p in empty.get((reader_id, shard), [])
                                                   if raws[p].offset <= reused.size])
            files.append(reused)
    files.sort(key=lambda f: f.positions[0])
    placed = {p: (number, raws[p]) for number, reused in enumerate(files) for p in reused.positions}
    return Layout(files, placed)


def stored_whole(source: Any) -> RawEntry | None:
    """The stored entry of a bundle tensor whose bytes can be taken over as they are, else None."""
    if not isinstance(source, BundleTensor):
        return None
    raw, reader = source.raw, source.bundle
    if raw.slices or raw.size == 0 or reader.header.big_endian or storage.is_url(reader.prefix):
        return None
    if not 0 <= raw.shard_id < len(reader.data_paths) or raw.shard_id in reader.missing:
        return None
    dt = dtypes.by_enum(raw.dtype)
    if dt is None or dt.numpy_name is None or (dt.fixed_width and raw.size != math.prod(raw.shape) * dt.itemsize):
        return None  # what the entry declares cannot be: reading it the usual way says why
    try:
        fits = raw.offset + raw.size <= reader.file_size(raw.shard_id)
    except CheckpointError:
        return None
    return raw if fits else None


def _whole_file(reader: BundleReader, shard: int, positions: list[int], sources: Sequence[Any],
                raws: dict[int, RawEntry], link: bool) -> Reused | None:
    """The data file, when the sources at ``positions`` (their index entries in ``raws``) are every stored tensor
    of it but perhaps the object graph, once each, tiling it; its ``size`` is what is taken over (see the module
    doc)."""
    used = [raws[p] for p in positions]
    if len({id(sources[p]) for p in positions}) != len(used) or len({r.key for r in used}) != len(used):
        return None  # a tensor written twice: its second copy needs bytes of its own
    columns = reader.entries
    here = {kind for kind, (_, _, in_shard, size) in enumerate(columns.kinds) if size and in_shard == shard}
    stored = [row for row, kind in enumerate(columns.kind) if kind in here and row not in columns.slices]
    keys = {columns.keys[row] for row in stored}
    graph = reader.entries[_GRAPH] if _GRAPH in keys and len(stored) == len(used) + 1 else None
    if graph is not None:
        keys.discard(_GRAPH)  # the output has a graph of its own
    if len(keys) != len(used) or keys != {r.key for r in used}:
        return None
    path = reader.data_paths[shard]
    try:
        size = os.stat(path).st_size
    except OSError:
        return None
    end = 0
    offsets, kinds = columns.offset, columns.kind
    for offset, row in sorted((offsets[row], row) for row in stored):
        if offset != end:
            return None  # a gap or an overlap
        end += columns.kinds[kinds[row]][3]
    if end != size:
        return None
    if graph is not None and not link:
        if graph.offset + graph.size != size:
            return None  # the old graph between tensors: a copy would carry it
        size = graph.offset
    return Reused(path, size, reader, shard, positions)
