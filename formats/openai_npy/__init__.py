"""OpenAI's GPT-1 release (openai/finetune-transformer-lm's ``model/``), read only: ``params_shapes.json`` (the
shape of every array, in order) and ``params_0.npy`` ... ``params_9.npy`` (every array flattened, as float32,
concatenated, and the whole split into shards). A tensor is read from the byte ranges of the shards it spans.

numpy is imported only when a shard header is parsed.
"""
from __future__ import annotations

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from formats.openai_npy.reader import OpenAINpyCheckpoint, OpenAINpyTensor, open_openai_npy

__all__ = ["open_openai_npy", "OpenAINpyCheckpoint", "OpenAINpyTensor"]


def __getattr__(name: str) -> object:
    """The reader's names, imported on first use (sniffing a path with the format module stays cheap)."""
    if name in __all__:
        from formats.openai_npy import reader

        return getattr(reader, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
