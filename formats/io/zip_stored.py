"""Writing an uncompressed ZIP64 archive (an ``.npz``) a member at a time, at the cost of a few ``struct.pack``
calls per member, and reading it back in blocks.

The bytes are those :mod:`zipfile` writes with ``ZipFile(path, "x", ZIP_STORED, allowZip64=True)`` and
``zf.open(name, "w", force_zip64=True)`` (``zip64=False``: ``zf.open(name, "w")``, the provenance record):
``ZipInfo(name)``'s defaults (date 1980-01-01 00:00, ``?rw-------``, made on Unix), version 4.5 and a ZIP64
extra field ``(size, size)`` in a forced-ZIP64 local header whose 32-bit sizes then read ``0xFFFFFFFF``, a
ZIP64 extra field in the central directory only for a size or offset beyond ``zipfile.ZIP64_LIMIT`` (2 GiB - 1),
and the ZIP64 end records only for more than 65,535 members or a directory beyond that limit. Names are
ASCII, or UTF-8 with the language-encoding flag (0x800). ``tests/test_npz_fast.py`` compares the bytes with
zipfile's.

A member whose bytes are in memory (:meth:`StoredZip.add`: a small tensor, its ``.npy`` header and data) is
written in one go with its CRC-32 known; a member written in pieces (:meth:`StoredZip.member`) is kept in
memory up to :data:`SPOOL` bytes and written the same way, or beyond that its local header is written first
with a CRC of 0 and rewritten in place at the end (as zipfile does). The writer keeps, per member, only
numbers in arrays (where it lies, and the CRC32C of what it wrote) and the central directory as bytes (past
:data:`CENTRAL_HELD` in a temporary file until it is written).

:meth:`StoredZip.problems` reads the file back: the central directory against the CRC32C taken as it was
written, the end records as bytes, each run of
small members with one ``pread`` of up to :data:`RUN_BLOCK` bytes (their local headers, ``.npy`` headers and
data checked against the CRC32C taken as they were written), a member of up to :data:`BLOCK` alone, each larger one by
:func:`~formats.io.placed.check_placed` on every core.
"""
from __future__ import annotations

import itertools
import os
import struct
import sys
import zlib
from _operator import add, sub  # operator's C half, without operator.py (start-up)
from array import array
from bisect import bisect_right
from itertools import accumulate, repeat, starmap

from formats.io.crc import crc32c, crc32c_range

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import Any, BinaryIO

    from formats.io.spool import Spool

__all__ = ["StoredZip", "ZipMember", "SPOOL", "BLOCK", "RUN_BLOCK", "ZIP64_LIMIT", "MAX_MEMBERS"]

MAX_MEMBERS = 1 << 21
"""Members ckpt reads of an ``.npz`` (more: refused, their central directory parsed by :mod:`zipfile` a Python object
a member), and so writes at most: 2,097,152, room for a million tensors and the provenance record (a limit of
1,000,000 refused the npz ``extract`` writes of 10^6 tensors)."""
ZIP64_LIMIT = (1 << 31) - 1
"""zipfile's threshold for ZIP64 fields (``zipfile.ZIP64_LIMIT``)."""
SPOOL = 1 << 20
"""A member written in pieces stays in memory up to this many bytes (its CRC-32 then known before its header)."""
BLOCK = 8 << 20
"""A member of up to this many bytes is read back here with one ``pread``; a larger one on every core."""
RUN_BLOCK = 1 << 20
"""Bytes of a run of several small members read back at once (a read of 8 MiB, as :data:`BLOCK` was, left its
8 MiB with the C library once freed: below the largest block it had freed, which it keeps)."""
VISITED = 1024
"""Members of a block checked at a time (their CRC32Cs, then ``visit_many``)."""
CENTRAL_HELD = 1 << 20
"""Bytes of the central directory kept in memory until :meth:`StoredZip.close` writes it; past that they wait in a
temporary file (:class:`~formats.io.spool.Spool`), a MiB at a time (10^6 members' directory is about 76 MB; at 10^5
it is 13 MB, of which 8 MiB were held in memory, with the export's peak after them)."""
_CENTRAL_PIECE = 1 << 20
_JOINED = 64 << 10
"""Bytes of a run's members :meth:`StoredZip.add_many` joins at a time (each joined piece is written and each
member's CRC32C taken from it by one call: five pieces a member handed to the file one by one and a CRC32C chained
over them cost twice as much; a piece under glibc's threshold for mapping is taken from and given back to the heap,
so that RSS stays where it was)."""
_FILECOUNT_LIMIT = 0xFFFF
_LOCAL = struct.Struct("<4s2B4HL2L2H")
_LOCAL_ZIP64 = struct.Struct("<HHQQ")
_CENTRAL = struct.Struct("<4s4B4HL2L5H2L")
_END64 = struct.Struct("<4sQ2H2L4Q")
_LOCATOR = struct.Struct("<4sLQL")
_END = struct.Struct("<4s4H2LH")
_DOSDATE = 1 << 5 | 1  # ZipInfo's default date_time, 1980-01-01 00:00:00 (what zf.open(name, "w") stores)
_DOSTIME = 0
_UTF8 = 0x800
_ATTRIBUTES = 0o600 << 16
_SYSTEM = 0 if sys.platform == "win32" else 3


