"""Keras weight files read into the common model: Keras 2 ``.h5`` (weights or full model), Keras 3
``.weights.h5``, Keras 3 ``.keras`` archives (read in place), and any other HDF5 file.

h5py is imported only when a file is opened, never when :mod:`formats` is imported.
"""
from __future__ import annotations

from typing import Any

from formats.core.errors import CheckpointError, UnsupportedError
from formats.core.model import Checkpoint, TensorEntry
from formats.keras_h5.reader import H5Tensor, KerasCheckpoint, tensor_dtype, wrap_errors

__all__ = ["open_keras", "KerasCheckpoint", "H5Tensor"]

_H5_ERRORS = (OSError, ValueError, KeyError, RuntimeError, TypeError, IndexError)


def open_keras(path: str, kind: str) -> Checkpoint:
    """Open a Keras/HDF5 file; ``kind`` is ``hdf5`` (a file) or ``zip`` (a ``.keras`` archive)."""
    from formats.keras_h5.source import open_hdf5_file, open_keras_zip

    if kind not in ("hdf5", "zip"):
        raise UnsupportedError(path, f"not a Keras/HDF5 file (kind {kind!r})")
    image = open_keras_zip(path) if kind == "zip" else open_hdf5_file(path)
    try:
        return _build(path, image)
    except CheckpointError:
        image.close()
        raise
    except _H5_ERRORS as exc:
        image.close()
        raise wrap_errors(path, exc) from None


def _build(path: str, image: Any) -> KerasCheckpoint:
    from formats.keras_h5.layouts import describe, walk

    config = image.extras.get("config.json")
    datasets, groups = walk(image.file)
    layout = describe(image.file, datasets, groups, config)
    entries: dict[str, TensorEntry] = {}
    skipped: dict[str, str] = {}
    for key, info in layout.described.items():
        ds = datasets[key]
        dtype = tensor_dtype(ds)
        if dtype is None:
            skipped[key] = f"HDF5 type {ds.dtype} has no TensorFlow dtype"
            continue
        entries[key] = H5Tensor(key, ds, dtype[0], dtype[1], image.size, path, info.name, info.role,
                                slot_of=info.slot_of, slot_name=info.slot_name, optimizer=info.optimizer)
    fmt = "keras-zip" if image.container == "zip" else layout.kind
    return KerasCheckpoint(path, fmt, entries, image, _metadata(layout, image, skipped),
                           layout.problems + image.notes)


def _metadata(layout: Any, image: Any, skipped: dict[str, str]) -> dict[str, Any]:
    meta: dict[str, Any] = {"layout": layout.kind}
    meta.update({k: v for k, v in layout.metadata.items() if v is not None})
    about = image.extras.get("metadata.json")
    if isinstance(about, dict):
        meta.update({k: v for k, v in about.items() if k not in meta})
    config = image.extras.get("config.json")
    if config is not None:
        meta["model_config"] = config
    if skipped:
        meta["skipped"] = skipped
    return meta
