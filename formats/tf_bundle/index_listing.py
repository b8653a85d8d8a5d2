"""A bundle's index listed without opening the bundle: a :class:`~formats.core.compact_listing.CompactListing`
read straight from the SSTable blocks, for indexes of up to millions of tensors.

Opening a bundle decodes every entry into objects (about 6 us and 800 bytes per tensor); a listing
needs only each key and its dtype, shape and size. Here each block is walked once: keys are rebuilt
from their shared prefixes into one string per block, and each value is recognised by its bytes
without the offset and checksum fields (``BundleEntryProto`` as TensorFlow writes it: fields 1, 2, 3,
4, 5, 6 in order), which a large checkpoint repeats for every tensor of one shape. A value not seen
before is decoded and checked by the reader's own :func:`~formats.tf_bundle.reader.parse_entry`.

Anything this does not handle the way :class:`~formats.tf_bundle.reader.BundleReader` would - a
structural problem, a partitioned variable, a key that is not UTF-8 or holds a newline, more distinct
kinds than :data:`MAX_KINDS` - makes :func:`compact_listing` return None, and the caller opens the bundle
(which reports any problem in its own words). A key with another character that
:func:`~formats.core.names.terminal_text` escapes (a control character) is listed, and the listing says
so (``printable``: a table of it is written escaped, JSON keeps it exact). Memory stays at the index plus
its keys.
"""
from __future__ import annotations

from array import array
from _bisect import bisect_left  # bisect's C half, without its module (start-up)

from formats.core.gc_pause import paused_gc
from formats.core.dtypes import name_of as dtype_name
from formats.core.errors import CheckpointError
from formats.core.compact_listing import CompactListing, TensorKind, in_natural_order
from formats.core.shapes import OBJECT_GRAPH_KEY
from formats.core.selection import select_keys
from formats.io.sstable.block import KEY_WIDENING, read_block
from formats.io.sstable.table import Table
from formats.io.protowire import read_varint
from formats.tf_bundle.datafile import read_index_bytes
from formats.tf_bundle.columns import value_layout
from formats.tf_bundle.reader import BundleHeader, data_file_name, parse_entry, parse_header

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["compact_listing", "MAX_KINDS"]

MAX_KINDS = 1 << 16
"""More distinct (dtype, shape, size) than this and the bundle is opened instead."""
_MAX_LEARNED = 4 * MAX_KINDS
"""Value layouts remembered (beyond this, further new ones are decoded each time they occur)."""
_OBJECT_GRAPH = OBJECT_GRAPH_KEY.encode()
_FORMATS = {True: "tf-object", False: "tf-name"}
"""``str(FormatName.TF_OBJECT)`` and ``str(FormatName.TF_NAME)`` (tests check), without the model's enums."""
_PRINTABLE_ASCII = bytes(range(0x20, 0x7F)) + b"\n"
"""The ASCII bytes a key is shown as it is with (the newline separates keys): what is left of an ASCII
block without them is a control character, which :func:`~formats.core.names.terminal_text` escapes."""


class _Decline(Exception):
    """The index holds something only opening the bundle handles (or words as an error)."""


def compact_listing(prefix: str, patterns: Sequence[str] = ()) -> CompactListing | None:
    """The tensors of the bundle at ``prefix`` whose keys match ``patterns`` (all when none, as
    :func:`~formats.core.selection.select_keys` selects), or None when the index has anything that
    only opening the bundle handles. Reads the index file only."""
    index = prefix + ".index"
    try:
        data = read_index_bytes(index)
        with paused_gc():
            return _Lister(data, index, list(patterns)).run(prefix)
    except (_Decline, CheckpointError, ValueError, IndexError):  # WireError, TableError, Unicode*
        return None


