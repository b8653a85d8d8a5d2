"""Small stored tensors read a span at a time, each checked against its own CRC32C.

A checkpoint of many small tensors costs Python objects, not bytes, when every tensor is mapped, streamed and
checked on its own. Where a tensor's canonical bytes lie unchanged in a local file
(:meth:`~formats.core.model.TensorEntry.stored_range`: a bundle tensor) and it is small (:data:`SMALL_BYTES`),
:func:`read_checked` reads it together with its neighbours in the same file: one ``pread`` per span of at most
:data:`SPAN_BYTES` (tensors at most :data:`GAP_BYTES` apart go in one span), then one CRC32C per tensor over
its slice of the span (a small member of an npz, :meth:`~formats.npz.reader.NpzTensor.small_ranges`: its CRC-32 over
its ``.npy`` header and bytes). A tensor whose checksum does not match, or whose bytes the file no longer holds, is
given as None, like one that is not so stored: the caller reads those the usual way, which says what is
wrong in the usual words. Memory is bounded by the bytes the caller asks for at once (a few spans).
"""
from __future__ import annotations

import os
import zlib
from _operator import is_  # operator's C half, without operator.py (start-up)
from itertools import repeat

from formats.io.crc import crc32c

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from formats.core.model import Checkpoint, TensorEntry

    Stored = tuple[int, int, int, int]  # (fd, offset, size, crc32c): TensorEntry.stored_range
    Range = Stored | tuple[int, int, int, int, int]  # or (fd, offset, size, crc32, skip): a small npz member
    Group = tuple[str, tuple[int, ...], list[int], list[memoryview]]

__all__ = ["SMALL_BYTES", "SPAN_BYTES", "GAP_BYTES", "small_range", "small_ranges", "read_checked", "small_pieces",
           "small_groups"]

SMALL_BYTES = 64 << 10
"""A tensor of at most this many stored bytes is read as part of a span."""
SPAN_BYTES = 1 << 20
"""At most this many bytes are read by one ``pread`` (a span); callers ask for about this much at once."""
GAP_BYTES = 4096
"""Tensors of one file at most this many bytes apart are read in one span (the bytes between read and dropped)."""


def small_range(entry: TensorEntry, most: int = SMALL_BYTES) -> Stored | None:
    """``entry.stored_range()`` (``(fd, offset, size, crc32c)``) for a tensor of at most ``most`` stored bytes,
    else None (without asking the format about a bigger one)."""
    if not 0 < entry.nbytes <= most:
        return None
    return entry.stored_range()


def small_ranges(entries: Sequence[TensorEntry], most: int = SMALL_BYTES) -> list[Range | None]:
    """:func:`small_range` of each of ``entries``. Entries of a class that finds many at once (a ``small_ranges``
    static method: a bundle's tensors, from its index's columns) are asked together, a class at a time."""
    kind = type(entries[0]) if entries else None
    if kind is not None and all(map(is_, map(type, entries), repeat(kind))):  # (the usual case: found in C)
        return _of_class(kind, entries, most)
    classes: dict[type, list[int]] = {}
    for i, entry in enumerate(entries):
        found = classes.get(type(entry))
        if found is None:
            classes[type(entry)] = [i]
        else:
            found.append(i)
    out: list[Range | None] = [None] * len(entries)
    for cls, positions in classes.items():
        for i, where in zip(positions, _of_class(cls, [entries[i] for i in positions], most)):
            out[i] = where
    return out


def _of_class(cls: type, entries: Sequence[TensorEntry], most: int) -> list[Range | None]:
    """:func:`small_range` of each of ``entries``, all of class ``cls``: by its ``small_ranges`` where it has one."""
    many = getattr(cls, "small_ranges", None)
    return many(entries, most) if many is not None else [small_range(e, most) for e in entries]


def small_pieces(entries: Sequence[TensorEntry], want: Callable[[TensorEntry], bool] | None = None,
                 budget: int = SPAN_BYTES) -> Iterator[list[tuple[int, memoryview]]]:
    """The small tensors among ``entries`` (those ``want`` takes, all by default) read in spans and checked
    (:func:`read_checked`): for consecutive batches of about ``budget`` stored bytes, ``(position, bytes)`` of
    each tensor read whole with a matching CRC32C. A tensor not given is for the caller to read its usual way.
    Use a batch before asking for the next: only one batch's bytes are held. Where the tensors lie is found for
    all of them at once (:func:`small_ranges`)."""
    positions: list[int] = []
    ranges: list[Range | None] = []
    total = 0
    for i, where in _located(entries, want):
        if where is None:
            continue
        if positions and total + where[2] > budget:
            yield [(j, piece) for j, piece in zip(positions, read_checked(ranges, budget)) if piece is not None]
            positions, ranges, total = [], [], 0
        positions.append(i)
        ranges.append(where)
        total += where[2]
    if positions:
        yield [(j, piece) for j, piece in zip(positions, read_checked(ranges, budget)) if piece is not None]


