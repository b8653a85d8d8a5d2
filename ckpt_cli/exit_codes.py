"""The exit statuses of every command: :class:`formats.core.errors.ExitCode`, declared there once."""
from formats.core.errors import ExitCode

__all__ = ["ExitCode"]
