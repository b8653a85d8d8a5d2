"""Lazy tensors over the members of an ``.npz`` archive, read without pickle.

Opening reads the zip's central directory (without a ``ZipInfo`` a member where
:func:`~formats.io.zip_directory.read_directory` can; else by :mod:`zipfile`) and each member's ``.npy`` header
(their local headers read in blocks of many members through one open file) and ckpt's provenance record, when the
file has one; values are read only when asked, a member at a time: a small uncompressed member with one ``pread``
of its bytes, checked against its CRC-32 before anything is returned, a larger one streamed in place
(:class:`~formats.io.zip_directory.StoredMember`), a compressed one through :mod:`zipfile` (each checks the CRC-32
when the last byte is read). Members holding
Python objects (``dtype=object``: pickles) and other arrays without a TensorFlow dtype are listed as
:class:`~formats.core.model.UnreadableEntry` and never read.
"""
from __future__ import annotations

import io
import os
import sys
import zlib
from collections.abc import Iterator, Sequence

from formats.core.dtypes import by_name, from_numpy
from formats.core.errors import CorruptCheckpointError, UnsupportedError
from formats.core.model import CHUNK_BYTES, CHUNK_ELEMENTS, Checkpoint, FormatName, CheckpointProblem, TensorEntry, UnreadableEntry
from formats.core.provenance import (MAX_CARRIED_GRAPH_BYTES, MAX_RECORD_BYTES, OBJECT_GRAPH_MEMBER, PROVENANCE_MEMBER,
                                     Provenance, TensorRecord, in_record_order, parse_provenance, restored_dtype)
from formats.io.zip_stored import MAX_MEMBERS
from formats.io.zip_directory import StoredMember, read_directory
from formats.io.zipped import (declared_members, local_data_start, member_head, member_heads, member_stream, open_zip,
                               zip_errors)
from formats.io.npy_header import DESCR_NAMES, MAX_HEADER_BYTES, NpyError, NpyHeader, plain_descr, read_npy_header

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from concurrent.futures import Executor
    from typing import Any
    from typing import Literal

    import numpy as np

__all__ = ["NpzTensor", "NpzCheckpoint", "open_npz", "MAX_MEMBERS"]

_BLOCK = 8 << 20
_RECORD_PIECE = 4 << 20  # a multiple of 4: UTF-32 code units are never split


_ZIPFILE_REFUSES = 0x61
"""Flag bits of a member zipfile will not read (encrypted, compressed patched data, strong encryption): such a
member is opened through zipfile, which says so."""


