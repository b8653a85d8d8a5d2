"""The :class:`~formats.core.model.Checkpoint` view of a tensor bundle."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from formats.core._gc import paused_gc
from formats.core.model import Checkpoint, TensorEntry
from formats.tf_bundle.reader import OBJECT_GRAPH_KEY, BundleReader, RawEntry, dtype_name

if TYPE_CHECKING:
    import numpy as np

    from formats.concepts.object_graph import EntryLabel, ObjectGraph

__all__ = ["BundleTensor", "BundleCheckpoint", "open_bundle"]


class BundleTensor(TensorEntry):
    """A tensor stored in a bundle; :meth:`read` maps, checks the CRC32C and copies it out.

    ``name`` and ``role`` (and, for slots, ``slot_of``/``optimizer``/``slot_name``) are worked out
    on first use, for all entries at once: from the object graph for ``tf-object`` checkpoints,
    from the naming conventions of :mod:`formats.concepts.roles` for ``tf-name`` ones.
    """

    __slots__ = ("raw", "_reader", "_labels")

    def __init__(self, reader: BundleReader, raw: RawEntry, labels: _Labels) -> None:
        # Not TensorEntry.__init__: it would set name/role eagerly, which are lazy properties here.
        self.key = raw.name
        self.shape = raw.shape
        self.dtype = dtype_name(raw.dtype)
        self.nbytes = reader.nbytes(raw)
        self.raw = raw
        self._reader = reader
        self._labels = labels

    @property  # type: ignore[override]
    def name(self) -> str:
        """The TF1-style name: the attribute's ``full_name`` when the graph has one, else the key."""
        return self.label.name

    @property  # type: ignore[override]
    def role(self) -> str:
        """``variable``, ``slot``, ``optimizer``, ``iterator``, ``save_counter``, ``object_graph`` or ``other``."""
        return self.label.role

    @property
    def slot_of(self) -> str | None:
        """For a slot: the key of the variable it belongs to."""
        return self.label.slot_of

    @property
    def optimizer(self) -> str | None:
        """For a slot or optimizer state: the optimizer (its object path, or its TF1 name)."""
        return self.label.optimizer

    @property
    def slot_name(self) -> str | None:
        """For a slot: the slot's name (``m``, ``v``, ``accumulator``...)."""
        return self.label.slot_name

    @property
    def label(self) -> EntryLabel:
        """Everything known about this key (:class:`formats.concepts.object_graph.EntryLabel`)."""
        return self._labels.get(self.key)

    def read(self) -> np.ndarray:
        """The value as a numpy array; raises ChecksumError/CorruptCheckpointError on bad data."""
        return self._reader.read(self.raw)


class _Labels:
    """Names and roles of a bundle's keys, computed once on first request (the graph decoded then)."""

    def __init__(self, reader: BundleReader, object_based: bool) -> None:
        self._reader = reader
        self._object_based = object_based
        self._graph: ObjectGraph | None = None
        self._labels: dict[str, EntryLabel] | None = None

    def graph(self) -> ObjectGraph | None:
        """The decoded object graph (None for a name-based bundle)."""
        if self._graph is None and self._object_based:
            from formats.core.errors import CorruptCheckpointError
            from formats.concepts.object_graph import decode_object_graph

            raw = self._reader.entries[OBJECT_GRAPH_KEY.encode()]
            if raw.dtype != 7 or raw.shape != () or raw.slices:
                raise CorruptCheckpointError(self._reader.index_path,
                                             f"{OBJECT_GRAPH_KEY} is not a scalar string")
            self._graph = decode_object_graph(self._reader.read(raw).reshape(-1)[0], self._reader.index_path)
        return self._graph

    def get(self, key: str) -> EntryLabel:
        """The label of one key."""
        if self._labels is None:
            self._labels = self._compute()
        return self._labels[key]

    def _compute(self) -> dict[str, EntryLabel]:
        from formats.concepts.object_graph import EntryLabel, label_keys
        from formats.concepts.roles import classify_names

        keys = [k.decode("utf-8", "surrogateescape") for k in self._reader.visible_keys()]
        graph = self.graph()
        if graph is not None:
            return label_keys(graph, keys)
        return {k: EntryLabel(k, str(r.role), slot_of=r.slot_of, optimizer=r.optimizer, slot_name=r.slot_name)
                for k, r in classify_names(keys).items()}


class BundleCheckpoint(Checkpoint):
    """An opened bundle: ``format`` is ``tf-object`` when it holds an object graph, else ``tf-name``."""

    def __init__(self, prefix: str) -> None:
        with paused_gc():
            self.reader = BundleReader(prefix)
            self._labels = _Labels(self.reader, OBJECT_GRAPH_KEY.encode() in self.reader.entries)
            entries = {t.key: t for t in (BundleTensor(self.reader, self.reader.entries[k], self._labels)
                                          for k in self.reader.visible_keys())}
        fmt = "tf-object" if OBJECT_GRAPH_KEY in entries else "tf-name"
        super().__init__(prefix, fmt, entries)  # type: ignore[arg-type]

    @property
    def object_graph(self) -> ObjectGraph | None:
        """The decoded :class:`~formats.concepts.object_graph.ObjectGraph` (decoded on first use), or None for tf-name."""
        return self._labels.graph()

    @property
    def files(self) -> list[str]:
        """The index and every data file."""
        return [self.reader.index_path, *self.reader.data_paths]

    @property
    def metadata(self) -> dict[str, Any]:
        """Header fields of the bundle."""
        h = self.reader.header
        return {"num_shards": h.num_shards, "endianness": "big" if h.big_endian else "little",
                "producer": h.producer, "min_consumer": h.min_consumer}

    def close(self) -> None:
        """Unmap the data files."""
        self.reader.close()


def open_bundle(prefix: str) -> BundleCheckpoint:
    """Open the bundle with this prefix (``prefix.index`` must exist)."""
    return BundleCheckpoint(os.fspath(prefix))
