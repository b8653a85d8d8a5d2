"""``tf.compat.v1``: ``train``, ``errors``, ``io``, ``gfile``, ``dtypes`` and the dtype names, as TF1 scripts use them.

``disable_v2_behavior``, ``disable_eager_execution`` and ``enable_eager_execution`` do nothing
(nothing here builds graphs), and ``logging`` writes to Python's ``tensorflow`` logger, so the
preamble of a TF1 script runs; anything that builds or runs a graph needs TensorFlow and says so.
"""
from __future__ import annotations

import logging as _logging
from types import SimpleNamespace

from formats.tf import dtypes, errors, io, train
from formats.tf._missing import module_getattr
from formats.tf.dtypes import CONSTANTS, DType, as_dtype
from formats.tf.io import gfile

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["train", "errors", "io", "gfile", "dtypes", "DType", "as_dtype", "logging", "disable_v2_behavior",
           "disable_eager_execution", "enable_eager_execution"]  # and every dtype name, as in formats.tf.dtypes

globals().update(CONSTANTS)
_log = _logging.getLogger("tensorflow")
logging = SimpleNamespace(
    DEBUG=_logging.DEBUG, INFO=_logging.INFO, WARN=_logging.WARNING, WARNING=_logging.WARNING,
    ERROR=_logging.ERROR, FATAL=_logging.FATAL, set_verbosity=_log.setLevel, get_verbosity=_log.getEffectiveLevel,
    debug=_log.debug, info=_log.info, warning=_log.warning, warn=_log.warning, error=_log.error, fatal=_log.fatal)


def disable_v2_behavior() -> None:
    """Nothing to do: no graphs are built here."""


def disable_eager_execution() -> None:
    """Nothing to do: no graphs are built here."""


def enable_eager_execution(*args: Any, **kwargs: Any) -> None:
    """Nothing to do: no graphs are built here."""


__getattr__ = module_getattr("tf.compat.v1")
