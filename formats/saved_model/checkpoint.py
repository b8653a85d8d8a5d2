"""A SavedModel directory as one :class:`~formats.core.model.Checkpoint`.

The tensors are those of ``variables/variables`` (a tensor bundle, opened through the registry's
``tf-bundle`` format, so values, checksums and streaming are the bundle's own); names, roles and
slots come from the SavedModel's ``SavedObjectGraph`` (TF2 exports) or, for name-based TF1
``SavedModelBuilder`` exports, from the variable names as in any name-based checkpoint.
"""
from __future__ import annotations

import glob
import os

from formats.concepts.object_graph import EntryLabel, label_keys
from formats.core import registry
from formats.core.errors import CheckpointError, CheckpointNotFoundError
from formats.core.model import (CHUNK_BYTES, CHUNK_ELEMENTS, OBJECT_GRAPH_KEY, Checkpoint, FormatName, CheckpointProblem,
                                Role, TensorEntry)
from formats.core.records import record, replace
from formats.saved_model.graph_file import read_saved_model
from formats.saved_model.proto import SavedModelProto

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from concurrent.futures import Executor
    from typing import Any

    import numpy as np

    from formats.concepts.object_graph import ObjectGraph
    from formats.concepts.signatures import TensorSpec

__all__ = ["SavedModelCheckpoint", "SavedModelTensor", "VARIABLES"]

VARIABLES = os.path.join("variables", "variables")
"""Where a SavedModel keeps its variables: the bundle prefix, relative to the directory."""
_EXTRA_FILES = ("fingerprint.pb", "keras_metadata.pb")


class SavedModelTensor(TensorEntry):
    """A variable of a SavedModel: stored in ``variables/variables`` (every read, check and stream is
    the bundle entry's), described by the SavedModel's graph (``name``, ``role``, slots)."""

    __slots__ = ("_stored", "_labels")

    def __init__(self, stored: TensorEntry, labels: _Labels) -> None:
        # Not TensorEntry.__init__: name/role are lazy properties here.
        self.key, self.shape, self.dtype, self.nbytes = stored.key, stored.shape, stored.dtype, stored.nbytes
        self._stored = stored
        self._labels = labels

    @property
    def name(self) -> str:  # type: ignore[override]
        """The TF1-style name (``SavedVariable.name`` for TF2 exports)."""
        return self._labels.get(self.key).name

    @property
    def role(self) -> str:  # type: ignore[override]
        """``variable``, ``slot``, ``optimizer``, ``object_graph``, ... (see :class:`~formats.core.model.Role`)."""
        return self._labels.get(self.key).role

    @property
    def slot_of(self) -> str | None:  # type: ignore[override]
        """For a slot: the key of its variable."""
        return self._labels.get(self.key).slot_of

    @property
    def optimizer(self) -> str | None:  # type: ignore[override]
        """For a slot or optimizer state: the optimizer."""
        return self._labels.get(self.key).optimizer

    @property
    def slot_name(self) -> str | None:  # type: ignore[override]
        """For a slot: its name (``m``, ``v``, ...)."""
        return self._labels.get(self.key).slot_name

    @property
    def files(self) -> tuple[str, ...]:
        """The bundle files the value is read from."""
        return self._stored.files

    def read(self) -> np.ndarray:
        """The value, read and checked by the bundle."""
        return self._stored.read()

    def problem(self) -> str | None:
        """The bundle entry's storage problem, if any."""
        return self._stored.problem()

    def iter_chunks(self, chunk_elements: int = CHUNK_ELEMENTS, pool: Executor | None = None) -> Iterator[np.ndarray]:
        """Streamed from the bundle."""
        return self._stored.iter_chunks(chunk_elements, pool)

    def byte_chunks(self, chunk: int = CHUNK_BYTES, check: bool = True) -> Iterator[memoryview]:
        """Streamed from the bundle."""
        return self._stored.byte_chunks(chunk, check)

    def read_slice(self, index: tuple[Any, ...] | None) -> np.ndarray:
        """Sliced by the bundle."""
        return self._stored.read_slice(index)

    def check(self) -> None:
        """The bundle's checks (CRC32C of every stored byte)."""
        self._stored.check()


class _Labels:
    """Names and roles of every key, worked out once on first request."""

    def __init__(self, owner: SavedModelCheckpoint) -> None:
        self._owner = owner
        self._labels: dict[str, EntryLabel] | None = None

    def get(self, key: str) -> EntryLabel:
        if self._labels is None:
            self._labels = self._compute()
        return self._labels[key]

    def _compute(self) -> dict[str, EntryLabel]:
        stored = self._owner.stored
        fallback = {k: EntryLabel(e.name, str(e.role), slot_of=e.slot_of, optimizer=e.optimizer,
                                  slot_name=e.slot_name) for k, e in stored.items()}
        decoded = self._owner._decoded_graph()
        if decoded is None:
            return fallback
        labels = dict(label_keys(decoded.graph, list(stored)))
        for key in decoded.metrics & labels.keys():  # a Keras metric's total/count: state, not a weight
            labels[key] = replace(labels[key], role=str(Role.OTHER))
        # keys the SavedModel's graph does not account for keep what the bundle itself says
        return {k: (fallback[k] if label.node_id is None and k != OBJECT_GRAPH_KEY else label)
                for k, label in labels.items()}


