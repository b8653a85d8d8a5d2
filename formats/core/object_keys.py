"""How an object-based (TF2) checkpoint names a variable's tensor: ``<object path>/.ATTRIBUTES/VARIABLE_VALUE``.

The one definition of these names: the object graph (:mod:`formats.concepts.object_graph`), the formats
that build one, key lookup and the tables that shorten keys all use them from here.
"""
from __future__ import annotations

__all__ = ["ATTRIBUTES", "VARIABLE_VALUE", "VALUE_SUFFIX"]

ATTRIBUTES = ".ATTRIBUTES"
"""The path segment before an object's attribute names in its keys."""
VARIABLE_VALUE = "VARIABLE_VALUE"
"""The attribute a variable's value is saved under."""
VALUE_SUFFIX = f"/{ATTRIBUTES}/{VARIABLE_VALUE}"
"""The suffix every variable's key ends with in an object-based checkpoint."""
