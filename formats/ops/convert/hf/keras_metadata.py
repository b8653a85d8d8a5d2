"""The Keras configuration a TF2 Keras SavedModel keeps beside its variables, in ``keras_metadata.pb``.

``tf.keras``'s ``model.save(..., save_format="tf")`` (what tensorflow/models' ``export_tfhub.py`` runs) writes a
``SavedMetadata`` message: one ``SavedObject`` per Keras object (field 3 ``node_path``, ``root.layer_with_weights-0``;
field 5 ``metadata``, JSON holding the layer's ``class_name`` and ``config``). A TF Hub encoder's sizes that no
shape holds (ALBERT's ``num_layers``: one layer shared by all) are read from there. Keras's serialized functions
(``{"class_name": "function", "config": "Text>gelu"}``) become their names (``gelu``).
"""
from __future__ import annotations

import json

from formats.core.errors import InputReadError
from formats.io.protowire import Message, WireError

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["read_keras_metadata", "MAX_METADATA_BYTES"]

MAX_METADATA_BYTES = 256 << 20
"""Largest ``keras_metadata.pb`` read (a BERT-large export's is under 1 MiB)."""


def read_keras_metadata(path: str, node_path: str) -> dict[str, Any]:
    """The ``config`` of the Keras object at ``node_path`` in the ``keras_metadata.pb`` at ``path``, with its
    ``class_name``; InputReadError naming the file when it is not one or has no such object."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_METADATA_BYTES + 1)
    except OSError as exc:
        raise InputReadError(path, f"cannot read the Keras metadata ({exc.strerror})", errno=exc.errno) from None
    if len(data) > MAX_METADATA_BYTES:
        raise InputReadError(path, f"Keras metadata larger than {MAX_METADATA_BYTES >> 20} MiB")
    try:
        for node in Message(data, max_fields=1 << 24).messages(1, max_fields=64):
            if node.text(3) == node_path:
                doc = json.loads(node.text(5))
                break
        else:
            raise InputReadError(path, f"no Keras object {node_path!r} in the Keras metadata")
    except (WireError, ValueError, RecursionError) as exc:
        raise InputReadError(path, f"not a Keras metadata file ({exc})") from None
    config = doc.get("config") if isinstance(doc, dict) else None
    if not isinstance(config, dict):
        raise InputReadError(path, f"the Keras object {node_path!r} has no configuration")
    return {**{k: _plain(v) for k, v in config.items()}, "class_name": doc.get("class_name")}


def _plain(value: Any) -> Any:
    """A serialized Keras function as its name (``{"config": "Text>gelu"}`` and ``Text>gelu`` -> ``gelu``);
    anything else as it is."""
    if isinstance(value, dict) and value.get("class_name") == "function" and isinstance(value.get("config"), str):
        return _plain(value["config"])
    if isinstance(value, str) and value.startswith("Text>"):  # a function registered by tensorflow/models
        return value[len("Text>"):]
    return value
