"""Reading members of zip archives (``.keras``, ``.npz``) in bounded memory, never trusting their sizes.

- :func:`open_zip` opens an archive, turning :mod:`zipfile`'s failures into one-line errors.
- :func:`check_expansion` refuses a member claiming more bytes than any real compressor produces
  from its compressed size (a zip bomb), before a byte is inflated.
- :func:`read_member` reads a (small) member whole; :func:`member_stream` opens one for streaming
  (:mod:`zipfile` checks the CRC-32 when the last byte is read); :func:`member_head` reads a member's first
  bytes, :func:`member_heads` those of many members through one file, in blocks.
- :func:`stored_member_start` and :class:`ByteRange` read an uncompressed member in place (or any
  range of a file); :class:`InflatedMember` reads a deflated member at any offset, inflating on demand
  in bounded memory (never the whole member at once).
"""
from __future__ import annotations

import io
import os
import struct
import threading
import zlib
from _collections import OrderedDict  # type: ignore[import-not-found]  # collections' C class, without the package
from _operator import le  # operator's C half, without operator.py (start-up)

from formats.core.errors import CorruptCheckpointError, UnsupportedError

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MAX_EXPANSION", "ZIP_MAGICS", "zip_errors", "ByteRange", "InflatedMember", "open_zip", "declared_members",
           "check_expansion", "read_member", "member_stream", "member_head", "member_heads", "member_start",
           "stored_member_start", "local_data_start", "crc_problem", "is_zip"]

MAX_EXPANSION = 1100
"""No deflate/bzip2/lzma stream legitimately expands by more than ~1032x; refuse claims beyond this."""
_SLACK = 1 << 20
_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature ... file name length, extra field length
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")  # a first member, or the end record of an empty archive


def zip_errors() -> tuple[type[BaseException], ...]:
    """What :mod:`zipfile` raises on a damaged archive or member."""
    import zipfile

    return (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError, RuntimeError,
            NotImplementedError, OverflowError, zlib.error)


def is_zip(path: str) -> bool:
    """Whether a local file starts like a zip archive."""
    try:
        with open(path, "rb") as f:
            return f.read(4) in ZIP_MAGICS
    except OSError:
        return False


def open_zip(path: str) -> Any:
    """A :class:`zipfile.ZipFile` for ``path``; a :class:`CorruptCheckpointError` when it is damaged."""
    import zipfile

    try:
        return zipfile.ZipFile(path)
    except zip_errors() as exc:
        raise CorruptCheckpointError(path, f"damaged zip archive ({exc})") from None


def declared_members(path: str) -> int | None:
    """How many members the archive's end records declare (ZIP64's, where it has them), read with zipfile's own
    end-record reader before anything parses the central directory - a ``ZipInfo`` a member, which a hostile count
    makes without bound; None where there are none to read (zipfile then says what is wrong)."""
    import zipfile

    try:
        with open(path, "rb") as f:
            end = zipfile._EndRecData(f)  # type: ignore[attr-defined]  # (the reader ZipFile itself uses)
    except (OSError, *zip_errors()):  # type: ignore[misc]
        return None
    return int(end[zipfile._ECD_ENTRIES_TOTAL]) if end else None  # type: ignore[attr-defined]


class _Seekable(io.RawIOBase):
    """A readable, seekable stream over ``_length`` bytes with a position ``_pos`` (subclasses read)."""

    _length: int
    _pos: int

    def readable(self) -> bool:
        """Always readable."""
        return True

    def seekable(self) -> bool:
        """Always seekable."""
        return True

    def tell(self) -> int:
        """The position."""
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """Move (positions past its end read as end of file)."""
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._length}[whence]
        self._pos = max(0, base + offset)
        return self._pos


