"""Recognise a Keras layout in an opened HDF5 file and describe each dataset: its name and role.

- Keras 2 (tf-keras) weights: root attr ``layer_names``, a group per layer with ``weight_names``;
  a full-model file puts the same under ``model_weights`` and adds ``optimizer_weights``.
- Keras 3: ``<object path>/vars/<i>`` datasets, ``vars`` groups carrying a ``name`` attribute.
- Anything else: every dataset, named by its path.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from formats.keras_h5.naming import VarsGroup, name_groups, optimizer_names
from formats.core.model import Role, natural_key

__all__ = ["Layout", "Described", "walk", "describe", "attr_list"]

_SUFFIX = re.compile(r":\d+$")


@dataclass
class Described:
    """What a dataset is: its ``.name`` and ``.role``."""

    name: str
    role: str = Role.VARIABLE
    slot_of: str | None = None
    slot_name: str | None = None
    optimizer: str | None = None


@dataclass
class Layout:
    """The result of reading a file's structure: layout name, dataset descriptions, metadata, problems."""

    kind: str  # keras2-h5, keras3-h5 or hdf5
    described: dict[str, Described] = field(default_factory=dict)  # key -> description, in Keras order
    metadata: dict[str, Any] = field(default_factory=dict)
    problems: list[tuple[str, str]] = field(default_factory=list)


class _Opened(Mapping[str, Any]):
    """Objects by path, each opened (once) only when looked up."""

    def __init__(self, paths: list[str], opener: Any) -> None:
        self._paths = dict.fromkeys(paths)
        self._opener = opener

    def __getitem__(self, path: str) -> Any:
        if path not in self._paths:
            raise KeyError(path)
        if self._paths[path] is None:
            self._paths[path] = self._opener(path)
        return self._paths[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


def walk(h5: Any) -> tuple[dict[str, Any], Mapping[str, Any]]:
    """Every dataset (opened) and every group (opened on lookup) reachable by hard links, by path."""
    import h5py

    found: dict[int, list[str]] = {h5py.h5o.TYPE_DATASET: [], h5py.h5o.TYPE_GROUP: [""]}

    def visit(name: bytes, info: Any) -> None:
        if name != b"." and info.type in found:
            found[info.type].append(name.decode("utf-8", "surrogateescape"))

    h5py.h5o.visit(h5.id, visit, info=True)

    def encoded(path: str) -> bytes:
        return path.encode("utf-8", "surrogateescape")

    datasets = {p: h5py.Dataset(h5py.h5d.open(h5.id, encoded(p))) for p in found[h5py.h5o.TYPE_DATASET]}
    groups = _Opened(found[h5py.h5o.TYPE_GROUP],
                     lambda p: h5 if p == "" else h5py.Group(h5py.h5g.open(h5.id, encoded(p))))
    return datasets, groups


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def attr_list(attrs: Any, name: str) -> list[str] | None:
    """A Keras list attribute, joining ``name0``, ``name1``, ... chunks; None when absent.

    An empty float64 array (what Keras writes for an empty list) reads as ``[]``.
    """
    import numpy as np

    if name in attrs:
        chunks = [attrs[name]]
    else:
        chunks = []
        while f"{name}{len(chunks)}" in attrs:
            chunks.append(attrs[f"{name}{len(chunks)}"])
        if not chunks:
            return None
    out: list[str] = []
    for chunk in chunks:
        arr = np.asarray(chunk)
        if arr.size and arr.dtype.kind not in "OSU":
            raise ValueError(f"attribute {name!r} is not a list of strings ({arr.dtype})")
        out += [_text(x) for x in arr.reshape(-1)]
    return out


def _attr_text(attrs: Any, name: str) -> str | None:
    return _text(attrs[name]) if name in attrs else None


def _json_attr(attrs: Any, name: str, problems: list[tuple[str, str]]) -> Any:
    raw = _attr_text(attrs, name)
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError as exc:
        problems.append((f"@{name}", f"attribute is not valid JSON ({exc})"))
        return None


def describe(h5: Any, datasets: dict[str, Any], groups: Mapping[str, Any], config: Any = None) -> Layout:
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
        layout = Layout("hdf5")
    for key in sorted(datasets, key=natural_key):
        if key not in layout.described:
            role = Role.OPTIMIZER if key.startswith(("optimizer_weights/", "optimizer/")) else Role.VARIABLE
            layout.described[key] = Described(key, role)
    return layout


def _has_list(attrs: Any, name: str) -> bool:
    return name in attrs or f"{name}0" in attrs


def _strip(weight_name: str) -> str:
    return _SUFFIX.sub("", weight_name)


def _keras2(group: Any, prefix: str, datasets: dict[str, Any], groups: Mapping[str, Any]) -> Layout:
    layout = Layout("keras2-h5")
    names = attr_list(group.attrs, "layer_names") or []
    for attr in ("keras_version", "backend"):
        value = _attr_text(group.attrs, attr) or _attr_text(group.file.attrs, attr)
        if value is not None:
            layout.metadata[attr] = value
    layout.metadata["layers"] = names
    extra = ["top_level_model_weights"] if prefix + "top_level_model_weights" in groups else []
    for layer in [*names, *(e for e in extra if e not in names)]:
        lpath = prefix + layer
        if lpath not in groups:
            layout.problems.append((lpath, "layer_names lists this layer, but the file has no such group"))
            continue
        _keras2_weights(groups[lpath], lpath + "/", datasets, layout, Role.VARIABLE)
    return layout


def _keras2_weights(group: Any, prefix: str, datasets: dict[str, Any], layout: Layout, role: str) -> None:
    weight_names = attr_list(group.attrs, "weight_names")
    if weight_names is None:
        layout.problems.append((prefix.rstrip("/"), "group has no weight_names attribute"))
        return
    for weight in weight_names:
        key = prefix + weight
        if key in datasets:
            layout.described[key] = Described(_strip(weight), role)
        else:
            layout.problems.append((key, "weight_names lists this weight, but the file has no such dataset"))


def _keras2_optimizer(groups: Mapping[str, Any], datasets: dict[str, Any], layout: Layout) -> None:
    if "optimizer_weights" in groups:
        _keras2_weights(groups["optimizer_weights"], "optimizer_weights/", datasets, layout, Role.OPTIMIZER)


def _keras3(datasets: dict[str, Any], groups: Mapping[str, Any], config: Any) -> Layout:
    layout = Layout("keras3-h5")
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
                  layout: Layout) -> None:
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


def _layer_order(groups: dict[str, VarsGroup], config: Any) -> list[str]:
    layers = config.get("config", {}).get("layers") if isinstance(config, dict) else None
    if isinstance(layers, list):
        return [str(layer.get("config", {}).get("name", layer.get("name"))) for layer in layers
                if isinstance(layer, dict)]
    return [g.own_name for p, g in sorted(groups.items(), key=lambda item: natural_key(item[0]))
            if p.startswith("layers/") and p.count("/") == 1]
