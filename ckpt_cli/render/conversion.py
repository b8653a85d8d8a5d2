"""The end of ``convert`` and ``rename``: a conversion's result printed, its exit status returned (a module of its
own, so that ``rename`` does not import the ``convert`` command's module, its options and help, to print)."""
from __future__ import annotations

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["render_result"]


def render_result(result: Any, as_json: bool, *, changed_only: bool = False, verbose: bool = False) -> int:
    """Print a conversion's result - its JSON, or the plan's problems and what was written (``changed_only``: a
    dry run's table shows only the tensors whose key changes; ``verbose``: the keys behind each problem) - and
    return the exit status: 0 written or planned, 1 problems found. ``convert`` and ``rename`` both end here."""
    from formats.core.errors import ExitCode

    if as_json:
        from .common import print_json

        print_json(result.to_json())
    else:
        from .convert import render_conversion

        render_conversion(result, changed_only=changed_only, verbose=verbose)
    return int(ExitCode.OK if result.ok else ExitCode.PROBLEMS)
