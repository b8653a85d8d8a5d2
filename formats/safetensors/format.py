"""The ``safetensors`` format's registry entry."""
from __future__ import annotations

import os

from formats.core.model import Checkpoint, FormatName
from formats.io import storage

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from formats.core.format import Row
    from formats.core.model import TensorEntry
    from formats.io.writing import WriteReport

__all__ = ["FORMAT", "SafetensorsFormat"]


class SafetensorsFormat:
    """safetensors files: an 8-byte header length, a JSON header, the data."""

    name = FormatName.SAFETENSORS.value
    description = "safetensors file (8-byte header length, JSON header, data), read without the safetensors package"
    suffixes = (".safetensors",)
    layouts = (FormatName.SAFETENSORS.value,)
    writes = (FormatName.SAFETENSORS.value,)

    def sniff(self, path: str) -> bool:
        """Whether ``path`` is a local file named ``.safetensors`` or starting like one."""
        if storage.is_url(path) or not os.path.isfile(path):
            return False
        if path.endswith(self.suffixes):
            return True
        from formats.safetensors.header import looks_like_safetensors

        try:
            with open(path, "rb") as f:
                return looks_like_safetensors(f.read(9), os.fstat(f.fileno()).st_size)
        except OSError:
            return False

    def find(self, directory: str) -> list[str]:
        """``*.safetensors`` files directly inside a local ``directory``."""
        if storage.is_url(directory):
            return []
        return [f for f in storage.glob(directory, "*.safetensors") if os.path.isfile(f)]

    def open(self, path: str) -> Checkpoint:
        """Parse the header (values are read when asked)."""
        from formats.safetensors import open_safetensors

        return open_safetensors(path)

    def write(self, output: str, rows: Sequence[Row], **how: Any) -> WriteReport:
        """Write a safetensors file (:func:`formats.safetensors.writer.write`)."""
        from formats.safetensors.writer import write

        return write(output, rows, **how)

    def unstorable(self, entry: TensorEntry) -> str | None:
        """Why ``entry`` cannot be stored (None when it can): a dtype safetensors has no name for."""
        from formats.safetensors.header import DTYPES

        return None if entry.dtype in DTYPES else f"{entry.dtype} tensors cannot be stored in safetensors"


FORMAT = SafetensorsFormat()
