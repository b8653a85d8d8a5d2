"""The names a model map may know a source tensor by: its stored key and, in an object-based checkpoint or a
SavedModel, the same attribute under every other object path of its node; and, for a layout with a ``prefix``,
those names without it.
"""
from __future__ import annotations

from formats.core.model import OBJECT_GRAPH_KEY, Checkpoint
from formats.ops.convert.hf.family import Layout

__all__ = ["source_names", "candidates"]


def source_names(source: Checkpoint) -> dict[str, list[str]]:
    """Each stored key -> the names a model map may know it by: the key itself, then, for a variable of an
    object-based checkpoint or a SavedModel, the same attribute under each further object path of its node, in
    TensorFlow's breadth-first order (a Keras SavedModel stores its variables as ``variables/N``; the same node is
    also ``layer_with_weights-0/layer_with_weights-4/_attention_layer/_query_dense/kernel``)."""
    keys = [k for k in source if k != OBJECT_GRAPH_KEY]
    out = {k: [k] for k in keys}
    graph = source.object_graph
    if graph is None:
        return out
    for key, (node_id, _) in graph.map_keys(keys).items():
        path = graph.path(node_id)
        if path and key.startswith(path + "/"):
            tail = key[len(path):]
            out[key] += [alias + tail for alias in graph.aliases(node_id)]
    return out


def candidates(layout: Layout, names: list[str]) -> list[str]:
    """The names a layout's rules are tried on: those carrying its ``prefix`` without it, then all as they are."""
    if not layout.prefix:
        return names
    return [n[len(layout.prefix):] for n in names if n.startswith(layout.prefix)] + names
