"""``ckpt show``'s values on a terminal: numpy's printing, with types numpy lacks shown as numbers."""
from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any


def render_values(name: str, entry: Any, value: Any, slice_text: str | None, *, precision: int, threshold: int | None,
                  edgeitems: int) -> None:
    """``name[slice] -> [shape]: dtype [shape]`` and the values (``threshold`` None: every element)."""
    import numpy as np

    from .common import shown as shown_name
    from .values import display_array

    shown = display_array(value)
    with np.printoptions(precision=precision, edgeitems=edgeitems,
                         threshold=sys.maxsize if threshold is None else threshold):
        body = np.array2string(shown, formatter={"all": str} if shown.dtype == object else None,
                               separator=", " if shown.dtype == object else " ")
    part = f"[{slice_text}] -> {list(value.shape)}" if slice_text is not None else ""
    print(f"{shown_name(name)}{shown_name(part)}: {entry.dtype} {list(entry.shape)}")
    print(body)
