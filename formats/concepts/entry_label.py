"""What a checkpoint says about one stored key: its name and role (:class:`EntryLabel`).

Its own module, apart from :mod:`formats.concepts.object_graph` (which labels an object-based checkpoint's keys
and re-exports it): a name-based checkpoint's labels need the record, not the object graph's modules (start-up).
"""
from __future__ import annotations

from formats.core.records import record

__all__ = ["EntryLabel"]


@record(frozen=True, slots=True)  # one per tensor
class EntryLabel:
    """What the graph says about one stored key: its TF1 ``name``, ``role`` and, for a slot, the
    variable's key (``slot_of``), the optimizer's path (``optimizer``) and ``slot_name``."""

    name: str
    role: str
    node_id: int | None = None
    attribute: str | None = None
    slot_of: str | None = None
    optimizer: str | None = None
    slot_name: str | None = None
