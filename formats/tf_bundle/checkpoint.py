"""The :class:`~formats.model.Checkpoint` view of a tensor bundle."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..model import Checkpoint, TensorEntry
from .reader import OBJECT_GRAPH_KEY, BundleReader, RawEntry, dtype_name

if TYPE_CHECKING:
    import numpy as np

__all__ = ["BundleTensor", "BundleCheckpoint", "open_bundle"]


class BundleTensor(TensorEntry):
    """A tensor stored in a bundle; :meth:`read` maps, checks the CRC32C and copies it out."""

    __slots__ = ("raw", "_reader")

    def __init__(self, reader: BundleReader, raw: RawEntry) -> None:
        super().__init__(raw.name, raw.shape, dtype_name(raw.dtype), reader.nbytes(raw))
        self.raw = raw
        self._reader = reader

    def read(self) -> np.ndarray:
        """The value as a numpy array; raises ChecksumError/CorruptCheckpointError on bad data."""
        return self._reader.read(self.raw)


class BundleCheckpoint(Checkpoint):
    """An opened bundle: ``format`` is ``tf-object`` when it holds an object graph, else ``tf-name``."""

    def __init__(self, prefix: str) -> None:
        self.reader = BundleReader(prefix)
        entries = {t.key: t for t in (BundleTensor(self.reader, self.reader.entries[k])
                                      for k in self.reader.visible_keys())}
        fmt = "tf-object" if OBJECT_GRAPH_KEY in entries else "tf-name"
        super().__init__(prefix, fmt, entries)  # type: ignore[arg-type]

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
