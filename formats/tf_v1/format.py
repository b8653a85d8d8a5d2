"""The ``tf-v1`` format's registry entry: TensorFlow 1's V1 checkpoints (``Saver(write_version=V1)``),
one SSTable file per prefix (``model.ckpt-30``) or per shard (``model.ckpt-?????-of-00003``), no ``.index``."""
from __future__ import annotations

import os

from formats.core.model import Checkpoint, FormatName
from formats.io import storage

__all__ = ["FORMAT", "V1Format"]


class V1Format:
    """V1 checkpoints, opened from the file, a sharded save's pattern, one of its shards, its prefix or
    the ``.meta`` beside it."""

    name = str(FormatName.TF_V1)
    layouts = (FormatName.TF_V1.value,)
    rewrites = {FormatName.TF_V1.value: FormatName.TF_NAME.value}  # as a name-based bundle
    description = "TensorFlow V1 checkpoint: one table file per prefix (or per shard), no .index"
    suffixes: tuple[str, ...] = ()

    def resolve(self, path: str) -> str | None:
        """The file or pattern ``path`` names, None when it names no V1 checkpoint."""
        if storage.is_url(path):
            return None
        from formats.tf_v1.paths import canonical

        return canonical(os.fspath(path))

    def sniff(self, path: str) -> bool:
        """Whether ``path`` names a V1 checkpoint."""
        return self.resolve(path) is not None

    def find(self, directory: str) -> list[str]:
        """Every V1 checkpoint directly inside ``directory`` (a sharded save once, by its pattern)."""
        if storage.is_url(directory):
            return []
        from formats.tf_v1.paths import find_v1

        return find_v1(directory)

    def open(self, path: str) -> Checkpoint:
        """Open the V1 checkpoint ``path`` names (a file or a pattern)."""
        from formats.tf_v1.checkpoint import V1Checkpoint
        from formats.tf_v1.paths import files_of

        path = os.fspath(path)
        return V1Checkpoint(path, files_of(path))


FORMAT = V1Format()
