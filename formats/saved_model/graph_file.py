"""Read the graph file of a SavedModel directory: ``saved_model.pb``, or ``saved_model.pbtxt`` when only
that is there.

Kept apart from :mod:`formats.saved_model.proto` (the binary decoder) and
:mod:`formats.saved_model.textproto` (the text parser, which decodes through ``proto``) so that neither
imports the other back.
"""
from __future__ import annotations

import os

from formats.saved_model.names import GRAPH_FILE, TEXT_GRAPH_FILE
from formats.saved_model.proto import SavedModelProto, decode_saved_model, map_regular_file

__all__ = ["read_saved_model"]


def read_saved_model(directory: str) -> SavedModelProto:
    """Read the ``saved_model.pb`` (or ``saved_model.pbtxt``) of a SavedModel directory."""
    path = os.path.join(directory, GRAPH_FILE)
    if not os.path.lexists(path) and os.path.lexists(os.path.join(directory, TEXT_GRAPH_FILE)):
        from formats.saved_model.textproto import read_text_saved_model

        return read_text_saved_model(os.path.join(directory, TEXT_GRAPH_FILE))
    return decode_saved_model(map_regular_file(path), path)
