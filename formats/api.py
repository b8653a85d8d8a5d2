"""The public entry points: :func:`open_checkpoint` and the TensorFlow drop-ins.

``load_checkpoint``, ``list_variables`` and ``CheckpointReader`` are :mod:`formats.tf`'s
(``tf.train.load_checkpoint`` and friends, with TensorFlow's results and error classes),
imported on first use so that ``import formats`` stays fast.
"""
from __future__ import annotations

import os

from typing import Any

from formats.core.model import Checkpoint
from formats.discover.resolve import Target, resolve

__all__ = ["open_checkpoint", "open_target", "load_checkpoint", "list_variables", "CheckpointReader"]


def open_checkpoint(path: str | os.PathLike[str]) -> Checkpoint:
    """Open a checkpoint from what a user would type: a prefix (``run/ckpt-10``), its ``.index`` or a
    ``.data-*`` file, a Keras weights file, or a directory (its latest checkpoint).

    Returns a read-only :class:`~formats.core.model.Checkpoint`; nothing is read from data files until an
    entry's ``read()`` is called. Raises a :class:`~formats.core.errors.CheckpointError` subclass on bad input.
    """
    return open_target(resolve(path))


def open_target(target: Target) -> Checkpoint:
    """Open an already resolved :class:`~formats.discover.resolve.Target` with its registered format."""
    return target.open()  # type: ignore[no-any-return]


_TENSORFLOW_SHAPED = {"load_checkpoint": "formats.tf.checkpoint_utils", "list_variables": "formats.tf.checkpoint_utils",
                      "CheckpointReader": "formats.tf.reader"}


def __getattr__(name: str) -> Any:
    """``load_checkpoint``, ``list_variables``, ``CheckpointReader``: formats.tf's, imported on first use."""
    if name in _TENSORFLOW_SHAPED:
        import importlib

        return getattr(importlib.import_module(_TENSORFLOW_SHAPED[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
