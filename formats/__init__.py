"""ckpt's library: read, write and compare TensorFlow and Keras checkpoints without TensorFlow.

Typical use::

    from formats import open_checkpoint
    with open_checkpoint("runs/a/tf_ckpts") as ckpt:      # a directory: its latest checkpoint
        for key, entry in ckpt.items():
            print(key, entry.dtype, entry.shape)
        kernel = ckpt["net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE"].read()

``load_checkpoint`` and ``list_variables`` are drop-ins for TensorFlow's functions of the same names.
This package never imports click or rich, and imports numpy only when values are read.
"""
from __future__ import annotations

from formats.api import open_checkpoint
from formats.core.errors import (AmbiguousCheckpointError, CheckpointError, CheckpointNotFoundError, ChecksumError,
                                 CorruptCheckpointError, ExitCode, InvalidOutputError, NotACheckpointError,
                                 NothingSelectedError, OutputError, OutputExistsError, OutputIsInputError,
                                 OutputWriteError, TensorNotFoundError, UnsupportedError, UsageError,
                                 VerificationError)
from formats.core.model import Checkpoint, TensorEntry

__version__ = "0.1.0"

__all__ = [
    "open_checkpoint", "load_checkpoint", "list_variables", "CheckpointReader",
    "Checkpoint", "TensorEntry",
    "CheckpointError", "CheckpointNotFoundError", "NotACheckpointError", "CorruptCheckpointError",
    "ChecksumError", "TensorNotFoundError", "UnsupportedError", "AmbiguousCheckpointError",
    "NothingSelectedError", "UsageError", "OutputError", "OutputExistsError", "OutputIsInputError",
    "InvalidOutputError", "OutputWriteError", "VerificationError", "ExitCode",
    "write_checkpoint", "update_state_file", "TensorValue", "edit", "average", "EditOptions",
]

_LAZY = {"write_checkpoint": ".tf_bundle.writer", "update_state_file": ".tf_bundle.state_file",
         "TensorValue": ".core.sources", "load_checkpoint": ".api", "list_variables": ".api",
         "CheckpointReader": ".api", "edit": ".ops.edit", "average": ".ops.edit", "EditOptions": ".ops.edit"}


def __getattr__(name: str) -> object:
    """Writer and editing names and the TensorFlow-shaped readers are imported on first use, so listing starts
    fast."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
