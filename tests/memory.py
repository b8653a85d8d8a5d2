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


def record_items_alive(monkeypatch: Any, at_once: int = 16) -> list[int]:
    """Count the provenance record's items (:func:`formats.ops.convert.cross.export.provenance_entry`'s dicts)
    alive at once while a command writes them ``at_once`` a run; the list given back holds, once the command has
    run, the most that were."""
    from formats.core import provenance
    from formats.ops.convert.cross import export

    monkeypatch.setattr(provenance, "_ITEMS_AT_ONCE", at_once)
    alive, most = [0], [0]

    class Item(dict):  # type: ignore[type-arg]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            alive[0] += 1
            most[0] = max(most[0], alive[0])

        def __del__(self) -> None:
            alive[0] -= 1

    made = export.provenance_entry
    monkeypatch.setattr(export, "provenance_entry", lambda *a, **k: Item(made(*a, **k)))
    return most