class _Archive:
    """The archive's members, size and path: what every tensor reads through. The members are read from its
    central directory without a ``ZipInfo`` each where :func:`~formats.io.zip_directory.read_directory` can (a
    ``zipfile.ZipFile`` is then opened only for a compressed member); else by ``zipfile.ZipFile``."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.size = os.path.getsize(path)
        declared = declared_members(path)
        if declared is not None and declared > MAX_MEMBERS:  # (refused before zipfile makes a ZipInfo of each)
            raise CorruptCheckpointError(path, f"holds {declared:,} members (at most {MAX_MEMBERS:,} read)")
        entries = read_directory(path)
        self._zf = open_zip(path) if entries is None else None
        self.entries: list[Any] = self._zf.infolist() if self._zf is not None else entries  # type: ignore[assignment]
        try:
            self._fd = os.open(path, os.O_RDONLY)
        except OSError:
            self.close()
            raise

    @property
    def zf(self) -> Any:
        """The archive as a ``zipfile.ZipFile`` (opened when first asked for)."""
        if self._zf is None:
            self._zf = open_zip(self.path)
        return self._zf

    def fd(self) -> int:
        """A descriptor of the archive for ``pread`` (closed by :meth:`close`)."""
        return self._fd

    def close(self) -> None:
        """Close the archive."""
        if self._zf is not None:
            self._zf.close()
        if getattr(self, "_fd", -1) >= 0:
            os.close(self._fd)
            self._fd = -1

    def open(self, info: Any) -> Any:
        """A stream of member ``info``, as ``zipfile.ZipFile.open`` gives it: an uncompressed member whose local
        header names it as the directory does is read in place (:class:`~formats.io.zip_directory.StoredMember`),
        any other through :attr:`zf`."""
        import zipfile

        if info.compress_type == zipfile.ZIP_STORED and info.compress_size == info.file_size and \
                not info.flag_bits & _ZIPFILE_REFUSES:
            start = local_data_start(self._fd, info)
            if start is not None and start + info.file_size <= self.size:
                return StoredMember(self._fd, start, info)
        if not isinstance(info, zipfile.ZipInfo):
            info = self.zf.getinfo(info.filename)
        return self.zf.open(info)

    def stream(self, info: Any) -> Any:
        """An open stream of member ``info`` (zip-bomb and encryption checks first)."""
        return member_stream(self, info, self.size, self.path)


def _fail(path: str, info: Any, exc: BaseException | str) -> CorruptCheckpointError:
    return CorruptCheckpointError(path, f"cannot read {info.filename} from the archive ({exc})")


class NpzTensor(TensorEntry):
    """One ``<key>.npy`` member; nothing is read until :meth:`read`."""

    __slots__ = ("_archive", "_info", "_header", "_view", "_start")

    def __init__(self, key: str, archive: _Archive, info: Any, header: NpyHeader, dtype: str, view: Any,
                 record: TensorRecord | None, start: int = -1) -> None:
        """``start``: the file offset of a stored member's first byte (its local header checked), else -1."""
        name = record.full_name if record is not None else None
        role = record.role if record is not None else "variable"
        super().__init__(key, header.shape, dtype, header.nbytes, name, role)
        self._archive = archive
        self._info = info
        self._header = header
        self._view = view  # the numpy dtype to present the stored values as (bfloat16 from uint16), or None
        self._start = start

    @property
    def files(self) -> tuple[str, ...]:
        """The ``.npz`` file."""
        return (self._archive.path,)

    def problem(self) -> str | None:
        """Why the member cannot hold what its header declares, or None."""
        import zipfile

        stored = self._info.file_size - self._header.size
        if self._info.compress_type == zipfile.ZIP_STORED and self._info.compress_size != self._info.file_size:
            return (f"{self._info.filename} is stored uncompressed but claims {self._info.file_size:,} bytes "
                    f"from {self._info.compress_size:,}")
        if stored != self._header.nbytes:
            return (f"{self._info.filename} declares shape {list(self._header.shape)} of {self._header.dtype} "
                    f"({self._header.nbytes:,} bytes) but stores {max(stored, 0):,} bytes")
        return None

    @staticmethod
    def small_ranges(tensors: Sequence[NpzTensor], most: int) -> list[tuple[int, int, int, int, int] | None]:
        """:func:`formats.io.spans.small_range` of each of ``tensors`` (of this class): a small uncompressed member
        whose local header was checked and that stores its tensor's canonical bytes as they are (C order,
        little-endian, fixed width), as ``(fd, first byte, its stored size, its CRC-32, its .npy header's size)``
        (the span reader checks the CRC-32 over the member's bytes and gives those after the header); None for
        any other (read the usual way)."""
        out: list[tuple[int, int, int, int, int] | None] = []
        append = out.append
        for tensor in tensors:
            header, info = tensor._header, tensor._info
            if tensor._start < 0 or not 0 < header.nbytes <= most or header.fortran_order or \
                    plain_descr(header.descr) is None or tensor.dtype == "string" or tensor.dtype == "variant" or \
                    info.file_size != header.size + header.nbytes:  # (a plain descr: little-endian, no objects)
                append(None)
            else:
                append((tensor._archive.fd(), tensor._start, info.file_size, info.CRC, header.size))
        return out

    def _raise_problem(self) -> None:
        problem = self.problem()
        if problem is not None:
            raise CorruptCheckpointError(self._archive.path, f"{self.key}: {problem}")

    def _whole(self) -> bytes | None:
        """A small stored member's bytes (``.npy`` header and data) read with one ``pread`` and checked against
        its CRC-32 (the error zipfile's would be); None for any other member (read through zipfile)."""
        info = self._info
        if self._start < 0 or info.file_size > _BLOCK:
            return None
        data = os.pread(self._archive.fd(), info.file_size, self._start)
        if len(data) != info.file_size:
            raise CorruptCheckpointError(self._archive.path, f"{self.key}: {info.filename} ends early")
        if zlib.crc32(data) != info.CRC:
            raise _fail(self._archive.path, info, f"Bad CRC-32 for file {info.filename!r}")
        return data

    def _blocks(self, block: int) -> Iterator[bytes]:
        """The member's data bytes (after the header) in pieces of at most ``block``; CRC checked at the end."""
        self._raise_problem()
        whole = self._whole()
        if whole is not None:
            for at in range(self._header.size, len(whole), max(1, block)):
                yield whole[at:at + block]
            return
        info, left = self._info, self._header.nbytes
        try:
            with self._archive.stream(info) as member:
                member.read(self._header.size)
                while left:
                    piece = member.read(min(block, left))
                    if not piece:
                        raise CorruptCheckpointError(self._archive.path, f"{self.key}: {info.filename} ends early")
                    left -= len(piece)
                    yield piece
                if member.read(1):
                    raise CorruptCheckpointError(self._archive.path, f"{self.key}: {info.filename} holds more "
                                                                     "bytes than its header declares")
        except zip_errors() as exc:
            raise _fail(self._archive.path, info, exc) from None

    def _present(self, flat: np.ndarray) -> np.ndarray:
        import numpy as np

        if flat.dtype.byteorder == ">":
            flat = flat.astype(flat.dtype.newbyteorder("<"))
        if self._view is not None:
            return flat.view(self._view)
        if self.dtype == "string" or self.dtype == "variant":
            items = [x.encode("utf-8") if isinstance(x, str) else bytes(x) for x in flat.tolist()]
            return np.array(items + [None], dtype=object)[:-1]
        return flat

    def read(self) -> np.ndarray:
        """The whole value (bfloat16 and other types restored from the provenance record; strings as
        an object array of bytes)."""
        import numpy as np

        data = bytearray()
        for piece in self._blocks(_BLOCK):
            data += piece
        flat = np.frombuffer(data, dtype=self._header.dtype)
        order: Literal["C", "F"] = "F" if self._header.fortran_order else "C"
        value = self._present(flat).reshape(self.shape, order=order)
        return np.ascontiguousarray(value) if order == "F" else value

    def iter_chunks(self, chunk_elements: int = CHUNK_ELEMENTS, pool: Executor | None = None) -> Iterator[np.ndarray]:
        """The elements in C order, streamed from the member ``chunk_elements`` at a time."""
        import numpy as np

        if self._header.fortran_order or self.dtype == "string":
            yield from super().iter_chunks(chunk_elements, pool)
            return
        itemsize = self._header.dtype.itemsize
        pending = b""
        for piece in self._blocks(max(1, chunk_elements) * itemsize):
            pending += piece
            usable = len(pending) - len(pending) % itemsize
            if usable:
                yield self._present(np.frombuffer(pending[:usable], dtype=self._header.dtype))
                pending = pending[usable:]

    def byte_chunks(self, chunk: int = CHUNK_BYTES, check: bool = True) -> Iterator[memoryview]:
        """Canonical bytes streamed from the member, at most ``chunk`` at a time (CRC-32 checked at the end),
        when it stores them as they are (C order, little-endian, fixed width); else from the whole value."""
        header = self._header  # (a plain descr's facts without numpy: little-endian, no objects)
        if header.fortran_order or self.dtype == "string" or header.pickled or header.big_endian or \
                (plain_descr(header.descr) is None and header.dtype.byteorder == "=" and sys.byteorder == "big"):
            yield from super().byte_chunks(chunk, check)
            return
        for piece in self._blocks(max(1, chunk)):
            yield memoryview(piece)

    def check(self) -> None:
        """Read the whole member (its CRC-32 is checked at the end), keeping nothing."""
        for _ in self._blocks(_BLOCK):
            pass


