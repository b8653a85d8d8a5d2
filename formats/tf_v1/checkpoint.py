"""The :class:`~formats.core.model.Checkpoint` view of a V1 checkpoint: one entry per tensor, its value
assembled from every slice the files store (partitioned variables and complex64, which TensorFlow's
own V1 reader refuses, included)."""
from __future__ import annotations

import math
import os

from formats.concepts.tensor_proto import decode_values, min_value_bytes, value_field
from formats.core import dtypes
from formats.core.errors import CorruptCheckpointError, UnsupportedError
from formats.core.model import Checkpoint, CheckpointProblem, TensorEntry, array_problem
from formats.io.protowire import WireError, parse_fields
from formats.tf_v1.reader import SliceRef, TensorInfo, V1Reader
from formats.concepts.tiling import Box, format_extents, slice_box, tiling_problem, volume

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any
    import numpy as np

    from formats.concepts.roles import NameRole

__all__ = ["V1Tensor", "V1Checkpoint"]

_DROP_AFTER = 1 << 20
"""After reading a value this large, the file's mapped pages are dropped (memory stays near one tensor)."""


class V1Tensor(TensorEntry):
    """A tensor of a V1 checkpoint. ``nbytes`` is the size of the value in memory (for strings, of the
    stored values); ``name`` is the key, and ``role`` follows TF1's naming conventions."""

    __slots__ = ("info", "_reader", "_labels", "_problem", "_string_bytes")

    def __init__(self, reader: V1Reader, info: TensorInfo, labels: _Labels) -> None:
        # Not TensorEntry.__init__: role and the slot fields are lazy properties here.
        self.key = info.key
        self.shape = info.shape
        self.dtype = dtypes.name_of(info.dtype)
        self.info = info
        self._reader = reader
        self._labels = labels
        self._problem: str | None | bool = False  # False: not computed yet
        self._string_bytes: int | None = None

    @property
    def nbytes(self) -> int:  # type: ignore[override]
        """Bytes of the value: elements x item size, for strings the stored bytes (read on first use)."""
        dt = dtypes.by_enum(self.info.dtype)
        if dt is not None and dt.fixed_width:
            return math.prod(self.shape) * dt.itemsize
        if self._string_bytes is None:
            self._string_bytes = self._stored_bytes()
        return self._string_bytes

    def _stored_bytes(self) -> int:
        try:
            return sum(len(self._reader.slice_values(self.info, ref)) for ref in self.info.slices)
        except CorruptCheckpointError:
            return 0

    @property
    def name(self) -> str:  # type: ignore[override]
        """The TF1 variable name: the key itself."""
        return self.key

    @property
    def role(self) -> str:  # type: ignore[override]
        """``variable``, ``slot`` or ``optimizer``, from TF1's naming conventions."""
        return str(self._labels.get(self.key).role)

    @property
    def slot_of(self) -> str | None:  # type: ignore[override]
        """For a slot (``kernel/Adam``): the key of its variable."""
        return self._labels.get(self.key).slot_of

    @property
    def optimizer(self) -> str | None:  # type: ignore[override]
        """For a slot: the TF1 optimizer that made it."""
        return self._labels.get(self.key).optimizer

    @property
    def slot_name(self) -> str | None:  # type: ignore[override]
        """For a slot: its name (``m``, ``v``, ``accumulator``...)."""
        return self._labels.get(self.key).slot_name

    @property
    def files(self) -> tuple[str, ...]:
        """The files holding this tensor's slices."""
        return tuple(self._reader.paths[i] for i in sorted({ref.file for ref in self.info.slices}))

    def problem(self) -> str | None:
        """Why the slices cannot make up the declared shape (outside it, overlapping, a gap), else None."""
        if self._problem is False:
            self._problem = tiling_problem(self.shape, [ref.extents for ref in self.info.slices])
        return self._problem  # type: ignore[return-value]

    def read(self) -> np.ndarray:
        """The whole value, assembled from its slices; every slice's element count is checked against
        the bytes it is stored in before anything is allocated for the whole."""
        import numpy as np

        dt = self._dtype()
        problem = self.problem()
        if problem is not None:
            raise CorruptCheckpointError(self._where(), f"tensor {self.key!r}: {problem}")
        boxes = [slice_box(self.shape, ref.extents) for ref in self.info.slices]  # they tile the shape
        parts = [self._bounded_values(ref, box, dt) for ref, box in zip(self.info.slices, boxes)]
        unfit = array_problem(self.shape, dt.itemsize)  # the stored values are plausible; can numpy hold them?
        if unfit is not None:
            raise UnsupportedError(self._where(), f"tensor {self.key!r} has {unfit}")
        out = np.empty(self.shape, dtype=dt.numpy())
        for ref, box, data in zip(self.info.slices, boxes, parts):
            values = self._values(ref, data, dt, volume(box))
            if self.shape:
                out[tuple(slice(start, stop) for start, stop in box)] = values.reshape([b - a for a, b in box])
            else:  # a scalar: the element itself (an object array would otherwise hold a 0-d array)
                out[()] = values[0]
        if out.nbytes >= _DROP_AFTER:
            self._reader.drop_pages()
        return out

    def _dtype(self) -> dtypes.DType:
        dt = dtypes.by_enum(self.info.dtype)
        if dt is None or dt.numpy_name is None or value_field(dt.enum) is None:
            raise UnsupportedError(self._where(), f"tensor {self.key!r} has dtype {self.dtype}, "
                                   "which V1 checkpoints cannot hold values of")
        return dt

    def _where(self) -> str:
        return self.files[0] if self.files else self._reader.paths[0]

    def _bounded_values(self, ref: SliceRef, box: Box, dt: dtypes.DType) -> Any:
        """The stored ``TensorProto`` of one slice, refused when it is too short to hold the slice."""
        data = self._reader.slice_values(self.info, ref)
        need = volume(box)
        if need * min_value_bytes(dt.enum) > len(data):
            raise CorruptCheckpointError(
                self._reader.paths[ref.file], f"tensor {self.key!r}: slice {format_extents(ref.extents)} "
                f"needs {need} values, but only {len(data)} bytes are stored for it")
        return data

    def _values(self, ref: SliceRef, data: Any, dt: dtypes.DType, need: int) -> np.ndarray:
        where = self._reader.paths[ref.file]
        try:
            values = decode_values(parse_fields(data), dt)
        except WireError as exc:
            raise CorruptCheckpointError(where, f"tensor {self.key!r}: slice {format_extents(ref.extents)}: "
                                         f"corrupt TensorProto ({exc})") from None
        if values.size != need:
            raise CorruptCheckpointError(where, f"tensor {self.key!r}: slice {format_extents(ref.extents)} "
                                         f"holds {values.size} values, its extent needs {need}")
        return values


