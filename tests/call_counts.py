"""How many Python calls a command makes: the growth tests' measure of work (tests/test_pertensor_scale.py,
tests/test_render_scale.py), which a loaded machine does not change as it changes time."""
from __future__ import annotations

import cProfile
from collections.abc import Callable, Sequence
from typing import Any


def calls_of(function: Callable[..., Any], *args: Any) -> tuple[Any, int]:
    """``function(*args)`` and the Python calls (functions and built-ins) it made on this thread."""
    profile = cProfile.Profile()
    profile.enable()
    try:
        result = function(*args)
    finally:
        profile.disable()
    return result, sum(entry.callcount for entry in profile.getstats())


def python_calls(run_cli: Callable[..., Any], args: list[str], exit_codes: Sequence[int] = (0,)) -> int:
    """Python calls (functions and built-ins) ``ckpt *args`` makes on this thread; it must end with one of
    ``exit_codes``."""
    result, calls = calls_of(run_cli, *args)
    assert result.exit_code in exit_codes, (args, result.output)
    return calls
