"""A zip archive's central directory read as :mod:`zipfile` reads it, without a ``ZipInfo`` a member.

``zipfile.ZipFile`` makes a ``ZipInfo`` for each member (its date, attributes, extra fields and comment decoded):
a third of ``ckpt ls`` of an npz of 10^5 tiny tensors, and some 270 bytes a member. :func:`read_directory` reads the
usual archive - one whose directory lies where its end record says, entries without extra fields, names without
a NUL byte - into :class:`ZipEntry` tuples holding the fields ckpt reads, under ``ZipInfo``'s names, with the
values ``ZipFile`` would give them (its end-record reader, the same structure and the same name decoding). Any
other archive, and any it could not read, gives None: the caller opens it with :mod:`zipfile`, which reads what
this does not and says what is wrong with the rest. :class:`StoredMember` reads an uncompressed member in place,
its CRC-32 checked when its last byte is read, with the error zipfile's stream raises.
"""
from __future__ import annotations

import os
import struct
import zlib

from formats.core.value_tuples import ValueTuple

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ZipEntry", "read_directory", "StoredMember"]

_FIELDS = struct.Struct("<4s2xBx2H4x3L3H8xL")
"""A central directory entry (zipfile's ``structCentralDir``, 46 bytes) as far as ckpt reads it: signature, version
needed, flags, method, CRC-32, sizes (compressed, stored), name, extra field and comment lengths, local header
offset."""
_SIGNATURE = b"PK\x01\x02"
_MAX_EXTRACT_VERSION = 63  # zipfile's MAX_EXTRACT_VERSION: a higher one it refuses (NotImplementedError)
_UTF8 = 0x800


class ZipEntry(ValueTuple):
    """One member as the central directory describes it: the fields of ``zipfile.ZipInfo`` ckpt reads."""

    filename: str
    orig_filename: str
    flag_bits: int
    compress_type: int
    CRC: int
    compress_size: int
    file_size: int
    header_offset: int


def read_directory(path: str) -> list[ZipEntry] | None:
    """The members of the zip archive at ``path`` in the order its central directory lists them, as
    ``zipfile.ZipFile(path).infolist()`` gives them; None where that is not sure (see the module doc)."""
    import zipfile

    try:
        with open(path, "rb") as f:
            end = zipfile._EndRecData(f)  # type: ignore[attr-defined]  # (the reader ZipFile itself uses)
            if not end:
                return None
            size, offset = end[zipfile._ECD_SIZE], end[zipfile._ECD_OFFSET]  # type: ignore[attr-defined]
            concat = end[zipfile._ECD_LOCATION] - size - offset  # type: ignore[attr-defined]
            if end[zipfile._ECD_SIGNATURE] == zipfile.stringEndArchive64:  # type: ignore[attr-defined]
                concat -= zipfile.sizeEndCentDir64 + zipfile.sizeEndCentDir64Locator  # type: ignore[attr-defined]
            if concat or offset < 0:  # (bytes before the archive: zipfile moves every offset)
                return None
            f.seek(offset)
            data = f.read(size)
    except (OSError, ValueError, EOFError, OverflowError, struct.error, zipfile.BadZipFile):
        return None
    if len(data) != size:
        return None
    entries: list[ZipEntry] = []
    append, unpack, new, at = entries.append, _FIELDS.unpack_from, tuple.__new__, 0
    while at < size:  # (a loop of C calls an entry: 1.6 us; numpy's columns and a tuple each made from them cost more)
        if at + _FIELDS.size > size:
            return None
        signature, version, flags, method, crc, compressed, stored, name_size, extra_size, comment_size, header = \
            unpack(data, at)
        start = at + _FIELDS.size
        at = start + name_size + comment_size
        if signature != _SIGNATURE or version > _MAX_EXTRACT_VERSION or extra_size or at > size:
            return None  # (an extra field: ZIP64 sizes or another's, for zipfile to decode)
        raw = data[start:start + name_size]
        if b"\0" in raw:  # (zipfile cuts the name there)
            return None
        try:
            name = raw.decode("ascii" if raw.isascii() else "utf-8" if flags & _UTF8 else "cp437")
        except UnicodeDecodeError:
            return None
        append(new(ZipEntry, (name, name, flags, method, crc, compressed, stored, header)))
    return entries


class StoredMember:
    """An uncompressed member's bytes from ``start`` (where its local header ends), read with ``pread`` from
    ``fd``; like zipfile's stream, the CRC-32 is compared when the last byte is read (``BadZipFile``), and a file
    that ends early raises ``EOFError``."""

    def __init__(self, fd: int, start: int, entry: Any) -> None:
        self._fd, self._at, self._left = fd, start, entry.file_size
        self._crc, self._entry = 0, entry
        self._checked = False

    def read(self, n: int = -1) -> bytes:
        """At most ``n`` more bytes (all that are left when ``n`` is negative)."""
        n = self._left if n < 0 else min(n, self._left)
        data = os.pread(self._fd, n, self._at) if n else b""
        if len(data) != n:
            raise EOFError(f"{self._entry.filename} ends early")
        self._at += n
        self._left -= n
        self._crc = zlib.crc32(data, self._crc)
        if not self._left and not self._checked:
            self._checked = True
            if self._crc != self._entry.CRC:
                import zipfile

                raise zipfile.BadZipFile(f"Bad CRC-32 for file {self._entry.filename!r}")
        return data

    def close(self) -> None:
        """Nothing to let go (the descriptor is the archive's)."""

    def __enter__(self) -> StoredMember:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
