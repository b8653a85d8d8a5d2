"""How an object-based (TF2) checkpoint names a variable's tensor: ``<object path>/.ATTRIBUTES/VARIABLE_VALUE``,
how an object path is made of escaped local names (``..`` for ``.``, ``.S`` for ``/``), a slot's path, and how
deep its objects may nest.

The one definition of these names: the object graph (:mod:`formats.concepts.object_graph`, which gives them
too), the formats that build one, key lookup and the tables that shorten keys all use them from here - a
name-based checkpoint's new graph is planned with them without importing the graph's model.
"""
from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["ATTRIBUTES", "VARIABLE_VALUE", "VALUE_SUFFIX", "OPTIMIZER_SLOT", "MAX_NESTING", "object_path", "escape_local_name",
           "unescape_local_name", "chain_path", "split_path", "attribute_key", "slot_variable_key"]

ATTRIBUTES = ".ATTRIBUTES"
"""The path segment before an object's attribute names in its keys."""
VARIABLE_VALUE = "VARIABLE_VALUE"
"""The attribute a variable's value is saved under."""
VALUE_SUFFIX = f"/{ATTRIBUTES}/{VARIABLE_VALUE}"
"""The suffix every variable's key ends with in an object-based checkpoint."""
OPTIMIZER_SLOT = ".OPTIMIZER_SLOT"
"""The path segment between a variable's object path and a slot of it (``<var>/.OPTIMIZER_SLOT/<optimizer>/<slot>``)."""
MAX_NESTING = 256
"""Objects deeper than this below the root are refused (real graphs are a few dozen deep)."""


def object_path(key: str) -> str:
    """A variable's key as the object path it is stored under (``net/l1/_kernel``); the keys of other
    attributes (``iterator/.ATTRIBUTES/ITERATOR_STATE``) and of name-based checkpoints as they are."""
    return key[:-len(VALUE_SUFFIX)] if key.endswith(VALUE_SUFFIX) else key


def escape_local_name(name: str) -> str:
    """One path segment as TensorFlow writes it: ``.`` -> ``..`` first, then ``/`` -> ``.S``."""
    return name.replace(".", "..").replace("/", ".S")


def unescape_local_name(segment: str) -> str:
    """Undo :func:`escape_local_name`; ValueError for a ``.`` not followed by ``.`` or ``S``."""
    if "." not in segment:
        return segment  # nothing escaped: most names
    out: list[str] = []
    i = 0
    while i < len(segment):
        ch = segment[i]
        if ch != ".":
            out.append(ch)
            i += 1
            continue
        nxt = segment[i + 1:i + 2]
        if nxt == ".":
            out.append(".")
        elif nxt == "S":
            out.append("/")
        else:
            raise ValueError(f"bad escape at {i} in path segment {segment!r}")
        i += 2
    return "".join(out)


PATHS_KEPT = 4096
"""Paths a builder or a rename keeps made at most (those of a run of siblings' parents: nodes are asked about in
order), cleared past that; a path a node held was 100 MB at 10^6 objects."""


def chain_path(node: int, paths: dict[int, str], parent: Any, edge: Any, segment: Callable[[int], str],
               kept: int | None = None) -> str:
    """The path of ``node``, which a path reaches: its first parent's (``parent[node]``, up to one in ``paths``) and
    ``segment(e)`` of the edge that reached it (``edge[node]``), each path made on the way added to ``paths``.
    ``kept`` (such as :data:`PATHS_KEPT`): once ``paths`` holds that many, all but the root's (node 0) are let go
    first, made again when asked for."""
    if kept is not None and len(paths) >= kept:
        root = paths[0]
        paths.clear()
        paths[0] = root
    chain = []
    current = node
    while current not in paths:
        chain.append(current)
        current = parent[current]
    prefix = paths[current]
    for current in reversed(chain):
        name = segment(edge[current])
        prefix = paths[current] = f"{prefix}/{name}" if prefix else name
    return prefix


def split_path(path: str) -> list[str]:
    """``"nested/a.Sb"`` -> ``["nested", "a/b"]`` (the unescaped local names; ``""`` is the root)."""
    if not path:
        return []
    return path.split("/") if "." not in path else [unescape_local_name(s) for s in path.split("/")]


def attribute_key(path: str, attribute: str) -> str:
    """``<path>/.ATTRIBUTES/<escaped attribute>``, TensorFlow's ``checkpoint_key``."""
    return f"{path}/{ATTRIBUTES}/{escape_local_name(attribute)}"


def slot_variable_key(variable_path: str, optimizer_path: str, slot_name: str) -> str:
    """The object path of a slot variable: ``<var>/.OPTIMIZER_SLOT/<optimizer>/<escaped slot>``."""
    return f"{variable_path}/{OPTIMIZER_SLOT}/{optimizer_path}/{escape_local_name(slot_name)}"
