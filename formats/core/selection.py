"""One key selection for every operation: exact keys or globs matched against the whole key.

A pattern selects the keys it equals or glob-matches (:func:`fnmatch.fnmatchcase`: ``*``, ``?``,
``[seq]``; case-sensitive; ``*`` crosses ``/``). No patterns select every key. A pattern that
selects nothing is an error (:class:`~formats.core.errors.NothingSelectedError`, exit status 1) for
operations that act on the selection (``stats``, ``extract``, ``trend``, ``diff``); a listing may
report it as a warning instead (:func:`nothing_selected` builds the same message either way).
"""
from __future__ import annotations

from formats.core.errors import NothingSelectedError

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from typing import Any

    from formats.core.model import Checkpoint, TensorEntry

__all__ = ["select", "select_keys", "nothing_selected", "is_glob"]

_GLOB_CHARS = frozenset("*?[")


def is_glob(pattern: str) -> bool:
    """Whether ``pattern`` holds a glob character (``*``, ``?`` or ``[``)."""
    return not _GLOB_CHARS.isdisjoint(pattern)


def _glob(pattern: str) -> Callable[[str], Any]:
    """The compiled glob's ``match`` (a key's whole text; not None: it matches)."""
    import fnmatch  # only for a glob pattern (start-up)
    import re

    return re.compile(fnmatch.translate(pattern)).match


def select_keys(keys: Iterable[str], patterns: Sequence[str]) -> tuple[list[str], list[str]]:
    """The keys (in the order given) that equal or glob-match any of ``patterns`` - every key when there
    are none - and the patterns that match no key (in the order given). Each pattern is matched against every
    key by ``filter`` over its compiled glob (no Python call a key)."""
    if not patterns:
        return list(keys), []
    keys = keys if isinstance(keys, list) else list(keys)
    every: set[str] | None = None  # the keys, made for the first pattern that is a key or may be one
    found: set[str] = set()
    unmatched = []
    for pattern in dict.fromkeys(patterns):
        hits: set[str] = set(filter(_glob(pattern), keys)) if is_glob(pattern) else set()
        if every is None:
            every = set(keys)
        if pattern in every:  # (a glob that is also a key, as it is)
            hits.add(pattern)
        if hits:
            found |= hits
        else:
            unmatched.append(pattern)
    return list(filter(found.__contains__, keys)), unmatched


def select(ckpt: Checkpoint, patterns: Sequence[str]) -> list[TensorEntry]:
    """The entries of ``ckpt`` selected by ``patterns`` (all when none), sorted by key.

    Raises :class:`~formats.core.errors.NothingSelectedError` naming every pattern that matches no key.
    """
    return [ckpt[k] for k in selected_keys(ckpt, patterns)]


def selected_keys(ckpt: Checkpoint, patterns: Sequence[str]) -> list[str]:
    """The keys of the entries :func:`select` gives (sorted, the same error), without making the entries."""
    keys, unmatched = select_keys(ckpt, patterns)
    if unmatched:
        from formats.core.nearest import key_spellings

        raise nothing_selected(ckpt.path, unmatched, among=key_spellings(ckpt))
    return sorted(keys)


def nothing_selected(path: object, unmatched: Sequence[str], what: str = "key",
                     among: Mapping[str, Iterable[str]] | Iterable[str] = ()) -> NothingSelectedError:
    """The error for ``unmatched`` patterns (``what`` is the thing matched: ``key`` or ``name``), with a hint.

    ``among`` are the keys (or names) the patterns were matched against; a mapping gives each the spellings a
    user may type for it (:func:`formats.core.nearest.key_spellings`). A pattern without glob characters that
    is part of one of them is told the glob it meant (``try '*kernel*'``); one that is not gets the nearest
    of them instead (``did you mean 'net/l1/_kernel/.ATTRIBUTES/VARIABLE_VALUE'?``), where there is one."""
    listed = " or ".join(repr(p) for p in unmatched)
    plain = [p for p in unmatched if not is_glob(p)]
    near = _nearest(plain, among)
    globbed = [p for p in plain if p not in near]
    parts = [_did_you_mean(near)] if near else []
    if globbed or not near:
        hint = f"patterns are exact {what}s or globs on the whole {what}"
        if globbed:
            hint += ": try " + ", ".join(repr(f"*{p}*") for p in globbed)
        parts.append(hint)
    return NothingSelectedError(path, f"no {what} matches {listed}", hint="; ".join(parts),
                                patterns=tuple(unmatched))


def _nearest(plain: Sequence[str], among: Mapping[str, Iterable[str]] | Iterable[str]) -> dict[str, list[str]]:
    """Each of the ``plain`` patterns that no candidate of ``among`` holds (so that ``*pattern*`` would select
    nothing either) -> the candidates nearest to it (:func:`formats.core.nearest.nearest`), where there are."""
    if not plain:
        return {}
    from collections.abc import Mapping

    from formats.core.nearest import nearest, plain_spellings

    spellings = among if isinstance(among, Mapping) else plain_spellings(among)
    out: dict[str, list[str]] = {}
    for pattern in plain:
        if spellings and not any(pattern in candidate for candidate in spellings):
            found = [candidate for candidate, _ in nearest(pattern, spellings)]
            if found:
                out[pattern] = found
    return out


def _did_you_mean(near: dict[str, list[str]]) -> str:
    """``did you mean 'a' or 'b'?`` for one pattern; ``did you mean 'a' for 'x', 'b' for 'y'?`` (the nearest
    to each) for several."""
    from formats.core.nearest import did_you_mean

    if len(near) == 1:
        return did_you_mean(next(iter(near.values()))) or ""
    return "did you mean " + ", ".join(f"{found[0]!r} for {p!r}" for p, found in near.items()) + "?"
