"""NumPy ``.npz`` archives read into the common model, without pickle: one tensor per ``<key>.npy``
member, restored to the keys and dtypes ckpt's provenance record names (``convert --to npz``
stores bfloat16 as uint16 and records it; it comes back as bfloat16).

numpy is imported only when a file is opened.
"""
from __future__ import annotations

from formats.npz.reader import NpzCheckpoint, NpzTensor, open_npz

__all__ = ["open_npz", "NpzCheckpoint", "NpzTensor"]
