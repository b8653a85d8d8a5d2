"""Names for Keras 3 variables: ``<layer name>/<role>`` where the layer class is known, else
``<layer name>/<index>``; optimizer slots named as Keras names them when the model config allows.

Keras 3 saves a layer's variables as ``<path>/vars/0, 1, ...`` in creation order (trainable first).
The layer class comes from ``config.json`` (looked up by the ``vars`` group's ``name`` attribute) or,
without a config, from the path itself: Keras names container elements by the snake_case class name
(``layers/batch_normalization_1``).
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["VarsGroup", "layer_roles", "name_groups", "config_layers", "optimizer_names", "to_snake_case"]

_BIAS = ("bias", "use_bias")
_KERNEL_BIAS = [("kernel", None), _BIAS]
_NORM = [("gamma", "scale"), ("beta", "center")]
_RNN_CELL = [("kernel", None), ("recurrent_kernel", None), _BIAS]
ROLES: dict[str, list[tuple[str, str | None]]] = {
    "Dense": _KERNEL_BIAS, "EinsumDense": [("kernel", None), ("bias", "bias_axes")],
    "Conv1D": _KERNEL_BIAS, "Conv2D": _KERNEL_BIAS, "Conv3D": _KERNEL_BIAS,
    "Conv1DTranspose": _KERNEL_BIAS, "Conv2DTranspose": _KERNEL_BIAS, "Conv3DTranspose": _KERNEL_BIAS,
    "DepthwiseConv1D": _KERNEL_BIAS, "DepthwiseConv2D": _KERNEL_BIAS,
    "SeparableConv1D": [("depthwise_kernel", None), ("pointwise_kernel", None), _BIAS],
    "SeparableConv2D": [("depthwise_kernel", None), ("pointwise_kernel", None), _BIAS],
    "Embedding": [("embeddings", None)],
    "BatchNormalization": [*_NORM, ("moving_mean", None), ("moving_variance", None)],
    "LayerNormalization": _NORM, "GroupNormalization": _NORM,
    "LSTMCell": _RNN_CELL, "GRUCell": _RNN_CELL, "SimpleRNNCell": _RNN_CELL,
    "PReLU": [("alpha", None)],
}
_CELLS = {"LSTM": "LSTMCell", "GRU": "GRUCell", "SimpleRNN": "SimpleRNNCell"}
_NON_TRAINABLE = {"moving_mean", "moving_variance"}
_CONTAINERS = {"layers", "_layers"}
_SLOTS = {"Adam": ["momentum", "velocity"], "AdamW": ["momentum", "velocity"]}


def to_snake_case(name: str) -> str:
    """Keras' ``to_snake_case`` (``BatchNormalization`` -> ``batch_normalization``, ``Conv2D`` -> ``conv2d``)."""
    name = re.sub(r"\W+", "", name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


_BY_SNAKE = {to_snake_case(c): c for c in [*ROLES, *_CELLS]}


@dataclass
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
        if isinstance(name, str) and isinstance(node.get("class_name"), str):
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
        roles = [role for role, flag in table if flag is None or cfg.get(flag, True)]
        return roles if len(roles) == count else None
    full = [role for role, _ in table]
    required = [role for role, flag in table if flag is None]
    for roles in (full, required):
        if len(roles) == count:
            return roles
    return None


def _class_of(group: VarsGroup, parent: VarsGroup | None, known: dict[str, Any]) -> tuple[str | None, Any]:
    hit = known.get(group.own_name)
    if hit is not None:
        return hit
    last = group.path.rsplit("/", 1)[-1]
    if last == "cell" and parent is not None and parent.cls in _CELLS:
        return _CELLS[parent.cls], None
    base = re.sub(r"_\d+$", "", last)
    return _BY_SNAKE.get(last, _BY_SNAKE.get(base)), None


def name_groups(groups: dict[str, VarsGroup], config: Any) -> None:
    """Fill ``full_name``, ``cls`` and ``roles`` of every group (parents before children)."""
    known = config_layers(config) if config is not None else {}
    for path in sorted(groups, key=lambda p: p.count("/") if p else -1):
        group = groups[path]
        parent = _parent(groups, path)
        parts = path.split("/")
        attribute_child = parent is not None and parent.path != "" and parts[-2] not in _CONTAINERS
        group.full_name = f"{parent.full_name}/{group.own_name}" if attribute_child else group.own_name
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


def optimizer_names(opt: VarsGroup, groups: dict[str, VarsGroup], config: Any) -> list[str] | None:
    """Keras' names for the optimizer's variables (``adam/iteration``, ``adam/dense_kernel_momentum``),
    or None unless the config names a known optimizer and every count and shape agrees."""
    compile_cfg = config.get("compile_config") if isinstance(config, dict) else None
    opt_cfg = compile_cfg.get("optimizer") if isinstance(compile_cfg, dict) else None
    if not isinstance(opt_cfg, dict) or opt_cfg.get("class_name") not in _SLOTS:
        return None
    settings = opt_cfg.get("config") or {}
    if settings.get("use_ema") or settings.get("gradient_accumulation_steps"):
        return None
    slots = _SLOTS[opt_cfg["class_name"]]
    trainable = _trainable_variables(groups, config)
    if trainable is None:
        return None
    head = ["iteration"] + (["learning_rate"] if not isinstance(settings.get("learning_rate"), dict) else [])
    names = head + [f"{v.replace('/', '_')}_{s}" for v, _ in trainable for s in slots]
    names += [f"{v.replace('/', '_')}_velocity_hat" for v, _ in trainable] if settings.get("amsgrad") else []
    shapes = [()] * len(head) + [shape for _, shape in trainable for _ in slots]
    shapes += [shape for _, shape in trainable] if settings.get("amsgrad") else []
    if len(names) != len(opt.shapes) or any(a != b for a, b in zip(shapes, opt.shapes)):
        return None
    return [f"{opt.own_name}/{n}" for n in names]


def _trainable_variables(groups: dict[str, VarsGroup], config: Any) -> list[tuple[str, tuple[int, ...]]] | None:
    """The model's trainable variables in Keras order (config layer order, attribute children after)."""
    by_name = {g.own_name: g for g in groups.values() if not g.path.startswith("optimizer")}
    found: list[tuple[str, tuple[int, ...]]] = []
    for node in _walk(config.get("config") if isinstance(config, dict) else None):
        cfg = node.get("config")
        group = by_name.get(cfg.get("name")) if isinstance(cfg, dict) else None
        if group is None or cfg.get("trainable") is False:
            continue
        for g in [group] + sorted((c for c in groups.values() if c.path.startswith(group.path + "/")
                                   and c.full_name.startswith(group.full_name + "/")), key=lambda c: c.path):
            if g.shapes and g.roles is None:
                return None
            found += [(f"{g.full_name}/{r}", s) for r, s in zip(g.roles or [], g.shapes) if r not in _NON_TRAINABLE]
    return found
