"""What Python holds while a call runs, by ``tracemalloc``: the per-tensor and per-byte memory tests' one measure."""
from __future__ import annotations

import tracemalloc

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeVar

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
