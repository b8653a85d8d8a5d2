"""TensorFlow's ``CheckpointReader`` (``tf.train.load_checkpoint``, ``NewCheckpointReader``) over any format ckpt reads.

As TensorFlow's: ``get_variable_to_shape_map`` (key -> list of ints), ``get_variable_to_dtype_map``
(key -> :class:`~formats.tf.dtypes.DType`), ``has_tensor``, ``get_tensor`` (numpy; a scalar as a
numpy scalar, a string as ``bytes``; ``NotFoundError`` for a missing key, worded as TensorFlow's
V1 or V2 reader words it; ``InternalError`` for a variant), ``debug_string()`` (bytes: ``key
(DT_FLOAT) [2,3]`` per line, in key order, a partitioned variable of a bundle listed by its slices
as TensorFlow lists them, one of a V1 checkpoint once with ``, 3 slices`` appended; TensorFlow
prints a V1 checkpoint's lines in hash order). ``get_tensor`` may be called from several threads at once.

Where TensorFlow opens less, this reader opens more, deliberately: a ``.index`` path (TensorFlow
opens it as an empty TF1 table), a ``.data-*`` path, Keras HDF5 and ``.keras`` files, SavedModel
and other checkpoint directories a format claims (TensorFlow raises ``DataLossError`` for these).
A plain directory raises ``DataLossError`` as in TensorFlow. A path with glob characters is taken as
TensorFlow takes it: a V2 prefix when its ``.index``, as a pattern, matches a file, else a V1 pattern
(``model.ckp[t]`` opens the V1 file ``model.ckpt``, even beside a bundle literally named
``model.ckp[t]``, which opens only when no V1 file matches). On a damaged checkpoint it fails
earlier than TensorFlow (when opening, not on the first read) and always with an ``OpError``.
"""
from __future__ import annotations

import os
import threading

from formats.core.errors import CheckpointError, CheckpointNotFoundError
from formats.core.model import FormatName
from formats.io import storage
from formats.tf.checkpoint_management import checkpoint_exists
from formats.tf.dtypes import DType, as_dtype, datatype_name
from formats.tf.errors import DataLossError, InternalError, NotFoundError, OpError, translate

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any
    from formats.core.model import Checkpoint, TensorEntry
    from formats.discover.resolve import Target

__all__ = ["CheckpointReader", "NewCheckpointReader"]

_NOT_NUMPY = {"variant", "resource"}


def _text(value: Any, what: str = "string") -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    if isinstance(value, str):
        return value
    raise TypeError(f"Expected binary or unicode {what}, got {value!r}")


def _not_found(path: str) -> NotFoundError:
    return NotFoundError(None, None, f"Unsuccessful TensorSliceReader constructor: Failed to find any matching "
                                     f"files for {path}")


def open_for_reader(path: str) -> Checkpoint:
    """The checkpoint TensorFlow's reader would open at ``path`` (see the module docstring)."""
    from formats.discover.resolve import claim_directory, resolve

    if not path:
        raise _not_found(path)
    if storage.isdir(path):
        target = claim_directory(path)
        if target is None:
            raise DataLossError(None, None, f"Unable to open table file {path}: FAILED_PRECONDITION: {path}; Is a "
                                "directory: perhaps your file is in a different file format and you need to use a "
                                "different restore operator?")
        return target.open()
    v1 = _v1_pattern(path)
    try:
        if v1 is not None:
            return v1.open()
        return resolve(path).open()
    except CheckpointNotFoundError as exc:
        raise (translate(exc) if checkpoint_exists(path) else _not_found(path)) from None  # a shard missing


def _v1_pattern(path: str) -> Target | None:
    """A path with glob characters, taken as TensorFlow's reader takes it: when ``path + ".index"``, as a
    pattern, matches a file, a V2 prefix (opened by its literal name; an ``OpError`` when that ``.index`` does
    not exist), else a V1 pattern. Returns the V1 checkpoint the pattern names (even when a bundle's literal
    prefix is ``path``), or None: no pattern, a V2 prefix, or no V1 file matches (then the path is resolved
    as any other, so a bundle named ``m[1]`` still opens)."""
    from formats.discover.resolve import Target
    from formats.tf.io import gfile
    from formats.tf_v1.paths import canonical, has_glob

    if not any(c in path for c in "*?["):
        return None
    if gfile.glob(path + ".index"):
        if not gfile.exists(path + ".index"):
            raise OpError(None, None, f"{path}.index; No such file or directory")
        return None
    if storage.is_url(path):
        return None  # V1 checkpoints are read from local files only
    pattern = canonical(path) if has_glob(path) else None
    return Target(str(FormatName.TF_V1), pattern) if pattern is not None else None


