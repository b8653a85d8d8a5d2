"""The one error model of the library, and the exit status each kind of error means.

Every error ckpt raises derives from :class:`CheckpointError` *and* from the builtin a caller would
naturally catch (``FileNotFoundError``, ``KeyError``, ``ValueError``, ``OSError``), so ``except
OSError`` or ``except KeyError`` keep working in scripts that never heard of ckpt. Each class carries
the :class:`ExitCode` a command line reports for it (``exit_code``), declared here once:

=====================================  ===========================================================
class                                  exit code
=====================================  ===========================================================
:class:`TensorNotFoundError`           1 ``PROBLEMS``: a key or selection matches nothing
:class:`UsageError`                    2 ``USAGE``: a malformed rule, slice or option value
input errors (not found, not a         3 ``INPUT``: an input cannot be read
checkpoint, corrupt, checksum,
unsupported, ambiguous, plugin, read)
:class:`OutputError` and subclasses    4 ``OUTPUT``: the output was not written
anything else                          5 ``INTERNAL``: a bug
=====================================  ===========================================================

Messages use Python-level wording (``pass force=True``), never command-line flags; the command line
adds its own hints.
"""
from __future__ import annotations

from formats.core.enumeration import IntEnumeration

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any, ClassVar

__all__ = ["ExitCode", "CheckpointError", "CheckpointNotFoundError", "NotACheckpointError",
           "CorruptCheckpointError", "ChecksumError", "UnsupportedError", "AmbiguousCheckpointError",
           "PluginError", "InputReadError", "TensorNotFoundError", "NothingSelectedError", "UsageError", "OutputError",
           "OutputExistsError", "OutputIsInputError", "InvalidOutputError", "OutputWriteError",
           "VerificationError", "exit_code_of"]


class ExitCode(IntEnumeration):
    """The exit status of every ``ckpt`` command (an ``int`` with a ``name``, as an ``enum.IntEnum`` member is)."""

    OK = 0  #: success; nothing wrong found
    PROBLEMS = 1  #: differences or problems found (each listed), or a selection that matches nothing
    USAGE = 2  #: usage error: unknown option, malformed rule or slice, bad option value
    INPUT = 3  #: an input cannot be read: missing, not a checkpoint, corrupt
    OUTPUT = 4  #: the output was not written: exists, would replace an input, disk full, failed read-back
    INTERNAL = 5  #: internal error: a bug in ckpt
    INTERRUPTED = 130  #: interrupted (Ctrl-C)


class CheckpointError(Exception):
    """Base of every ckpt error: a path (may be empty), what is wrong with it, and an optional hint."""

    exit_code: ClassVar[ExitCode] = ExitCode.INPUT

    def __init__(self, path: object, message: str, hint: str | None = None) -> None:
        self.path = str(path) if path is not None else ""
        self.message = message
        self.hint = hint
        super().__init__(self.path, message)

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


def exit_code_of(exc: BaseException) -> ExitCode:
    """The exit status for ``exc``: its class's ``exit_code``, ``INTERNAL`` for anything not ckpt's."""
    if isinstance(exc, KeyboardInterrupt):
        return ExitCode.INTERRUPTED
    return exc.exit_code if isinstance(exc, CheckpointError) else ExitCode.INTERNAL


# -- an input cannot be read (3) -------------------------------------------------------------------
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


class AmbiguousCheckpointError(CheckpointError, ValueError):
    """A directory holds several checkpoints and nothing says which one is meant."""


class PluginError(CheckpointError, RuntimeError):
    """A format registered by another package (entry point ``tfckpt.formats``) failed to load."""


class InputReadError(CheckpointError, OSError):
    """The operating system refused to read an input that is not a checkpoint (a rules file, ...)."""

    def __init__(self, path: object, message: str, hint: str | None = None, errno: int | None = None) -> None:
        super().__init__(path, message, hint)
        self.errno, self.strerror, self.filename = errno, message, self.path

    def __str__(self) -> str:  # OSError would otherwise format errno-style
        return CheckpointError.__str__(self)


# -- nothing to act on (1) -------------------------------------------------------------------------
class TensorNotFoundError(CheckpointError, KeyError):
    """A key that is not in the checkpoint."""

    exit_code = ExitCode.PROBLEMS

    def __str__(self) -> str:  # KeyError would otherwise repr() the args
        return CheckpointError.__str__(self)


class NothingSelectedError(TensorNotFoundError):
    """Key patterns (exact keys or globs) of which some match no key; ``patterns`` lists those."""

    def __init__(self, path: object, message: str, hint: str | None = None,
                 patterns: tuple[str, ...] = ()) -> None:
        super().__init__(path, message, hint)
        self.patterns = patterns


# -- usage (2) -------------------------------------------------------------------------------------
class UsageError(CheckpointError, ValueError):
    """What was asked is malformed: a rename rule, a ``key[slice]``, an option value (the path, if any,
    is the file holding it)."""

    exit_code = ExitCode.USAGE


# -- the output was not written (4) ----------------------------------------------------------------
class OutputError(CheckpointError):
    """Base of the errors that leave an output unwritten (nothing is left under the output name)."""

    exit_code = ExitCode.OUTPUT


class OutputExistsError(OutputError, FileExistsError):
    """The output exists and ``force`` was not given."""

    def __str__(self) -> str:
        return CheckpointError.__str__(self)


class OutputIsInputError(OutputError, ValueError):
    """The output would overwrite a file of a checkpoint being read (``force`` never allows that)."""


class InvalidOutputError(OutputError, ValueError):
    """What was asked cannot be written: a directory as prefix, an empty or duplicate key."""


class OutputWriteError(OutputError, OSError):
    """The operating system refused the write (disk full, quota, read-only file system, ...)."""

    def __init__(self, path: object, message: str, hint: str | None = None, errno: int | None = None) -> None:
        super().__init__(path, message, hint)
        self.errno, self.strerror, self.filename = errno, message, self.path

    def __str__(self) -> str:  # OSError would otherwise format errno-style
        return CheckpointError.__str__(self)


class VerificationError(OutputError, ValueError):
    """The written output does not read back as its sources.

    ``detail`` is a message, or a report with ``mismatches`` (each with ``key`` and ``message``; a
    :class:`~formats.core.roundtrip.RoundTripReport`), kept as ``report``.
    """

    def __init__(self, path: object, detail: str | Any, hint: str | None = None, report: Any = None) -> None:
        self.report = report if report is not None else (None if isinstance(detail, str) else detail)
        super().__init__(path, detail if isinstance(detail, str) else _first_mismatch(detail), hint)


def _first_mismatch(report: Any) -> str:
    first = report.mismatches[0]
    more = len(report.mismatches) - 1
    return f"verification failed: {first.key!r}: {first.message}" + (f" (and {more} more)" if more else "")


class PickleRequiredError(InvalidOutputError):
    """A string tensor has an element ending in NUL bytes, which fixed-width ``.npy`` bytes would drop:
    it can only be stored pickled, which was not allowed."""
