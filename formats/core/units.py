"""How a byte count is written for people: ``1536`` -> ``1.5 KiB`` (tables, the HTML report)."""
from __future__ import annotations

__all__ = ["human_bytes"]


def human_bytes(n: int) -> str:
    """``1536`` -> ``1.5 KiB``; whole bytes below 1 KiB, one decimal above, up to TiB."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")
