"""How an object-based (TF2) checkpoint names a variable's tensor: ``<object path>/.ATTRIBUTES/VARIABLE_VALUE``,
and how deep its objects may nest.

The one definition of these names: the object graph (:mod:`formats.concepts.object_graph`), the formats
that build one, key lookup and the tables that shorten keys all use them from here.
"""
from __future__ import annotations

__all__ = ["ATTRIBUTES", "VARIABLE_VALUE", "VALUE_SUFFIX", "MAX_NESTING", "object_path"]

ATTRIBUTES = ".ATTRIBUTES"
"""The path segment before an object's attribute names in its keys."""
VARIABLE_VALUE = "VARIABLE_VALUE"
"""The attribute a variable's value is saved under."""
VALUE_SUFFIX = f"/{ATTRIBUTES}/{VARIABLE_VALUE}"
"""The suffix every variable's key ends with in an object-based checkpoint."""
MAX_NESTING = 256
"""Objects deeper than this below the root are refused (real graphs are a few dozen deep)."""


def object_path(key: str) -> str:
    """A variable's key as the object path it is stored under (``net/l1/_kernel``); the keys of other
    attributes (``iterator/.ATTRIBUTES/ITERATOR_STATE``) and of name-based checkpoints as they are."""
    return key[:-len(VALUE_SUFFIX)] if key.endswith(VALUE_SUFFIX) else key
