"""Read ``saved_model.pb``: its MetaGraphs' tags, serving signatures and object graph, nothing else.

Field numbers are those of TensorFlow's ``saved_model.proto`` (``SavedModel``), ``meta_graph.proto``
(``MetaGraphDef``, ``SignatureDef``, ``TensorInfo``) and ``tensor_shape.proto``. The file is
memory-mapped and walked with :mod:`formats.io.protowire`: the ``graph_def`` (which can be
hundreds of megabytes in TF1 exports) is skipped without being copied; the ``SavedObjectGraph``
is copied out as bytes and decoded only when asked for (:mod:`formats.saved_model.objects`).

Bounds: only regular files are read (a FIFO or ``/dev/zero`` is refused before opening), at most
2 GiB (protobuf's own limit), and every message may hold at most a fixed number of fields.
"""
from __future__ import annotations

import mmap
import os

from formats.concepts.signatures import Signature, TensorSpec
from formats.concepts.tensor_proto import decode_shape
from formats.core import dtypes
from formats.core.errors import CheckpointNotFoundError, CorruptCheckpointError, UnsupportedError
from formats.core.records import field, record
from formats.io import storage
from formats.io.protowire import Message, WireError

__all__ = ["MetaGraph", "SavedModelProto",
           "decode_saved_model", "dtype_name", "spec_shape", "map_regular_file", "MAX_PROTO_BYTES"]

MAX_PROTO_BYTES = 2 << 30
"""Protobuf refuses to parse messages of 2 GiB and more; so does ckpt."""
_MAX_META_GRAPHS = 1 << 10
_MAX_ENTRIES = 1 << 16  # fields of a MetaGraphDef / SignatureDef (signatures, collections, inputs)
_INTERNAL_SIGNATURES = ("__saved_model_init_op", "__saved_model_train_op")


@record
class MetaGraph:
    """One ``MetaGraphDef``: its ``tags``, TensorFlow version, serving signatures and, for TF2
    SavedModels, the serialized ``SavedObjectGraph`` (``object_graph``)."""

    tags: tuple[str, ...] = ()
    tensorflow_version: str = ""
    signatures: list[Signature] = field(default_factory=list)
    object_graph: bytes | None = None


@record
class SavedModelProto:
    """What ckpt reads of a ``saved_model.pb``: the schema version and every MetaGraph."""

    path: str
    schema_version: int = 0
    meta_graphs: list[MetaGraph] = field(default_factory=list)

    @property
    def object_graph(self) -> bytes | None:
        """The first MetaGraph's ``SavedObjectGraph`` (TF2 exports have one MetaGraph), or None (TF1)."""
        return next((m.object_graph for m in self.meta_graphs if m.object_graph is not None), None)

    @property
    def signatures(self) -> list[Signature]:
        """Every serving signature of every MetaGraph (TensorFlow's internal init/train ops left out)."""
        return [s for m in self.meta_graphs for s in m.signatures]


def dtype_name(enum: int) -> str:
    """TensorFlow's name for a DataType number (``float32``), ``unknown(N)`` for others."""
    dt = dtypes.by_enum(enum)
    return dt.name if dt is not None else f"unknown({enum})"


def spec_shape(msg: Message | None) -> tuple[int, ...] | None:
    """A tensor spec's shape field (a ``TensorShapeProto``, :func:`~formats.concepts.tensor_proto.decode_shape`):
    its dims (``-1`` unknown), None for an unknown rank, ``()`` when there is none."""
    if msg is None:
        return ()
    dims, unknown_rank = decode_shape(msg)
    return None if unknown_rank else dims


def map_regular_file(path: str, limit: int = MAX_PROTO_BYTES,
                     too_large: str = "larger than protobuf's 2 GiB limit") -> bytes | mmap.mmap:
    """The bytes of a regular file of less than ``limit`` bytes, memory-mapped (``b""`` when empty);
    a device, pipe or directory is refused before it is opened."""
    try:
        with storage.open_regular(path) as f:
            size = os.fstat(f.fileno()).st_size
            if size >= limit:
                raise UnsupportedError(path, f"{size:,} bytes: {too_large}")
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    except FileNotFoundError:
        raise CheckpointNotFoundError(path, "no such file") from None
    except IsADirectoryError:
        raise CorruptCheckpointError(path, "not a regular file (a device, pipe or directory)") from None
    except OSError as exc:
        raise CheckpointNotFoundError(path, f"cannot read ({exc.strerror})") from None


def decode_saved_model(data: bytes | mmap.mmap, path: str) -> SavedModelProto:
    """Decode a serialized ``SavedModel``; CorruptCheckpointError naming ``path`` when it is not one."""
    try:
        return _decode(memoryview(data), path)
    except (WireError, UnicodeDecodeError) as exc:
        raise CorruptCheckpointError(path, f"not a SavedModel protocol buffer ({exc})") from None


def _decode(view: memoryview, path: str) -> SavedModelProto:
    top = Message(view, max_fields=_MAX_META_GRAPHS + 1)
    out = SavedModelProto(path, top.int64(1))
    for meta in top.messages(2, max_fields=_MAX_ENTRIES):
        out.meta_graphs.append(_meta_graph(meta))
    if not out.meta_graphs:
        raise CorruptCheckpointError(path, "the SavedModel holds no MetaGraph")
    return out


def _meta_graph(msg: Message) -> MetaGraph:
    info = msg.message(1, max_fields=_MAX_ENTRIES)
    tags = tuple(info.texts(4)) if info is not None else ()
    graph = MetaGraph(tags, info.text(5) if info is not None else "")
    for name, raw in msg.map_entries(5):
        if name not in _INTERNAL_SIGNATURES:
            graph.signatures.append(_signature(name, Message(raw, max_fields=_MAX_ENTRIES), tags))
    graph.signatures.sort(key=lambda s: s.name)
    views = msg.views(7)
    if views:
        graph.object_graph = b"".join(views)
    return graph


def _signature(name: str, msg: Message, tags: tuple[str, ...]) -> Signature:
    inputs = tuple(sorted((_tensor_info(k, v) for k, v in msg.map_entries(1)), key=lambda s: s.name))
    outputs = tuple(sorted((_tensor_info(k, v) for k, v in msg.map_entries(2)), key=lambda s: s.name))
    return Signature(name, msg.text(3), inputs, outputs, tags)


def _tensor_info(name: str, raw: memoryview) -> TensorSpec:
    """A ``TensorInfo``: the graph tensor's name (dense) or its values tensor (sparse), dtype, shape;
    a composite tensor (ragged, ...) has no dtype of its own and is ``composite``."""
    msg = Message(raw, max_fields=64)
    tensor = msg.text(1)
    if not tensor and msg.has(4):  # CooSparse: name the values tensor
        sparse = msg.message(4, max_fields=16)
        tensor = sparse.text(1) if sparse is not None else ""
    if msg.has(5) and not msg.has(2):
        return TensorSpec(name, "composite", spec_shape(msg.message(3)) if msg.has(3) else None, tensor)
    return TensorSpec(name, dtype_name(msg.int64(2)), spec_shape(msg.message(3, max_fields=1 << 12)), tensor)