class _Labels:
    """Roles of every key from TF1's naming conventions, worked out once on first request."""

    def __init__(self, keys: list[str]) -> None:
        self._keys = keys
        self._roles: dict[str, NameRole] | None = None

    def get(self, key: str) -> NameRole:
        """The role of one key."""
        if self._roles is None:
            from formats.concepts.roles import classify_names

            self._roles = classify_names(self._keys)
        return self._roles[key]


_V1_READER_DTYPES = frozenset({1, 2, 3, 4, 5, 6, 7, 9, 10})
"""The DataTypes TensorFlow's ``TensorSliceReader::GetTensor`` copies out (float, double, int32, uint8, int16, int8,
string, int64, bool); for any other it answers "Data type not supported" (checked against TensorFlow 2.21)."""


class V1Checkpoint(Checkpoint):
    """An opened V1 checkpoint: one file, or every file a sharded pattern matches (``format`` ``tf-v1``)."""

    def __init__(self, path: str, files: list[str]) -> None:
        self.reader = V1Reader(files)
        infos = sorted(self.reader.tensors.values(), key=lambda i: i.name)
        labels = _Labels([i.key for i in infos])
        super().__init__(path, "tf-v1", {i.key: V1Tensor(self.reader, i, labels) for i in infos})

    @property
    def files(self) -> list[str]:
        """Every file of the checkpoint."""
        return list(self.reader.paths)

    @property
    def metadata(self) -> dict[str, Any]:
        """The number of files and the ``VersionDef`` of the first."""
        meta = self.reader.metas[0]
        return {"files": len(self.reader.paths), "producer": meta.producer, "min_consumer": meta.min_consumer}

    def problems(self) -> list[CheckpointProblem]:
        """Every table block's checksum and structure, and each tensor's slice coverage."""
        found = []
        for table in self.reader.tables:
            for i, block in enumerate(table.blocks):
                try:
                    table.entries(i)
                except CorruptCheckpointError as exc:
                    found.append(CheckpointProblem(os.path.basename(table.path), exc.message))
                if block.size >= _DROP_AFTER:
                    self.reader.drop_pages()
        for key, entry in self.items():
            problem = entry.problem()
            if problem is not None:
                found.append(CheckpointProblem(key, problem))
        return found

    def loader_refusals(self) -> list[CheckpointProblem]:
        """What TensorFlow's V1 reader (``tf.train.load_checkpoint``: ``TensorSliceReader``) refuses although ckpt
        reads it: a dtype outside the few it copies out, a variable stored as slices (``TensorSliceReader`` returns
        only a variable saved whole, as one full slice), a name that is not UTF-8."""
        found = []
        for key, entry in self.items():
            if entry.info.dtype not in _V1_READER_DTYPES:
                found.append(CheckpointProblem(key, f"dtype {entry.dtype}: TensorFlow's V1 reader (tf.train.load_checkpoint) "
                                          "refuses it (\"Data type not supported\")"))
            if len(entry.info.slices) != 1 or any(length >= 0 for _, length in entry.info.slices[0].extents):
                found.append(CheckpointProblem(key, f"stored in {len(entry.info.slices)} slice(s) (a partitioned variable): "
                                          "TensorFlow's V1 reader (tf.train.load_checkpoint) refuses to return it "
                                          "(\"Sliced checkpoints are not supported\")"))
            if key.encode("utf-8", "surrogateescape") != key.encode("utf-8", "replace"):
                found.append(CheckpointProblem(key, "the name is not UTF-8: TensorFlow's V1 reader cannot parse the file's "
                                          "metadata (protobuf string fields are UTF-8) and refuses the whole file"))
        return found

    def close(self) -> None:
        """Unmap the files."""
        self.reader.close()
