"""Formats whose checkpoint is a directory told by its files (a Keras 3 model directory, a transformers model
directory): how a typed path names one, and which are directly inside a folder - one definition for each."""
from __future__ import annotations

import os

from formats.io import storage

__all__ = ["ModelDirectoryFormat"]


class ModelDirectoryFormat:
    """The reading verbs of a format whose checkpoint is a local directory for which :meth:`is_checkpoint_dir`
    holds; a path naming one of :attr:`marker_files` inside such a directory names the directory too."""

    marker_files: tuple[str, ...] = ()
    """Files inside the directory that name it when typed (``config.json``)."""

    def is_checkpoint_dir(self, path: str) -> bool:
        """Whether ``path`` is a directory of this format (subclasses say)."""
        raise NotImplementedError

    def resolve(self, path: str) -> str | None:
        """The model directory ``path`` names (the directory itself, or one of its :attr:`marker_files`)."""
        if storage.is_url(path):
            return None
        if self.is_checkpoint_dir(path):
            return path
        if os.path.basename(path) in self.marker_files and os.path.isfile(path):
            directory = os.path.dirname(path) or "."
            return directory if self.is_checkpoint_dir(directory) else None
        return None

    def sniff(self, path: str) -> bool:
        """Whether ``path`` names a model directory of this format."""
        return self.resolve(path) is not None

    def find(self, directory: str) -> list[str]:
        """Model directories of this format directly inside a local ``directory``."""
        if storage.is_url(directory):
            return []
        return [os.path.join(directory, n) for n in sorted(os.listdir(directory))
                if self.is_checkpoint_dir(os.path.join(directory, n))]
