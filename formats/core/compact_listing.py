"""A listing of many tensors held compactly: what ``ckpt ls`` shows of an index of a million tensors
without an object per tensor.

Rows come in blocks (as the index stores them): a block is its keys joined by newlines (one string)
and an array of indexes into :attr:`CompactListing.kinds`, the distinct ``(dtype, shape, nbytes)``
of the listed tensors (a large checkpoint repeats a few shapes many times). Keys are in natural order
(:mod:`formats.core.natural`: ``vars/2`` before ``vars/10``; :func:`in_natural_order` puts the blocks of an
index, sorted as text, in it) and hold no newline. A format offers it through its optional ``compact_listing`` (see
:mod:`formats.core.registry`) when it can read one faster than opening the checkpoint.
"""
from __future__ import annotations

import os
from _collections import _count_elements  # type: ignore[import-not-found]  # Counter.update's C loop

from formats.core.value_tuples import ValueTuple

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from array import array
    from collections.abc import Iterator

__all__ = ["TensorKind", "CompactListing", "NON_PARAMETER", "count_data_files", "count_parameters", "in_natural_order"]

NON_PARAMETER = frozenset({"string", "variant", "resource"})
"""Dtypes whose elements are not counted as parameters."""


def count_data_files(files: list[str]) -> int:
    """How many of a checkpoint's ``files`` are data files (``*.data-*``)."""
    return sum(1 for f in files if ".data-" in os.path.basename(f))


def count_parameters(dtype: str, shape: tuple[int, ...]) -> int:
    """Elements of one tensor counted as parameters (none for strings, variants and resources)."""
    if dtype in NON_PARAMETER:
        return 0
    n = 1
    for d in shape:
        n *= d
    return n


class TensorKind(ValueTuple):
    """What rows of a compact listing share: dtype name, shape and stored bytes."""

    dtype: str
    shape: tuple[int, ...]
    nbytes: int


class CompactListing:
    """Every listed tensor of one checkpoint, sorted by key, in ``blocks`` of ``(keys, kind indexes)``.

    ``total_tensors`` counts every tensor of the checkpoint (listed or not), ``unmatched`` the patterns
    that matched no key, ``key_width`` the longest listed key (in characters), ``ascii`` whether every
    listed key is ASCII, ``printable`` whether every listed key is shown as it is (no character that
    :func:`~formats.core.names.terminal_text` escapes: a control character, a format character...).
    """

    __slots__ = ("path", "format", "files", "kinds", "blocks", "total_tensors", "unmatched", "key_width", "ascii",
                 "printable", "_counts")

    def __init__(self, path: str, format: str, files: list[str], kinds: list[TensorKind],
                 blocks: list[tuple[str, array]], total_tensors: int, unmatched: list[str], key_width: int,
                 ascii: bool, printable: bool = True) -> None:
        self.path = path
        self.format = format
        self.files = files
        self.kinds = kinds
        self.blocks = blocks
        self.total_tensors = total_tensors
        self.unmatched = unmatched
        self.key_width = key_width
        self.ascii = ascii
        self.printable = printable
        self._counts: dict[int, int] | None = None

    def __repr__(self) -> str:
        return (f"CompactListing(path={self.path!r}, format={self.format!r}, {self.tensors} rows in "
                f"{len(self.blocks)} blocks, {len(self.kinds)} kinds, total_tensors={self.total_tensors})")

    @property
    def counts(self) -> dict[int, int]:
        """Kind index -> how many listed tensors are of that kind."""
        if self._counts is None:
            self._counts = {}
            for _, ids in self.blocks:
                _count_elements(self._counts, ids)
        return self._counts

    @property
    def tensors(self) -> int:
        """Tensors listed (after filtering)."""
        return sum(self.counts.values())

    @property
    def nbytes(self) -> int:
        """Stored bytes of the listed tensors."""
        return sum(self.kinds[k].nbytes * n for k, n in self.counts.items())

    @property
    def parameters(self) -> int:
        """Elements of the listed numeric tensors."""
        return sum(count_parameters(self.kinds[k].dtype, self.kinds[k].shape) * n for k, n in self.counts.items())

    @property
    def data_files(self) -> int:
        """How many data files the checkpoint has."""
        return count_data_files(self.files)

    def used_kinds(self) -> list[TensorKind]:
        """The kinds of at least one listed tensor."""
        return [self.kinds[k] for k in sorted(self.counts)]

    def rows(self) -> Iterator[tuple[str, TensorKind]]:
        """Every listed ``(key, kind)`` in order (one at a time; the listing itself stays compact)."""
        kinds = self.kinds
        for text, ids in self.blocks:
            for key, kind in zip(text.split("\n"), ids):
                yield key, kinds[kind]


def in_natural_order(blocks: list[tuple[str, array]]) -> list[tuple[str, array]]:
    """``blocks`` (keys in text order, as an index stores them) with their rows in natural order
    (:func:`formats.core.natural.natural_order`), in blocks of the same sizes: the same blocks when that is
    their order already (always, when no key holds a number of two or more digits: checked without
    splitting a block)."""
    from formats.core.natural import natural_orders, needs_natural_order

    if not any(needs_natural_order(text) for text, _ in blocks):
        return blocks
    from array import array

    orders: list[str] = []
    for text, _ in blocks:
        orders += natural_orders(text)
    # Keys equal but for leading zeros have the same order text: the sort is stable, so they keep their text
    # order, as natural_order's (text, key) pairs would (no pair per key; the keys are split out only after).
    order = sorted(range(len(orders)), key=orders.__getitem__)
    del orders
    if all(i == at for at, i in enumerate(order)):
        return blocks
    keys = [key for text, _ in blocks for key in text.split("\n")]
    kinds = array("I")
    for _, ids in blocks:
        kinds.extend(ids)
    out = []
    start = 0
    for _, ids in blocks:
        part = order[start:start + len(ids)]
        start += len(ids)
        out.append(("\n".join([keys[i] for i in part]), array("I", [kinds[i] for i in part])))
    return out
