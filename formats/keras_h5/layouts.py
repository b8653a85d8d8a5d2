"""Recognise a Keras layout in an HDF5 file's structure (a :class:`~formats.keras_h5.tree.Tree`, as
the isolated probe reported it) and describe each dataset: its name and role.

- Keras 2 (tf-keras) weights: root attr ``layer_names``, a group per layer with ``weight_names``;
  a full-model file puts the same under ``model_weights`` and adds ``optimizer_weights``. The metadata
  lists the layers (``layers``) and each layer's weight keys in its ``weight_names`` order (``layer_weights``).
- Keras 3: ``<object path>/vars/<i>`` datasets, ``vars`` groups carrying a ``name`` attribute.
- Anything else: every dataset, named by its path.
"""
from __future__ import annotations

import re

from formats.core.bounded_json import load_json
from formats.core.errors import CorruptCheckpointError
from formats.core.model import Role, natural_key
from formats.core.records import field, record
from formats.keras_h5.naming import VarsGroup, name_groups, optimizer_names
from formats.keras_h5.tree import AttrError, Numeric

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["H5Description", "Described", "describe", "attr_list", "MAX_CONFIG_BYTES"]

MAX_CONFIG_BYTES = 64 << 20
"""Largest ``model_config`` / ``training_config`` attribute parsed."""

_SUFFIX = re.compile(r":\d+$")


@record
class Described:
    """What a dataset is: its ``.name`` and ``.role``."""

    name: str
    role: str = Role.VARIABLE
    slot_of: str | None = None
    slot_name: str | None = None
    optimizer: str | None = None


@record
class H5Description:
    """The result of reading a file's structure: layout name, dataset descriptions, metadata, problems."""

    kind: str  # keras2-h5, keras3-h5 or hdf5
    described: dict[str, Described] = field(default_factory=dict)  # key -> description, in Keras order
    metadata: dict[str, Any] = field(default_factory=dict)
    problems: list[tuple[str, str]] = field(default_factory=list)


def _strings(value: Any, name: str) -> list[str]:
    """An attribute's value as a list of text (a numeric attribute of size 0 is an empty list)."""
    if isinstance(value, AttrError):
        raise ValueError(f"attribute {name!r} cannot be read: {value.message}")
    if isinstance(value, Numeric):
        if value.size:
            raise ValueError(f"attribute {name!r} is not a list of strings ({value.dtype})")
        return []
    return [value] if isinstance(value, str) else list(value)


def attr_list(attrs: Mapping[str, Any], name: str) -> list[str] | None:
    """A Keras list attribute, joining ``name0``, ``name1``, ... chunks; None when absent.

    An empty float64 array (what Keras writes for an empty list) reads as ``[]``.
    """
    if name in attrs:
        chunks = [attrs[name]]
    else:
        chunks = []
        while f"{name}{len(chunks)}" in attrs:
            chunks.append(attrs[f"{name}{len(chunks)}"])
        if not chunks:
            return None
    return [text for chunk in chunks for text in _strings(chunk, name)]


def _attr_text(attrs: Mapping[str, Any], name: str) -> str | None:
    """A text attribute (the only element of a one-element list), else None."""
    value = attrs.get(name)
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    return value if isinstance(value, str) else None


def _json_attr(attrs: Mapping[str, Any], name: str, problems: list[tuple[str, str]]) -> Any:
    raw = _attr_text(attrs, name)
    if raw is None:
        return None
    try:
        return load_json(raw.encode("utf-8", "surrogateescape"), "", f"attribute {name}", max_bytes=MAX_CONFIG_BYTES)
    except CorruptCheckpointError as exc:
        problems.append((f"@{name}", exc.message))
        return None


def describe(h5: Any, datasets: dict[str, Any], groups: Mapping[str, Any], config: Any = None) -> H5Description:
    """Recognise the layout and describe every dataset."""
    if "layer_names" in h5.attrs or "layer_names0" in h5.attrs:
        layout = _keras2(h5, "", datasets, groups)
    elif "model_weights" in groups and _has_list(groups["model_weights"].attrs, "layer_names"):
        layout = _keras2(groups["model_weights"], "model_weights/", datasets, groups)
        layout.metadata["model_config"] = _json_attr(h5.attrs, "model_config", layout.problems)
        layout.metadata["training_config"] = _json_attr(h5.attrs, "training_config", layout.problems)
        _keras2_optimizer(groups, datasets, layout)
    elif any(p == "vars" or p.endswith("/vars") for p in groups):
        layout = _keras3(datasets, groups, config)
    else:
        layout = H5Description("hdf5")
    for key in sorted(datasets, key=natural_key):
        if key not in layout.described:
            role = Role.OPTIMIZER if key.startswith(("optimizer_weights/", "optimizer/")) else Role.VARIABLE
            layout.described[key] = Described(key, role)
    return layout


def _has_list(attrs: Any, name: str) -> bool:
    return name in attrs or f"{name}0" in attrs


def _strip(weight_name: str) -> str:
    return _SUFFIX.sub("", weight_name)


