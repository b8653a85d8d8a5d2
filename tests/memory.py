"""What Python holds while a call runs, by ``tracemalloc``: the per-tensor and per-byte memory tests' one measure."""
from __future__ import annotations

import tracemalloc

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    T = TypeVar("T")


def traced(call: Callable[[], T]) -> tuple[T, int, int]:
    """``call()``'s result, the bytes Python still holds when it returns and the most it held while it ran, both
    beyond what it held before."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        result = call()
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, held - base, peak - base


def record_items_at_once(monkeypatch: Any, at_once: int = 16) -> list[int]:
    """Count the provenance record's items made at once (:class:`formats.core.provenance.RecordColumns`' fields of a
    run, as dicts or as text) while a command writes them ``at_once`` a run; the list given back holds, once the
    command has run, the most that were (0: none made that way). Every item is written, as for a source one of whose
    items says more than its file (a plain export's record lists none: :func:`~formats.core.provenance.without_plain`)."""
    from formats.core import provenance

    every_item_listed(monkeypatch)
    monkeypatch.setattr(provenance, "_ITEMS_AT_ONCE", at_once)
    most = [0]
    columns = provenance.RecordColumns._columns

    def counted(self: Any, first: int, stop: int) -> list[list[Any]]:
        made = columns(self, first, stop)
        most[0] = max(most[0], len(made[0]))
        return made

    monkeypatch.setattr(provenance.RecordColumns, "_columns", counted)
    return most


def every_item_listed(monkeypatch: Any) -> None:
    """Make exports write every item of their provenance record, as for a source one of whose items says more than
    its file (:meth:`formats.core.provenance.RecordColumns.plain` answers no)."""
    from formats.core import provenance

    monkeypatch.setattr(provenance.RecordColumns, "plain", lambda self, named: False)
