"""Which shipped model family a checkpoint is: the first whose source layout recognises its names (and, for a
layout that names its configuration's class, whose configuration names it).
"""
from __future__ import annotations

from formats.ops.convert.hf.config import find_config, read_config
from formats.ops.convert.hf.family import Family, Layout, family_names, load_family

__all__ = ["detect_family"]


def detect_family(keys: list[str], path: str | None = None) -> Family | None:
    """The shipped family one of whose layouts recognises ``keys`` (config-free detect patterns) and, for a layout
    with a ``config_class``, whose configuration beside ``path`` names one of them (a TF Hub BERT's object paths
    are also an ALBERT's: their ``keras_metadata.pb`` tells them apart)."""
    for name in family_names():
        family = load_family(name)
        if family.raw.get("detect_automatically") is False:
            continue
        try:
            layout = family.layout_of(keys, {})
        except KeyError:
            continue
        if layout is not None and (path is None or _class_fits(family, layout, path)):
            return family
    return None


def _class_fits(family: Family, layout: Layout, path: str) -> bool:
    """Whether the configuration beside ``path`` names a class of the layout's ``config_class`` (True when the
    layout names none, or the configuration is missing or unreadable: the plan reports that later)."""
    if not layout.config_class:
        return True
    found = find_config(path, family.config_files if layout.config_files is None else layout.config_files)
    if found is None:
        return True
    try:
        return read_config(found, layout.config_format or family.config_format).get("class_name") in layout.config_class
    except (OSError, ValueError):
        return True
