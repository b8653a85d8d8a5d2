"""TensorFlow's messages (``Couldn't match files for checkpoint ...``) on Python's ``tensorflow`` logger.

:mod:`logging` is imported on the first message, not at start-up.
"""
from __future__ import annotations

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any


__all__ = ["log"]


class _Log:
    """``log.info/warning/error(msg, *args)`` to ``logging.getLogger("tensorflow")``."""

    def __getattr__(self, level: str) -> Any:
        import logging

        return getattr(logging.getLogger("tensorflow"), level)


log = _Log()
