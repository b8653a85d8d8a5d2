"""Pairing two checkpoints' tensors for a comparison: by key, or by variable name (``match="name"``).

The one rule ``diff`` and ``verify --against`` both follow: each tensor of a side gets the name it pairs
under - its key, or with ``match="name"`` its TF1-style variable name (:attr:`TensorEntry.name`, the object
graph and ``save_counter`` left out) - stripped of a prefix and renamed by rules when asked; tensors of the two sides pair when
their names are equal. A name two keys of one side share keeps the first key in sorted order; the others
are clashes, left unpaired. :func:`match_name_hint` says when pairing by key finds nothing but pairing by
name would.
"""
from __future__ import annotations

from formats.core.model import OBJECT_GRAPH_KEY, Checkpoint, Role

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from formats.ops.rules import RuleSet

__all__ = ["MATCHES", "SIDE_MATCHES", "pairing_names", "name_pairs", "match_name_hint"]

MATCHES = ("key", "name", "converted")
"""What tensors may pair by (``converted``: as a conversion of A onto B's layout pairs them, see
:mod:`formats.ops.convert.as_converted`; ``diff`` only)."""
SIDE_MATCHES = ("key", "name")
"""The pairings that name each side's tensors on their own (:func:`pairing_names`)."""


def _is_graph(key: str, role: str) -> bool:
    """The object graph, or ``tf.train.Checkpoint``'s ``save_counter``: a checkpoint's bookkeeping, no variable
    of a program restoring by name (a name-based -> object-based conversion writes one, as ``doctor`` knows)."""
    return key == OBJECT_GRAPH_KEY or role in (Role.OBJECT_GRAPH, Role.SAVE_COUNTER)


def pairing_names(ckpt: Checkpoint, match: str, *, strip: str | None = None,
                  rules: RuleSet | None = None) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """Name -> key for every tensor of ``ckpt`` (see the module doc): the key, or with ``match="name"`` the
    variable name, without the prefix ``strip``, renamed by ``rules``; and the ``(key, name)`` clashes, keys
    left unpaired because an earlier key (in sorted order) took their name."""
    out: dict[str, str] = {}
    clashes: list[tuple[str, str]] = []
    stripper = None
    if strip:
        from formats.ops.rules import Rule

        stripper = Rule("strip-prefix", strip)
    by_name = match == "name"
    for key in sorted(ckpt):
        entry = ckpt[key]
        if by_name and _is_graph(key, entry.role):
            continue
        name = (entry.name or key) if by_name else key
        if stripper is not None:
            name = stripper.apply(name) or name
        if rules is not None:
            name = rules.apply(name)
        if name in out:
            clashes.append((key, name))
        else:
            out[name] = key
    return out, clashes


def name_pairs(a: Checkpoint, b: Checkpoint) -> int:
    """How many of ``a``'s tensors have a variable name one of ``b``'s has (the object graph left out)."""
    names = {e.name for k, e in b.items() if k != OBJECT_GRAPH_KEY}
    return sum(1 for k, e in a.items() if k != OBJECT_GRAPH_KEY and e.name in names)


def match_name_hint(a: Checkpoint, b: Checkpoint) -> str | None:
    """For a comparison by key that paired nothing: the hint to pair by name when variable names do pair
    (name-based vs object-based, bundle vs Keras), else None."""
    paired = name_pairs(a, b)
    if not paired:
        return None
    return f"no key is in both checkpoints, but {paired} tensors pair by variable name: try --match name"
