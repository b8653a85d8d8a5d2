"""The data model's constants and pure helpers that start-up paths need without its classes: the object
graph's key, numpy's rank limit, how a shape is written and why numpy cannot hold one.

:mod:`formats.core.model` re-exports all of them; this leaf exists so that ``ckpt ls PREFIX`` (the
compact listing of a bundle and its renderer) runs without importing the model's classes and enums.
"""
from __future__ import annotations

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

__all__ = ["OBJECT_GRAPH_KEY", "MAX_RANK", "shape_text", "array_problem", "prod", "elements"]

OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
"""The key under which a TF2 object-based checkpoint stores its serialized object graph."""
MAX_RANK = 64
"""numpy arrays have at most this many dimensions."""


def _first_prod(values: Iterable[int]) -> int:
    global prod
    from math import prod as math_prod

    prod = math_prod
    return math_prod(values)


prod: Callable[[Iterable[int]], int] = _first_prod
"""``math.prod``, math imported when it is first called (a shared library: loading it is half a million instructions
or more, which a small checkpoint's ``ls``, ``verify`` or ``diff`` need not pay). It then is ``math.prod`` itself:
call it as ``shapes.prod``, not bound by ``from ... import``."""


def elements(shape: Sequence[int]) -> int:
    """The number of elements of ``shape`` (1 for a scalar): :data:`prod`'s, as quick as ``math.prod`` for the usual
    ranks (below 3: no math imported for them) and asked once or twice for every tensor a command reads."""
    n = len(shape)
    if n == 2:
        return shape[0] * shape[1]
    if n == 1:
        return shape[0]
    return 1 if n == 0 else prod(shape)


def shape_text(shape: Iterable[int]) -> str:
    """``(3, 4)`` -> ``[3, 4]`` (TensorFlow's listing style); a scalar is ``[]``."""
    return "[" + ", ".join(str(d) for d in shape) + "]"


def array_problem(shape: tuple[int, ...], itemsize: int = 1) -> str | None:
    """Why numpy cannot make an array of ``shape`` (``itemsize`` bytes per element), or None: more than
    :data:`MAX_RANK` dimensions, or dimensions whose product (zeros aside, as numpy counts) passes 2**63."""
    if len(shape) > MAX_RANK:
        return f"rank {len(shape)}; numpy arrays have at most {MAX_RANK} dimensions"
    if prod(d for d in shape if d) * max(itemsize, 1) >= 1 << 63:
        return f"shape {shape_text(shape)}, too large for any numpy array"
    return None
