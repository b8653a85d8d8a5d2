"""The file names of a SavedModel directory's graph, binary and text.

A leaf module: the registry entry (:mod:`formats.saved_model.format`, on the sniffing path) and the
reader (:mod:`formats.saved_model.graph_file`) both import it, and it imports nothing.
"""
from __future__ import annotations

__all__ = ["GRAPH_FILE", "TEXT_GRAPH_FILE"]

GRAPH_FILE = "saved_model.pb"
TEXT_GRAPH_FILE = "saved_model.pbtxt"
