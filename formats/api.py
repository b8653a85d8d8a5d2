"""The public entry points: :func:`open_checkpoint` and the TensorFlow drop-ins."""
from __future__ import annotations

import os

from formats.core.model import Checkpoint
from formats.discover.resolve import Target, open_checkpoint

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["open_checkpoint", "open_target", "load_checkpoint", "list_variables", "CheckpointReader"]


def open_target(target: Target) -> Checkpoint:
    """Open an already resolved :class:`~formats.discover.resolve.Target` with its registered format."""
    return target.open()  # type: ignore[no-any-return]


class CheckpointReader:
    """Drop-in for ``tf.train.load_checkpoint(path)``'s reader, without TensorFlow."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._ckpt = open_checkpoint(path)

    def get_variable_to_shape_map(self) -> dict[str, list[int]]:
        """Key -> shape (a list of ints), exactly the keys TensorFlow lists."""
        return {k: list(e.shape) for k, e in self._ckpt.items()}

    def get_variable_to_dtype_map(self) -> dict[str, str]:
        """Key -> dtype name (``float32``, ``bfloat16``, ``string``...; TensorFlow returns DType objects)."""
        return {k: e.dtype for k, e in self._ckpt.items()}

    def has_tensor(self, key: str) -> bool:
        """Whether ``key`` is a tensor of the checkpoint."""
        return key in self._ckpt

    def get_tensor(self, key: str) -> Any:
        """The tensor's value; scalars come back as numpy scalars (``bytes`` for strings), like TensorFlow."""
        value = self._ckpt[key].read()
        return value[()] if value.ndim == 0 else value

    def close(self) -> None:
        """Release the data files."""
        self._ckpt.close()


def load_checkpoint(path: str | os.PathLike[str]) -> CheckpointReader:
    """Like ``tf.train.load_checkpoint``: a reader for the checkpoint at ``path`` (prefix or directory)."""
    return CheckpointReader(path)


def list_variables(path: str | os.PathLike[str]) -> list[tuple[str, list[int]]]:
    """Like ``tf.train.list_variables``: sorted ``(key, shape)`` pairs."""
    with open_checkpoint(path) as ckpt:
        return sorted((k, list(e.shape)) for k, e in ckpt.items())