class ByteRange(_Seekable):
    """A read-only, seekable view of ``length`` bytes of a file starting at ``start``."""

    def __init__(self, path: str, start: int, length: int) -> None:
        super().__init__()
        self._file = open(path, "rb")  # noqa: SIM115 - closed in close()
        self._start = start
        self._length = length
        self._pos = 0

    def readinto(self, buffer: Any) -> int:
        """Read up to ``len(buffer)`` bytes of the range into ``buffer``."""
        view = memoryview(buffer).cast("B")
        n = max(0, min(len(view), self._length - self._pos))
        if n == 0:
            return 0
        self._file.seek(self._start + self._pos)
        got = self._file.readinto(view[:n]) or 0
        self._pos += got
        return got

    def map_range(self, offset: int, size: int) -> memoryview:
        """``size`` bytes of the range from ``offset`` as a read-only view of the file's pages (a memory map,
        unmapped when the last view of it goes)."""
        import mmap

        if offset < 0 or offset + size > self._length or size <= 0:
            raise ValueError(f"bytes {offset}..{offset + size} lie outside the {self._length}-byte range")
        at = self._start + offset
        base = at - at % mmap.ALLOCATIONGRANULARITY
        area = mmap.mmap(self._file.fileno(), at - base + size, access=mmap.ACCESS_READ, offset=base)
        return memoryview(area)[at - base:]

    def readinto_at(self, offset: int, buffer: Any) -> None:
        """Fill ``buffer`` with the range's bytes from ``offset`` (thread-safe; the position is unchanged);
        an ``EOFError`` when the range or the file ends first."""
        view = memoryview(buffer).cast("B")
        if offset < 0 or offset + len(view) > self._length:
            raise EOFError(f"bytes {offset}..{offset + len(view)} lie outside the {self._length}-byte range")
        done = 0
        while done < len(view):
            got = _pread_into(self._file, view[done:], self._start + offset + done)
            if not got:
                raise EOFError(f"the file ends before byte {self._start + offset + done}")
            done += got

    def close(self) -> None:
        """Close the underlying file."""
        if not self.closed:
            self._file.close()
        super().close()


_SEEK_LOCK = threading.Lock()


def _pread_into(f: Any, view: memoryview, position: int) -> int:
    """Read into ``view`` at ``position`` of ``f`` without moving its position (``os.preadv`` where it exists)."""
    if hasattr(os, "preadv"):
        return os.preadv(f.fileno(), [view], position)
    with _SEEK_LOCK:  # pragma: no cover - platforms without preadv
        f.seek(position)
        return f.readinto(view) or 0


