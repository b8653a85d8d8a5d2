"""The ``orbax`` format's registry entry: Orbax checkpoints (an item directory, a ``CheckpointManager`` step, a
root of numbered steps) and T5X ``checkpoint_<N>`` directories. A root is a directory of checkpoints: ``ckpt ls``
lists its steps, and a command given the root opens its highest step (Orbax's ``latest_step``)."""
from __future__ import annotations

import os

from formats.core.model import Checkpoint
from formats.io import storage
from formats.orbax.layout import CHECKPOINT_METADATA_FILE, METADATA_FILE, T5X, T5X_FILE, TMP_MARK, kind_of

__all__ = ["FORMAT", "OrbaxFormat", "ORBAX", "T5X_LAYOUT"]

ORBAX = "orbax"
T5X_LAYOUT = "t5x"
_FILES = (METADATA_FILE, CHECKPOINT_METADATA_FILE, "manifest.ocdbt")


class OrbaxFormat:
    """Orbax (OCDBT and per-array zarr) and T5X checkpoints, read through tensorstore (``tfckpt[orbax]``)."""

    name = ORBAX
    layouts = (ORBAX, T5X_LAYOUT)
    description = "Orbax checkpoint (OCDBT or zarr) or T5X checkpoint directory, read through tensorstore"
    suffixes = ()
    claims_directories = True

    def resolve(self, path: str) -> str | None:
        """The checkpoint directory ``path`` names: an item, step or T5X directory, or the directory of its
        ``_METADATA``, ``_CHECKPOINT_METADATA``, ``manifest.ocdbt`` or T5X ``checkpoint`` file."""
        if storage.is_url(path):
            return None
        if os.path.isdir(path):
            return path if kind_of(path) is not None else None
        name = os.path.basename(path)
        if name in (*_FILES, T5X_FILE) and os.path.isfile(path):
            folder = os.path.dirname(path) or os.curdir
            kind = kind_of(folder)
            if kind is not None and (name != T5X_FILE or kind == T5X):
                return folder
        return None

    def sniff(self, path: str) -> bool:
        """Whether ``path`` is an Orbax or T5X checkpoint directory or one of its named files."""
        return self.resolve(path) is not None

    def find(self, directory: str) -> list[str]:
        """The checkpoints directly inside ``directory`` (a ``CheckpointManager`` root's steps, T5X's
        ``checkpoint_<N>``), in step order; none inside a directory that is itself one."""
        if storage.is_url(directory) or kind_of(directory) is not None:
            return []
        try:
            names = os.listdir(directory)
        except OSError:
            return []
        found = [os.path.join(directory, n) for n in names if TMP_MARK not in n and not n.startswith(".")
                 and not os.path.islink(os.path.join(directory, n)) and kind_of(os.path.join(directory, n))]
        from formats.core.natural import natural_order

        return sorted(found, key=natural_order)

    def open(self, path: str) -> Checkpoint:
        """Open it (arrays are read by tensorstore when asked)."""
        path = self.resolve(os.fspath(path)) or os.fspath(path)
        if kind_of(path) == T5X:
            from formats.orbax.t5x import open_t5x

            return open_t5x(path)
        from formats.orbax.reader import open_orbax

        return open_orbax(path)


FORMAT = OrbaxFormat()
