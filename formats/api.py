"""The public entry points: :func:`open_checkpoint` and the TensorFlow drop-ins.

``load_checkpoint``, ``list_variables`` and ``CheckpointReader`` are :mod:`formats.tf`'s
(``tf.train.load_checkpoint`` and friends, with TensorFlow's results and error classes),
imported on first use so that ``import formats`` stays fast.
"""
from __future__ import annotations

from formats.core.model import Checkpoint
from formats.discover.resolve import Target, open_checkpoint

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["open_checkpoint", "open_target", "load_checkpoint", "list_variables", "CheckpointReader"]  # noqa: F822 (lazy)


def open_target(target: Target) -> Checkpoint:
    """Open an already resolved :class:`~formats.discover.resolve.Target` with its registered format."""
    return target.open()


_TENSORFLOW_SHAPED = {"load_checkpoint": "formats.tf.checkpoint_utils", "list_variables": "formats.tf.checkpoint_utils",
                      "CheckpointReader": "formats.tf.reader"}


def __getattr__(name: str) -> Any:
    """``load_checkpoint``, ``list_variables``, ``CheckpointReader``: formats.tf's, imported on first use."""
    if name in _TENSORFLOW_SHAPED:
        import importlib

        return getattr(importlib.import_module(_TENSORFLOW_SHAPED[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