@record
class _Graph:
    """The decoded SavedObjectGraph: the graph, each variable's key -> its declared spec, and the keys
    of Keras metric variables."""

    graph: ObjectGraph
    variables: dict[str, TensorSpec]
    metrics: set[str]


class SavedModelCheckpoint(Checkpoint):
    """A SavedModel directory: ``saved_model.pb`` (signatures, object graph) + ``variables/variables``."""

    def __init__(self, directory: str) -> None:
        self.proto: SavedModelProto = read_saved_model(directory)
        self.variables_prefix = os.path.join(directory, VARIABLES)
        self.stored: Checkpoint = _open_variables(self.variables_prefix)
        self._graph: _Graph | None = None
        labels = _Labels(self)
        entries: dict[str, TensorEntry] = {k: SavedModelTensor(e, labels) for k, e in self.stored.items()}
        super().__init__(directory, FormatName.SAVED_MODEL, entries)

    def _decoded_graph(self) -> _Graph | None:
        if self._graph is None and self.proto.object_graph is not None:
            from formats.saved_model.objects import build_object_graph, metric_keys, variable_keys

            graph, saved = build_object_graph(self.proto.object_graph, self.proto.path)
            self._graph = _Graph(graph, variable_keys(graph, saved), metric_keys(graph, saved))
        return self._graph

    @property
    def object_graph(self) -> ObjectGraph | None:
        """The SavedModel's own object graph (decoded on first use), None for TF1 exports."""
        decoded = self._decoded_graph()
        return decoded.graph if decoded is not None else None

    @property
    def files(self) -> list[str]:
        """``saved_model.pb`` (and ``fingerprint.pb``/``keras_metadata.pb`` when present), then the bundle's files."""
        extra = [os.path.join(self.path, f) for f in _EXTRA_FILES if os.path.isfile(os.path.join(self.path, f))]
        return [self.proto.path, *extra, *(self.stored.files if len(self.stored) else [])]

    @property
    def metadata(self) -> dict[str, Any]:
        """Tags, TensorFlow version, whether the variables are object-based, and the serving signatures."""
        meta = self.proto.meta_graphs
        return {"schema_version": self.proto.schema_version, "meta_graphs": [list(m.tags) for m in meta],
                "tensorflow_version": next((m.tensorflow_version for m in meta if m.tensorflow_version), ""),
                "variables": VARIABLES, "variables_format": self.stored.format,
                "signatures": [s.to_json() for s in self.proto.signatures]}

    def problems(self) -> list[CheckpointProblem]:
        """The bundle's problems, then what the SavedModel's graph declares but the variables do not hold."""
        problems = self.stored.problems()
        where = os.path.basename(self.proto.path)
        try:
            decoded = self._decoded_graph()
        except CheckpointError as exc:
            return [*problems, CheckpointProblem(where, exc.message)]
        if decoded is None:
            return problems
        for key, spec in decoded.variables.items():
            problem = _variable_problem(self.stored.get(key), spec)
            if problem is not None:
                problems.append(CheckpointProblem(key, problem))
        return problems

    def loader_refusals(self) -> list[CheckpointProblem]:
        """The variables' refusals, and a ``saved_model.pb`` nested deeper than TensorFlow's protobuf parser goes."""
        from formats.saved_model.nesting import nesting_refusal
        from formats.saved_model.proto import map_regular_file

        found = self.stored.loader_refusals()
        if not self.proto.path.endswith(".pb"):
            return found
        data = map_regular_file(self.proto.path)
        with memoryview(data) as view:
            refusal = nesting_refusal(view)
        if not isinstance(data, bytes):
            data.close()
        if refusal is not None:
            found.append(CheckpointProblem(os.path.basename(self.proto.path), refusal))
        return found

    def close(self) -> None:
        """Release the bundle's data files."""
        self.stored.close()


def _variable_problem(entry: TensorEntry | None, spec: TensorSpec) -> str | None:
    """Why the stored value cannot be the variable the graph declares (missing, other dtype or shape)."""
    if entry is None:
        return f"the SavedModel declares variable {spec.name!r} here, but {VARIABLES} does not hold it"
    if entry.dtype != spec.dtype:
        return f"variable {spec.name!r} is declared {spec.dtype} but stored as {entry.dtype}"
    if spec.shape is not None and (len(spec.shape) != len(entry.shape)
                                   or any(d >= 0 and d != s for d, s in zip(spec.shape, entry.shape))):
        return f"variable {spec.name!r} is declared with shape {list(spec.shape)} but stored as {list(entry.shape)}"
    return None


def _open_variables(prefix: str) -> Checkpoint:
    """The ``variables/variables`` bundle; an empty checkpoint when the SavedModel has no variables."""
    if not os.path.isfile(prefix + ".index"):
        data = glob.glob(glob.escape(prefix) + ".data-*")
        if data:
            raise CheckpointNotFoundError(prefix + ".index", f"index file missing (needed to read "
                                          f"{os.path.basename(data[0])})")
        return Checkpoint(prefix, FormatName.TF_NAME, {})
    return registry.get_format("tf-bundle").open(prefix)