def encode_name(name: str) -> tuple[bytes, int]:
    """A member name's bytes and flag bits (ASCII, or UTF-8 with the 0x800 flag), as zipfile encodes it."""
    try:
        return name.encode("ascii"), 0
    except UnicodeEncodeError:
        return name.encode("utf-8"), _UTF8


def local_header(name: bytes, flags: int, crc: int, size: int, zip64: bool) -> bytes:
    """A stored member's local header (see the module doc)."""
    if zip64:
        return _LOCAL.pack(b"PK\x03\x04", 45, 0, flags, 0, _DOSTIME, _DOSDATE, crc, 0xFFFFFFFF, 0xFFFFFFFF,
                           len(name), _LOCAL_ZIP64.size) + name + _LOCAL_ZIP64.pack(1, 16, size, size)
    return _LOCAL.pack(b"PK\x03\x04", 20, 0, flags, 0, _DOSTIME, _DOSDATE, crc, size, size, len(name), 0) + name


class StoredZip:
    """An uncompressed ZIP64 archive written to ``f`` (a buffered binary file at offset 0); :meth:`close` writes
    the central directory. Per member (in the order added) it keeps the offset of its data (``starts``), its
    size, and the range read back with the CRC32C it must have."""

    def __init__(self, f: BinaryIO) -> None:
        self.f = f
        self.offset = 0
        self.central = bytearray()
        self.starts = array("Q")
        self.sizes = array("Q")
        self.check_at = array("Q")  # the range read back: a whole member (local header and data), or the data
        self.check_size = array("Q")  # of a member whose header was rewritten (kept in ``rewritten``)
        self.check_crc = array("L")
        self.crcs = array("L")  # each member's CRC-32
        self.rewritten: dict[int, tuple[int, bytes]] = {}  # member -> (offset, local header) rewritten in place
        self.central_spool: Spool | None = None  # the directory's earlier pieces, once there are over a MiB
        self.central_size = 0  # once written (close): its bytes and their CRC32C, checked on read-back
        self.central_crc = 0
        self.tail = bytearray()  # the end records

    @property
    def count(self) -> int:
        """Members written."""
        return len(self.starts)

    def add(self, name: str, header: bytes, data: Any, zip64: bool = True) -> int:
        """Write a member holding ``header + data`` (in memory; ``data`` any bytes-like); its index."""
        size = len(header) + memoryview(data).nbytes
        crc = zlib.crc32(data, zlib.crc32(header))
        encoded, flags = encode_name(name)
        local = local_header(encoded, flags, crc, size, zip64)
        member = b"".join((local, header, data))  # (one write and one checksum: a member is small)
        self.f.write(member)
        return self._record(encoded, flags, crc, size, zip64, len(local), crc32c(member), None)

    def add_many(self, names: Sequence[str], headers: Sequence[bytes], datas: Sequence[Any]) -> None:
        """Write members holding ``headers[i] + datas[i]`` (``datas``: ``bytes`` or one-dimensional byte
        memoryviews, whose ``len`` is their size) as
        :meth:`add` writes each (``zip64``), the same bytes, with no Python step a member: each field made by a C
        function mapped over the members, the pieces joined :data:`_JOINED` bytes at a time (a whole run's
        transient bytes kept the heap from shrinking back) and each member's CRC32C taken from them. A run that
        would reach past :data:`ZIP64_LIMIT` (its central entries then need ZIP64 fields) goes a member at a time
        through :meth:`add`."""
        n = len(names)
        encoded = list(map(str.encode, names))  # (UTF-8: an ASCII name's bytes are its ASCII bytes)
        name_sizes = list(map(len, encoded))
        sizes = list(map(add, map(len, headers), map(len, datas)))
        member_sizes = list(map(add, sizes, map(add, name_sizes, repeat(_LOCAL.size + _LOCAL_ZIP64.size))))
        offsets = list(accumulate(member_sizes, initial=self.offset))
        if not n or offsets[-1] > ZIP64_LIMIT:
            for name, header, data in zip(names, headers, datas):
                self.add(name, header, data)
            return
        flags: Iterable[int] = repeat(0) if all(map(str.isascii, names)) else \
            [0 if ascii else _UTF8 for ascii in map(str.isascii, names)]
        header_crcs = {header: zlib.crc32(header) for header in set(headers)}
        crcs = list(map(zlib.crc32, datas, map(header_crcs.__getitem__, headers)))
        locals_ = starmap(_LOCAL.pack, zip(repeat(b"PK\x03\x04"), repeat(45), repeat(0), iter(flags), repeat(0),
                                           repeat(_DOSTIME), repeat(_DOSDATE), crcs, repeat(0xFFFFFFFF),
                                           repeat(0xFFFFFFFF), name_sizes, repeat(_LOCAL_ZIP64.size)))
        extras = starmap(_LOCAL_ZIP64.pack, zip(repeat(1), repeat(16), sizes, sizes))
        pieces = itertools.chain.from_iterable(zip(locals_, encoded, extras, headers, datas))
        checks: list[int] = []
        write, first = self.f.write, 0
        while first < n:  # members joined up to _JOINED bytes at a time, written, and each one's CRC32C taken
            stop = max(first + 1, bisect_right(offsets, offsets[first] + _JOINED, first + 1, n + 1) - 1)
            joined = b"".join(itertools.islice(pieces, 5 * (stop - first)))
            write(joined)
            at = list(map(sub, offsets[first:stop + 1], repeat(offsets[first])))
            checks += map(crc32c, map(memoryview(joined).__getitem__, map(slice, at, at[1:])))
            first = stop
        starts = offsets[:-1]
        self.central += b"".join(itertools.chain.from_iterable(zip(starmap(_CENTRAL.pack, zip(
            repeat(b"PK\x01\x02"), repeat(45), repeat(_SYSTEM), repeat(45), repeat(0), iter(flags), repeat(0),
            repeat(_DOSTIME), repeat(_DOSDATE), crcs, sizes, sizes, name_sizes, repeat(0), repeat(0), repeat(0),
            repeat(0), repeat(_ATTRIBUTES), starts)), encoded)))
        if len(self.central) >= _CENTRAL_PIECE:
            self._spill_central()
        self.starts.extend(map(add, starts, map(add, name_sizes, repeat(_LOCAL.size + _LOCAL_ZIP64.size))))
        self.sizes.extend(sizes)
        self.crcs.extend(crcs)
        self.check_crc.extend(checks)
        self.check_at.extend(starts)
        self.check_size.extend(member_sizes)
        self.offset = offsets[-1]

    def member(self, name: str, zip64: bool = True) -> ZipMember:
        """A member written in pieces (``write``, then ``close``)."""
        return ZipMember(self, name, zip64)

    def _record(self, name: bytes, flags: int, crc: int, size: int, zip64: bool, header: int, check: int,
                rewritten: bytes | None) -> int:
        """Count a member written at ``self.offset`` (``header`` bytes of local header, then ``size``) in the
        central directory and the columns; ``rewritten``: its final local header (the data alone is checked by
        ``check``)."""
        offset = self.offset
        stored, at, fields = size, offset, b""
        if size > ZIP64_LIMIT or offset > ZIP64_LIMIT:  # (a ZIP64 field: rare, so not built for the others)
            extra: list[int] = []
            if size > ZIP64_LIMIT:
                extra += [size, size]
                stored = 0xFFFFFFFF
            if offset > ZIP64_LIMIT:
                extra.append(offset)
                at = 0xFFFFFFFF
            fields = struct.pack(f"<HH{len(extra)}Q", 1, 8 * len(extra), *extra)
        version = 45 if zip64 or fields else 20
        self.central += _CENTRAL.pack(b"PK\x01\x02", version, _SYSTEM, version, 0, flags, 0, _DOSTIME, _DOSDATE,
                                      crc, stored, stored, len(name), len(fields), 0, 0, 0, _ATTRIBUTES, at)
        self.central += name + fields
        if len(self.central) >= _CENTRAL_PIECE:
            self._spill_central()
        index = len(self.starts)
        self.starts.append(offset + header)
        self.sizes.append(size)
        self.crcs.append(crc)
        self.check_crc.append(check)
        if rewritten is None:
            self.check_at.append(offset)
            self.check_size.append(header + size)
        else:
            self.check_at.append(offset + header)
            self.check_size.append(size)
            self.rewritten[index] = (offset, rewritten)
        self.offset = offset + header + size
        return index

    def _spill_central(self) -> None:
        """Move the central directory's bytes held so far to :attr:`central_spool` (a file past
        :data:`CENTRAL_HELD`)."""
        if self.central_spool is None:
            from formats.io.spool import Spool

            self.central_spool = Spool(CENTRAL_HELD)
        self.central_spool.write(bytes(self.central))
        self.central = bytearray()

    def close(self) -> None:
        """Write the central directory and the end records (ZIP64 ones where needed) and flush."""
        count, at = self.count, self.offset
        size, crc = 0, 0
        pieces: Iterable[bytes | bytearray] = (self.central,)
        spool, self.central_spool = self.central_spool, None
        if spool is not None:
            pieces = itertools.chain(spool.chunks(_CENTRAL_PIECE), pieces)
        try:
            for piece in pieces:
                self.f.write(piece)
                crc = crc32c(piece, crc)
                size += len(piece)
        finally:
            if spool is not None:
                spool.close()
        self.central = bytearray()
        self.central_size, self.central_crc = size, crc
        tail = bytearray()  # (kept: written, then compared on read-back)
        if count > _FILECOUNT_LIMIT or at > ZIP64_LIMIT or size > ZIP64_LIMIT:
            tail += _END64.pack(b"PK\x06\x06", 44, 45, 45, 0, 0, count, count, size, at)
            tail += _LOCATOR.pack(b"PK\x06\x07", 0, at + size, 1)
            count, size, at = min(count, 0xFFFF), min(size, 0xFFFFFFFF), min(at, 0xFFFFFFFF)
        tail += _END.pack(b"PK\x05\x06", 0, 0, count, count, size, at, 0)
        self.tail = tail
        self.f.write(tail)
        self.f.flush()

    def problems(self, path: str, visit: Callable[[int, memoryview, bool], None], jobs: int | None = None,
                 visit_many: Callable[[int, list[memoryview]], None] | None = None) -> list[tuple[int, str]]:
        """Read the archive at ``path`` back (see the module doc): ``(member, problem)`` for each member whose
        bytes differ from those written, ``(-1, problem)`` for the central directory. ``visit(member, bytes,
        whole)`` sees each member's stored bytes as read back (``whole``: all of them; else the first 128 KiB);
        ``visit_many(first, views)``, where given, those of each run of members read back whole at once (the
        members ``first``, ``first + 1``, ...)."""
        from formats.io.placed import Placed, check_placed

        found: list[tuple[int, str]] = []
        large: list[Placed] = []
        fd = os.open(path, os.O_RDONLY)
        try:
            directory = self.offset + self.central_size
            if os.fstat(fd).st_size != directory + len(self.tail) or not _reads_back(fd, self.tail, directory) or \
                    crc32c_range(fd, self.offset, self.central_size) != self.central_crc:
                found.append((-1, "the central directory does not read back as written"))
            i = 0
            barriers = sorted(self.rewritten)  # (a run of small members ends before each)
            while i < self.count:
                i = self._check_run(fd, i, found, large, visit, barriers, visit_many)
        finally:
            os.close(fd)
        for item in large:
            index = int(item.key)
            at, header = self.rewritten.get(index, (None, b""))
            if at is not None and _pread(path, at, len(header)) != header:
                found.append((index, "the member's local header does not read back as written"))
        found += [(int(key), problem) for key, problem in check_placed(path, large, jobs)]
        return sorted(found)

    def _check_run(self, fd: int, first: int, found: list[tuple[int, str]], large: list[Any],
                   visit: Callable[[int, memoryview, bool], None], barriers: list[int],
                   visit_many: Callable[[int, list[memoryview]], None] | None = None) -> int:
        """Check the members from ``first`` whose ranges fit in one block (none of ``barriers``, the members whose
        local header was rewritten, in ascending order); the next member to check."""
        from formats.io.placed import Placed

        check_at, check_size = self.check_at, self.check_size
        start = check_at[first]
        last = first
        if first not in self.rewritten:  # the members up to the next rewritten one lie one after another: the
            stop = barriers[bisect_right(barriers, first)] if barriers and barriers[-1] > first else self.count
            limit = min(RUN_BLOCK, BLOCK)
            last = bisect_right(check_at, start + limit, first, stop)  # first to begin beyond the block, by bisection
            while last > first and check_at[last - 1] + check_size[last - 1] - start > limit:
                last -= 1  # (the one ending beyond it)
            if last == first and check_size[first] <= BLOCK:
                last = first + 1  # (one member alone)
        if last == first:  # a large member: its data on every core, its .npy header here
            item = Placed(str(first), None, start, check_size[first], "")
            item.crc = self.check_crc[first]
            large.append(item)
            data_at = self.starts[first]
            visit(first, memoryview(os.pread(fd, min(self.sizes[first], 1 << 17), data_at)), False)
            return first + 1
        block = memoryview(os.pread(fd, check_at[last - 1] + check_size[last - 1] - start, start))
        starts, sizes, crcs = self.starts, self.sizes, self.check_crc
        for part in range(first, last, VISITED):  # (a block may hold 40,000 tiny members: VISITED at a time)
            stop = min(part + VISITED, last)
            at = list(map(sub, check_at[part:stop], repeat(start)))
            got = list(map(crc32c, map(block.__getitem__, map(slice, at, map(add, at, check_size[part:stop])))))
            if got != crcs[part:stop].tolist():  # (checked in C; named a member at a time where one differs)
                found += [(i, "the bytes read back differ from the bytes written (CRC32C)")
                          for i, crc, want in zip(range(part, stop), got, crcs[part:stop]) if crc != want]
            data = list(map(sub, starts[part:stop], repeat(start)))
            views = list(map(block.__getitem__, map(slice, data, map(add, data, sizes[part:stop]))))
            if visit_many is not None:
                visit_many(part, views)
            else:
                for i, view in enumerate(views, part):
                    visit(i, view, True)
        return last


