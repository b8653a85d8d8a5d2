"""Tensor values for people and for JSON: what ``ckpt show`` prints."""
from __future__ import annotations

import math

from formats.core.names import is_text, quoted_text

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

    import numpy as np


def to_jsonable(value: np.ndarray) -> Any:
    """Nested lists for JSON: NaN/Inf as ``"nan"``/``"inf"``/``"-inf"``, complex as ``[re, im]``, bfloat16 and
    other ml_dtypes as numbers, strings as text when UTF-8 else ``{"base64": ...}``."""
    import base64

    import numpy as np

    def scalar(x: Any) -> Any:
        if isinstance(x, (bytes, bytearray)):
            try:
                return bytes(x).decode("utf-8")
            except UnicodeDecodeError:
                return {"base64": base64.b64encode(bytes(x)).decode("ascii")}
        if isinstance(x, complex):
            return [scalar(x.real), scalar(x.imag)]
        if isinstance(x, float) and not math.isfinite(x):
            return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
        return x

    def walk(x: Any) -> Any:
        return [walk(v) for v in x] if isinstance(x, list) else scalar(x)

    if value.dtype.kind == "V":
        value = value.astype(np.int64 if "int" in value.dtype.name else np.float64)
    return walk(value.tolist())


def display_array(value: np.ndarray) -> np.ndarray:
    """A copy numpy prints sensibly: bfloat16/float8 as float32, int4/int2 as int8, strings as safe text."""
    import numpy as np

    if value.dtype == object or value.dtype.kind in "SU":
        elements = value.reshape(-1)
        as_bytes = any(not is_text(x) for x in elements)  # one literal style per array: all 'x' or all b'x'
        out = np.empty(value.shape, dtype=object)
        flat = out.reshape(-1)
        for i, x in enumerate(elements):
            flat[i] = quoted_text(x, as_bytes=as_bytes)
        return out
    if value.dtype.kind == "V":  # ml_dtypes
        target = np.int8 if "int" in value.dtype.name else np.float32
        return value.astype(target)
    return value

