"""What a mistyped name may have meant: the one rule behind every "did you mean" (paths, keys).

:func:`nearest` ranks candidates by how close one of their spellings is to the word typed (difflib's ratio,
at least :data:`CUTOFF`, as :func:`difflib.get_close_matches` ranks), after better kinds of match: a spelling
equal to the word, one that differs from it only by a leading ``_`` on a ``/``-segment (Keras 3 tracks a
layer's ``kernel`` as ``_kernel``: ``net/l1/_kernel/.ATTRIBUTES/VARIABLE_VALUE``, where Keras 2 wrote
``net/l1/kernel``), one that holds the word's segments in order. :func:`key_spellings`
gives each key of a checkpoint the spellings a user may type for it: the key, its object path (an
object-based key without ``/.ATTRIBUTES/VARIABLE_VALUE``) and its variable name.

Only an error imports this module (start-up).
"""
from __future__ import annotations

from formats.core.object_keys import VALUE_SUFFIX

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    import difflib
    from collections.abc import Iterable, Mapping

    from formats.core.model import Checkpoint

__all__ = ["nearest", "key_spellings", "plain_spellings", "did_you_mean", "CUTOFF", "LIMIT"]

CUTOFF = 0.6
"""The least similarity (difflib's ratio, 0..1) of a suggestion to the word typed."""
LIMIT = 3
"""At most this many suggestions."""


def nearest(word: str, candidates: Mapping[str, Iterable[str]], n: int = LIMIT,
            cutoff: float = CUTOFF) -> list[tuple[str, str]]:
    """The (at most ``n``) candidates closest to ``word``, best first, each with its spelling closest to it:
    ``[(candidate, spelling), ...]``. ``candidates`` maps each candidate to the spellings it may be typed as
    (itself included when it is one). Ranked: a spelling equal to ``word`` (a name, where keys were wanted);
    one equal but for leading underscores of segments (Keras 3's ``_kernel``); one holding ``word``'s
    segments in order, underscores aside (``l1/kernel`` in ``net/l1/_kernel``); then by difflib's ratio
    (at least ``cutoff``); ties by candidate, numbers by value. Only candidates of the best of these kinds are returned."""
    import difflib

    variants = _underscore_variants(word)
    segments = _segments(word)
    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(word)
    scored: list[tuple[float, str, str]] = []
    for candidate, spellings in candidates.items():
        best: tuple[float, str] | None = None
        for spelling in dict.fromkeys(spellings):
            score = _score(word, spelling, variants, segments, matcher, cutoff)
            if score is not None and (best is None or score > best[0]):
                best = (score, spelling)
        if best is not None:
            scored.append((-best[0], candidate, best[1]))
    if not scored:
        return []
    from formats.core.natural import natural_order

    scored.sort(key=lambda item: (item[0], natural_order(item[1])))  # ties in number order: ckpt-3, ckpt-4, ckpt-10
    tier = _tier(-scored[0][0])  # only the best kind of match: `net/l1/_kernel` for `net/l1/kernel`, not `l2`'s too
    return [(candidate, spelling) for score, candidate, spelling in scored[:n] if _tier(-score) == tier]


def _tier(score: float) -> int:
    """0: the word but for underscores, or another spelling of it; 1: its segments in order; 2: similar."""
    return 0 if score >= 3.0 else 1 if score >= 2.0 else 2


def _score(word: str, spelling: str, variants: set[str], segments: list[str], matcher: difflib.SequenceMatcher,
           cutoff: float) -> float | None:
    """How near ``spelling`` is to ``word`` (see :func:`nearest`), None when not near enough."""
    if spelling == word:
        return 4.0
    if spelling in variants:
        return 3.0
    matcher.set_seq1(spelling)
    if _holds(_segments(spelling), segments):
        return 2.0 + matcher.ratio()
    if matcher.real_quick_ratio() < cutoff or matcher.quick_ratio() < cutoff:
        return None
    ratio = matcher.ratio()
    return ratio if ratio >= cutoff else None


def _segments(text: str) -> list[str]:
    """``text``'s ``/``-segments without their leading underscores."""
    return [part.lstrip("_") for part in text.split("/")]


def _holds(segments: list[str], wanted: list[str]) -> bool:
    """Whether ``wanted`` are among ``segments`` in order (not necessarily adjacent)."""
    found = iter(segments)
    return all(any(part == want for part in found) for want in wanted)


def _underscore_variants(word: str) -> set[str]:
    """``word`` with a leading ``_`` added to or taken from each ``/``-segment, one segment at a time
    (``net/l1/kernel`` -> ``_net/l1/kernel``, ``net/_l1/kernel``, ``net/l1/_kernel``)."""
    parts = word.split("/")
    out = set()
    for i, part in enumerate(parts):
        changed = part[1:] if part.startswith("_") else "_" + part
        if changed:
            out.add("/".join([*parts[:i], changed, *parts[i + 1:]]))
    out.discard(word)
    return out


def key_spellings(ckpt: Checkpoint) -> dict[str, tuple[str, ...]]:
    """Each key of ``ckpt`` -> the spellings that name it: the key, its object path and its variable name
    (what :func:`formats.core.values.find_key` accepts)."""
    out: dict[str, tuple[str, ...]] = {}
    for key, entry in ckpt.items():
        spellings = [key]
        if key.endswith(VALUE_SUFFIX):
            spellings.append(key[:-len(VALUE_SUFFIX)])
        if entry.name:
            spellings.append(str(entry.name))
        out[key] = tuple(spellings)
    return out


def plain_spellings(names: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Each of ``names`` (keys, or variable names) -> itself, and its object path when it is an object-based key."""
    return {name: (name, name[:-len(VALUE_SUFFIX)]) if name.endswith(VALUE_SUFFIX) else (name,) for name in names}


def did_you_mean(suggestions: Iterable[str], quote: bool = True) -> str | None:
    """``did you mean 'a' or 'b'?`` (``quote=False``: ``did you mean a, b?``, for paths); None for none."""
    listed = list(suggestions)
    if not listed:
        return None
    if not quote:
        return "did you mean " + ", ".join(listed) + "?"
    return "did you mean " + " or ".join(repr(s) for s in listed) + "?"
