"""Names for Keras 3 variables: ``<layer name>/<role>`` where the layer class is known, else
``<layer name>/<index>``; optimizer slots named as Keras names them, and tied to their variables,
when the model config or the slots' shapes make the optimizer's layout certain.

Keras 3 saves a layer's variables as ``<path>/vars/0, 1, ...`` in creation order (trainable first).
The layer class comes from ``config.json`` (looked up by the ``vars`` group's ``name`` attribute) or,
without a config, from the path itself: Keras names container elements by the snake_case class name
(``layers/batch_normalization_1``).
"""
from __future__ import annotations


from formats.concepts.keras3_optimizer import KERAS3_SETTINGS, keras3_assign
from formats.concepts.keras_layers import (NON_TRAINABLE, SUB_OBJECTS, VARIABLES, by_snake_name, has_variable,
                                          to_snake_case)
from formats.concepts.optimizers import KERAS3, family_of_class
from formats.core.records import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

__all__ = ["VarsGroup", "OptimizerVar", "layer_roles", "name_groups", "config_layers", "optimizer_names",
           "configured_optimizer", "to_snake_case"]

ROLES = VARIABLES
"""Class name -> its variables in storage order (:data:`formats.concepts.keras_layers.VARIABLES`)."""
_CONTAINERS = {"layers", "_layers"}


@record
class VarsGroup:
    """One ``vars`` group: the object path owning it, its ``name`` attribute, and its variables' shapes."""

    path: str                      # "layers/lstm/cell" ("" for the root object)
    own_name: str                  # the name attribute, or the last path component
    shapes: list[tuple[int, ...]]  # by index
    full_name: str = ""
    cls: str | None = None
    roles: list[str] | None = None


def config_layers(config: Any) -> dict[str, tuple[str, dict[str, Any]] | None]:
    """Layer name -> (class name, layer config) for every layer in a Keras config (None when ambiguous)."""
    found: dict[str, tuple[str, dict[str, Any]] | None] = {}
    for node in _walk(config):
        cfg = node.get("config")
        name = cfg.get("name") if isinstance(cfg, dict) else None
        if isinstance(name, str) and isinstance(cfg, dict) and isinstance(node.get("class_name"), str):
            entry = (node["class_name"], cfg)
            if name in found and found[name] is not None and found[name][0] != entry[0]:  # type: ignore[index]
                found[name] = None
            else:
                found.setdefault(name, entry)
    return found


def _walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        if "class_name" in node:
            yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def layer_roles(cls: str | None, cfg: dict[str, Any] | None, count: int) -> list[str] | None:
    """The role of each of ``count`` variables of a layer of class ``cls``, or None when unsure."""
    table = ROLES.get(cls or "")
    if table is None:
        return None
    if cfg is not None:
        roles = [role for role, flag in table if has_variable(flag, cfg)]
        return roles if len(roles) == count else None
    full = [role for role, _ in table]
    required = [role for role, flag in table if flag is None]
    for roles in (full, required):
        if len(roles) == count:
            return roles
    return None


def _class_of(group: VarsGroup, parent: VarsGroup | None, known: dict[str, Any]) -> tuple[str | None, Any]:
    """The class of a ``vars`` group's object: from the config by its name; else as the attribute its parent
    saves it under says (``query_dense`` of a ``MultiHeadAttention``, ``cell`` of an ``LSTM``); else from the
    names Keras gives by class (the container's ``layers/batch_normalization_1``, a cell's ``lstm_cell``)."""
    hit = known.get(group.own_name)
    if hit is not None:
        return hit
    last = group.path.rsplit("/", 1)[-1]
    if parent is not None and parent.cls is not None:
        sub = SUB_OBJECTS.get(parent.cls, {})
        if sub.get(last) is not None:
            return sub[last], None
    return by_snake_name(last) or by_snake_name(group.own_name), None


