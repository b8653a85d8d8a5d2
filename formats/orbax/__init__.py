"""Orbax (OCDBT and per-array zarr) and T5X checkpoints, read into the common model through tensorstore (the
optional extra ``tfckpt[orbax]``): :func:`open_orbax` for an Orbax item or step directory, :func:`open_t5x` for a
T5X ``checkpoint_<N>`` directory."""
from __future__ import annotations

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from formats.orbax.reader import OrbaxCheckpoint, open_orbax
    from formats.orbax.t5x import open_t5x

__all__ = ["open_orbax", "open_t5x", "OrbaxCheckpoint"]


def __getattr__(name: str) -> object:
    """The readers' names, imported on first use (sniffing a path with the format module stays cheap)."""
    if name in ("open_orbax", "OrbaxCheckpoint"):
        from formats.orbax import reader

        return getattr(reader, name)
    if name == "open_t5x":
        from formats.orbax import t5x

        return t5x.open_t5x
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
