"""One memo for the pure functions that listings and path resolution call again and again, without
``functools`` (``lru_cache``), whose import the start-up paths do without."""
from __future__ import annotations

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    T = TypeVar("T")

__all__ = ["remembered"]


def remembered(limit: int) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """A decorator: the function remembers the results of its first ``limit`` distinct argument tuples
    (positional, hashable); later ones are computed each time. Not for functions that may return None."""

    def decorate(function: Callable[..., T]) -> Callable[..., T]:
        results: dict[tuple[Any, ...], T] = {}

        def memo(*args: Any) -> T:
            result = results.get(args)
            if result is None:
                result = function(*args)
                if len(results) < limit:
                    results[args] = result
            return result

        memo.__doc__, memo.__name__, memo.__wrapped__ = function.__doc__, function.__name__, function  # type: ignore[attr-defined]
        return memo

    return decorate
