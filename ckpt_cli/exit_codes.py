"""Exit statuses shared by every command."""
from enum import IntEnum


class Exit(IntEnum):
    """0 ok, 1 difference or problem found, 2 usage error (click's), 3 unreadable input, 130 interrupted."""

    OK = 0
    PROBLEM = 1
    USAGE = 2
    UNREADABLE = 3
    INTERRUPTED = 130
