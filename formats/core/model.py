"""The common model every reader produces: a :class:`Checkpoint` mapping keys to :class:`TensorEntry`.

Entries carry metadata (key, shape, dtype, size) and read their value only when
:meth:`TensorEntry.read` is called. Nothing here imports numpy at module level.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from formats.core.errors import TensorNotFoundError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["TensorEntry", "Checkpoint", "shape_text"]


def shape_text(shape: Iterable[int]) -> str:
    """``(3, 4)`` -> ``[3, 4]`` (TensorFlow's listing style); a scalar is ``[]``."""
    return "[" + ", ".join(str(d) for d in shape) + "]"


class TensorEntry:
    """One tensor of a checkpoint: metadata now, value on :meth:`read`.

    ``dtype`` is TensorFlow's dtype name (``float32``, ``bfloat16``, ``string``,
    ``variant``, ...); ``shape`` a tuple of ints; ``nbytes`` the bytes the value
    occupies in storage. ``name`` is the TF1-style variable name behind the key
    (the key itself unless a format knows better) and ``role`` what the tensor is
    (``variable``, ``slot``, ``optimizer``, ``object_graph``, ...).
    """

    __slots__ = ("key", "shape", "dtype", "nbytes", "name", "role")

    def __init__(self, key: str, shape: tuple[int, ...], dtype: str, nbytes: int,
                 name: str | None = None, role: str = "variable") -> None:
        self.key = key
        self.shape = shape
        self.dtype = dtype
        self.nbytes = nbytes
        self.name = key if name is None else name
        self.role = role

    @property
    def size(self) -> int:
        """Number of elements (product of the shape; 1 for a scalar)."""
        return math.prod(self.shape)

    def read(self) -> np.ndarray:
        """The whole value as a numpy array (checksums verified where the format has them)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.key!r} {self.dtype}{list(self.shape)}>"


class Checkpoint(Mapping[str, TensorEntry]):
    """A read-only mapping of key -> :class:`TensorEntry`, usable as a context manager.

    ``path`` is what was opened (a bundle prefix or a file), ``format`` one of
    ``tf-object``, ``tf-name``, ``keras2-h5``, ``keras3-h5``, ``keras-zip``, ``hdf5``.
    """

    def __init__(self, path: str, format: str, entries: dict[str, TensorEntry]) -> None:
        self.path = path
        self.format = format
        self._entries = entries

    def __getitem__(self, key: str) -> TensorEntry:
        try:
            return self._entries[key]
        except KeyError:
            raise TensorNotFoundError(self.path, f"no tensor named {key!r}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    @property
    def files(self) -> list[str]:
        """The files that make up this checkpoint on disk."""
        return [self.path]

    @property
    def metadata(self) -> dict[str, Any]:
        """Format-specific facts (header fields, Keras version, model config, ...)."""
        return {}

    @property
    def object_graph(self) -> Any:
        """The decoded object graph of an object-based checkpoint, else None."""
        return None

    def close(self) -> None:
        """Release open files and memory maps; entries must not be read afterwards."""

    def __enter__(self) -> Checkpoint:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.path!r} format={self.format} tensors={len(self)}>"
