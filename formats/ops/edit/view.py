"""A checkpoint seen through an edit: only the tensors kept, and an object graph cut down to them.

:class:`KeptView` is a :class:`~formats.core.model.Checkpoint` like any other, so every conversion
planner (``--to`` targets) works on it unchanged: its entries are the source's own (read from the
source's files), its ``_CHECKPOINTABLE_OBJECT_GRAPH`` holds the pruned graph, and everything else
(path, format, metadata, files, format-specific helpers) is the source's.
"""
from __future__ import annotations


from _bisect import bisect_left  # bisect's C half, without its module (start-up)

from formats.core.model import OBJECT_GRAPH_KEY, Checkpoint, CheckpointProblem, Role, TensorEntry
from formats.core.natural import ascending

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any
    import numpy as np

    from formats.concepts.object_graph import ObjectGraph

__all__ = ["KeptView", "GraphEntry"]


class GraphEntry(TensorEntry):
    """A serialized object graph as the scalar string tensor ``_CHECKPOINTABLE_OBJECT_GRAPH``."""

    def __init__(self, data: bytes) -> None:
        super().__init__(OBJECT_GRAPH_KEY, (), "string", len(data), role=Role.OBJECT_GRAPH)
        self.data = data

    def read(self) -> np.ndarray:
        """A 0-d object array holding the bytes."""
        import numpy as np

        out = np.empty((), dtype=object)
        out[()] = self.data
        return out


class KeptView(Checkpoint):
    """``source`` with only the tensors ``kept``; an object-based source's graph replaced by ``graph``, serialized
    as ``data`` (when not given, encoded here; given alone: the graph's bytes only, :attr:`object_graph` None)."""

    def __init__(self, source: Checkpoint, kept: list[str], graph: ObjectGraph | None = None,
                 data: bytes | None = None) -> None:
        entries = dict(zip(kept, map(source.__getitem__, kept)))
        self._kept = kept
        self.graph = graph
        if data is None and graph is not None:
            from formats.ops.convert.graph_build import encode_object_graph

            data = encode_object_graph(graph.nodes)
        if data is not None:
            entries[OBJECT_GRAPH_KEY] = GraphEntry(data)
        super().__init__(source.path, source.format, entries)
        self.source = source

    def kept_items(self) -> Iterator[tuple[str, TensorEntry]]:
        """``(key, entry)`` of every tensor kept (the object graph's aside), in key order."""
        kept = self._kept if ascending(self._kept) else sorted(set(self._kept))
        at = bisect_left(kept, OBJECT_GRAPH_KEY)
        if at < len(kept) and kept[at] == OBJECT_GRAPH_KEY:
            kept = kept[:at] + kept[at + 1:]
        return zip(kept, map(self._entries.__getitem__, kept))

    @property
    def graph_bytes(self) -> bytes | None:
        """The serialized pruned graph (None for a name-based source)."""
        entry = self._entries.get(OBJECT_GRAPH_KEY)
        return entry.data if isinstance(entry, GraphEntry) else None

    @property
    def object_graph(self) -> Any:
        """The pruned graph."""
        return self.graph

    @property
    def files(self) -> list[str]:
        """The source's files."""
        return self.source.files

    @property
    def metadata(self) -> dict[str, Any]:
        """The source's metadata."""
        return self.source.metadata

    def problems(self) -> list[CheckpointProblem]:
        """The source's problems."""
        return self.source.problems()

    def __getattr__(self, name: str) -> Any:
        if name == "source":  # not set yet: never look it up on itself
            raise AttributeError(name)
        return getattr(self.source, name)
