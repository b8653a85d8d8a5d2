"""``tf.errors``: TensorFlow's error classes, raised where TensorFlow raises them.

Every class takes TensorFlow's arguments (``node_def, op, message``), has its attributes
(``message``, ``op``, ``node_def``, ``error_code``) and derives from :class:`OpError`, which is
also a :class:`formats.CheckpointError`; each further derives from the builtin a Python caller
would catch (``NotFoundError`` from ``FileNotFoundError`` *and* ``KeyError``, as TensorFlow uses
it for missing files and missing keys; ``DataLossError`` and ``InvalidArgumentError`` from
``ValueError``, ...). :func:`translate` turns ckpt's own errors into these.
"""
from __future__ import annotations


from formats.core.errors import (AmbiguousCheckpointError, CheckpointError, CheckpointNotFoundError,
                                 CorruptCheckpointError, NotACheckpointError, TensorNotFoundError, UnsupportedError)
from formats.tf._missing import module_getattr

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["OpError", "CancelledError", "UnknownError", "InvalidArgumentError", "DeadlineExceededError",
           "NotFoundError", "AlreadyExistsError", "PermissionDeniedError", "ResourceExhaustedError",
           "FailedPreconditionError", "AbortedError", "OutOfRangeError", "UnimplementedError", "InternalError",
           "UnavailableError", "DataLossError", "UnauthenticatedError", "translate", "OK", "CANCELLED", "UNKNOWN",
           "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED",
           "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
           "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"]

(OK, CANCELLED, UNKNOWN, INVALID_ARGUMENT, DEADLINE_EXCEEDED, NOT_FOUND, ALREADY_EXISTS, PERMISSION_DENIED,
 RESOURCE_EXHAUSTED, FAILED_PRECONDITION, ABORTED, OUT_OF_RANGE, UNIMPLEMENTED, INTERNAL, UNAVAILABLE,
 DATA_LOSS, UNAUTHENTICATED) = range(17)


class OpError(CheckpointError):
    """``tf.errors.OpError``: ``OpError(node_def, op, message, error_code)``; ``str()`` is the message.

    Subclasses take ``(node_def, op, message)`` and carry their own ``error_code``.
    """

    code: int = UNKNOWN

    def __init__(self, node_def: Any, op: Any, message: str, *args: Any) -> None:
        CheckpointError.__init__(self, "", message)
        self._node_def = node_def
        self._op = op
        self._error_code = args[0] if type(self) is OpError and args else self.code
        self._experimental_payloads: dict[str, Any] = {}

    @property
    def node_def(self) -> Any:
        """Always None here: no graph is involved."""
        return self._node_def

    @property
    def op(self) -> Any:
        """Always None here: no operation is involved."""
        return self._op

    @property
    def error_code(self) -> int:
        """TensorFlow's status code (``NOT_FOUND`` is 5, ...)."""
        return self._error_code

    @property
    def experimental_payloads(self) -> dict[str, Any]:
        """Always empty."""
        return self._experimental_payloads

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> Any:
        extra = (self._error_code,) if type(self) is OpError else ()
        return type(self), (self._node_def, self._op, self.message, *extra)


class CancelledError(OpError):
    """An operation was cancelled."""

    code = CANCELLED


class UnknownError(OpError):
    """An error of no other class."""

    code = UNKNOWN


class InvalidArgumentError(OpError, ValueError):
    """A bad argument: a file pattern that cannot be matched, a file mode that does not exist."""

    code = INVALID_ARGUMENT


class DeadlineExceededError(OpError, TimeoutError):
    """A deadline expired."""

    code = DEADLINE_EXCEEDED


class NotFoundError(OpError, FileNotFoundError, KeyError):
    """A file, a checkpoint, or a key of a checkpoint, that does not exist."""

    code = NOT_FOUND


class AlreadyExistsError(OpError, FileExistsError):
    """What was to be created exists."""

    code = ALREADY_EXISTS


class PermissionDeniedError(OpError, PermissionError):
    """No permission to read or write."""

    code = PERMISSION_DENIED


class ResourceExhaustedError(OpError, MemoryError):
    """Out of memory or of another resource."""

    code = RESOURCE_EXHAUSTED


class FailedPreconditionError(OpError, OSError):
    """The system is not in a state for this (a directory opened as a file)."""

    code = FAILED_PRECONDITION


class AbortedError(OpError):
    """An operation was aborted."""

    code = ABORTED


class OutOfRangeError(OpError, IndexError):
    """Past the end."""

    code = OUT_OF_RANGE


class UnimplementedError(OpError, NotImplementedError):
    """A feature that is not implemented (a dtype with no numpy counterpart)."""

    code = UNIMPLEMENTED


class InternalError(OpError, RuntimeError):
    """A value that cannot be returned (a variant tensor as numpy)."""

    code = INTERNAL


class UnavailableError(OpError, ConnectionError):
    """A service is unavailable."""

    code = UNAVAILABLE


class DataLossError(OpError, ValueError):
    """A file that is not a checkpoint, or whose bytes are damaged."""

    code = DATA_LOSS


class UnauthenticatedError(OpError, PermissionError):
    """No valid credentials."""

    code = UNAUTHENTICATED


def translate(exc: BaseException) -> OpError:
    """The TensorFlow error for one of ckpt's errors (or an ``OSError``), keeping its message."""
    if isinstance(exc, OpError):
        return exc
    message = str(exc)
    if isinstance(exc, (CheckpointNotFoundError, TensorNotFoundError, FileNotFoundError)):
        return NotFoundError(None, None, message)
    if isinstance(exc, (CorruptCheckpointError, NotACheckpointError)):
        return DataLossError(None, None, message)
    if isinstance(exc, UnsupportedError):
        return UnimplementedError(None, None, message)
    if isinstance(exc, AmbiguousCheckpointError):
        return InvalidArgumentError(None, None, message)
    if isinstance(exc, PermissionError):
        return PermissionDeniedError(None, None, message)
    if isinstance(exc, IsADirectoryError):
        return FailedPreconditionError(None, None, message)
    return OpError(None, None, message, UNKNOWN)


__getattr__ = module_getattr("tf.errors")
