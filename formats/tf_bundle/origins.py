"""How a written tensor's bytes got into the bundle, shared by the writer and its read-back check.

``FRESH``: encoded from the source and written; ``COPIED``: copied from an input bundle's data file;
``LINKED``: the input data file itself, hard-linked (or reflinked) into the output. A leaf module, so
:mod:`formats.tf_bundle.readback` need not import the writer that imports it.
"""
from __future__ import annotations

from _operator import attrgetter  # operator's C half (the module itself is more to import)

from formats.core.natural import ascending

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["FRESH", "COPIED", "LINKED", "sort_by_key", "by_key", "key_bytes_of", "record_key"]

FRESH, COPIED, LINKED = "fresh", "copied", "linked"

record_key = attrgetter("key")
"""A written tensor's record -> its key (called from C by ``map`` and ``sort``: no Python call a record)."""


def key_bytes_of(text: str) -> bytes:
    """The bytes of a written tensor's key, from its text (``surrogateescape`` gives back the very bytes)."""
    return text.encode("utf-8", "surrogateescape")


def sort_by_key(records: list[Any]) -> None:
    """Sort written tensors' records (each ``key`` a text) in the index's order, their keys' bytes. Keys that are
    all valid text sort by the texts themselves (code points sort as their UTF-8 bytes do), no bytes made; a key
    that is not (bytes kept as ``surrogateescape`` keeps them) sorts them all by bytes."""
    if _text_order(records):
        records.sort(key=record_key)
    else:
        records.sort(key=lambda r: key_bytes_of(r.key))


def by_key(records: list[Any]) -> list[Any]:
    """``records`` in the index's order: the list itself when they are in it already, each key before the next
    (a rename or an edit keeps the input's order: no second list of a million), else a sorted copy
    (:func:`sort_by_key`)."""
    if ascending(records, record_key) and _text_order(records):
        return records
    ordered = list(records)
    sort_by_key(ordered)
    return ordered


def _text_order(records: list[Any]) -> bool:
    """Whether the records' keys sort by their texts as by their bytes: every key valid text (code points sort as
    their UTF-8 bytes do; ``isascii``, a flag of the string, answers for most without encoding them)."""
    return all(map(str.isascii, map(record_key, records))) or all(map(_valid, records))


def _valid(record: Any) -> bool:
    try:
        record.key.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