def _reads_back(fd: int, written: bytearray, offset: int) -> bool:
    """Whether the file ``fd`` holds ``written`` (the end records) at ``offset``, compared a MiB at a time."""
    step = 1 << 20
    for at in range(0, len(written), step):
        piece = written[at:at + step]
        if piece != os.pread(fd, len(piece), offset + at):
            return False
    return True


def _pread(path: str, offset: int, size: int) -> bytes:
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read(size)


class ZipMember:
    """A member of a :class:`StoredZip` written in pieces: kept in memory up to :data:`SPOOL` bytes, then
    streamed after a local header rewritten by :meth:`close`. Not thread-safe: one writer at a time."""

    def __init__(self, zip: StoredZip, name: str, zip64: bool) -> None:
        self.zip, self.name, self.zip64 = zip, name, zip64
        self.spool: list[bytes] | None = []
        self.spooled = 0
        self.crc = 0
        self.check = 0
        self.size = 0

    def write(self, data: Any) -> int:
        """Add ``data`` (any bytes-like) to the member."""
        n = memoryview(data).nbytes
        if self.spool is not None:
            if self.spooled + n <= SPOOL:
                self.spool.append(bytes(data))
                self.spooled += n
                return n
            self._spill()
        self.crc = zlib.crc32(data, self.crc)
        self.check = crc32c(data, self.check)
        self.zip.f.write(data)
        self.size += n
        return n

    def _spill(self) -> None:
        """Past :data:`SPOOL`: a local header to be rewritten, then what was kept."""
        encoded, flags = encode_name(self.name)
        self.zip.f.write(local_header(encoded, flags, 0, 0, self.zip64))
        spool, self.spool = self.spool or [], None
        for piece in spool:
            self.write(piece)

    def close(self) -> int:
        """Finish the member (its header written or rewritten); its index in the archive."""
        zip = self.zip
        if self.spool is not None:
            return zip.add(self.name, b"", b"".join(self.spool), self.zip64)
        if not self.zip64 and self.size > ZIP64_LIMIT:
            raise ValueError(f"{self.name} holds {self.size:,} bytes, more than a member without ZIP64 fields can")
        encoded, flags = encode_name(self.name)
        header = local_header(encoded, flags, self.crc, self.size, self.zip64)
        zip.f.flush()
        os.pwrite(zip.f.fileno(), header, zip.offset)
        return zip._record(encoded, flags, self.crc, self.size, self.zip64, len(header), self.check, header)