def name_groups(groups: dict[str, VarsGroup], config: Any) -> None:
    """Fill ``full_name``, ``cls`` and ``roles`` of every group (parents before children)."""
    known = config_layers(config) if config is not None else {}
    for path in sorted(groups, key=lambda p: p.count("/") if p else -1):
        group = groups[path]
        parent = _parent(groups, path)
        parts = path.split("/")
        attribute_child = parent is not None and parent.path != "" and parts[-2] not in _CONTAINERS
        group.full_name = (f"{parent.full_name}/{group.own_name}" if parent is not None and attribute_child
                           else group.own_name)
        cls, cfg = _class_of(group, parent, {k: v for k, v in known.items() if v is not None})
        group.cls = cls
        group.roles = layer_roles(cls, cfg, len(group.shapes)) if group.shapes else []


def _parent(groups: dict[str, VarsGroup], path: str) -> VarsGroup | None:
    parts = path.split("/") if path else []
    for cut in range(len(parts) - 1, -1, -1):
        candidate = "/".join(parts[:cut])
        if candidate in groups:
            return groups[candidate]
    return None


@record(frozen=True)
class OptimizerVar:
    """What one Keras 3 optimizer variable is: its ``name``, and for a slot the key of its model
    variable (``slot_of``), the Keras slot name and the optimizer class."""

    name: str
    slot_of: str | None = None
    slot_name: str | None = None
    optimizer: str | None = None


def optimizer_names(opt: VarsGroup, groups: dict[str, VarsGroup], config: Any) -> list[OptimizerVar] | None:
    """Keras' names for the optimizer's variables (``adam/iteration``, ``adam/dense_kernel_momentum``),
    or None unless the optimizer's layout is certain.

    The class and its settings come from ``config.json`` (``compile_config``), else from the
    ``vars`` group's ``name`` (Keras names an optimizer after its class: ``adam``, ``rm_sprop``);
    the layout from the optimizer table (:func:`formats.concepts.optimizers.keras3_layout`). The
    model's trainable variables come in the config's order, or, without a config, in the order
    the slots' shapes spell out, which is taken only when every trainable variable's shape is unique.
    """
    settings, cls = _optimizer_settings(config, opt)
    fam = family_of_class(cls, KERAS3) if cls else None
    if fam is None or settings is None:
        return None
    trainable = _trainable_variables(groups, config) if config is not None else None
    candidates = [] if trainable is not None else _candidates(groups)
    found = keras3_assign(fam, opt.shapes, settings, trainable, candidates)
    if len(found) != 1:
        return None
    layout, order = found[0]
    cls_name = fam.class_name(KERAS3)
    out = []
    for name, index in layout:
        if index is None:
            out.append(OptimizerVar(f"{opt.own_name}/{name}"))
        else:
            var_name, _, key = order[index]
            out.append(OptimizerVar(f"{opt.own_name}/{var_name.replace('/', '_')}_{name}", key, name, cls_name))
    return out


def _optimizer_settings(config: Any, opt: VarsGroup) -> tuple[list[tuple[tuple[str, ...], bool]] | None, str | None]:
    """The (slot settings, learning rate is a variable) combinations to try, and the class name."""
    named = configured_optimizer(config)
    if named is None:
        fam = family_of_class(opt.own_name, KERAS3)
        combos = KERAS3_SETTINGS.get(fam.name, [()]) if fam else [()]
        return [(c, lr) for c in combos for lr in (True, False)], fam.class_name(KERAS3) if fam else None
    return named