class NpzCheckpoint(Checkpoint):
    """An opened ``.npz``: members as tensors, the provenance record's facts, what was skipped and why."""

    def __init__(self, path: str, entries: dict[str, TensorEntry], archive: _Archive, metadata: dict[str, Any],
                 problems: list[tuple[str, str]], graph: Any = None) -> None:
        """``metadata``: member count, the provenance record's source, skipped members; ``problems``: members
        that could not be listed, duplicates, a damaged provenance record; ``graph``: the member carrying an
        object graph, if any."""
        super().__init__(path, FormatName.NPZ, entries, metadata=metadata,
                         problems=[CheckpointProblem(where, message) for where, message in problems])
        self._archive = archive
        self._graph = graph

    def carried_object_graph(self, keep: bool = True) -> bytes | None:
        """The bytes of member ``__ckpt_object_graph__.npy`` (a 1-D ``uint8`` array stored uncompressed, as ckpt
        writes it: what is read is no more than the file holds; its CRC-32 checked), see
        :meth:`Checkpoint.carried_object_graph`."""
        import zipfile

        info = self._graph
        if info is None:
            return None
        header = _header(self._archive, info)
        if header.descr != "|u1" or len(header.shape) != 1 or header.size + header.nbytes != info.file_size \
                or info.compress_type != zipfile.ZIP_STORED or info.compress_size != info.file_size \
                or header.nbytes > MAX_CARRIED_GRAPH_BYTES:
            raise CorruptCheckpointError(self.path, f"{info.filename} is not an object graph as ckpt writes it (a "
                                                    f"1-D uint8 array of at most {MAX_CARRIED_GRAPH_BYTES:,} bytes, "
                                                    "stored uncompressed)")
        data = None
        try:
            with self._archive.stream(info) as member:
                member.read(header.size)
                if keep:
                    data = member.read()
                else:  # (read a block at a time and let go: the CRC-32 checked at the end)
                    while member.read(_BLOCK):
                        pass
        except zip_errors() as exc:
            raise _fail(self.path, info, exc) from None
        return data

    def close(self) -> None:
        """Close the archive."""
        self._archive.close()


