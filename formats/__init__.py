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

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from formats.api import CheckpointReader, list_variables, load_checkpoint, open_checkpoint
    from formats.core.errors import (AmbiguousCheckpointError, CheckpointError, CheckpointNotFoundError,
                                     ChecksumError, CorruptCheckpointError, ExitCode, InvalidOutputError,
                                     NotACheckpointError, NothingSelectedError, OutputError, OutputExistsError,
                                     OutputIsInputError, OutputWriteError, TensorNotFoundError, UnsupportedError,
                                     UsageError, VerificationError)
    from formats.core.model import Checkpoint, TensorEntry, UnreadableEntry
    from formats.core.sources import TensorValue
    from formats.tf_bundle.state_file import update_state_file
    from formats.ops.edit import EditOptions, average, edit
    from formats.verbs import convert, diff, extract, rename, report, stats, verify, verify_against
    from formats.tf_bundle.writer import write_checkpoint

__version__ = "0.1.0"

__all__ = [
    "open_checkpoint", "load_checkpoint", "list_variables", "CheckpointReader",
    "Checkpoint", "TensorEntry", "UnreadableEntry",
    "CheckpointError", "CheckpointNotFoundError", "NotACheckpointError", "CorruptCheckpointError",
    "ChecksumError", "TensorNotFoundError", "UnsupportedError", "AmbiguousCheckpointError",
    "NothingSelectedError", "UsageError", "OutputError", "OutputExistsError", "OutputIsInputError",
    "InvalidOutputError", "OutputWriteError", "VerificationError", "ExitCode",
    "write_checkpoint", "update_state_file", "TensorValue", "edit", "average", "EditOptions",
    "verify", "verify_against", "diff", "stats", "report", "extract", "convert", "rename",
]

_ERRORS = ("CheckpointError", "CheckpointNotFoundError", "NotACheckpointError", "CorruptCheckpointError",
           "ChecksumError", "TensorNotFoundError", "UnsupportedError", "AmbiguousCheckpointError",
           "NothingSelectedError", "UsageError", "OutputError", "OutputExistsError", "OutputIsInputError",
           "InvalidOutputError", "OutputWriteError", "VerificationError", "ExitCode")
_LAZY = {"open_checkpoint": ".api", "load_checkpoint": ".api", "list_variables": ".api", "CheckpointReader": ".api",
         "Checkpoint": ".core.model", "TensorEntry": ".core.model", "UnreadableEntry": ".core.model",
         "write_checkpoint": ".tf_bundle.writer", "update_state_file": ".tf_bundle.state_file",
         "TensorValue": ".core.sources", "edit": ".ops.edit", "average": ".ops.edit", "EditOptions": ".ops.edit",
         **{name: ".verbs" for name in ("verify", "verify_against", "diff", "stats", "report", "extract", "convert",
                                              "rename")},
         **{name: ".core.errors" for name in _ERRORS}}


def __getattr__(name: str) -> object:
    """Every public name is imported on first use, so ``import formats.core.errors`` (and the CLI's start-up)
    does not pull in the readers, and ``formats.open_checkpoint`` still works."""
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