class InflatedMember(_Seekable):
    """A read-only, seekable view of a deflated zip member, inflated on demand in bounded memory.

    The member is inflated forward, once, as far as reads need; a copy of the inflater is kept every
    ``interval`` bytes (about 50 KiB each), so a read behind the furthest point restarts from the nearest
    copy instead of the start. Recently inflated blocks are cached. Never more than the archive's declared
    size is produced: a stream ending early or running long is a :class:`CorruptCheckpointError`.
    """

    BLOCK = 1 << 20

    def __init__(self, path: str, info: Any, start: int, cache_blocks: int = 16) -> None:
        super().__init__()
        self._source = ByteRange(path, start, info.compress_size)
        self._path, self._name, self._length = path, info.filename, info.file_size
        self._interval = self.BLOCK * max(4, -(-info.file_size // (64 * self.BLOCK)))
        self._copies: dict[int, tuple[Any, int]] = {0: (zlib.decompressobj(-zlib.MAX_WBITS), 0)}
        self._front: tuple[int, Any, int] = (0, self._copies[0][0].copy(), 0)
        self._crc = info.CRC
        self._cache: OrderedDict[int, bytes] = OrderedDict()
        self._cache_blocks = cache_blocks
        self._lock = threading.Lock()
        self._pos = 0

    def readinto(self, buffer: Any) -> int:
        """Read up to ``len(buffer)`` bytes from the current position."""
        view = memoryview(buffer).cast("B")
        n = max(0, min(len(view), self._length - self._pos))
        if n:
            self.readinto_at(self._pos, view[:n])
            self._pos += n
        return n

    def readinto_at(self, offset: int, buffer: Any) -> None:
        """Fill ``buffer`` with the member's bytes from ``offset`` (thread-safe)."""
        view = memoryview(buffer).cast("B")
        if offset < 0 or offset + len(view) > self._length:
            raise EOFError(f"bytes {offset}..{offset + len(view)} lie outside the {self._length}-byte member")
        done = 0
        with self._lock:
            while done < len(view):
                number, skip = divmod(offset + done, self.BLOCK)
                block = self._block(number)
                piece = block[skip:skip + len(view) - done]
                view[done:done + len(piece)] = piece
                done += len(piece)

    def _block(self, number: int) -> bytes:
        cached = self._cache.get(number)
        if cached is not None:
            self._cache.move_to_end(number)
            return cached
        target = number * self.BLOCK
        at = max(p for p in self._copies if p <= target)
        if at <= self._front[0] <= target:
            at, inflater, consumed = self._front  # continue where the last read stopped
        else:
            inflater, consumed = self._copies[at]
            inflater = inflater.copy()
        while True:
            data, consumed = self._inflate(inflater, consumed, min(self.BLOCK, self._length - at))
            self._remember(at, data)
            at += len(data)
            if at % self._interval == 0 and at not in self._copies and at < self._length:
                self._copies[at] = (inflater.copy(), consumed)
            if at > target or at >= self._length:
                self._front = (at, inflater, consumed)
                return self._cache[number]

    def crc_problem(self) -> str | None:
        """Why the member does not inflate to its declared size and CRC-32 (one streamed pass), or None."""
        inflater, consumed, crc, total = zlib.decompressobj(-zlib.MAX_WBITS), 0, 0, 0
        with self._lock:
            try:
                while total <= self._length:
                    data, consumed = self._inflate(inflater, consumed, min(self.BLOCK, self._length + 1 - total),
                                                   partial=True)
                    if not data:
                        break
                    crc, total = zlib.crc32(data, crc), total + len(data)
            except CorruptCheckpointError as exc:
                return exc.message
        if total != self._length:
            return f"{self._name} inflates to {total:,} bytes, the archive says {self._length:,}"
        if crc != self._crc:
            return f"{self._name}: CRC-32 {crc:08x} does not match the archive's {self._crc:08x}"
        return None

    def _remember(self, at: int, data: bytes) -> None:
        self._cache[at // self.BLOCK] = data
        self._cache.move_to_end(at // self.BLOCK)
        while len(self._cache) > self._cache_blocks:
            self._cache.popitem(last=False)

    def _inflate(self, inflater: Any, consumed: int, want: int, partial: bool = False) -> tuple[bytes, int]:
        """The next ``want`` bytes of the member (fewer only when ``partial``: at the end of the stream)
        and how much compressed input has been used."""
        out = bytearray()
        try:
            while len(out) < want:
                if inflater.unconsumed_tail:
                    raw = inflater.unconsumed_tail
                else:
                    raw = self._compressed(consumed)
                    consumed += len(raw)
                out += inflater.decompress(raw, want - len(out))
                if inflater.eof or (not raw and not inflater.unconsumed_tail):
                    break
        except zlib.error as exc:
            raise CorruptCheckpointError(self._path, f"cannot inflate {self._name} ({exc})") from None
        if len(out) < want and not partial:
            raise CorruptCheckpointError(self._path, f"{self._name} inflates to fewer bytes than the archive "
                                                     f"says ({self._length:,})")
        return bytes(out), consumed

    def _compressed(self, consumed: int) -> bytes:
        n = min(1 << 16, self._source._length - consumed)
        if n <= 0:
            return b""
        raw = bytearray(n)
        self._source.readinto_at(consumed, raw)
        return bytes(raw)

    def close(self) -> None:
        """Close the archive file."""
        self._source.close()
        self._cache.clear()
        super().close()


def check_expansion(info: Any, archive_size: int, path: str) -> None:
    """Refuse a member whose claimed size no compressor produces from its compressed size."""
    limit = min(info.compress_size, archive_size) * MAX_EXPANSION + _SLACK
    if info.file_size > limit:
        raise CorruptCheckpointError(
            path, f"{info.filename} claims {info.file_size:,} bytes from {info.compress_size:,} compressed "
                  f"in a {archive_size:,}-byte archive; refusing to expand it (zip bomb?)")


def _refuse_encrypted(info: Any, path: str) -> None:
    if info.flag_bits & 0x1:
        raise UnsupportedError(path, f"{info.filename} is encrypted")


def member_stream(zf: Any, info: Any, archive_size: int, path: str) -> Any:
    """An open stream of one member (checked against zip bombs and encryption first)."""
    _refuse_encrypted(info, path)
    check_expansion(info, archive_size, path)
    try:
        return zf.open(info)
    except zip_errors() as exc:
        raise CorruptCheckpointError(path, f"cannot read {info.filename} from the archive ({exc})") from None


def read_member(zf: Any, info: Any, archive_size: int, path: str) -> bytes:
    """A whole member's bytes; its size must be what the archive says (zipfile checks the CRC-32)."""
    try:
        with member_stream(zf, info, archive_size, path) as member:
            data = member.read(info.file_size + 1)
    except zip_errors() as exc:
        raise CorruptCheckpointError(path, f"cannot read {info.filename} from the archive ({exc})") from None
    if len(data) != info.file_size:
        raise CorruptCheckpointError(path, f"{info.filename} holds {len(data):,} bytes, "
                                           f"the archive says {info.file_size:,}")
    return data


def member_head(zf: Any, info: Any, archive_size: int, path: str, n: int) -> bytes:
    """The first ``n`` bytes of a member (fewer if it is shorter) without checking its CRC-32, so a
    member whose data is damaged can still be listed (reading it whole reports the damage)."""
    import zipfile

    _refuse_encrypted(info, path)
    check_expansion(info, archive_size, path)
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        with member_stream(zf, info, archive_size, path) as member:
            return member.read(n)  # other codecs: zipfile's stream (short members are CRC-checked)
    start = _data_start(path, info)
    with open(path, "rb") as f:
        f.seek(start)
        if info.compress_type == zipfile.ZIP_STORED:
            return f.read(min(n, info.compress_size, info.file_size))
        inflate = zlib.decompressobj(-zlib.MAX_WBITS)
        out, left = b"", info.compress_size
        try:
            while len(out) < n and left > 0 and not inflate.eof:
                raw = f.read(min(left, 1 << 16))
                if not raw:
                    break
                left -= len(raw)
                out += inflate.decompress(raw, n - len(out))
                while len(out) < n and inflate.unconsumed_tail:
                    out += inflate.decompress(inflate.unconsumed_tail, n - len(out))
        except zlib.error as exc:
            raise CorruptCheckpointError(path, f"cannot read {info.filename} from the archive ({exc})") from None
    return out[:n]


_HEAD_BLOCK = 4 << 20


def member_heads(zf: Any, infos: list[Any], archive_size: int, path: str, n: int) -> tuple[list[bytes], list[int]]:
    """:func:`member_head` of each of ``infos`` (in that order), reading the local headers and first bytes of
    uncompressed members through one open file, in blocks of many members (an npz of 100,000 tiny tensors:
    some dozens of reads, not two opens per member); any other member through :func:`member_head`. Also the
    file offset of each uncompressed member's first byte whose local header names it as the central directory
    does and whose bytes lie inside the archive (-1 for any other: read it through :mod:`zipfile`)."""
    import zipfile

    heads: list[bytes] = [b""] * len(infos)
    starts = [-1] * len(infos)
    stored = []
    for i, info in enumerate(infos):
        if info.flag_bits & 0x1 or info.file_size > _SLACK:  # (asked only of a member they may refuse)
            _refuse_encrypted(info, path)
            check_expansion(info, archive_size, path)
        if info.compress_type == zipfile.ZIP_STORED:
            stored.append(i)
        else:
            heads[i] = member_head(zf, info, archive_size, path, n)
    offsets = [infos[i].header_offset for i in stored]
    if not all(map(le, offsets, offsets[1:])):  # (as written: in order already)
        stored.sort(key=lambda i: infos[i].header_offset)
    block, block_at, to_end = b"", 0, False
    with open(path, "rb") as f:
        for i in stored:
            info = infos[i]
            want = min(n, info.compress_size, info.file_size)
            at = info.header_offset - block_at
            needed = _LOCAL_HEADER.size + 2 * 0xFFFF + want  # the most a local header and its first bytes take
            if at < 0 or (at + needed > len(block) and not to_end):
                f.seek(info.header_offset)
                block_at, at = info.header_offset, 0
                size = max(_HEAD_BLOCK, needed)
                block = f.read(size)
                to_end = len(block) < size  # the rest of the file: never read again
            if len(block) - at < _LOCAL_HEADER.size:
                raise CorruptCheckpointError(path, f"zip archive is truncated at the header of {info.filename}")
            signature, name_len, extra_len = _LOCAL_HEADER.unpack_from(block, at)
            if signature != b"PK\x03\x04":
                raise CorruptCheckpointError(path, f"damaged zip archive (bad local header for {info.filename})")
            start = at + _LOCAL_HEADER.size + name_len + extra_len
            heads[i] = block[start:start + want]
            named = block[at + _LOCAL_HEADER.size:at + _LOCAL_HEADER.size + name_len]
            if named == _encoded_name(info) and block_at + start + info.compress_size <= archive_size and \
                    info.compress_size == info.file_size:
                starts[i] = block_at + start
    return heads, starts


def _encoded_name(info: Any) -> bytes:
    """The name a member's local header holds (as zipfile compares it; an ASCII name's bytes are the same in UTF-8
    and cp437, whose codec, written in Python, took 7 % of listing an npz of 10^5 tensors)."""
    name = info.orig_filename
    if name.isascii():
        return name.encode("ascii")
    try:
        return name.encode("utf-8" if info.flag_bits & 0x800 else "cp437")
    except UnicodeEncodeError:
        return b""


def local_data_start(fd: int, info: Any) -> int | None:
    """Where member ``info``'s bytes begin in the archive open as ``fd``: after its local header, when that header
    is one and names the member as the central directory does; else None (zipfile says what is wrong)."""
    head = os.pread(fd, _LOCAL_HEADER.size, info.header_offset)
    if len(head) != _LOCAL_HEADER.size:
        return None
    signature, name_len, extra_len = _LOCAL_HEADER.unpack(head)
    name = _encoded_name(info)
    if signature != b"PK\x03\x04" or name_len != len(name) or \
            os.pread(fd, name_len, info.header_offset + _LOCAL_HEADER.size) != name:
        return None
    return info.header_offset + _LOCAL_HEADER.size + name_len + extra_len


def _data_start(path: str, info: Any) -> int:
    with open(path, "rb") as f:
        f.seek(info.header_offset)
        header = f.read(_LOCAL_HEADER.size)
    if len(header) != _LOCAL_HEADER.size:
        raise CorruptCheckpointError(path, f"zip archive is truncated at the header of {info.filename}")
    signature, name_len, extra_len = _LOCAL_HEADER.unpack(header)
    if signature != b"PK\x03\x04":
        raise CorruptCheckpointError(path, f"damaged zip archive (bad local header for {info.filename})")
    return info.header_offset + _LOCAL_HEADER.size + name_len + extra_len


def member_start(path: str, info: Any, archive_size: int) -> int:
    """The file offset of a member's first stored byte (its local header checked, its bytes inside the archive)."""
    _refuse_encrypted(info, path)
    start = _data_start(path, info)
    if start + info.compress_size > archive_size:
        raise CorruptCheckpointError(path, f"zip archive is truncated: {info.filename} needs "
                                           f"{info.compress_size:,} bytes from offset {start:,}")
    return start


def stored_member_start(path: str, info: Any, archive_size: int) -> int:
    """The file offset of an uncompressed member's first byte (its local header checked)."""
    start = member_start(path, info, archive_size)
    if info.compress_size != info.file_size:
        raise CorruptCheckpointError(path, f"zip archive is truncated: {info.filename} needs "
                                           f"{info.compress_size:,} bytes from offset {start:,}")
    return start

def crc_problem(path: str, start: int, info: Any) -> str | None:
    """Why the stored member at ``start`` does not match its CRC-32, or None when it does."""
    crc = 0
    with open(path, "rb") as f:
        f.seek(start)
        left = info.file_size
        while left:
            chunk = f.read(min(left, 1 << 20))
            if not chunk:
                return f"{info.filename} is truncated"
            crc = zlib.crc32(chunk, crc)
            left -= len(chunk)
    if crc != info.CRC:
        return f"{info.filename}: CRC-32 {crc:08x} does not match the archive's {info.CRC:08x}"
    return None