def _header(archive: _Archive, info: Any) -> NpyHeader:
    """A member's ``.npy`` header, read without checking the member's CRC (reading the data does)."""
    try:
        head = io.BytesIO(member_head(archive, info, archive.size, archive.path, 12 + MAX_HEADER_BYTES))
        return read_npy_header(head.read)
    except NpyError as exc:
        raise CorruptCheckpointError(archive.path, f"{info.filename}: {exc}") from None
    except zip_errors() as exc:
        raise _fail(archive.path, info, exc) from None


def _headers(archive: _Archive, infos: list[Any]) -> tuple[list[NpyHeader], list[int]]:
    """Each member's ``.npy`` header (:func:`_header` of each, their local headers read in blocks), and where
    each stored member's bytes start (-1: read through zipfile)."""
    try:
        heads, starts = member_heads(archive, infos, archive.size, archive.path, 12 + MAX_HEADER_BYTES)
    except zip_errors() as exc:
        raise CorruptCheckpointError(archive.path, f"cannot read the archive's members ({exc})") from None
    headers = []
    for info, head in zip(infos, heads):
        try:
            headers.append(read_npy_header(io.BytesIO(head).read))
        except NpyError as exc:
            raise CorruptCheckpointError(archive.path, f"{info.filename}: {exc}") from None
    return headers, starts


def _read_provenance(archive: _Archive, info: Any) -> Provenance:
    """The record: a 0-d unicode array (UTF-32 code units) holding JSON."""
    try:
        header = _header(archive, info)
        if header.kind != "U" or header.shape != () or header.nbytes > 4 * MAX_RECORD_BYTES:
            return Provenance(problems=[f"{info.filename} is not a provenance record (a 0-d unicode array); ignored"])
        codec = "utf-32-be" if header.big_endian else "utf-32-le"
        parts, left = [], header.nbytes
        with archive.stream(info) as member:  # decoded a piece at a time: never the UTF-32 bytes whole
            member.read(header.size)
            while left:
                raw = member.read(min(left, _RECORD_PIECE))
                if not raw:
                    break
                parts.append(raw.decode(codec))
                left -= len(raw)
        text = "".join(parts).rstrip("\x00")
    except (CorruptCheckpointError, UnsupportedError, UnicodeDecodeError, *zip_errors()) as exc:  # type: ignore[misc]
        message = exc.message if isinstance(exc, CorruptCheckpointError) else str(exc)
        return Provenance(problems=[f"cannot read the provenance record ({message}); ignored"])
    return parse_provenance(text, archive.path)


class _Skipped(ValueError):
    """A member that is not a tensor ckpt can read (the message says why)."""


_TF_NAMES: dict[Any, str] = {}
"""numpy dtype -> TensorFlow dtype name, worked out once per dtype."""