def configured_optimizer(config: Any) -> tuple[list[tuple[tuple[str, ...], bool]] | None, str | None] | None:
    """The optimizer a Keras 3 ``config.json`` names (``compile_config``'s ``optimizer``, as ``Model.compile``
    serializes it): ``([(slot settings, learning rate is a variable)], class name)``, the settings None for an
    optimizer whose variables ckpt does not lay out (EMA, gradient accumulation); None when the config names none."""
    compile_cfg = config.get("compile_config") if isinstance(config, dict) else None
    opt_cfg = compile_cfg.get("optimizer") if isinstance(compile_cfg, dict) else None
    if not isinstance(opt_cfg, dict) or not isinstance(opt_cfg.get("class_name"), str):
        return None
    cfg = opt_cfg.get("config")
    cfg = cfg if isinstance(cfg, dict) else {}
    if cfg.get("use_ema") or cfg.get("gradient_accumulation_steps"):
        return None, None
    momentum = cfg.get("momentum")
    positive = isinstance(momentum, (int, float)) and not isinstance(momentum, bool) and momentum > 0
    flags = tuple(f for f, on in (("momentum", positive), ("centered", cfg.get("centered") is True),
                                  ("amsgrad", cfg.get("amsgrad") is True)) if on)
    return [(flags, not isinstance(cfg.get("learning_rate"), dict))], str(opt_cfg.get("class_name"))


def _candidates(groups: dict[str, VarsGroup]) -> list[tuple[str, tuple[int, ...], str]]:
    """Every model variable that may be trainable: ``(name, shape, key)``."""
    return [(f"{g.full_name}/{role}", shape, f"{g.path}/vars/{i}" if g.path else f"vars/{i}")
            for g in groups.values() if not g.path.startswith("optimizer")
            for i, (role, shape) in enumerate(zip(g.roles or [str(i) for i in range(len(g.shapes))], g.shapes))
            if role not in NON_TRAINABLE]


def _trainable_variables(groups: dict[str, VarsGroup], config: Any) -> list[tuple[str, tuple[int, ...], str]] | None:
    """The model's trainable variables ``(name, shape, key)`` in Keras order (``model.trainable_variables``): the
    config's layers in order (a nested model's in its place), each layer's own variables, then its sub-objects' in
    the order the layer creates them (:data:`~formats.concepts.keras_layers.SUB_OBJECTS`: a ``Bidirectional``'s
    forward layer before its backward one, a ``MultiHeadAttention``'s query, key, value, output)."""
    by_name = {g.own_name: g for g in groups.values() if not g.path.startswith("optimizer")}
    found: list[tuple[str, tuple[int, ...], str]] = []
    for node in _layer_nodes(config.get("config") if isinstance(config, dict) else None):
        cfg: Any = node.get("config")
        name = cfg.get("name") if isinstance(cfg, dict) else None
        group = by_name.get(name) if isinstance(name, str) else None
        if group is None or cfg.get("trainable") is False:
            continue
        for g in _with_sub_objects(group, groups):
            if g.shapes and g.roles is None:
                return None
            prefix = f"{g.path}/vars/" if g.path else "vars/"
            found += [(f"{g.full_name}/{r}", s, f"{prefix}{i}") for i, (r, s) in enumerate(zip(g.roles or [], g.shapes))
                      if r not in NON_TRAINABLE]
    return found or None


def _layer_nodes(node: Any) -> Iterator[dict[str, Any]]:
    """The serialized layers of a model config, nested models' layers in their place; not the layers a layer
    wraps (a ``Bidirectional``'s), which are its sub-objects."""
    if isinstance(node, dict):
        if "class_name" in node:
            yield node
            node = node.get("config")
        layers = node.get("layers") if isinstance(node, dict) else None
        for layer in layers if isinstance(layers, list) else []:
            yield from _layer_nodes(layer)


def _with_sub_objects(group: VarsGroup, groups: dict[str, VarsGroup]) -> list[VarsGroup]:
    """``group`` and its sub-objects' groups (attribute children, not a nested model's layers), each followed by
    its own, in the order the layer creates them (others after, by path)."""
    children = [c for c in groups.values() if c.path.startswith(f"{group.path}/") and c.path != group.path
                and _parent(groups, c.path) is group and c.path.split("/")[-2] not in _CONTAINERS]
    created = list(SUB_OBJECTS.get(group.cls or "", {}))
    rank = {attr: i for i, attr in enumerate(created)}
    children.sort(key=lambda c: (rank.get(c.path.rsplit("/", 1)[-1], len(rank)), c.path))
    out = [group]
    for child in children:
        out += _with_sub_objects(child, groups)
    return out
