"""The ``openai-npy`` format's registry entry: OpenAI's GPT-1 release, a directory of ``params_shapes.json`` and
``params_N.npy`` shards (read only)."""
from __future__ import annotations

import os

from formats.core.model import Checkpoint
from formats.io import storage
from formats.openai_npy.layout import OPENAI_NPY, SHAPES_FILE

__all__ = ["FORMAT", "OpenAINpyFormat"]


def _is_release(directory: str) -> bool:
    return os.path.isfile(os.path.join(directory, SHAPES_FILE))


class OpenAINpyFormat:
    """OpenAI's npy-shard release of GPT-1 (``params_shapes.json`` + ``params_0.npy`` ... ``params_9.npy``)."""

    name = OPENAI_NPY
    layouts = (OPENAI_NPY,)
    description = "OpenAI GPT-1 release (params_shapes.json + params_N.npy: float32 arrays flattened and sharded)"
    suffixes = ()
    claims_directories = True

    def resolve(self, path: str) -> str | None:
        """The release directory ``path`` names: the directory, or its ``params_shapes.json``."""
        if storage.is_url(path):
            return None
        if os.path.isdir(path):
            return path if _is_release(path) else None
        if os.path.basename(path) == SHAPES_FILE and os.path.isfile(path):
            return os.path.dirname(path) or os.curdir
        return None

    def sniff(self, path: str) -> bool:
        """Whether ``path`` is such a release directory or its ``params_shapes.json``."""
        return self.resolve(path) is not None

    def open(self, path: str) -> Checkpoint:
        """Open it: every shard's header is checked against the shapes; values are read when asked."""
        from formats.openai_npy.reader import open_openai_npy

        return open_openai_npy(self.resolve(os.fspath(path)) or os.fspath(path))


FORMAT = OpenAINpyFormat()
