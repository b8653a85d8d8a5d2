"""Parameters that are not one stored tensor each, for :mod:`.plan`: a ``split`` rule's parts (one stored tensor,
one parameter per part of its first axis: XLNet's stacked per-layer biases) and an ``into`` rule's pieces (several
stored tensors, one parameter: ImageGPT's q, k and v side by side as c_attn).
"""
from __future__ import annotations


from formats.core.model import TensorEntry
from formats.ops.convert.hf.entries import MappedEntry, PartEntry, PiecesEntry, output_shape
from formats.ops.convert.hf.family import MapRule, evaluate
from formats.ops.convert.plan import ConversionPlan

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["split_parts", "assemble"]


def split_parts(plan: ConversionPlan, entry: TensorEntry, rule: MapRule, target: str,
                config: dict[str, Any]) -> dict[str, tuple[str, TensorEntry | None, MapRule]]:
    """A ``split`` rule's parts: ``key[n]`` -> (the target with ``{i}`` = n, part n of the source); an error when
    the source's first axis does not hold one part per value (the parts then None: claimed, not planned)."""
    (name, count_expr), = (rule.split or {}).items()
    count = evaluate(count_expr, config)
    if not entry.shape or entry.shape[0] != count:
        plan.add("config", count_expr, f"{entry.key!r} {list(entry.shape)} does not hold one part per "
                 f"{{{name}}} along its first axis ({count_expr}={count}): the configuration contradicts the shapes")
        return {f"{entry.key}[{n}]": (target.replace(f"{{{name}}}", str(n)), None, rule) for n in range(count)}
    return {f"{entry.key}[{n}]": (target.replace(f"{{{name}}}", str(n)), PartEntry(entry, f"{entry.key}[{n}]", n), rule)
            for n in range(count)}


def assemble(plan: ConversionPlan, target: str, found: list[tuple[str, TensorEntry, MapRule]],
             want: tuple[int, ...], config: dict[str, Any]) -> None:
    """One parameter made of the pieces ``into`` rules place along an axis; an error naming what does not fit or
    what is not covered."""
    placed = []
    for key, entry, rule in found:
        into = rule.into or {}
        axis, at, size = int(into["axis"]), evaluate(str(into["at"]), config), evaluate(str(into["size"]), config)
        shape = list(want)
        shape[axis] = size
        if output_shape(tuple(entry.shape), rule.ops, tuple(shape)) != tuple(shape):
            plan.add("config", key, f"{key!r} {list(entry.shape)} does not fit its piece {shape} of {target!r} "
                     f"{list(want)}: the configuration contradicts the shapes")
            return
        dtype = rule.dtype or entry.dtype
        value = MappedEntry(entry, key, tuple(shape), dtype, rule.ops) if rule.ops or dtype != entry.dtype else entry
        placed.append((at, size, key, value))
    placed.sort(key=lambda p: p[0])
    ends = [0] + [at + size for at, size, _, _ in placed]
    if [at for at, _, _, _ in placed] != ends[:-1] or ends[-1] != want[axis]:
        plan.add("missing", target, f"the pieces of {target!r} {list(want)} ({', '.join(k for _, _, k, _ in placed)}) "
                 f"do not cover its axis {axis} exactly")
        return
    value = PiecesEntry([v for _, _, _, v in placed], axis, target, want)
    plan.add_row(" + ".join(k for _, _, k, _ in placed), target, value, want, value.dtype, "",
                 f"pieces along axis {axis}")
