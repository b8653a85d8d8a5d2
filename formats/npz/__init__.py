"""NumPy ``.npz`` archives read into the common model, without pickle: one tensor per ``<key>.npy``
member, restored to the keys and dtypes ckpt's provenance record names (``convert --to npz``
stores bfloat16 as uint16 and records it; it comes back as bfloat16).

numpy is imported only when a file is opened.
"""
from __future__ import annotations

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from formats.npz.reader import NpzCheckpoint, NpzTensor, open_npz

__all__ = ["open_npz", "NpzCheckpoint", "NpzTensor"]


def __getattr__(name: str) -> object:
    """The reader's names, imported on first use (sniffing a path with the format module stays cheap)."""
    if name in __all__:
        from formats.npz import reader

        return getattr(reader, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
