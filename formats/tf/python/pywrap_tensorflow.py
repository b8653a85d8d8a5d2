"""``tensorflow.python.pywrap_tensorflow``: ``NewCheckpointReader`` (``from tensorflow.python import pywrap_tensorflow``)."""
from __future__ import annotations

from formats.tf._missing import module_getattr
from formats.tf.reader import CheckpointReader, NewCheckpointReader

__all__ = ["NewCheckpointReader", "CheckpointReader"]

__getattr__ = module_getattr("tensorflow.python.pywrap_tensorflow")
