"""safetensors files read into the common model without the ``safetensors`` package: the header
parsed by hand (length, bounded JSON, offsets checked against the file), values read when asked,
keys' TensorFlow names and roles restored from ckpt's provenance record when the file has one.
"""
from __future__ import annotations

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from formats.safetensors.reader import SafetensorsCheckpoint, SafetensorsTensor, open_safetensors

__all__ = ["open_safetensors", "SafetensorsCheckpoint", "SafetensorsTensor"]


def __getattr__(name: str) -> object:
    """The reader's names, imported on first use (sniffing a path with the format module stays cheap)."""
    if name in __all__:
        from formats.safetensors import reader

        return getattr(reader, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
