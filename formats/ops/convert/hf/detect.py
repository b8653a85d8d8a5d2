"""Which shipped model family a checkpoint is: the one whose source layout recognises its names (and, for a
layout that names its configuration's class, whose configuration names it); when several do (MobileBERT's names
begin as BERT's), the one whose rules map or drop the most names, and of those the one with the fewest map rules
that match no name (RoFormer's are BERT's without the position embeddings: BERT's map covers them too, but has
rules for a position table, a pooler and an NSP head they lack).
"""
from __future__ import annotations

from formats.ops.convert.hf.config import find_config, read_config
from formats.ops.convert.hf.family import Family, Layout, family_names, load_family

__all__ = ["detect_family"]


def detect_family(keys: list[str], path: str | None = None) -> Family | None:
    """The shipped family one of whose layouts recognises ``keys`` (config-free detect patterns) and, for a layout
    with a ``config_class``, whose configuration beside ``path`` names one of them (a TF Hub BERT's object paths
    are also an ALBERT's: their ``keras_metadata.pb`` tells them apart). When several families do, the one whose
    rules map or drop the most keys, then the one with the fewest map rules matching no key; the first by name on a
    tie."""
    found: list[tuple[Family, Layout]] = []
    for name in family_names():
        family = load_family(name)
        if family.raw.get("detect_automatically") is False:
            continue
        try:
            layout = family.layout_of(keys, {})
        except KeyError:
            continue
        if layout is not None and (path is None or _class_fits(family, layout, path)):
            found.append((family, layout))
    if len(found) <= 1:
        return found[0][0] if found else None
    covered = [_covered(layout, keys) for _, layout in found]
    return found[covered.index(max(covered))][0]


def _covered(layout: Layout, keys: list[str]) -> tuple[int, int]:
    """How many of ``keys`` a layout's map and drop rules match, and minus how many of its map rules match none of
    ``keys`` (rules that need the configuration left out)."""
    regexes = []
    unused = 0
    for n, pattern in enumerate([rule.source for rule in layout.maps] + [drop.match for drop in layout.drops]):
        try:
            regex = pattern.regex({})
        except KeyError:
            continue
        regexes.append(regex)
        if n < len(layout.maps) and not any(regex.match(key) for key in keys):
            unused += 1
    return sum(1 for key in keys if any(regex.match(key) for regex in regexes)), -unused


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
