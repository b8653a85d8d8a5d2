"""One :class:`~formats.keras_h5.reader.KerasCheckpoint` over opened HDF5 images: the datasets of every
image (several for sharded weights) keyed, named and given roles by :mod:`formats.keras_h5.layouts`."""
from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence

from formats.core.errors import CheckpointError, CorruptCheckpointError
from formats.core.model import FormatName, TensorEntry, UnreadableEntry

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

    from formats.keras_h5.reader import KerasCheckpoint

__all__ = ["build_checkpoint"]


def build_checkpoint(path: str, parts: Sequence[tuple[str, Any]], files: Sequence[str], fmt: str | None = None,
                     metadata: dict[str, Any] | None = None, problems: Sequence[tuple[str, str]] = ()) -> KerasCheckpoint:
    """One checkpoint over opened HDF5 images ``parts`` (``(file path, H5Image)``, several for shards);
    closes every image when it cannot be built. ``fmt`` overrides the layout's name."""
    try:
        return _build(path, parts, files, fmt, metadata or {}, list(problems))
    except CheckpointError:
        _close(parts)
        raise
    except ValueError as exc:  # a Keras attribute that is not what Keras writes
        _close(parts)
        raise CorruptCheckpointError(path, str(exc)) from None
    except BaseException:
        _close(parts)
        raise


def _close(parts: Sequence[tuple[str, Any]]) -> None:
    for _, image in parts:
        image.close()


def _build(path: str, parts: Sequence[tuple[str, Any]], files: Sequence[str], fmt: str | None,
           extra_meta: dict[str, Any], problems: list[tuple[str, str]]) -> KerasCheckpoint:
    from formats.keras_h5.layouts import H5Description, describe
    from formats.keras_h5.reader import H5Tensor, KerasCheckpoint

    images = [image for _, image in parts]
    config = images[0].extras.get("config.json") if images else None
    datasets, owner, groups = _walk_parts(parts, problems)
    layout = describe(images[0].tree.root, datasets, groups, config) if images else H5Description(FormatName.KERAS3_H5.value)
    entries: dict[str, TensorEntry] = {}
    for key, info in layout.described.items():
        ds = datasets[key]
        file, image = parts[owner[key]]
        if ds.tf is None and ds.error is None:
            why = ds.skip or f"HDF5 type {ds.text} has no TensorFlow dtype"
            entries[key] = UnreadableEntry(key, tuple(ds.shape or ()), ds.text or "unknown", ds.stored, why, file,
                                           info.name, info.role)
            continue
        entries[key] = H5Tensor(key, ds, image, file, info.name, info.role,
                                slot_of=info.slot_of, slot_name=info.slot_name, optimizer=info.optimizer)
    notes = [note for image in images for note in image.notes]
    meta = _metadata(layout, images[0] if images else None)
    meta.update(extra_meta)
    return KerasCheckpoint(path, fmt or layout.kind, entries, images, meta, layout.problems + notes + problems, files)


def _walk_parts(parts: Sequence[tuple[str, Any]], problems: list[tuple[str, str]]
                ) -> tuple[dict[str, Any], dict[str, int], Mapping[str, Any]]:
    """Datasets of every part by key (the first copy of a key wins), which part holds each, and the groups."""
    datasets: dict[str, Any] = {}
    owner: dict[str, int] = {}
    all_groups: list[Mapping[str, Any]] = []
    for index, (file, image) in enumerate(parts):
        all_groups.append(image.tree.groups)
        for key, ds in image.tree.datasets.items():
            if key in owner:
                first = os.path.basename(parts[owner[key]][0])
                problems.append((key, f"stored in both {first} and {os.path.basename(file)}; {first}'s is read"))
                continue
            datasets[key], owner[key] = ds, index
    return datasets, owner, (all_groups[0] if len(all_groups) == 1 else _MergedGroups(all_groups))


class _MergedGroups(Mapping[str, "Any"]):
    """The groups of several shards by path; where several shards hold a group, the copy carrying a
    ``name`` attribute (Keras writes it in the first shard only)."""

    def __init__(self, parts: list[Mapping[str, Any]]) -> None:
        self._parts = parts
        self._paths = list(dict.fromkeys(p for part in parts for p in part))

    def __getitem__(self, path: str) -> Any:
        holders = [part[path] for part in self._parts if path in part]
        if not holders:
            raise KeyError(path)
        return next((g for g in holders if "name" in g.attrs), holders[0])

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


def _metadata(layout: Any, image: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"layout": layout.kind}
    meta.update({k: v for k, v in layout.metadata.items() if v is not None})
    extras = image.extras if image is not None else {}
    about = extras.get("metadata.json")
    if isinstance(about, dict):
        meta.update({k: v for k, v in about.items() if k not in meta})
    config = extras.get("config.json")
    if config is not None:
        meta["model_config"] = config
    return meta