class CheckpointReader:
    """``CheckpointReader(path)``: TensorFlow's reader (see the module docstring)."""

    def __init__(self, filepattern: Any) -> None:
        if isinstance(filepattern, os.PathLike):
            filepattern = os.fspath(filepattern)
        path = _text(filepattern)
        try:
            self._ckpt = open_for_reader(path)
        except OpError:
            raise
        except CheckpointError as exc:
            raise translate(exc) from None
        self._lock = threading.Lock()

    @property
    def checkpoint(self) -> Checkpoint:
        """The :class:`formats.Checkpoint` behind the reader."""
        return self._ckpt

    def get_variable_to_shape_map(self) -> dict[str, list[int]]:
        """Key -> shape (a list of ints), for every key TensorFlow lists, in key order."""
        return {k: list(self._ckpt[k].shape) for k in sorted(self._ckpt)}

    def get_variable_to_dtype_map(self) -> dict[str, DType]:
        """Key -> :class:`~formats.tf.dtypes.DType` (equal to ``formats.tf.float32`` and to ``"float32"``)."""
        return {k: as_dtype(self._ckpt[k].dtype) for k in sorted(self._ckpt)}

    def has_tensor(self, tensor_str: Any) -> bool:
        """Whether the checkpoint holds ``tensor_str`` (``str`` or ``bytes``)."""
        return _text(tensor_str) in self._ckpt

    def get_tensor(self, tensor_str: Any) -> Any:
        """The value of ``tensor_str`` as numpy (thread-safe); ``NotFoundError`` if there is none."""
        key = _text(tensor_str)
        entry = self._entry(key)
        if entry.dtype in _NOT_NUMPY:
            raise InternalError(None, None, f"Tensorflow type {as_dtype(entry.dtype).as_datatype_enum} not "
                                "convertible to numpy dtype.")
        try:
            with self._lock:
                value = entry.read()
        except CheckpointError as exc:
            raise translate(exc) from None
        return value[()] if value.ndim == 0 else value

    def _entry(self, key: str) -> TensorEntry:
        if key not in self._ckpt:
            raise NotFoundError(None, None, _missing_key(self._ckpt, key))
        return self._ckpt[key]

    def debug_string(self) -> bytes:
        """``key (DT_FLOAT) [2,3]`` per tensor, one line each, as TensorFlow's ``DebugString``."""
        lines = []
        for entry in self._ckpt.values():
            dt = datatype_name(as_dtype(entry.dtype)).encode()
            try:
                listed = _listed(entry)
            except CheckpointError as exc:
                raise translate(exc) from None
            for raw_key, shape, slices in listed:
                line = b"%s (%s) [%s]" % (raw_key, dt, ",".join(map(str, shape)).encode())
                lines.append((raw_key, line + (b", %d slices" % slices if slices > 1 else b"") + b"\n"))
        return b"".join(line for _, line in sorted(lines))

    def close(self) -> None:
        """Release the checkpoint's files (TensorFlow's reader has no ``close``; this one may be closed)."""
        self._ckpt.close()

    def __enter__(self) -> CheckpointReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<formats.tf CheckpointReader {self._ckpt.path!r}>"


def _missing_key(ckpt: Checkpoint, key: str) -> str:
    """TensorFlow's message for a key the checkpoint lacks: ``TensorSliceReader``'s for a V1 checkpoint,
    ``BundleReader``'s for any other."""
    if ckpt.format == FormatName.TF_V1:
        return f"{key} not found in checkpoint file"
    return f"Key {key} not found in checkpoint"


def _listed(entry: TensorEntry) -> list[tuple[bytes, tuple[int, ...], int]]:
    """How TensorFlow's ``DebugString`` lists an entry, as (key, shape, slices): by its index key, or for
    a partitioned variable of a bundle (whose full entry it skips) by the key and shape of each slice;
    a V1 tensor once, with the number of slices its files store it in (``TensorSliceReader`` appends
    ``, N slices`` when there are more than one)."""
    from formats.tf_bundle.checkpoint import BundleTensor
    from formats.tf_v1.checkpoint import V1Tensor

    if isinstance(entry, BundleTensor) and entry.raw.slices:
        return [(part.key, part.shape, 1) for _, part in entry.bundle.slice_parts(entry.raw)]
    slices = len(entry.info.slices) if isinstance(entry, V1Tensor) else 1
    return [(entry.key.encode("utf-8", "surrogateescape"), tuple(entry.shape), slices)]


def NewCheckpointReader(filepattern: Any) -> CheckpointReader:  # noqa: N802 - TensorFlow's name
    """``tf.compat.v1.train.NewCheckpointReader``: a :class:`CheckpointReader` for ``filepattern``."""
    return CheckpointReader(filepattern)
