"""A bundle's index held as columns: every entry's key, dtype, shape, data file, offset, size and CRC32C in
flat arrays, a :class:`~formats.tf_bundle.reader.RawEntry` made only when one is asked for (issue 38).

Decoding every ``BundleEntryProto`` into its own object cost about 5 us and 300 bytes per tensor (a
million-tensor index: 5 s and 300 MB before anything was read). Here each value is recognised by its bytes,
as :mod:`formats.tf_bundle.index_listing` does: TensorFlow writes fields 1-6 in order, and the values of the
tensors of one dtype, shape and size differ only in the offset (field 4) and the CRC32C (field 6, the last
five bytes). The first value of each such layout is decoded and checked by the reader's own
:func:`~formats.tf_bundle.reader.parse_entry`; the bytes around its offset are then learned, and every later
value with the same bytes is read as its offset varint and its last four bytes. Any other value (another
field order, a partitioned variable's slices, an unusual varint) is decoded in full, so what the columns hold
is always what :func:`~formats.tf_bundle.reader.parse_entry` would have returned, and a corrupt entry raises
its error, naming its key, as before.

Keys stay in index order (strictly increasing, as the table reader checks), so a key is found by bisection;
no dictionary of a million keys is built. Each key is held once, as the text commands use
(:attr:`IndexColumns.texts`: UTF-8, undecodable bytes kept as ``surrogateescape`` keeps them); its bytes are
made again when asked for (:attr:`IndexColumns.keys`), not kept beside it (at a million keys both were 250 MB
for a self-diff's two opens).
"""
from __future__ import annotations

from _bisect import bisect_left  # bisect's C half, without its module (start-up)

from formats.core.errors import CheckpointError, CorruptCheckpointError
from formats.io.protowire import WireError, parse_fields, read_varint
from formats.tf_bundle.entry_wire import RawEntry, parse_entry

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, MutableSequence, Sequence
    from typing import Any

    from formats.io.sstable.scan import ScannedBlock

__all__ = ["IndexColumns", "KeyBytes", "value_layout"]

_MAX_LEARNED = 1 << 18
"""Value layouts remembered (beyond this, further new ones are decoded in full each time)."""


def _text(key: bytes) -> str:
    return key.decode("utf-8", "surrogateescape")


def _bytes(text: str) -> bytes:
    """The bytes :func:`_text` decoded ``text`` from."""
    return text.encode("utf-8", "surrogateescape")


class KeyBytes:
    """The keys of an index as bytes, made from its texts when asked for (a read-only sequence: ``surrogateescape``
    gives back the very bytes each text was decoded from)."""

    __slots__ = ("_texts",)

    def __init__(self, texts: list[str]) -> None:
        self._texts = texts

    def __len__(self) -> int:
        return len(self._texts)

    def __getitem__(self, i: int) -> bytes:
        return _bytes(self._texts[i])

    def __iter__(self) -> Iterator[bytes]:
        return map(_bytes, self._texts)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, KeyBytes):
            return self._texts == other._texts
        return isinstance(other, list) and len(other) == len(self) and all(map(bytes.__eq__, self, other))

    __hash__ = None  # type: ignore[assignment]


