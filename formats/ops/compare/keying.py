"""Pairing two checkpoints' tensors for a comparison: by key, by variable name (``match="name"``) or by
object path (``match="path"``).

The one rule ``diff``, ``verify --against`` and ``doctor`` follow: each tensor of a side gets the name it
pairs under - its key; with ``match="name"`` its TF1-style variable name (:attr:`TensorEntry.name`, the
object graph and ``save_counter`` left out); with ``match="path"`` its object path
(:func:`~formats.core.object_keys.object_path`: the key without ``/.ATTRIBUTES/VARIABLE_VALUE``, a slot
variable under its variable's path and slot name, the object graph left out), which only an object-based
checkpoint has (:func:`require_object_paths`) - stripped of a prefix and renamed by rules when asked; tensors
of the two sides pair when their names are equal. A name two keys of one side share keeps the first key in
sorted order; the others are clashes, left unpaired. :func:`match_name_hint` says when pairing by key finds
nothing but pairing by name would, :func:`match_path_hint` when pairing by name leaves tensors of
object-based checkpoints unpaired because several share a full name (Keras 3's ``net_1/kernel``) and
pairing by object path would tell them apart.
"""
from __future__ import annotations

from formats.core.errors import UsageError
from formats.core.model import OBJECT_GRAPH_KEY, Checkpoint, Role
from formats.core.object_keys import object_path

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from formats.ops.rules import RuleSet

__all__ = ["MATCHES", "SIDE_MATCHES", "pairing_names", "require_object_paths", "name_pairs", "match_name_hint",
           "match_path_hint"]

MATCHES = ("key", "name", "path", "converted")
"""What tensors may pair by (``converted``: as a conversion of A onto B's layout pairs them, see
:mod:`formats.ops.convert.as_converted`; ``diff`` only)."""
SIDE_MATCHES = ("key", "name", "path")
"""The pairings that name each side's tensors on their own (:func:`pairing_names`)."""


def _is_graph(key: str, role: str) -> bool:
    """The object graph, or ``tf.train.Checkpoint``'s ``save_counter``: a checkpoint's bookkeeping, no variable
    of a program restoring by name (a name-based -> object-based conversion writes one, as ``doctor`` knows)."""
    return key == OBJECT_GRAPH_KEY or role in (Role.OBJECT_GRAPH, Role.SAVE_COUNTER)


def require_object_paths(ckpt: Checkpoint) -> None:
    """Raise :class:`~formats.core.errors.UsageError` (exit 2) unless ``ckpt`` is object-based: only a
    ``tf.train.Checkpoint`` bundle's keys are object paths. A name-based checkpoint's keys are variable names
    and a Keras file's are its layers' weights, so taking them for paths would pair tensors by accident."""
    from formats.ops.convert.conversion_source import is_object_based

    if not is_object_based(ckpt):
        raise UsageError(ckpt.path, f"a {ckpt.format} checkpoint has no object graph, so its tensors have no "
                                    "object paths to pair by",
                         hint='pass match="name" to pair by variable name')


def pairing_names(ckpt: Checkpoint, match: str, *, strip: str | None = None,
                  rules: RuleSet | None = None) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """Name -> key for every tensor of ``ckpt`` (see the module doc): the key, with ``match="name"`` the
    variable name, with ``match="path"`` the object path (:func:`require_object_paths` first), without the
    prefix ``strip``, renamed by ``rules``; and the ``(key, name)`` clashes, keys left unpaired because an
    earlier key (in sorted order) took their name."""
    if match == "path":
        require_object_paths(ckpt)
    out: dict[str, str] = {}
    clashes: list[tuple[str, str]] = []
    stripper = None
    if strip:
        from formats.ops.rules import Rule

        stripper = Rule("strip-prefix", strip)
    by_name, by_path = match == "name", match == "path"
    if not (by_name or by_path or stripper or rules):  # by key: each key its own name (no entry made)
        keys = sorted(ckpt)
        return dict(zip(keys, keys)), clashes
    for key in sorted(ckpt):
        entry = ckpt[key]
        if by_name and _is_graph(key, entry.role) or by_path and (key == OBJECT_GRAPH_KEY
                                                                   or entry.role == Role.OBJECT_GRAPH):
            continue  # by path, save_counter is an object like any other: tf.train.Checkpoint.restore binds it
        name = (entry.name or key) if by_name else object_path(key) if by_path else key
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


def match_path_hint(a: Checkpoint, b: Checkpoint) -> str | None:
    """For a comparison by name of two object-based checkpoints: the hint to pair by object path when full
    names that several tensors of a side share leave tensors unpaired (Keras 3 names every ``Dense`` kernel of
    a model ``<model>/kernel``), else None."""
    from formats.ops.convert.conversion_source import is_object_based

    if not (is_object_based(a) and is_object_based(b)):
        return None
    shared: set[str] = set()
    left = 0
    for ckpt in (a, b):
        clashes = pairing_names(ckpt, "name")[1]
        shared.update(name for _, name in clashes)
        left += len(clashes)
    if not shared:
        return None
    shown = ", ".join(repr(name) for name in sorted(shared)[:3]) + (f" and {len(shared) - 3} more"
                                                                    if len(shared) > 3 else "")
    return (f"{len(shared)} full name(s) are shared by several tensors ({shown}), so pairing by name leaves "
            f"{left} tensor(s) unpaired: pass match=\"path\" to pair them by object path, as "
            "tf.train.Checkpoint.restore does")