def _tf_dtype(header: NpyHeader, record: TensorRecord | None) -> tuple[str, Any, str | None]:
    """``(TF dtype, numpy dtype to view as or None, problem)``; :class:`_Skipped` for a member without one. A plain
    descr's (:func:`~formats.io.npy_header.plain_descr`) is known without numpy, as :func:`from_numpy` names it."""
    if header.pickled:
        raise _Skipped("holds pickled Python objects (dtype object): not read; ckpt never unpickles")
    plain = plain_descr(header.descr)
    if plain is not None:
        if plain[0] in "SU":  # (a variant's serialized bytes, as the record says it was: a variant again)
            return "variant" if plain[0] == "S" and record is not None and record.dtype == "variant" else "string", \
                None, None
        name = DESCR_NAMES[header.descr]
        restored, problem = restored_dtype(name, header.shape, record)
        return restored, (by_name(restored).numpy() if restored != name else None), problem
    dt = header.dtype
    if dt.names is not None or dt.subdtype is not None:
        raise _Skipped(f"is a structured array ({dt}): not a tensor")
    stored = _TF_NAMES.get(dt)
    if stored is None:
        try:
            stored = from_numpy(dt.newbyteorder("<") if dt.byteorder == ">" else dt).name
        except (ValueError, TypeError):
            raise _Skipped(f"numpy dtype {dt} has no TensorFlow counterpart") from None
        if len(_TF_NAMES) < 4096:
            _TF_NAMES[dt] = stored
    if stored == "string":
        return stored, None, None
    dtype, problem = restored_dtype(stored, header.shape, record)
    return dtype, (by_name(dtype).numpy() if dtype != stored else None), problem


def open_npz(path: str) -> NpzCheckpoint:
    """Open an ``.npz`` file (members are read lazily; nothing is unpickled)."""
    archive = _Archive(path)
    try:
        return _build(path, archive)
    except BaseException:
        archive.close()
        raise


def _members(archive: _Archive, problems: list[tuple[str, str]]) -> dict[str, Any]:
    infos = archive.entries
    if len(infos) > MAX_MEMBERS:
        raise CorruptCheckpointError(archive.path, f"holds {len(infos):,} members (at most {MAX_MEMBERS:,} read)")
    members: dict[str, Any] = {}
    for info in infos:
        if info.filename in members:
            problems.append((info.filename, "appears twice in the archive; the last copy is read (as numpy does)"))
        members[info.filename] = info
    return members


def _build(path: str, archive: _Archive) -> NpzCheckpoint:
    problems: list[tuple[str, str]] = []
    members = _members(archive, problems)
    provenance = Provenance()
    record_info = members.pop(PROVENANCE_MEMBER + ".npy", None)
    if record_info is not None:
        provenance = _read_provenance(archive, record_info)
        problems += [(record_info.filename, p) for p in provenance.problems or []]
    records = provenance.tensors or {}
    graph_info = members.pop(OBJECT_GRAPH_MEMBER + ".npy", None)
    entries: dict[str, TensorEntry] = {}
    skipped: dict[str, str] = {}
    arrays = []
    for name, info in members.items():
        if name.endswith("/"):
            continue
        if not name.endswith(".npy"):
            skipped[name] = "not a .npy member"
            continue
        arrays.append(info)
    headers, starts = _headers(archive, arrays)
    for info, header, start in zip(arrays, headers, starts):
        key = info.filename[:-len(".npy")]
        try:
            dtype, view, problem = _tf_dtype(header, records.get(key))
        except _Skipped as exc:
            entries[key] = UnreadableEntry(key, header.shape, str(header.dtype), header.nbytes, str(exc), path)
            continue
        if problem:
            problems.append((key, problem))
        entries[key] = NpzTensor(key, archive, info, header, dtype, view, records.get(key), start)
    pickled = [k for k, e in entries.items() if e.unreadable and "pickled" in e.unreadable]
    if pickled and len(pickled) == len(entries):
        raise UnsupportedError(path, f"every array in this .npz holds pickled Python objects ({len(pickled)}, e.g. "
                                     f"{pickled[0]!r}); ckpt never unpickles, so nothing can be read")
    meta: dict[str, Any] = {"members": len(members)}
    if record_info is not None and provenance.tensors is not None:
        meta["provenance"] = provenance.to_json()
    if skipped:
        meta["skipped"] = skipped
    if graph_info is not None:
        meta["object_graph"] = f"{graph_info.file_size:,} bytes"
    return NpzCheckpoint(path, in_record_order(entries, records), archive, meta, problems, graph_info)

