"""The ``tf-bundle`` format's registry entry: TensorFlow's tensor bundles (``prefix.index`` + ``prefix.data-*``)."""
from __future__ import annotations

import os

from formats.core.errors import CheckpointNotFoundError
from formats.core.model import Checkpoint
from formats.io import storage

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Sequence

    from typing import Any

    from formats.core.compact_listing import CompactListing

    from formats.core.format import Row
    from formats.io.writing import WriteReport

__all__ = ["FORMAT", "BundleFormat", "bundle_prefixes", "COMPACT_FROM", "OBJECT_LAYOUT", "NAME_LAYOUT"]

OBJECT_LAYOUT = "tf-object"
"""An object-based bundle (TF2 ``tf.train.Checkpoint``): ``str(FormatName.TF_OBJECT)``."""
NAME_LAYOUT = "tf-name"
"""A name-based bundle (TF1 ``Saver`` V2): ``str(FormatName.TF_NAME)``."""

COMPACT_FROM = 1 << 20
"""Index size (bytes, about 35,000 tensors) from which ``ls`` reads a compact listing instead of opening the bundle."""

_BUNDLE_FILE = r"^(.*)\.(index|data-\d{5}-of-\d{5})$"  # compiled only for such a file's name (start-up)


def bundle_prefixes(directory: str) -> list[str]:
    """Prefixes of every bundle (``*.index``) directly inside ``directory`` (path or URL), sorted; a local
    ``*.index`` that is no regular file (a FIFO, a symlink to a device) is no bundle's, as for :meth:`resolve`."""
    found = storage.glob(directory, "*.index")
    if not storage.is_url(directory):
        found = [p for p in found if os.path.isfile(p)]
    return sorted(p[:-len(".index")] for p in found)


class BundleFormat:
    """Object-based (TF2 ``tf.train.Checkpoint``, Keras ``save_weights``) and name-based (TF1 ``Saver`` V2)
    bundles, opened from a prefix, its ``.index``, a ``.data-*`` file or the ``.meta`` beside it."""

    name = "tf-bundle"
    description = "TensorFlow tensor bundle: prefix.index + prefix.data-NNNNN-of-NNNNN"
    suffixes = (".index",)
    urls = True
    layouts = (OBJECT_LAYOUT, NAME_LAYOUT)
    object_layouts = (OBJECT_LAYOUT,)
    writes = (OBJECT_LAYOUT, NAME_LAYOUT)
    links = True
    data_files = True

    def write(self, output: str, rows: Sequence[Row], **how: Any) -> WriteReport:
        """Write a bundle (:func:`formats.tf_bundle.output.write`)."""
        from formats.tf_bundle.output import write

        return write(output, rows, **how)

    def resolve(self, path: str) -> str | None:
        """The prefix ``path`` names, None when it is no bundle's; a data file without its index raises."""
        match = None
        if path.endswith(".index") or ".data-" in path:
            import re  # only for a path that names a bundle's file, not at import (start-up)

            match = re.match(_BUNDLE_FILE, path)
        if match and storage.isfile(path):
            prefix = match.group(1)
            if storage.isfile(prefix + ".index"):
                return prefix
            raise CheckpointNotFoundError(prefix + ".index",
                                          f"index file missing (needed to read {os.path.basename(path)})")
        if storage.isfile(path + ".index"):
            return path
        if path.endswith(".meta") and storage.isfile(path[:-len(".meta")] + ".index"):
            return path[:-len(".meta")]  # the MetaGraph's weights share its prefix
        return None

    def sniff(self, path: str) -> bool:
        """Whether ``path`` names a bundle."""
        try:
            return self.resolve(path) is not None
        except CheckpointNotFoundError:
            return False

    def find(self, directory: str) -> list[str]:
        """Every bundle prefix directly inside ``directory``."""
        return bundle_prefixes(directory)

    def open(self, path: str) -> Checkpoint:
        """Open the bundle with this prefix."""
        from formats.tf_bundle.checkpoint import BundleCheckpoint

        return BundleCheckpoint(os.fspath(path))

    def compact_listing(self, path: str, patterns: Sequence[str] = ()) -> CompactListing | None:
        """The listing of a local bundle whose index has :data:`COMPACT_FROM` bytes or more, read from the
        index alone (see :mod:`formats.tf_bundle.index_listing`); None for a smaller one, or one to open instead."""
        if storage.is_url(path):
            return None
        try:
            size = os.stat(path + ".index").st_size
        except OSError:
            return None
        if size < COMPACT_FROM:
            return None
        from formats.tf_bundle.index_listing import compact_listing

        return compact_listing(path, patterns)


FORMAT = BundleFormat()
