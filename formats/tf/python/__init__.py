"""``tensorflow.python``: only ``pywrap_tensorflow.NewCheckpointReader``, which older scripts import."""
from __future__ import annotations

from formats.tf._missing import module_getattr
from formats.tf.python import pywrap_tensorflow

__all__ = ["pywrap_tensorflow"]

__getattr__ = module_getattr("tensorflow.python")