def _keras2(group: Any, prefix: str, datasets: dict[str, Any], groups: Mapping[str, Any]) -> H5Description:
    layout = H5Description("keras2-h5")
    listed = attr_list(group.attrs, "layer_names") or []
    names = list(dict.fromkeys(listed))
    for name in names:
        if listed.count(name) > 1:
            layout.problems.append((prefix + name, f"layer_names lists this layer {listed.count(name)} times; "
                                                   "Keras matches layers by position, so it cannot load the file"))
    for attr in ("keras_version", "backend"):
        value = _attr_text(group.attrs, attr) or _attr_text(group.file.attrs, attr)
        if value is not None:
            layout.metadata[attr] = value
    layout.metadata["layers"] = names
    weights: dict[str, list[str]] = {}
    extra = ["top_level_model_weights"] if prefix + "top_level_model_weights" in groups else []
    for layer in [*names, *(e for e in extra if e not in names)]:
        lpath = prefix + layer
        if lpath not in groups:
            layout.problems.append((lpath, "layer_names lists this layer, but the file has no such group"))
            continue
        weights[layer] = _keras2_weights(groups[lpath], lpath + "/", datasets, layout, Role.VARIABLE)
    layout.metadata["layer_weights"] = weights
    return layout


def _keras2_weights(group: Any, prefix: str, datasets: dict[str, Any], layout: H5Description, role: str) -> list[str]:
    """Describe the weights a group's ``weight_names`` lists; their keys, in that order."""
    weight_names = attr_list(group.attrs, "weight_names")
    if weight_names is None:
        layout.problems.append((prefix.rstrip("/"), "group has no weight_names attribute"))
        return []
    keys = []
    for weight in weight_names:
        key = prefix + weight
        if key in datasets:
            layout.described[key] = Described(_strip(weight), role)
            keys.append(key)
        else:
            layout.problems.append((key, "weight_names lists this weight, but the file has no such dataset"))
    return keys


def _keras2_optimizer(groups: Mapping[str, Any], datasets: dict[str, Any], layout: H5Description) -> None:
    if "optimizer_weights" in groups:
        _keras2_weights(groups["optimizer_weights"], "optimizer_weights/", datasets, layout, Role.OPTIMIZER)


def _keras3(datasets: dict[str, Any], groups: Mapping[str, Any], config: Any) -> H5Description:
    layout = H5Description("keras3-h5")
    vars_groups: dict[str, VarsGroup] = {}
    children: dict[str, list[str]] = {}
    for key in datasets:
        parent, _, leaf = key.rpartition("/")
        if leaf.isdigit():
            children.setdefault(parent, []).append(leaf)
    for path in groups:
        if path == "vars" or path.endswith("/vars"):
            owner = path[:-len("vars")].rstrip("/")
            attr = groups[path].attrs
            own = _attr_text(attr, "name") if "name" in attr else None
            members = sorted(children.get(path, []), key=int)
            shapes = [tuple(int(d) for d in (datasets[f"{path}/{k}"].shape or ())) for k in members]
            if [int(k) for k in members] != list(range(len(members))):
                layout.problems.append((path, f"variables are numbered {members}, not 0..{len(members) - 1}"))
                shapes = []
            vars_groups[owner] = VarsGroup(owner, own or owner.rsplit("/", 1)[-1] or "model", shapes)
    name_groups(vars_groups, config)
    layout.metadata["layers"] = _layer_order(vars_groups, config)
    for owner in sorted(vars_groups, key=natural_key):
        _keras3_group(vars_groups[owner], vars_groups, datasets, config, layout)
    return layout


def _keras3_group(group: VarsGroup, groups: dict[str, VarsGroup], datasets: dict[str, Any], config: Any,
                  layout: H5Description) -> None:
    is_optimizer = group.path == "optimizer" or group.path.startswith("optimizer/")
    names = optimizer_names(group, groups, config) if group.path == "optimizer" else None
    prefix = f"{group.path}/vars/" if group.path else "vars/"
    for i in range(len(group.shapes)):
        if names is not None:
            var = names[i]
            role = Role.SLOT if var.slot_of else Role.OPTIMIZER
            layout.described[f"{prefix}{i}"] = Described(var.name, role, var.slot_of, var.slot_name, var.optimizer)
            continue
        kind = group.roles[i] if group.roles else str(i)
        layout.described[f"{prefix}{i}"] = Described(f"{group.full_name}/{kind}",
                                                     Role.OPTIMIZER if is_optimizer else Role.VARIABLE)


def _dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (a config of the wrong shape is ignored)."""
    return value if isinstance(value, dict) else {}


def _layer_order(groups: dict[str, VarsGroup], config: Any) -> list[str]:
    layers = _dict(_dict(config).get("config")).get("layers")
    if isinstance(layers, list):
        return [str(_dict(layer.get("config")).get("name", layer.get("name"))) for layer in layers
                if isinstance(layer, dict)]
    return [g.own_name for p, g in sorted(groups.items(), key=lambda item: natural_key(item[0]))
            if p.startswith("layers/") and p.count("/") == 1]