class _Lister:
    """One pass over an index's data blocks (see the module's docstring)."""

    def __init__(self, data: bytes, path: str, patterns: list[str]) -> None:
        self.data = data
        self.path = path
        self.patterns = patterns
        self.header: BundleHeader | None = None
        self.kinds: list[TensorKind] = []
        self.kind_ids: dict[TensorKind, int] = {}
        self.learned: dict[bytes, dict[bytes, int]] = {}  # bytes before the offset -> bytes after it -> kind
        self.n_learned = 0
        self.total = 0
        self.width = 0
        self.ascii = True
        self.printable = True
        self.object_based = False
        self.used: set[str] = set()

    def run(self, prefix: str) -> CompactListing:
        table = Table(self.data, self.path, "index")
        blocks = []
        lower = None
        for ref in table.blocks:
            block = read_block(self.data, ref.offset, ref.size, "data")
            keys, ids = self._block(block, lower)  # type: ignore[arg-type]  # bytes in (self.data), bytes out
            if keys and keys[-1] > ref.separator:
                raise _Decline
            lower = ref.separator
            if keys:
                text, ids = self._compact(keys, ids)
                if ids:
                    blocks.append((text, ids))
        if self.header is None:
            raise _Decline
        n = self.header.num_shards
        files = [self.path, *(data_file_name(prefix, i, n) for i in range(n))]
        unmatched = [p for p in dict.fromkeys(self.patterns) if p not in self.used]
        return CompactListing(prefix, _FORMATS[self.object_based], files, self.kinds, in_natural_order(blocks),
                              self.total, unmatched, self.width, self.ascii, self.printable)

    def _block(self, block: bytes, prev: bytes | None) -> tuple[list[bytes], array]:
        """The keys and kinds of one block's entries, checked as :mod:`formats.io.sstable` checks them."""
        n = len(block)
        if n < 4:
            raise _Decline
        restarts = int.from_bytes(block[n - 4:], "little")
        if restarts > (n - 4) // 4:
            raise _Decline
        limit = n - 4 - 4 * restarts
        allowed, made = KEY_WIDENING * n + (1 << 20), 0
        keys: list[bytes] = []
        ids = array("I")
        add_key, add_id, starts = keys.append, ids.append, block.startswith
        key, length = b"", 0
        head, hl = b"\x00", 1
        known: dict[bytes, int] = {}
        pos = 0
        if self.header is None and pos < limit:
            pos = self._header(block, limit)
        if prev is None:
            prev = b""  # the header's key: every other key sorts after it
        while pos < limit:
            shared, ns, vl = block[pos], block[pos + 1], block[pos + 2]
            if shared | ns | vl >= 0x80:
                shared, ns, vl, pos = _lengths(block, pos, limit)
            else:
                pos += 3
            kend = pos + ns
            vend = kend + vl
            if vend > limit or shared > length:
                raise _Decline
            key = key[:shared] + block[pos:kend]
            length = shared + ns
            made += length
            if key <= prev or made > allowed:
                raise _Decline
            prev = key
            add_key(key)
            pos = vend
            kind = None
            if starts(head, kend, vend):  # the value's fields 1-3 as the last value learned had them
                q = kend + hl
                if block[q] == 0x20:  # its offset (a varint of at most 9 bytes), then the rest, then the crc32c
                    o = q + 1
                    while block[o] >= 0x80:
                        o += 1
                    o += 1
                    if o <= vend - 5 and o - q <= 10 and block[vend - 5] == 0x35:
                        kind = known.get(block[o:vend - 5])
            if kind is None:
                kind, layout = self._learn(key, block[kend:vend])
                if layout is not None:
                    head, known = layout
                    hl = len(head)
            add_id(kind)
        if self.header is None:
            raise _Decline
        return keys, ids

    def _header(self, block: bytes, limit: int) -> int:
        """Parse the first entry (the bundle header, under the empty key); the position after it."""
        shared, ns, vl, pos = _lengths(block, 0, limit)
        if shared or ns or pos + vl > limit:
            raise _Decline
        self.header = parse_header(block[pos:pos + vl], self.path)
        return pos + vl

    def _learn(self, key: bytes, value: bytes) -> tuple[int, tuple[bytes, dict[bytes, int]] | None]:
        """The kind of an entry whose value is decoded here (the reader's checks applied), and when its
        layout is the usual one, the bytes before its offset and the table of what follows it."""
        assert self.header is not None
        entry = parse_entry(key, value, self.path)
        if entry.slices or not entry.in_shards(self.header.num_shards):
            raise _Decline  # slice keys are hidden from a listing; a bad shard is reported by the reader
        kind = self._kind(TensorKind(dtype_name(entry.dtype), entry.shape, entry.size))
        layout = value_layout(value)
        if layout is None or self.n_learned >= _MAX_LEARNED:
            return kind, None
        h, o = layout
        head, rest = value[:h], value[o:-5]
        try:
            same = parse_entry(key, head + rest, self.path)  # what the value says besides offset and crc32c
        except CheckpointError:
            return kind, None
        if (same.dtype, same.shape, same.shard_id, same.size, same.slices) != \
                (entry.dtype, entry.shape, entry.shard_id, entry.size, entry.slices):
            return kind, None
        known = self.learned.setdefault(head, {})
        if rest not in known:
            known[rest] = kind
            self.n_learned += 1
        return kind, (head, known)

    def _kind(self, kind: TensorKind) -> int:
        found = self.kind_ids.get(kind)
        if found is None:
            if len(self.kinds) >= MAX_KINDS:
                raise _Decline
            found = self.kind_ids[kind] = len(self.kinds)
            self.kinds.append(kind)
        return found

    def _compact(self, keys: list[bytes], ids: array) -> tuple[str, array]:
        """One block's listed rows: keys as one string (newline-separated), kinds; totals updated."""
        if keys[0][:1] == b"\x00":
            raise _Decline  # the key of a slice of a partitioned variable (they sort first): decline at once
        self.total += len(keys)
        if not self.object_based:
            i = bisect_left(keys, _OBJECT_GRAPH)
            self.object_based = i < len(keys) and keys[i] == _OBJECT_GRAPH
        joined = b"\n".join(keys)
        if joined.count(b"\n") != len(keys) - 1:
            raise _Decline  # a key holding a newline
        ascii = joined.isascii()
        text = joined.decode("ascii" if ascii else "utf-8")  # not UTF-8: str order may differ from the index's
        if self.printable:  # (of the block: a key a pattern leaves out may count; the table is then only escaped)
            self.printable = not joined.translate(None, _PRINTABLE_ASCII) if ascii else \
                text.replace("\n", " ").isprintable()
        if self.patterns:
            text, ids = self._select(text, ids)
            ascii = text.isascii()
        if ids:
            self.ascii = self.ascii and ascii
            lengths = map(len, keys if ascii and not self.patterns else text.split("\n"))
            self.width = max(self.width, max(lengths))
        return text, ids

    def _select(self, text: str, ids: array) -> tuple[str, array]:
        keys = text.split("\n")
        selected, unmatched = select_keys(keys, self.patterns)
        self.used.update(p for p in self.patterns if p not in unmatched)
        chosen = set(selected)
        picked = array("I", (kind for key, kind in zip(keys, ids) if key in chosen))
        return "\n".join(selected), picked


def _lengths(block: bytes, pos: int, limit: int) -> tuple[int, int, int, int]:
    """An entry's shared, non-shared and value lengths (LevelDB varint32s) and the position after them."""
    shared, pos = read_varint(block, pos, limit, 5)
    ns, pos = read_varint(block, pos, limit, 5)
    vl, pos = read_varint(block, pos, limit, 5)
    return shared, ns, vl, pos
