"""``tf.io``: only ``tf.io.gfile`` (files over local paths and fsspec URLs)."""
from __future__ import annotations

from formats.tf._missing import module_getattr
from formats.tf.io import gfile

__all__ = ["gfile"]

__getattr__ = module_getattr("tf.io")
