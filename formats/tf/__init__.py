"""A TensorFlow-shaped module for code that reads checkpoints, without TensorFlow.

``import formats.tf as tf`` gives ``tf.train.latest_checkpoint``, ``get_checkpoint_state``,
``list_variables``, ``load_variable``, ``load_checkpoint``, ``NewCheckpointReader``,
``checkpoints_iterator``, ``checkpoint_exists``, ``get_checkpoint_mtimes`` (also under
``tf.compat.v1.train``), ``tf.errors`` (``NotFoundError``, ``DataLossError``, ...), ``tf.io.gfile``
and the dtypes (``tf.float32``, ``tf.as_dtype``), behaving as TensorFlow's do on every format
ckpt reads. ``ckpt run script.py`` (or ``python -m formats.tf script.py``) runs a script with this
module installed as ``tensorflow``. Any other name raises one error saying TensorFlow is needed.
"""
from __future__ import annotations

import importlib

from formats.tf._missing import module_getattr

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["train", "compat", "errors", "io", "dtypes", "python", "DType", "as_dtype"]

_SUBMODULES = {"train", "compat", "errors", "io", "dtypes", "python"}
_missing = module_getattr("tf")


def __getattr__(name: str) -> Any:
    """Submodules and dtypes are imported on first use; anything else needs TensorFlow."""
    if name in _SUBMODULES:
        return importlib.import_module(f"formats.tf.{name}")
    if not name.startswith("_"):
        dtypes = importlib.import_module("formats.tf.dtypes")
        if name in ("DType", "as_dtype") or name in dtypes.CONSTANTS:
            return getattr(dtypes, name)
    return _missing(name)


def __dir__() -> list[str]:
    from formats.tf.dtypes import CONSTANTS

    return sorted({*__all__, *CONSTANTS})
