"""The one error model of the library.

Every error ckpt raises on bad input derives from :class:`CheckpointError` *and*
from the builtin a caller would naturally catch (``FileNotFoundError``,
``KeyError``, ``ValueError``), so ``except OSError`` or ``except KeyError``
keep working in scripts that never heard of ckpt.
"""
from __future__ import annotations


class CheckpointError(Exception):
    """Base of every ckpt error: a path (may be empty) and what is wrong with it."""

    def __init__(self, path: object, message: str, hint: str | None = None) -> None:
        self.path = str(path) if path is not None else ""
        self.message = message
        self.hint = hint
        super().__init__(self.path, message)

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class CheckpointNotFoundError(CheckpointError, FileNotFoundError):
    """The path, a shard or the checkpoint a state file names does not exist."""

    def __str__(self) -> str:  # FileNotFoundError would otherwise format errno-style
        return CheckpointError.__str__(self)


class NotACheckpointError(CheckpointError, ValueError):
    """The file exists but is not in any format ckpt reads (or is another format's file)."""


class CorruptCheckpointError(CheckpointError, ValueError):
    """The file claims to be a checkpoint but its bytes are inconsistent."""


class ChecksumError(CorruptCheckpointError):
    """A stored CRC32C does not match the bytes it covers."""


class UnsupportedError(CheckpointError, ValueError):
    """A valid file using a feature ckpt does not read (a dtype with no numpy counterpart, ...)."""


class TensorNotFoundError(CheckpointError, KeyError):
    """A key that is not in the checkpoint."""

    def __str__(self) -> str:  # KeyError would otherwise repr() the args
        return CheckpointError.__str__(self)


class AmbiguousCheckpointError(CheckpointError, ValueError):
    """A directory holds several checkpoints and nothing says which one is meant."""


class OutputExistsError(CheckpointError, FileExistsError):
    """The output checkpoint exists and ``force`` was not given."""

    def __str__(self) -> str:
        return CheckpointError.__str__(self)


class OutputIsInputError(CheckpointError, ValueError):
    """The output would overwrite a file of a checkpoint being read."""


class InvalidOutputError(CheckpointError, ValueError):
    """What was asked cannot be written: a directory as prefix, an empty or duplicate key."""


class PluginError(CheckpointError, RuntimeError):
    """A format registered by another package (entry point ``tfckpt.formats``) failed to load."""


class VerificationError(CheckpointError, ValueError):
    """An output did not read back as its sources (nothing was left under the output name);
    ``report`` (a :class:`~formats.core.roundtrip.RoundTripReport`, when there is one) lists every mismatch."""

    def __init__(self, path: object, message: str, hint: str | None = None, report: object = None) -> None:
        super().__init__(path, message, hint)
        self.report = report


class PickleRequiredError(InvalidOutputError):
    """A string tensor has an element ending in NUL bytes, which fixed-width ``.npy`` bytes would drop:
    it can only be stored pickled, which was not allowed."""
