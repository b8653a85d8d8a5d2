"""Open the HDF5 image behind a Keras file, in place: a file on disk, or the ``model.weights.h5``
member of a ``.keras`` zip archive (never extracted to disk).

h5py's own exceptions (``OSError``, ``ValueError``, ``KeyError``) are turned into one-line
:class:`~formats.core.errors.CheckpointError` messages here.
"""
from __future__ import annotations

import io
import json
import os
import re
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any

from formats.core.errors import CorruptCheckpointError, NotACheckpointError, UnsupportedError

__all__ = ["H5Image", "open_hdf5_file", "open_keras_zip", "h5py_error_message", "WEIGHTS_MEMBER",
           "MAX_EXPANSION"]

WEIGHTS_MEMBER = "model.weights.h5"
JSON_MEMBERS = ("config.json", "metadata.json")
MAX_EXPANSION = 1100
"""No deflate/bzip2/lzma stream legitimately expands by more than ~1032x; refuse claims beyond this."""
_SLACK = 1 << 20
_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature ... file name length, extra field length


class ByteRange(io.RawIOBase):
    """A read-only, seekable view of ``length`` bytes of a file starting at ``start``."""

    def __init__(self, path: str, start: int, length: int) -> None:
        super().__init__()
        self._file = open(path, "rb")  # noqa: SIM115 - closed in close()
        self._start = start
        self._length = length
        self._pos = 0

    def readable(self) -> bool:
        """Always readable."""
        return True

    def seekable(self) -> bool:
        """Always seekable."""
        return True

    def tell(self) -> int:
        """Position inside the range."""
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """Move inside the range (positions past its end read as end of file)."""
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._length}[whence]
        self._pos = max(0, base + offset)
        return self._pos

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

    def close(self) -> None:
        """Close the underlying file."""
        if not self.closed:
            self._file.close()
        super().close()


@dataclass
class H5Image:
    """An opened HDF5 image: the h5py file, the size of its bytes, and what else the container held."""

    file: Any
    size: int
    container: str  # "file" or "zip"
    extras: dict[str, Any] = field(default_factory=dict)  # parsed config.json / metadata.json
    notes: list[tuple[str, str]] = field(default_factory=list)  # (where, problem) found while opening
    crc_check: Any = None  # callable returning an error message or None (zip members)
    _closers: list[Any] = field(default_factory=list)

    def close(self) -> None:
        """Close the h5py file, then whatever it was reading from."""
        for closer in [self.file.close, *self._closers]:
            try:
                closer()
            except Exception:  # noqa: BLE001 - closing must not raise
                pass


def h5py_error_message(exc: BaseException) -> str:
    """A short message for an h5py failure: ``truncated (1,000 of 65,908 bytes present)`` or h5py's detail."""
    text = str(exc)
    trunc = re.search(r"eof = (\d+).*stored_eof = (\d+)", text)
    if trunc:
        have, want = int(trunc.group(1)), int(trunc.group(2))
        return f"HDF5 file is truncated ({have:,} of {want:,} bytes present)"
    inner = re.search(r"\(([^()]*)\)[\s'\")]*$", text)
    detail = inner.group(1) if inner else text
    detail = " ".join(detail.split()) or type(exc).__name__
    return f"damaged HDF5 file ({detail})"


def _open_h5(name_or_file: Any, path: str) -> Any:
    import h5py

    try:
        return h5py.File(name_or_file, "r")
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise CorruptCheckpointError(path, h5py_error_message(exc)) from None


def open_hdf5_file(path: str) -> H5Image:
    """Open an ``.h5`` file on disk."""
    size = os.path.getsize(path)
    return H5Image(_open_h5(path, path), size, "file")


def open_keras_zip(path: str) -> H5Image:
    """Open ``model.weights.h5`` inside a ``.keras`` archive, plus its ``config.json`` / ``metadata.json``."""
    import zipfile

    archive_size = os.path.getsize(path)
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise CorruptCheckpointError(path, f"damaged zip archive ({exc})") from None
    try:
        info = _weights_member(zf, path)
        extras, notes = _json_members(zf, archive_size, path)
        if info.compress_type == zipfile.ZIP_STORED:
            image = _open_stored(path, zf, info, archive_size)
        else:
            image = _open_compressed(path, zf, info, archive_size)
    except BaseException:
        zf.close()
        raise
    image.extras, image.notes = extras, notes
    image._closers.append(zf.close)
    return image


