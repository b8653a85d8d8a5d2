"""What ``tf.train.Checkpoint.restore`` binds: a program's objects to a checkpoint's, by object path.

TensorFlow restores an object-based checkpoint by walking two graphs at once from their roots: the
program's objects (here: the object graph of a checkpoint that program wrote, the *target*) and the
checkpoint's. An object bound to a checkpoint node has each of its children, by local name (``net``,
``l1``, ``_kernel``), bound to the checkpoint node's child of the same name; an optimizer bound to a
checkpoint optimizer has its slot for a bound variable bound to the checkpoint's slot of the same name for
the node that variable is bound to. Full names (``net_1/kernel``) play no part: Keras 3 gives every
``Dense`` kernel of one model the same one. An object is reached by every path into it, so a layer that
moved (``net/dense`` for ``net/l1``) is still bound when another path reaches it (a Keras 3 optimizer's
``_trainable_variables`` lists the model's variables); the first binding of an object wins.

:func:`bind` gives target node -> checkpoint node; :func:`bind_keys` turns that into stored keys: each
target key -> the checkpoint key TensorFlow would read it from (its node bound, and the checkpoint node holding
the same attribute).
"""
from __future__ import annotations

from _collections import deque  # type: ignore[import-not-found]  # collections' C class, without the package

from formats.concepts.object_graph import ObjectGraph

__all__ = ["bind", "bind_keys"]


def bind(target: ObjectGraph, ckpt: ObjectGraph) -> dict[int, int]:
    """Target node id -> the checkpoint node id ``tf.train.Checkpoint.restore`` binds it to (roots bound)."""
    bound: dict[int, int] = {0: 0}
    queue = deque([0])
    while queue:
        _walk(target, ckpt, bound, queue)
        queue.extend(_slots(target, ckpt, bound))
    return bound


def _walk(target: ObjectGraph, ckpt: ObjectGraph, bound: dict[int, int], queue: deque) -> None:
    while queue:
        mine = queue.popleft()
        theirs = {name: child for child, name in ckpt.children(bound[mine])}
        for child, name in target.children(mine):
            other = theirs.get(name)
            if other is not None and child not in bound:
                bound[child] = other
                queue.append(child)


def _slots(target: ObjectGraph, ckpt: ObjectGraph, bound: dict[int, int]) -> list[int]:
    """Slot variables bound through their optimizer and variable (TensorFlow's deferred slot restore)."""
    added = []
    for node in target.slot_owners():
        if node not in bound:
            continue
        theirs = {(ref.original_variable_node_id, ref.slot_name): ref.slot_variable_node_id
                  for ref in ckpt.slot_variables(bound[node])}
        for ref in target.slot_variables(node):
            variable = bound.get(ref.original_variable_node_id)
            other = theirs.get((variable, ref.slot_name)) if variable is not None else None
            if other is not None and ref.slot_variable_node_id not in bound:
                bound[ref.slot_variable_node_id] = other
                added.append(ref.slot_variable_node_id)
    return added


def bind_keys(target: ObjectGraph, target_keys: list[str], ckpt: ObjectGraph, ckpt_keys: list[str]) -> dict[str, str]:
    """Target stored key -> the checkpoint stored key a restore reads it from, for every target key whose
    object is bound to a checkpoint node holding the same attribute (a key extending its attribute's
    ``checkpoint_key``, as an iterator's ``.../ITERATOR_STATE``, takes the checkpoint key with the same tail)."""
    nodes = bind(target, ckpt)
    theirs: dict[tuple[int, str], str] = {}
    for key, (node_id, attr) in ckpt.map_keys(ckpt_keys).items():
        theirs[(node_id, attr.name + key[len(attr.checkpoint_key):])] = key
    out: dict[str, str] = {}
    for key, (node_id, attr) in target.map_keys(target_keys).items():
        other = nodes.get(node_id)
        hit = theirs.get((other, attr.name + key[len(attr.checkpoint_key):])) if other is not None else None
        if hit is not None:
            out[key] = hit
    return out
