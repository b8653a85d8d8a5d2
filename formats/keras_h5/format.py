"""The ``keras-h5`` format's registry entry: Keras 2 ``.h5``, Keras 3 ``.weights.h5``, ``.keras`` archives
and any other HDF5 file."""
from __future__ import annotations

import os

from formats.core.model import Checkpoint
from formats.io import storage

__all__ = ["FORMAT", "KerasFormat", "HDF5_MAGIC", "sniff_kind"]

HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
_ZIP_MAGIC = b"PK\x03\x04"


def _has_userblock(path: str) -> bool:
    with open(path, "rb") as f:
        for offset in (512, 1024, 2048, 4096):
            f.seek(offset)
            if f.read(8) == HDF5_MAGIC:
                return True
    return False


def sniff_kind(path: str) -> str | None:
    """``hdf5`` or ``zip`` for a local file this format reads, else None."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
            size = os.fstat(f.fileno()).st_size
        if head == HDF5_MAGIC or (size > 512 and _has_userblock(path)):
            return "hdf5"
    except OSError:
        return None
    if head.startswith(_ZIP_MAGIC) and not path.endswith(".npz"):
        return "zip"
    return None


class KerasFormat:
    """Keras weights and models in HDF5 (read with h5py) and ``.keras`` zip archives (read in place)."""

    name = "keras-h5"
    description = "Keras HDF5 weights (.h5, .weights.h5), .keras archives, any HDF5 file"
    suffixes = (".h5", ".hdf5", ".keras")

    def sniff(self, path: str) -> bool:
        """Whether ``path`` is a local HDF5 file or a ``.keras`` zip archive."""
        return not storage.is_url(path) and os.path.isfile(path) and sniff_kind(path) is not None

    def find(self, directory: str) -> list[str]:
        """HDF5 files and archives directly inside a local ``directory`` (by name; content is checked on open)."""
        if storage.is_url(directory):
            return []
        return [f for f in storage.glob(directory, "*") if f.endswith(self.suffixes) and os.path.isfile(f)]

    def open(self, path: str) -> Checkpoint:
        """Open the file (h5py is imported now, not before)."""
        from formats.core.errors import NotACheckpointError
        from formats.core.foreign import describe_file
        from formats.keras_h5 import open_keras

        kind = sniff_kind(path)
        if kind is None:
            raise NotACheckpointError(path, describe_file(path))
        return open_keras(path, kind)


FORMAT = KerasFormat()
