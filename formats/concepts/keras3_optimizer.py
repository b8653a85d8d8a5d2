"""Keras 3 optimizer variables in file order, derived from the optimizer table.

A Keras 3 optimizer saves ``iteration``, ``learning_rate`` (unless a schedule), then its slots in the
order ``add_optimizer_variables`` creates them (``keras/src/optimizers/*.py``: Adam adds
``(momentum, velocity)`` variable by variable, RMSprop one list per slot), then extra state (Nadam's
``u_product``): ``optimizer/vars/0, 1, ...`` in a ``.weights.h5``. :func:`keras3_layout` gives that order;
:func:`keras3_assign` finds every layout a file's variables fit, tying slots to model variables.
"""
from __future__ import annotations


from formats.concepts.optimizers import KERAS3, Family

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Collection

__all__ = ["keras3_layout", "keras3_assign", "KERAS3_SETTINGS", "Variable"]


def keras3_layout(fam: Family, n_trainable: int, settings: Collection[str] = (),
                  learning_rate_variable: bool = True) -> list[tuple[str, int | None]]:
    """The Keras 3 optimizer's variables in order: ``(name, trainable variable index or None)``.

    ``iteration``, ``learning_rate`` (unless a schedule), then each ``add_optimizer_variables`` group
    (``settings`` switches on ``momentum``, ``centered``, ``amsgrad`` slots), variable by variable,
    then the family's extra state (Nadam's ``u_product``).
    """
    out: list[tuple[str, int | None]] = [("iteration", None)]
    if learning_rate_variable:
        out.append(("learning_rate", None))
    for group in fam.keras3_groups:
        slots = [fam.slot_named(KERAS3, name) for name in group]
        if any(s is None for s in slots) or any(s.when and s.when not in settings for s in slots if s):
            continue
        out += [(name, i) for i in range(n_trainable) for name in group]
    if KERAS3 in fam.extra:
        out.append((fam.extra[KERAS3], None))
    return out


KERAS3_SETTINGS: dict[str, list[tuple[str, ...]]] = {
    "sgd": [(), ("momentum",)], "adam": [(), ("amsgrad",)], "adamw": [(), ("amsgrad",)],
    "rmsprop": [(), ("momentum",), ("centered",), ("momentum", "centered")]}
"""Per family, the combinations of settings that change a Keras 3 optimizer's variables."""

Variable = tuple[str, tuple[int, ...], str]
"""A model variable as :func:`keras3_assign` sees it: ``(name, shape, key)``."""


def keras3_assign(fam: Family, shapes: list[tuple[int, ...]], combos: list[tuple[tuple[str, ...], bool]],
                  trainable: list[Variable] | None = None, candidates: Collection[Variable] = ()
                  ) -> list[tuple[list[tuple[str, int | None]], list[Variable]]]:
    """Every way a Keras 3 optimizer's variables of ``shapes`` fit :func:`keras3_layout`: ``(layout,
    trainable variables in order)`` for each ``(settings, learning rate is a variable)`` combination
    that fits. ``trainable`` gives the model's trainable variables in Keras order (from a config);
    without it they are read off the slots' shapes among ``candidates``, which works only when no two
    candidates share a shape. One result means the layout is certain."""
    found = []
    for flags, lr_var in combos:
        for layout in _keras3_layouts(fam, flags, lr_var, len(shapes), trainable):
            order = _keras3_order(layout, shapes, trainable, list(candidates))
            if order is not None:
                found.append((layout, order))
    return found


def _keras3_layouts(fam: Family, flags: tuple[str, ...], lr_var: bool, count: int,
                    trainable: list[Variable] | None) -> list[list[tuple[str, int | None]]]:
    """The layouts of ``count`` variables possible for these settings (one per trainable count)."""
    fixed = len(keras3_layout(fam, 0, flags, lr_var))
    per_variable = len(keras3_layout(fam, 1, flags, lr_var)) - fixed
    if trainable is not None:
        sizes = [len(trainable)]
    elif per_variable:
        sizes = [(count - fixed) // per_variable] if (count - fixed) % per_variable == 0 else []
    else:
        sizes = [0]
    layouts = [keras3_layout(fam, n, flags, lr_var) for n in sizes if n >= 0]
    return [layout for layout in layouts if len(layout) == count]


def _keras3_order(layout: list[tuple[str, int | None]], shapes: list[tuple[int, ...]],
                  trainable: list[Variable] | None, candidates: list[Variable]) -> list[Variable] | None:
    """The trainable variables in layout order, checked against every slot's shape; None if unsure."""
    if any(index is None and shape != () for (_, index), shape in zip(layout, shapes)):
        return None
    if trainable is None:
        trainable = _by_slot_shapes(layout, shapes, candidates)
        if trainable is None:
            return None
    for (_, index), shape in zip(layout, shapes):
        if index is not None and (index >= len(trainable) or trainable[index][1] != shape):
            return None
    return trainable


def _by_slot_shapes(layout: list[tuple[str, int | None]], shapes: list[tuple[int, ...]],
                    candidates: list[Variable]) -> list[Variable] | None:
    by_shape: dict[tuple[int, ...], list[Variable]] = {}
    for c in candidates:
        by_shape.setdefault(c[1], []).append(c)
    if any(len(v) > 1 for v in by_shape.values()):
        return None
    order: dict[int, Variable] = {}
    for (_, index), shape in zip(layout, shapes):
        if index is not None and index not in order:
            if shape not in by_shape:
                return None
            order[index] = by_shape[shape][0]
    if sorted(order) != list(range(len(order))) or len({c[2] for c in order.values()}) != len(order):
        return None
    return [order[i] for i in range(len(order))]
