"""How a written tensor's bytes got into the bundle, shared by the writer and its read-back check.

``FRESH``: encoded from the source and written; ``COPIED``: copied from an input bundle's data file;
``LINKED``: the input data file itself, hard-linked (or reflinked) into the output. A leaf module, so
:mod:`formats.tf_bundle.readback` need not import the writer that imports it.
"""
from __future__ import annotations

__all__ = ["FRESH", "COPIED", "LINKED"]

FRESH, COPIED, LINKED = "fresh", "copied", "linked"
