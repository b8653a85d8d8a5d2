"""Open a Keras/HDF5 checkpoint of any kind :mod:`formats.keras_h5.format` sniffs (:data:`KINDS`)."""
from __future__ import annotations

import os

from formats.core.errors import UnsupportedError
from formats.core.model import Checkpoint, FormatName
from formats.keras_h5.checkpoint import build_checkpoint

__all__ = ["open_keras", "KINDS"]

KINDS = ("hdf5", "zip", "dir", "sharded")
"""What :func:`open_keras` opens: an HDF5 file, a ``.keras`` archive, a model directory, a ``.weights.json``."""


def open_keras(path: str, kind: str) -> Checkpoint:
    """Open a Keras/HDF5 checkpoint of one of :data:`KINDS`."""
    from formats.keras_h5.source import JSON_MEMBERS, WEIGHTS_MEMBER, open_hdf5_file, open_keras_dir, open_keras_zip

    if kind == "sharded":
        from formats.keras_h5.shards import open_sharded

        return open_sharded(path)
    openers = {"hdf5": open_hdf5_file, "zip": open_keras_zip, "dir": open_keras_dir}
    if kind not in openers:
        raise UnsupportedError(path, f"not a Keras/HDF5 file (kind {kind!r})")
    image = openers[kind](path)
    weights, files = path, [path]
    if kind == "dir":
        weights = os.path.join(path, WEIGHTS_MEMBER)
        files = [f for f in (os.path.join(path, n) for n in (*JSON_MEMBERS, WEIGHTS_MEMBER)) if os.path.isfile(f)]
    fmt = {"zip": FormatName.KERAS_ZIP, "dir": FormatName.KERAS3_DIR}.get(kind)
    return build_checkpoint(path, [(weights, image)], files, fmt)
