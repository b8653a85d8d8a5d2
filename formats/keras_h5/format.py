"""The Keras formats' registry entries.

- ``keras-h5`` (:data:`FORMAT`): Keras 2 ``.h5``, Keras 3 ``.weights.h5``, ``.keras`` archives and any
  other HDF5 file.
- ``keras3-sharded`` (:data:`SHARDED_FORMAT`): a ``*.weights.json`` shard index and its shards.
- ``keras3-dir`` (:data:`DIRECTORY_FORMAT`): an unzipped Keras 3 model directory (``config.json``,
  ``metadata.json``, ``model.weights.h5``), as ``saving_lib.save_model(zipped=False)`` writes it.

``keras-h5`` writes Keras 2 ``.h5`` weights, Keras 3 weights (``.weights.h5``, sharded, ``.keras`` onto a
template's config) and whole Keras 3 models (``keras``: a ``.keras`` archive whose config a planner made).
"""
from __future__ import annotations

import os

from formats.core.model import Checkpoint, FormatName
from formats.io import storage
from formats.io.model_dirs import ModelDirectoryFormat

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from formats.core.format import Row
    from formats.io.writing import WriteReport

__all__ = ["FORMAT", "SHARDED_FORMAT", "DIRECTORY_FORMAT", "KerasFormat", "ShardedFormat", "DirectoryFormat",
           "HDF5_MAGIC", "sniff_kind", "is_shard_index", "is_model_directory"]

HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
_KERAS_MEMBERS = {"model.weights.h5", "config.json", "model.weights.npz", "model.weights.json"}
_INDEX_PROBE = 1 << 20
_WEIGHT_MAP = rb'"weight_map"\s*:'
"""What a shard index holds near its start (a pattern: ``re`` is imported only when a ``.json`` file is sniffed)."""


def _has_userblock(path: str) -> bool:
    with open(path, "rb") as f:
        for offset in (512, 1024, 2048, 4096):
            f.seek(offset)
            if f.read(8) == HDF5_MAGIC:
                return True
    return False