def _weights_member(zf: Any, path: str) -> Any:
    names = zf.namelist()
    if WEIGHTS_MEMBER not in names:
        if "model.weights.json" in names:
            raise UnsupportedError(path, "sharded .keras archive (model.weights.json): not supported")
        raise NotACheckpointError(path, f"zip archive without {WEIGHTS_MEMBER}: not a Keras .keras file")
    info = zf.getinfo(WEIGHTS_MEMBER)
    if info.flag_bits & 0x1:
        raise UnsupportedError(path, f"{WEIGHTS_MEMBER} is encrypted")
    return info


def _check_expansion(info: Any, archive_size: int, path: str) -> None:
    limit = min(info.compress_size, archive_size) * MAX_EXPANSION + _SLACK
    if info.file_size > limit:
        raise CorruptCheckpointError(
            path, f"{info.filename} claims {info.file_size:,} bytes from {info.compress_size:,} compressed "
                  f"in a {archive_size:,}-byte archive; refusing to expand it (zip bomb?)")


def _read_member(zf: Any, info: Any, archive_size: int, path: str) -> bytes:
    import zipfile

    _check_expansion(info, archive_size, path)
    try:
        with zf.open(info) as member:
            data = member.read(info.file_size + 1)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, RuntimeError, NotImplementedError) as exc:
        raise CorruptCheckpointError(path, f"cannot read {info.filename} from the archive ({exc})") from None
    if len(data) != info.file_size:
        raise CorruptCheckpointError(path, f"{info.filename} holds {len(data):,} bytes, "
                                           f"the archive says {info.file_size:,}")
    return data


def _json_members(zf: Any, archive_size: int, path: str) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    extras: dict[str, Any] = {}
    notes: list[tuple[str, str]] = []
    for name in JSON_MEMBERS:
        if name not in zf.namelist():
            continue
        try:
            extras[name] = json.loads(_read_member(zf, zf.getinfo(name), archive_size, path))
        except (ValueError, UnicodeDecodeError, CorruptCheckpointError) as exc:
            message = exc.message if isinstance(exc, CorruptCheckpointError) else f"not valid JSON ({exc})"
            notes.append((name, message))
    return extras, notes


def _member_start(path: str, info: Any, archive_size: int) -> int:
    with open(path, "rb") as f:
        f.seek(info.header_offset)
        header = f.read(_LOCAL_HEADER.size)
    if len(header) != _LOCAL_HEADER.size:
        raise CorruptCheckpointError(path, f"zip archive is truncated at the header of {info.filename}")
    signature, name_len, extra_len = _LOCAL_HEADER.unpack(header)
    if signature != b"PK\x03\x04":
        raise CorruptCheckpointError(path, f"damaged zip archive (bad local header for {info.filename})")
    start = info.header_offset + _LOCAL_HEADER.size + name_len + extra_len
    if start + info.compress_size > archive_size or info.compress_size != info.file_size:
        raise CorruptCheckpointError(path, f"zip archive is truncated: {info.filename} needs "
                                           f"{info.compress_size:,} bytes from offset {start:,}")
    return start


def _open_stored(path: str, zf: Any, info: Any, archive_size: int) -> H5Image:
    start = _member_start(path, info, archive_size)
    view = ByteRange(path, start, info.file_size)
    try:
        h5 = _open_h5(view, path)
    except BaseException:
        view.close()
        raise
    image = H5Image(h5, info.file_size, "zip", crc_check=lambda: _crc_problem(path, start, info))
    image._closers.append(view.close)
    return image


def _open_compressed(path: str, zf: Any, info: Any, archive_size: int) -> H5Image:
    data = _read_member(zf, info, archive_size, path)  # zipfile checks the CRC at the end of the stream
    return H5Image(_open_h5(io.BytesIO(data), path), len(data), "zip")


def _crc_problem(path: str, start: int, info: Any) -> str | None:
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