class IndexColumns:
    """The entries of one index (the header excepted), a read-only mapping of key (bytes) -> :class:`RawEntry`
    whose entries are made on access. ``num_shards`` is the header's: the first entry stored in a data file
    the header does not declare is an error (raised once every entry is decoded, as the reader did).
    ``compact``: the columns are arrays (for a large index); else lists."""

    def __init__(self, pairs: Iterable[tuple[bytes, bytes]], path: str, num_shards: int,
                 compact: bool = True, like: Iterator[str] | None = None,
                 blocks: Iterable[list[tuple[bytes, bytes]] | ScannedBlock] | None = None) -> None:
        """``like``: the texts the keys are expected to have, in order (a writer's read-back): a key that has the
        next one is held as that very string, not a second copy of it (at a million keys, 70 MB). ``blocks``,
        instead of ``pairs``: the entries a block at a time, each its pairs or a
        :class:`~formats.io.sstable.scan.ScannedBlock` (whose values are walked with arrays; ``compact`` only)."""
        self.path = path
        self.texts: list[str] = []  # each key, decoded (see the module's docstring)
        self.keys = KeyBytes(self.texts)
        self._text_order = True  # whether the texts sort as the keys' bytes do (every key valid UTF-8)
        self.kind: MutableSequence[int]  # row -> its kind: an index into kinds
        self.offset: MutableSequence[int]
        self.crc: MutableSequence[int]
        if compact:  # 16 bytes a row instead of up to 80 (array imports collections: not for a small index)
            from array import array

            self.kind, self.offset, self.crc = array("I"), array("q"), array("I")
        else:
            self.kind, self.offset, self.crc = [], [], []
        self.kinds: list[tuple[int, tuple[int, ...], int, int]] = []  # (dtype, shape, shard_id, size)
        self.slices: dict[int, list] = {}  # row -> the extents of a partitioned variable's slices
        self._kind_ids: dict[tuple[int, tuple[int, ...], int, int], int] = {}
        self._learned: dict[bytes, dict[bytes, int]] = {}  # head -> the bytes after the offset -> kind
        self._head_lengths: list[int] = []
        self._n_learned = 0
        self._num_shards = num_shards
        self._outside: int | None = None  # the first row stored in an undeclared data file
        self._next = 0  # the row find tries first
        self._signatures: dict[bytes, int] = {}  # a usual value's bytes but its offset and CRC32C -> kind
        if blocks is None:
            self._decode(pairs, like)
        else:
            for block in blocks:
                if isinstance(block, list):
                    self._decode(block, like)
                else:
                    self._decode_scanned(block, like)
        if self._outside is not None:
            e = self.row(self._outside)
            raise CorruptCheckpointError(path, f"corrupt index: {e.name!r} is in data file {e.shard_id}, "
                                         f"but the header declares {num_shards}")
        del self._learned, self._kind_ids, self._head_lengths, self._signatures

    # -- decoding ----------------------------------------------------------------------------------
    def _decode(self, pairs: Iterable[tuple[bytes, bytes]], like: Iterator[str] | None = None) -> None:
        keys, kinds, offsets, crcs = self.texts.append, self.kind.append, self.offset.append, self.crc.append
        learned, lengths = self._learned, self._head_lengths
        hl = 1  # the length of the last head that matched
        for key, value in pairs:
            try:
                text = key.decode()
            except UnicodeDecodeError:  # kept as surrogateescape keeps it; then bisected as bytes
                text = _text(key)
                self._text_order = False
            if like is not None:
                same = next(like, None)
                if same == text:
                    text = same
            known = learned.get(value[:hl])
            if known is None and len(lengths) > 1:
                for hl in lengths:
                    known = learned.get(value[:hl])
                    if known is not None:
                        break
            if known is not None:
                n = len(value) - 5  # where the crc32c field starts
                b = value[hl] if hl < n else 0x80
                if b < 0x80:
                    at, o = b, hl + 1
                elif hl + 1 < n and value[hl + 1] < 0x80:
                    at, o = (b & 0x7F) | (value[hl + 1] << 7), hl + 2
                elif hl + 2 < n and value[hl + 2] < 0x80:
                    at, o = (b & 0x7F) | ((value[hl + 1] & 0x7F) << 7) | (value[hl + 2] << 14), hl + 3
                elif hl + 3 < n and value[hl + 3] < 0x80:  # (up to 256 MiB into a data file: no call a row)
                    at, o = (b & 0x7F) | ((value[hl + 1] & 0x7F) << 7) | ((value[hl + 2] & 0x7F) << 14) | \
                        (value[hl + 3] << 21), hl + 4
                else:
                    at, o = _offset(value, hl, n)
                if o <= n and value[n] == 0x35:
                    kind = known.get(value[o:n])
                    if kind is not None:
                        keys(text)
                        kinds(kind)
                        offsets(at)
                        crcs(int.from_bytes(value[n + 1:], "little"))
                        continue
            head = self._full(key, text, bytes(value))
            if head is not None:
                hl = len(head)

    def _parsed(self, key: bytes, value: bytes, row: int) -> tuple[RawEntry, int]:
        """Decode the value of ``key`` (row ``row``) in full, the reader's checks applied: the entry and its kind
        (its slices, if any, and whether it is outside the declared data files noted)."""
        e = parse_entry(key, value, self.path)
        if e.slices:
            self.slices[row] = list(e.slices)
        if not e.in_shards(self._num_shards) and self._outside is None:
            self._outside = row
        return e, self._kind((e.dtype, e.shape, e.shard_id, e.size))

    def _full(self, key: bytes, text: str, value: bytes) -> bytes | None:
        """Decode one value (of ``key``, whose text is ``text``) in full (the reader's checks applied) into the
        columns; when its layout is the usual
        one, learn it: its bytes up to and with its offset field's tag (the head, returned) -> the bytes between
        that field and the crc32c field -> the kind."""
        e, kind = self._parsed(key, value, len(self.texts))
        self.texts.append(text)
        self.kind.append(kind)
        self.offset.append(e.offset)
        self.crc.append(e.crc32c)
        if e.slices:
            return None
        layout = value_layout(value)
        if layout is None or self._n_learned >= _MAX_LEARNED:
            return None
        h, o = layout
        head, rest = value[:h], value[o:-5]
        try:
            fields = parse_fields(head + rest)  # what the value says besides its offset and crc32c
            same = parse_entry(key, head + rest, self.path)
        except (WireError, CheckpointError):
            return None
        if 4 in fields or 6 in fields or 7 in fields or (same.dtype, same.shape, same.shard_id, same.size) != \
                (e.dtype, e.shape, e.shard_id, e.size):
            return None
        head += b"\x20"
        known = self._learned.get(head)
        if known is None:
            known = self._learned[head] = {}
            if len(head) not in self._head_lengths:
                self._head_lengths.append(len(head))
        if rest not in known:
            known[rest] = kind
            self._n_learned += 1
        return head

    def _decode_scanned(self, part: ScannedBlock, like: Iterator[str] | None) -> None:
        """One scanned block's entries into the columns: each value's fields found with arrays
        (:func:`~formats.tf_bundle.entry_arrays.value_fields`); a usual value whose signature is known read as its
        offset and CRC32C, every other one (the first of each signature) decoded in full, in order."""
        from itertools import islice, zip_longest

        import numpy as np

        from formats.io.sstable.scan import LISTED
        from formats.tf_bundle.entry_arrays import value_fields

        block, keys, starts = part.block, part.keys, part.starts
        fields = value_fields(np, np.frombuffer(block, np.uint8), starts, part.stops)
        try:
            texts = list(map(bytes.decode, keys))
        except UnicodeDecodeError:  # kept as surrogateescape keeps them; then bisected as bytes
            texts = [_text(key) for key in keys]
            self._text_order = False
        if like is not None:
            expected = list(islice(like, len(texts)))
            texts = expected if expected == texts else \
                [same if same == text else text for same, text in zip_longest(expected, texts)]  # (a key not met)
        known = self._signatures
        offsets, crcs, stops = fields.offsets, fields.crcs, part.stops
        row = len(self.texts)
        kinds: list[int | None] = []
        for at in range(0, len(keys), LISTED):  # (a thousand signatures at a time)
            cut = slice(at, at + LISTED)
            cuts = zip(starts[cut].tolist(), fields.cut_starts[cut].tolist(), fields.cut_stops[cut].tolist(),
                       fields.crc_starts[cut].tolist())
            signatures: list[bytes | None] = [block[a:b] + block[c:e] for a, b, c, e in cuts]
            usual = fields.usual[cut]
            if not usual.all():
                for i in np.flatnonzero(~usual).tolist():
                    signatures[i] = None
            found: list[int | None] = list(map(known.get, signatures))  # type: ignore[arg-type]
            i = 0
            while True:  # each value whose signature was not known, in order (the first of each): found in C
                try:
                    i = found.index(None, i)
                except ValueError:
                    break
                signature = signatures[i]
                if signature is not None:
                    kind = known.get(signature)
                    if kind is not None:
                        found[i] = kind
                        continue
                j = at + i
                e, kind = self._parsed(keys[j], block[int(starts[j]):int(stops[j])], row + j)
                found[i], offsets[j], crcs[j] = kind, e.offset, e.crc32c
                if signature is not None and len(known) < _MAX_LEARNED:  # (a usual value has no slices)
                    known[signature] = kind
            kinds += found
        self.texts += texts
        self.kind.extend(kinds)  # type: ignore[arg-type]
        if isinstance(self.offset, list):  # (columns of a small index: lists)
            self.offset += offsets.tolist()
            self.crc += crcs.tolist()
        else:
            self.offset.frombytes(offsets.tobytes())  # type: ignore[attr-defined]
            self.crc.frombytes(crcs.tobytes())  # type: ignore[attr-defined]

    def _kind(self, kind: tuple[int, tuple[int, ...], int, int]) -> int:
        found = self._kind_ids.get(kind)
        if found is None:
            found = self._kind_ids[kind] = len(self.kinds)
            self.kinds.append(kind)
        return found

    # -- the mapping -------------------------------------------------------------------------------
    def row(self, i: int) -> RawEntry:
        """The entry in row ``i`` (index order)."""
        dtype, shape, shard, size = self.kinds[self.kind[i]]
        return RawEntry(_bytes(self.texts[i]), dtype, shape, shard, self.offset[i], size,
                        self.crc[i], self.slices.get(i, ()))

    def kind_of(self, row: int) -> tuple[int, tuple[int, ...], int, int]:
        """``(dtype, shape, shard_id, size)`` of the entry in ``row``."""
        return self.kinds[self.kind[row]]

    def sizes_of(self, rows: Iterable[int]) -> Iterator[int]:
        """The stored size of the tensor in each of ``rows``, from its kind (``map`` over C functions: no call a
        row, no int held)."""
        sizes = [kind[3] for kind in self.kinds]
        return map(sizes.__getitem__, map(self.kind.__getitem__, rows))

    def arrays_of(self, np: Any, rows: Sequence[int]) -> tuple[Any, Any, Any] | None:
        """The kind, offset and CRC32C (masked) columns of ``rows`` as numpy arrays (uint32, int64, uint32; copies:
        no buffer of a column stays exported), when ``rows`` is a range of step 1 or an ``array("q")`` and the
        columns are arrays (a large index's); else None (the caller asks row by row)."""
        if isinstance(self.offset, list):
            return None
        if type(rows) is range and rows.step == 1:
            at: Any = slice(rows.start, rows.stop)
        elif getattr(rows, "typecode", None) == "q":
            at = np.frombuffer(rows, np.int64) if len(rows) else np.zeros(0, np.int64)
        else:
            return None
        return (np.frombuffer(self.kind, np.uint32)[at].copy(), np.frombuffer(self.offset, np.int64)[at].copy(),
                np.frombuffer(self.crc, np.uint32)[at].copy())

    def find(self, key: bytes) -> int:
        """The row of ``key``, or -1 (:meth:`find_text` of its text)."""
        return self.find_text(_text(key))

    def find_text(self, text: str) -> int:
        """The row of the key whose text is ``text``, or -1. The row after the last one found is tried first:
        commands ask for keys in index order (each maybe twice), and then no bisection is made (a hint only: any
        thread may move it, the key decides). The texts are bisected as they are when every key is UTF-8 (their
        order is then the bytes' order), else by their bytes."""
        texts = self.texts
        i = self._next
        if i < len(texts) and texts[i] == text:
            self._next = i + 1
            return i
        if 0 < i <= len(texts) and texts[i - 1] == text:  # the same key again
            return i - 1
        if self._text_order:
            i = bisect_left(texts, text)
        else:
            try:
                i = bisect_left(texts, _bytes(text), key=_bytes)
            except UnicodeEncodeError:  # not the text of any bytes
                return -1
        if i < len(texts) and texts[i] == text:
            self._next = i + 1
            return i
        return -1

    def __getitem__(self, key: bytes) -> RawEntry:
        i = self.find(key)
        if i < 0:
            raise KeyError(key)
        return self.row(i)

    def get(self, key: bytes, default: RawEntry | None = None) -> RawEntry | None:
        i = self.find(key)
        return default if i < 0 else self.row(i)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, bytes) and self.find(key) >= 0

    def __len__(self) -> int:
        return len(self.texts)

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.keys)

    def values(self) -> Iterator[RawEntry]:
        """Every entry, in index order, each made as it is reached."""
        return map(self.row, range(len(self.texts)))

    def items(self) -> Iterator[tuple[bytes, RawEntry]]:
        """``(key, entry)`` pairs in index order."""
        return zip(self.keys, self.values())


