"""The ``npz`` format's registry entry: NumPy ``.npz`` archives (``numpy.savez``, ``ckpt convert --to npz``,
``ckpt extract``), read without pickle."""
from __future__ import annotations

import os

from formats.core.model import Checkpoint, FormatName
from formats.io import storage
from formats.io.zipped import is_zip

__all__ = ["FORMAT", "NpzFormat"]


class NpzFormat:
    """``.npz`` zip archives of ``.npy`` members."""

    name = FormatName.NPZ.value
    description = "NumPy .npz archive (numpy.savez, ckpt convert --to npz), read without pickle"
    suffixes = (".npz",)

    def sniff(self, path: str) -> bool:
        """Whether ``path`` is a local zip archive named ``.npz``."""
        return (path.endswith(".npz") and not storage.is_url(path) and os.path.isfile(path) and is_zip(path))

    def open(self, path: str) -> Checkpoint:
        """Open the archive (members are read when asked)."""
        from formats.npz import open_npz

        return open_npz(path)


FORMAT = NpzFormat()
