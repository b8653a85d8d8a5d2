"""How a byte count is written for people: ``1536`` -> ``1.5 KiB`` (tables, the HTML report)."""
from __future__ import annotations

__all__ = ["human_bytes"]

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB")


def human_bytes(n: int) -> str:
    """``1536`` -> ``1.5 KiB``; whole bytes below 1 KiB, one decimal above, up to YiB (a declared shape of
    ``[2**40, 2**40]`` float32 is ``4.0 YiB``, not ``4398046511104.0 TiB``); past 1024 YiB, with an exponent
    (``2.0e+03 YiB``)."""
    value = float(n)
    for unit in _UNITS:
        if value < 1024:
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        if unit == _UNITS[-1]:
            break
        value /= 1024
    return f"{value:.1e} {_UNITS[-1]}"
