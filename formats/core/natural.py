"""The order keys are listed in: as text, but numbers as numbers (``optimizer/vars/2`` before ``optimizer/vars/10``,
``dense_2`` before ``dense_10``, ``ckpt-3`` before ``ckpt-10``).

:func:`natural_order` is a sort key: the key with every run of digits written as its length (one digit,
``"9"`` followed by one more character past 9 digits) and then the number without leading zeros, so that
plain text order compares numbers by value and everything else as before (a digit run still sorts against
any other character as a digit does); keys equal but for leading zeros keep their text order. Keys whose
digit runs are all one digit long are already in this order when sorted as text (:func:`needs_natural_order`
tells, cheaply, whether a sorted listing must be sorted again).
"""
from __future__ import annotations

from itertools import islice

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from re import Pattern
    from typing import Any

__all__ = ["natural_order", "natural_text", "ascending", "sort_naturally", "natural_orders", "needs_natural_order", "key_order", "natural_sorted"]

_runs: Pattern[str] | None = None  # compiled (and re imported) when first needed: start-up


_NUMBERS: dict[str, str] = {}
"""Digit run -> what :func:`_number` makes of it (a listing repeats a few thousand runs a million times)."""


def natural_order(key: str) -> tuple[str, str]:
    """Sort key of ``key``: numbers in it compared by value (see the module's docstring)."""
    return natural_text(key), key


def natural_text(key: str) -> str:
    """:func:`natural_order`'s first part: ``key`` with every digit run rewritten (``key`` itself when it has none);
    keys in text order, stably sorted by it, are in natural order (what ties it the text order keeps)."""
    global _runs
    if _runs is None:
        import re

        _runs = re.compile(r"(\d+)")
    parts = _runs.split(key)  # text, digits, text, ...: one call, no callback per run
    if len(parts) == 1:
        return key
    for i in range(1, len(parts), 2):
        run = parts[i]
        found = _NUMBERS.get(run)
        if found is None:
            found = _number(run)
            if len(_NUMBERS) < 1 << 16:
                _NUMBERS[run] = found
        parts[i] = found
    return "".join(parts)


def ascending(items: Sequence[Any], key: Callable[[Any], str] | None = None) -> bool:
    """Whether the texts of ``items`` (``key`` of each, else the items themselves) ascend strictly, each before the
    next (none twice); compared in C, no list made."""
    from itertools import islice

    rest = islice(items, 1, None)
    return all(map(str.__lt__, items, rest) if key is None else map(str.__lt__, map(key, items), map(key, rest)))


def sort_naturally(items: list[Any], key: Callable[[Any], str]) -> None:
    """Sort ``items`` in place as ``items.sort(key=lambda item: natural_order(key(item)))`` does, holding one rewritten
    key an item and no pair (56 MB at 10^6 rows): stably by :func:`natural_text`, from text order (sorted into it
    first unless the keys ascend already), which keeps keys that are equal but for leading zeros in text order; the
    texts made as :func:`natural_sorted` makes them (:func:`_natural_texts`: a regex call a key was most of sorting
    an npz's listing of 10^5 tensors)."""
    if not ascending(items, key):
        items.sort(key=key)
    texts = _natural_texts(list(map(key, items)))
    if texts is not None:
        made = iter(texts)  # (list.sort asks each item's key once, in the list's order, before it sorts)
        items.sort(key=lambda _: next(made))


def _natural_texts(keys: list[str]) -> list[str] | None:
    """:func:`natural_text` of each of ``keys``, rewritten :data:`_ORDERS_AT_ONCE` keys at a time by
    :func:`natural_orders` (each ``/``-separated piece once; a key at a time where a key holds a newline); None
    where their text order is their natural order already (no number of two digits: :func:`needs_natural_order`)."""
    joined = "\n".join(keys)
    if not needs_natural_order(joined):
        return None
    if joined.count("\n") != len(keys) - 1:  # a key holds the separator: one at a time
        return list(map(natural_text, keys))
    del joined
    texts: list[str] = []
    for start in range(0, len(keys), _ORDERS_AT_ONCE):  # (the split's parts, five strings a key, a chunk at a time)
        texts += natural_orders("\n".join(keys[start:start + _ORDERS_AT_ONCE]))
    return texts


def _number(run: str) -> str:
    """A digit run as its length (see the module's docstring), then the number without leading zeros."""
    digits = run.lstrip("0")
    n = len(digits)
    return (chr(0x30 + n) if n <= 9 else "9" + chr(0x30 + n)) + digits


_ONE_DIGIT = str.maketrans("123456789", "000000000")


def needs_natural_order(text: str) -> bool:
    """Whether keys in ``text`` (one or many, joined) hold a number of two or more digits: only then can their
    natural order differ from their text order. (No ``re``: ``ckpt ls PREFIX`` asks at start-up.)"""
    return "00" in text.translate(_ONE_DIGIT)


def key_order(keys: Iterable[str]) -> Callable[[str], Any]:
    """The sort key that puts ``keys`` in natural order: :func:`natural_order`, or the key itself (faster)
    where that is the same order (no number of two or more digits among them)."""
    return natural_order if needs_natural_order("\n".join(keys)) else _itself


def _itself(key: str) -> str:
    return key


def natural_sorted(keys: list[str]) -> list[str]:
    """``sorted(keys, key=key_order(keys))``, with the digit runs of the keys rewritten :data:`_ORDERS_AT_ONCE`
    keys at a time (one regex split of those keys joined, a dictionary look-up per run) instead of a regex call
    per key."""
    orders = _natural_texts(keys)
    if orders is None:
        return sorted(keys)
    order = sorted(range(len(keys)), key=orders.__getitem__)
    ranked = list(map(orders.__getitem__, order))
    if any(map(str.__eq__, ranked, islice(ranked, 1, None))):  # keys equal but for leading zeros: text order decides
        return [key for _, key in sorted(zip(orders, keys))]
    return list(map(keys.__getitem__, order))


_ORDERS_AT_ONCE = 4096
"""Keys :func:`natural_sorted` rewrites at once: at 10^6 keys, all at once held about 200 MB of parts for a moment."""


def natural_orders(joined: str) -> list[str]:
    """The text of :func:`natural_order` (its first item) of each of the keys ``joined`` by newlines (no key
    holding one), no tuple per key: the keys' ``/``-separated pieces rewritten each once (a checkpoint's keys repeat
    a few thousand pieces - ``layer_12``, ``unit_3``, ``kernel`` - a million times: each piece's text remembered,
    up to :data:`_PIECES` of them), then joined again (a digit run never holds a ``/``)."""
    pieces = joined.split("/")
    known = _PIECES_DONE
    found = list(map(known.get, pieces))
    i = 0
    while True:  # each piece not rewritten before (found in C)
        try:
            i = found.index(None, i)
        except ValueError:
            break
        piece = pieces[i]
        text = known.get(piece)
        if text is None:
            text = natural_text(piece)
            if len(known) < _PIECES:
                known[piece] = text
        found[i] = text
    return "/".join(found).split("\n")  # type: ignore[arg-type]


_PIECES_DONE: dict[str, str] = {}
_PIECES = 1 << 16
"""Key pieces whose rewritten text is remembered (the pieces of a listing's keys: at most a few MB)."""
