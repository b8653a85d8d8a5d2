"""An HDF5 file's structure as the isolated probe reported it (``probe.describe_file``): groups with
their Keras attributes, datasets with their type and storage. Nothing here calls libhdf5.

The probe's JSON is checked field by field while it is turned into these objects, so a bad answer is
a :class:`~formats.core.errors.CorruptCheckpointError`, never an exception from deeper down.
"""
from __future__ import annotations

import base64
import binascii
import math

from formats.core.bounded_json import load_json
from formats.core.errors import CorruptCheckpointError
from formats.core.records import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Tree", "Group", "DatasetInfo", "Numeric", "AttrError", "parse_tree", "MAX_RANK"]

MAX_RANK = 32
"""HDF5's own limit on dataspace rank."""


@record(frozen=True)
class Numeric:
    """A numeric attribute (not read: only its type and size are known)."""

    dtype: str
    size: int


@record(frozen=True)
class AttrError:
    """An attribute libhdf5 could not read."""

    message: str


@record
class Group:
    """An HDF5 group: its path (``""`` for the root) and Keras attributes (text, list of text,
    :class:`Numeric` or :class:`AttrError`); ``file`` is the root group, as in h5py."""

    path: str
    attrs: dict[str, Any]
    file: Group | None = None


@record
class DatasetInfo:
    """An HDF5 dataset: type, shape and where its bytes are (see ``probe._dataset``)."""

    path: str
    shape: tuple[int, ...] | None = None
    np: str = "|V1"               # numpy type string of the values h5py would return
    text: str = ""                # the type as text, for messages
    tf: str | None = None         # TensorFlow dtype name; None when skipped
    view: str | None = None       # "bfloat16": stored as 2-byte words, viewed as bfloat16
    skip: str | None = None       # why it has no TensorFlow dtype
    vlen: bool = False            # variable-length strings
    raw: bool = False             # stored bytes are numpy's bytes of ``np``
    layout: str = "other"         # contiguous, chunked, compact, virtual, external
    stored: int = 0               # bytes allocated in the file
    offset: int | None = None     # contiguous: address of the first byte (None: never written)
    chunk: tuple[int, ...] | None = None
    filters: list[tuple[int, int, tuple[int, ...]]] = field(default_factory=list)
    fill: bytes | None = None     # a user-defined fill value, as stored
    compact: bytes | None = None  # a compact dataset's bytes
    error: str | None = None      # why the probe could not describe it

    @property
    def dtype(self) -> Any:
        """The numpy dtype of the stored values."""
        import numpy as np

        return np.dtype(self.np)

    @property
    def elements(self) -> int:
        """Number of elements (1 for a scalar)."""
        return math.prod(self.shape or ())


class Tree:
    """Groups and datasets by path, in the file's visiting order; ``root`` is the group at ``""``."""

    def __init__(self, groups: dict[str, Group], datasets: dict[str, DatasetInfo]) -> None:
        self.groups = groups
        self.datasets = datasets
        self.root = groups.get("") or Group("", {})
        for group in groups.values():
            group.file = self.root

    @property
    def attrs(self) -> dict[str, Any]:
        """The root group's attributes."""
        return self.root.attrs


def parse_tree(raw: bytes, path: str, max_bytes: int) -> Tree:
    """The probe's JSON answer as a :class:`Tree`."""
    doc = load_json(raw, path, "the HDF5 structure", max_bytes=max_bytes, max_depth=8)
    if not isinstance(doc, dict) or not isinstance(doc.get("groups"), list) or not isinstance(doc.get("datasets"), list):
        raise _bad(path, "no groups/datasets")
    groups: dict[str, Group] = {}
    for item in doc["groups"]:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str) and isinstance(item[1], dict)):
            raise _bad(path, "group")
        groups.setdefault(item[0], Group(item[0], {str(k): _attr(v, path) for k, v in item[1].items()}))
    datasets: dict[str, DatasetInfo] = {}
    for item in doc["datasets"]:
        info = _dataset(item, path)
        datasets.setdefault(info.path, info)
    return Tree(groups, datasets)


def _bad(path: str, what: str) -> CorruptCheckpointError:
    return CorruptCheckpointError(path, f"the HDF5 structure reported by the isolated reader is malformed ({what})")


def _attr(value: Any, path: str) -> Any:
    if not isinstance(value, dict):
        raise _bad(path, "attribute")
    if "s" in value and isinstance(value["s"], list) and all(isinstance(s, str) for s in value["s"]):
        return value["s"][0] if value.get("scalar") and len(value["s"]) == 1 else list(value["s"])
    if isinstance(value.get("n"), str) and _is_int(value.get("size")):
        return Numeric(value["n"], value["size"])
    if isinstance(value.get("error"), str):
        return AttrError(value["error"])
    raise _bad(path, "attribute")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _ints(value: Any, path: str, what: str) -> tuple[int, ...]:
    if not isinstance(value, list) or len(value) > MAX_RANK or not all(_is_int(v) for v in value):
        raise _bad(path, what)
    return tuple(value)


def _bytes(value: Any, path: str, what: str) -> bytes | None:
    if value is None:
        return None
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, TypeError, ValueError):
        raise _bad(path, what) from None


def _dataset(item: Any, path: str) -> DatasetInfo:
    if not isinstance(item, dict) or not isinstance(item.get("path"), str):
        raise _bad(path, "dataset")
    info = DatasetInfo(item["path"])
    if isinstance(item.get("error"), str):
        info.error = item["error"]
        return info
    shape = item.get("shape")
    info.shape = None if shape is None else _ints(shape, path, "shape")
    for name, kind in (("np", str), ("text", str), ("tf", str), ("view", str), ("skip", str), ("layout", str)):
        value = item.get(name)
        if value is not None and not isinstance(value, kind):
            raise _bad(path, name)
        if value is not None:
            setattr(info, name, value)
    info.vlen, info.raw = item.get("vlen") is True, item.get("raw") is True
    if not _is_int(item.get("stored", 0)):
        raise _bad(path, "stored")
    info.stored = item.get("stored", 0)
    offset = item.get("offset")
    if offset is not None and not _is_int(offset):
        raise _bad(path, "offset")
    info.offset = offset
    if item.get("chunk") is not None:
        info.chunk = _ints(item["chunk"], path, "chunk")
    filters = item.get("filters") or []
    if not isinstance(filters, list):
        raise _bad(path, "filters")
    for f in filters:
        if not (isinstance(f, list) and len(f) == 3 and _is_int(f[0]) and _is_int(f[1])):
            raise _bad(path, "filter")
        info.filters.append((f[0], f[1], _ints(f[2], path, "filter values")))
    info.fill = _bytes(item.get("fill"), path, "fill")
    info.compact = _bytes(item.get("compact"), path, "compact")
    _check_type(info, path)
    return info


def _check_type(info: DatasetInfo, path: str) -> None:
    import numpy as np

    try:
        dtype = np.dtype(info.np)
    except (TypeError, ValueError):
        raise _bad(path, "type") from None
    if dtype.kind == "O" and not info.vlen and info.skip is None:
        raise _bad(path, "type")
