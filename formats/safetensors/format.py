"""The ``safetensors`` format's registry entry."""
from __future__ import annotations

import os

from formats.core.model import Checkpoint, FormatName
from formats.io import storage
from formats.io.model_dirs import ModelDirectoryFormat

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from formats.core.format import Row
    from formats.core.model import TensorEntry
    from formats.io.writing import WriteReport

__all__ = ["FORMAT", "SafetensorsFormat", "MODEL_DIR_FORMAT", "ModelDirFormat", "is_model_dir"]


class SafetensorsFormat:
    """safetensors files: an 8-byte header length, a JSON header, the data."""

    name = FormatName.SAFETENSORS.value
    description = "safetensors file (8-byte header length, JSON header, data), read without the safetensors package"
    suffixes = (".safetensors",)
    layouts = (FormatName.SAFETENSORS.value,)
    writes = (FormatName.SAFETENSORS.value,)
    streams_records = True

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

    def key_problems(self, keys: Sequence[str]) -> dict[str, str]:
        """The ``keys`` that cannot name a tensor, each with why (:func:`~formats.safetensors.header.key_problem`:
        ``__metadata__``, the header's own, or a key that is not valid UTF-8)."""
        from formats.safetensors.header import key_problem

        return {key: problem for key in keys if (problem := key_problem(key)) is not None}


FORMAT = SafetensorsFormat()


def is_model_dir(path: str) -> bool:
    """Whether ``path`` is a local directory with ``config.json`` and ``model.safetensors`` or its index (no
    import: every path a format before it does not claim is asked)."""
    return os.path.isdir(path) and os.path.isfile(os.path.join(path, "config.json")) and (
        os.path.isfile(os.path.join(path, "model.safetensors"))
        or os.path.isfile(os.path.join(path, "model.safetensors.index.json")))


class ModelDirFormat(ModelDirectoryFormat):
    """A transformers model directory: ``config.json`` and ``model.safetensors`` (or shards and their index)."""

    name = FormatName.HF.value
    description = "transformers model directory: config.json, model.safetensors (or its shards and index)"
    suffixes = ()
    layouts = (FormatName.HF.value,)
    writes = (FormatName.HF.value,)
    max_shard_size = (FormatName.HF.value,)
    claims_directories = True

    marker_files = ("config.json", "model.safetensors.index.json")

    def is_checkpoint_dir(self, path: str) -> bool:
        """Whether ``path`` is a transformers model directory."""
        return is_model_dir(path)

    def open(self, path: str) -> Checkpoint:
        """Every shard's header and the config (values are read when asked)."""
        from formats.safetensors.model_dir import open_model_dir

        return open_model_dir(path)

    def write(self, output: str, rows: Sequence[Row], **how: Any) -> WriteReport:
        """Write the directory (:func:`formats.safetensors.model_dir.write_model_dir`)."""
        from formats.safetensors.model_dir import write_model_dir

        return write_model_dir(output, rows, **how)

    def unstorable(self, entry: TensorEntry) -> str | None:
        """Why ``entry`` cannot be stored (None when it can)."""
        return FORMAT.unstorable(entry)


MODEL_DIR_FORMAT = ModelDirFormat()