def small_groups(ckpt: Checkpoint, keys: Sequence[str], want: Callable[[str, tuple[int, ...]], bool],
                 budget: int = SPAN_BYTES) -> Iterator[list[Group]]:
    """The small tensors of ``keys`` of ``ckpt`` whose dtype and shape ``want`` takes (and ckpt can read), read in
    spans and checked, as :func:`small_pieces` reads them, in batches of about ``budget`` stored bytes: each batch
    as groups of tensors of one dtype and shape, ``(dtype, shape, positions in keys, bytes of each)``. A tensor not
    given (bigger, not stored as it lies, or with a checksum that does not match) is for the caller to read its
    usual way. A checkpoint that finds them without an entry per tensor (a ``small_groups`` method: a bundle, from
    its index's columns) is asked; others' entries are read with :func:`small_pieces`. A key ``ckpt`` lacks raises
    its usual error."""
    many = getattr(ckpt, "small_groups", None)
    if many is not None:
        yield from many(keys, want, budget)
        return
    entries = ckpt.entries_of(keys)
    for batch in small_pieces(entries, lambda e: e.unreadable is None and want(e.dtype, e.shape), budget):
        groups: dict[tuple[str, tuple[int, ...]], tuple[list[int], list[memoryview]]] = {}
        for i, piece in batch:
            entry = entries[i]
            members = groups.get((entry.dtype, entry.shape))
            if members is None:
                members = groups[entry.dtype, entry.shape] = ([], [])
            members[0].append(i)
            members[1].append(piece)
        yield [(dtype, shape, positions, pieces) for (dtype, shape), (positions, pieces) in groups.items()]


LOCATE_AT_ONCE = 4096
"""Entries :func:`small_pieces` locates at a time (:func:`small_ranges`): a range each is held for these only."""


def _located(entries: Sequence[TensorEntry],
             want: Callable[[TensorEntry], bool] | None) -> Iterator[tuple[int, Range | None]]:
    """``(position, small_range)`` of each of ``entries`` ``want`` takes, located :data:`LOCATE_AT_ONCE` at a time."""
    for start in range(0, len(entries), LOCATE_AT_ONCE):
        part = entries[start:start + LOCATE_AT_ONCE]
        chosen = range(start, start + len(part)) if want is None else \
            [start + i for i, entry in enumerate(part) if want(entry)]
        yield from zip(chosen, small_ranges(part if want is None else [entries[i] for i in chosen]))


def read_checked(ranges: Sequence[Range | None], budget: int = SPAN_BYTES,
                 gap: int = GAP_BYTES) -> list[memoryview | None]:
    """The bytes of each of ``ranges`` (``(fd, offset, size, crc32c)`` as
    :meth:`~formats.core.model.TensorEntry.stored_range` gives them, or None), read in spans of at most ``budget``
    bytes of one file and checked against their CRC32C; None for a range that is None, that a read did not
    return whole, or whose checksum does not match."""
    out: list[memoryview | None] = [None] * len(ranges)
    # by file, then offset
    order = sorted((i for i, r in enumerate(ranges) if r is not None), key=ranges.__getitem__)  # type: ignore[arg-type]
    members: list[int] = []
    fd = start = end = -1
    for i in order:
        fd_i, offset, size = ranges[i][:3]  # type: ignore[index]
        stop = offset + size
        if fd_i == fd and offset <= end + gap and (stop if stop > end else end) - start <= budget:
            members.append(i)
            if stop > end:
                end = stop
            continue
        if members:
            _read_span(fd, start, end, members, ranges, out)
        members = [i]
        fd, start, end = fd_i, offset, stop
    if members:
        _read_span(fd, start, end, members, ranges, out)
    return out


def _read_span(fd: int, start: int, end: int, members: list[int], ranges: Sequence[Range | None],
               out: list[memoryview | None]) -> None:
    """Read ``[start, end)`` of ``fd`` once; each member whose slice is whole and matches its checksum gets it (a
    zip member's range, ``(fd, offset, size, crc32, skip)``: its CRC-32 over the slice, and the slice after its
    first ``skip`` bytes given: the tensor's bytes after its ``.npy`` header)."""
    try:
        data = os.pread(fd, end - start, start)
    except OSError:  # the file was closed under us (or cannot be read): the usual path says why
        return
    view = memoryview(data)
    for i in members:
        where = ranges[i]
        offset, size, crc = where[1], where[2], where[3]  # type: ignore[index]
        piece = view[offset - start:offset - start + size]
        if len(piece) != size:
            continue
        if len(where) == 4:  # type: ignore[arg-type]
            if crc32c(piece) == crc:
                out[i] = piece
        elif zlib.crc32(piece) == crc:
            out[i] = piece[where[4]:]  # type: ignore[index]