def _keras_zip(path: str) -> bool:
    """A zip holding a Keras model's members (or a damaged zip named ``.keras``, so opening says why)."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as zf:
            return not _KERAS_MEMBERS.isdisjoint(zf.namelist())
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, RuntimeError, NotImplementedError):
        return path.endswith(".keras")


def sniff_kind(path: str) -> str | None:
    """``hdf5`` or ``zip`` for a local file the ``keras-h5`` format reads, else None (``.npz`` zips are
    the ``npz`` format's)."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
            size = os.fstat(f.fileno()).st_size
        if head == HDF5_MAGIC or (size > 512 and _has_userblock(path)):
            return "hdf5"
    except OSError:
        return None
    from formats.io.zipped import ZIP_MAGICS  # zlib and threading only when a file is not HDF5

    if head[:4] in ZIP_MAGICS and not path.endswith(".npz") and _keras_zip(path):
        return "zip"
    return None


def is_shard_index(path: str) -> bool:
    """Whether a local file is a Keras shard index: a ``.json`` file with a ``weight_map`` near its start."""
    if not path.endswith(".json") or storage.is_url(path) or not os.path.isfile(path):
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(_INDEX_PROBE)
    except OSError:
        return False
    import re

    return head.lstrip()[:1] == b"{" and re.search(_WEIGHT_MAP, head) is not None


def is_model_directory(path: str) -> bool:
    """Whether a local directory is an unzipped Keras model (``config.json`` and its weights file)."""
    if storage.is_url(path) or not os.path.isdir(path):
        return False
    join = os.path.join
    return os.path.isfile(join(path, "config.json")) and (os.path.isfile(join(path, "model.weights.h5"))
                                                          or os.path.isfile(join(path, "model.weights.npz")))


def _named_shards(directory: str) -> set[str]:
    """Files in ``directory`` that a shard index beside them names (they are parts, not checkpoints)."""
    from formats.core.errors import CheckpointError
    from formats.keras_h5.shards import read_shard_map

    named: set[str] = set()
    for index in SHARDED_FORMAT.find(directory):
        try:
            named.update(read_shard_map(index).shards)
        except CheckpointError:  # a damaged index still owns the shards Keras would have named
            import re

            stem = os.path.basename(index)[:-len(".json")].removesuffix(".weights")
            named.update(n for n in os.listdir(directory) if re.fullmatch(re.escape(stem) + r"_\d{5}\.weights\.h5", n))
    return named


class KerasFormat:
    """Keras weights and models in HDF5 (read with h5py) and ``.keras`` zip archives (read in place)."""

    name = "keras-h5"
    layouts = (FormatName.KERAS2_H5.value, FormatName.KERAS2_MODEL_H5.value, FormatName.KERAS3_H5.value,
               FormatName.KERAS_ZIP.value, FormatName.HDF5.value)
    writes = (FormatName.KERAS2_H5.value, FormatName.KERAS3_H5.value, FormatName.KERAS_MODEL.value)
    rewrites = {FormatName.KERAS_ZIP.value: FormatName.KERAS3_H5.value}
    max_shard_size = (FormatName.KERAS3_H5.value,)

    def write(self, output: str, rows: Sequence[Row], **how: Any) -> WriteReport:
        """Write Keras weights (:func:`formats.keras_h5.output.write`)."""
        from formats.keras_h5.output import write

        return write(output, rows, **how)
    description = "Keras HDF5 weights (.h5, .weights.h5), .keras archives, any HDF5 file"
    suffixes = (".h5", ".hdf5", ".keras")

    def sniff(self, path: str) -> bool:
        """Whether ``path`` is a local HDF5 file or a ``.keras`` zip archive."""
        return not storage.is_url(path) and os.path.isfile(path) and sniff_kind(path) is not None

    def find(self, directory: str) -> list[str]:
        """HDF5 files and archives directly inside a local ``directory`` (by name; content is checked on
        open), leaving out the shards of sharded weights and the weights file of a model directory."""
        if storage.is_url(directory):
            return []
        found = [f for f in storage.glob(directory, "*") if f.endswith(self.suffixes) and os.path.isfile(f)]
        if not found:
            return found
        parts = _named_shards(directory)
        if is_model_directory(directory):
            parts.add("model.weights.h5")
        return [f for f in found if os.path.basename(f) not in parts]

    def open(self, path: str) -> Checkpoint:
        """Open the file (h5py is imported now, not before)."""
        from formats.core.errors import NotACheckpointError
        from formats.core.foreign import describe_file
        from formats.keras_h5.opening import open_keras

        kind = sniff_kind(path)
        if kind is None:
            raise NotACheckpointError(path, describe_file(path))
        return open_keras(path, kind)


class ShardedFormat:
    """Sharded Keras 3 weights: ``save_weights(...weights.json, max_shard_size=...)``."""

    name = FormatName.KERAS3_SHARDED.value
    rewrites = {FormatName.KERAS3_SHARDED.value: FormatName.KERAS3_H5.value}
    description = "Keras 3 sharded weights: a .weights.json weight_map and its _NNNNN.weights.h5 shards"
    suffixes = (".weights.json",)

    def sniff(self, path: str) -> bool:
        """Whether ``path`` is a shard index."""
        return is_shard_index(path)

    def find(self, directory: str) -> list[str]:
        """Shard indexes directly inside a local ``directory``."""
        if storage.is_url(directory):
            return []
        return [f for f in storage.glob(directory, "*.json") if is_shard_index(f)]

    def open(self, path: str) -> Checkpoint:
        """Open the index and every shard it names (each checked to exist)."""
        from formats.keras_h5.opening import open_keras

        return open_keras(path, "sharded")


class DirectoryFormat(ModelDirectoryFormat):
    """An unzipped Keras 3 model: a directory with ``config.json``, ``metadata.json``, ``model.weights.h5``."""

    name = FormatName.KERAS3_DIR.value
    rewrites = {FormatName.KERAS3_DIR.value: FormatName.KERAS3_H5.value}
    description = "Keras 3 model directory: config.json, metadata.json, model.weights.h5"
    suffixes = ()
    claims_directories = True

    marker_files = ("config.json", "metadata.json")

    def is_checkpoint_dir(self, path: str) -> bool:
        """Whether ``path`` is a Keras 3 model directory."""
        return is_model_directory(path)

    def open(self, path: str) -> Checkpoint:
        """Open the directory's weights with its config."""
        from formats.keras_h5.opening import open_keras

        return open_keras(path, "dir")


FORMAT = KerasFormat()
SHARDED_FORMAT = ShardedFormat()
DIRECTORY_FORMAT = DirectoryFormat()
