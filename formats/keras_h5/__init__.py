"""Keras weight files read into the common model: Keras 2 ``.h5`` (weights or full model), Keras 3
``.weights.h5``, Keras 3 ``.keras`` archives (read in place), unzipped Keras 3 model directories,
sharded Keras 3 weights (``*.weights.json`` + shards), and any other HDF5 file.

h5py is imported only when a file is opened, never when :mod:`formats` is imported, and libhdf5 only
ever runs on a file in an isolated child process (:mod:`formats.keras_h5.image`).
"""
from __future__ import annotations

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from formats.keras_h5.checkpoint import build_checkpoint
    from formats.keras_h5.opening import KINDS, open_keras
    from formats.keras_h5.reader import H5Tensor, KerasCheckpoint

__all__ = ["open_keras", "build_checkpoint", "KerasCheckpoint", "H5Tensor", "KINDS"]


def __getattr__(name: str) -> object:
    """The package's names from the modules that define them, imported on first use (so sniffing a path with
    :mod:`formats.keras_h5.format` loads neither the reader nor h5py). No module of the package imports
    these back from here: they import the defining modules."""
    if name in ("open_keras", "KINDS"):
        from formats.keras_h5 import opening as module
    elif name == "build_checkpoint":
        from formats.keras_h5 import checkpoint as module  # type: ignore[no-redef]
    elif name in ("KerasCheckpoint", "H5Tensor"):
        from formats.keras_h5 import reader as module  # type: ignore[no-redef]
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(module, name)
