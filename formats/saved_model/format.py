"""The ``saved-model`` format's registry entry: a SavedModel directory (``saved_model.pb`` or
``saved_model.pbtxt`` beside ``variables/variables.*``) is one checkpoint; a model base directory
(TF Serving's ``model/1``, ``model/2``) holds one per version."""
from __future__ import annotations

import os

from formats.core.model import Checkpoint
from formats.io import storage
from formats.saved_model.names import GRAPH_FILE, TEXT_GRAPH_FILE

__all__ = ["FORMAT", "SavedModelFormat", "is_saved_model", "GRAPH_FILE", "TEXT_GRAPH_FILE"]


def is_saved_model(directory: str) -> bool:
    """Whether the local ``directory`` holds a ``saved_model.pb`` or ``saved_model.pbtxt`` (whatever its
    file type: a pipe or device under that name is refused with a message when opened)."""
    return any(os.path.lexists(os.path.join(directory, name)) for name in (GRAPH_FILE, TEXT_GRAPH_FILE))


class SavedModelFormat:
    """SavedModels written by ``tf.saved_model.save``, Keras ``model.save(save_format="tf")`` and TF1's
    ``SavedModelBuilder``, opened from their directory or their ``saved_model.pb``."""

    name = "saved-model"
    layouts = ("saved-model",)
    rewrites = {"saved-model": "tf-name"}  # its variables bundle (object-based when it has the graph)
    description = "TensorFlow SavedModel: a directory with saved_model.pb and variables/"
    suffixes = (GRAPH_FILE,)
    claims_directories = True

    def resolve(self, path: str) -> str | None:
        """The SavedModel directory ``path`` names (itself, or the directory of its ``saved_model.pb``)."""
        if storage.is_url(path):
            return None
        if os.path.isdir(path):
            return path if is_saved_model(path) else None
        if os.path.basename(path) in (GRAPH_FILE, TEXT_GRAPH_FILE) and os.path.lexists(path):
            return os.path.dirname(path) or os.curdir
        return None

    def sniff(self, path: str) -> bool:
        """Whether ``path`` is a SavedModel directory or its graph file."""
        return self.resolve(path) is not None

    def find(self, directory: str) -> list[str]:
        """SavedModels directly inside a model base directory (its versions ``1``, ``2``, ...)."""
        if storage.is_url(directory):
            return []
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            return []
        found = []
        for name in names:
            path = os.path.join(directory, name)
            if os.path.isdir(path) and is_saved_model(path):
                found.append(path)
        return found

    def open(self, path: str) -> Checkpoint:
        """Open the SavedModel directory (or the one holding this ``saved_model.pb``)."""
        from formats.saved_model.checkpoint import SavedModelCheckpoint

        return SavedModelCheckpoint(self.resolve(os.fspath(path)) or os.fspath(path))


FORMAT = SavedModelFormat()
