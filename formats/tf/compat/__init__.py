"""``tf.compat``: ``v1`` (the TF1 names scripts use) and ``v2`` (:mod:`formats.tf` itself)."""
from __future__ import annotations

import importlib

from formats.tf._missing import module_getattr

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["v1", "v2"]

_missing = module_getattr("tf.compat")


def __getattr__(name: str) -> Any:
    if name == "v1":
        return importlib.import_module("formats.tf.compat.v1")
    if name == "v2":
        return importlib.import_module("formats.tf")
    return _missing(name)
