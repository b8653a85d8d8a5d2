"""safetensors files read into the common model without the ``safetensors`` package: the header
parsed by hand (length, bounded JSON, offsets checked against the file), values read when asked,
keys' TensorFlow names and roles restored from ckpt's provenance record when the file has one.
"""
from __future__ import annotations

from formats.safetensors.reader import SafetensorsCheckpoint, SafetensorsTensor, open_safetensors

__all__ = ["open_safetensors", "SafetensorsCheckpoint", "SafetensorsTensor"]
