"""Deprecated private name of :mod:`formats.core.gc_pause`, kept only while ``ckpt_cli`` still imports it
(``ckpt_cli/commands/listing.py``); import :func:`formats.core.gc_pause.paused_gc` instead."""
from __future__ import annotations

from formats.core.gc_pause import paused_gc

__all__ = ["paused_gc"]