def value_layout(value: bytes) -> tuple[int, int] | None:
    """``(h, o)`` when ``value`` is fields 1-3 (each at most once, in order), an offset field (a varint of at
    most 9 bytes) ending at ``o``, more fields, then a crc32c field (its last five bytes); ``value[:h]`` is what
    comes before the offset field."""
    n = len(value)
    try:
        pos = 0
        if pos < n and value[pos] == 0x08:
            _, pos = read_varint(value, pos + 1, n)
        if pos < n and value[pos] == 0x12:
            length, pos = read_varint(value, pos + 1, n)
            pos += length
        if pos < n and value[pos] == 0x18:
            _, pos = read_varint(value, pos + 1, n)
        if pos >= n or value[pos] != 0x20:
            return None
        _, end = read_varint(value, pos + 1, n, 9)
    except WireError:
        return None
    return (pos, end) if end <= n - 5 and value[n - 5] == 0x35 else None


def _offset(value: bytes | memoryview, hl: int, n: int) -> tuple[int, int]:
    """The offset varint at ``value[hl:]`` (at most 9 bytes, before ``n``) and the position after it; ``(0, n + 1)``
    when there is none."""
    at, shift = 0, 0
    for o in range(hl, min(hl + 9, n)):
        b = value[o]
        at |= (b & 0x7F) << shift
        if b < 0x80:
            return at, o + 1
        shift += 7
    return 0, n + 1
