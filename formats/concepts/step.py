"""A checkpoint's own step: the training step a user means, read from the checkpoint itself.

The number in a checkpoint's name (``ckpt-5``) is how many times it was saved (``CheckpointManager``'s
``save_counter``) or whatever the program passed as ``global_step`` to ``Saver.save``; the step a user
means is the program's step counter stored inside it. That is, first found:

1. a variable the program named ``step`` or ``global_step`` (``tf.train.Checkpoint(step=tf.Variable(1))``,
   an Estimator's ``global_step``): by its object path (the key without ``/.ATTRIBUTES/VARIABLE_VALUE``)
   or its TF1-style name, at the top level before one nested deeper;
2. the optimizer's iteration counter (:data:`~formats.concepts.optimizers.COUNTERS`: TF1's ``global_step``,
   tf-keras' ``iter``/``iterations``/``iteration``, Keras 3's ``iteration``), a tensor whose role is
   ``optimizer`` (in an object-based checkpoint, one under an object named ``optimizer``).

Only integer scalars count, and only that one scalar is read: no other tensor, not even the object graph
(an object-based key holds the object path). None when there is none.
"""
from __future__ import annotations

from formats.concepts.optimizers import COUNTERS
from formats.core.errors import CheckpointError
from formats.core.model import Checkpoint, Role, TensorEntry
from formats.core.object_keys import VALUE_SUFFIX

__all__ = ["PROGRAM_STEPS", "OPTIMIZER_COUNTERS", "step_variable", "own_step"]

PROGRAM_STEPS = ("step", "global_step")
"""Names a program gives its own step counter."""
OPTIMIZER_COUNTERS = frozenset({*COUNTERS.values(), "iterations", "_iterations"}) - {"global_step"}
"""Last name segments of an optimizer's iteration counter (``Adam/iter``, ``optimizer/_iterations``)."""
_INTEGERS = {"int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8}
"""The integer dtypes a step may have, with their sizes in bytes."""


def _names(entry: TensorEntry) -> tuple[tuple[str, ...], bool]:
    """The names ``entry`` goes by (without ``:0``) and whether it is optimizer state. An object-based key
    (``optimizer/iter/.ATTRIBUTES/VARIABLE_VALUE``) says both by its object path, without the object graph
    (whose reading would be a second tensor read); any other, by the key, its TF1-style name and its role."""
    if entry.key.endswith(VALUE_SUFFIX):
        path = entry.key[:-len(VALUE_SUFFIX)]
        return (path,), any(part.endswith("optimizer") for part in path.split("/")[:-1])
    return (entry.key.removesuffix(":0"), entry.name.removesuffix(":0")), entry.role == Role.OPTIMIZER


def _rank(entry: TensorEntry) -> int | None:
    """0: a top-level ``step``/``global_step``; 1: one nested deeper; 2: the optimizer's counter; None: none."""
    if tuple(entry.shape) != () or entry.dtype not in _INTEGERS:
        return None
    names, optimizer = _names(entry)
    if any(n in PROGRAM_STEPS for n in names):
        return 0
    lasts = [n.rsplit("/", 1)[-1] for n in names]
    if any(last in PROGRAM_STEPS for last in lasts):
        return 1
    if optimizer and any(last in OPTIMIZER_COUNTERS for last in lasts):
        return 2
    return None


def step_variable(ckpt: Checkpoint) -> TensorEntry | None:
    """The tensor holding ``ckpt``'s own step (see the module doc; the first key of the best kind), or None."""
    best: tuple[int, str] | None = None
    for key, entry in ckpt.items():
        rank = _rank(entry)
        if rank is not None and (best is None or (rank, key) < best):
            best = (rank, key)
    return None if best is None else ckpt[best[1]]


def own_step(ckpt: Checkpoint) -> tuple[int | None, str | None]:
    """``(step, key)``: the value of ``ckpt``'s :func:`step_variable` and its key; ``(None, None)`` when it has
    none, ``(None, key)`` when that scalar cannot be read (a checksum that fails: ``verify`` says more)."""
    entry = step_variable(ckpt)
    if entry is None:
        return None, None
    try:
        raw = b"".join(entry.byte_chunks())  # canonical little-endian bytes, checksum checked; no numpy
    except (CheckpointError, ValueError, OSError):
        return None, entry.key
    if len(raw) != _INTEGERS[entry.dtype]:
        return None, entry.key
    return int.from_bytes(raw, "little", signed=entry.dtype.startswith("int")), entry.key
