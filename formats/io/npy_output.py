"""``.npy`` and ``.npz`` output: one dtype policy, streamed members, the provenance record, the read-back.

The dtype policy (``extract`` and the ``npz`` format's writer, :mod:`formats.npz.writer`, both write
through this module):

- dtypes numpy has (bool, ints, uints, float16/32/64, complex) are stored as themselves; TensorFlow's
  quantized types as the integer type they hold (``qint8`` -> ``int8``);
- dtypes numpy lacks (``bfloat16``, ``float8_*``, ``float4_*``, ``int4``, ``uint4``, ``int2``,
  ``uint2``) are stored as their raw bits, an unsigned integer of the same width (``bfloat16`` ->
  ``uint16``), nothing widened or rounded; the provenance record keeps the real dtype, and
  ``array.view(ml_dtypes.bfloat16)`` restores the value;
- strings and variants (a variant element is its serialized ``VariantTensorDataProto``) as fixed-width
  bytes ``S<n>``, never pickled, written in chunks; numpy drops trailing NUL bytes from ``S`` values, so
  a tensor with an element ending in NUL is refused unless ``allow_pickle`` (then an object array is
  written, which ``numpy.load`` opens only with ``allow_pickle=True``). So is a tensor whose fixed-width
  form the stored bytes do not justify: ``n`` elements padded to the longest take ``n`` times its length,
  refused beyond :data:`WIDENING` times the bytes the elements hold plus :data:`FREE_WIDTH_BYTES`
  (300,000 short strings and one of 8 KB would otherwise take 2.4 GB).

The provenance record is a JSON object ``{"source", "format", "tensors": [{"key", "dtype", "shape",
...}]}``; an npz holds it as the member ``__ckpt_provenance__.npy`` (a 0-d unicode array, read without
pickle). Members stream in bounded chunks; after writing, every member is read back (headers parsed
here, payloads streamed, nothing unpickled) and compared with its source.
"""
from __future__ import annotations

import math
import os

from formats.core.provenance import PROVENANCE_MEMBER
from formats.core.dtypes import by_name
from formats.core.errors import CorruptCheckpointError, InvalidOutputError, PickleRequiredError, UnsupportedError
from formats.core.model import Checkpoint, TensorEntry, array_problem
from formats.core.shapes import MAX_RANK
from formats.core.records import record
from formats.core.roundtrip import Mismatch, RoundTripReport, compare_checkpoints
from formats.core.sources import CHUNK, Source, describe, elements, fixed_chunks
from formats.io.atomic import atomic_output, refuse_url
from formats.io.crc import crc32c
from formats.io.npy_header import DESCR_NAMES, DESCRS, plain_descr
from formats.io.writing import Stored, StoredBytes, WriteReport, guard_output, planned_bytes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import IO, Any

    import numpy as np

__all__ = ["PROVENANCE_MEMBER", "stored_dtype", "stores_bits", "named_as_written", "write_member", "fixed_member",
           "small_member", "small_written", "npy_header", "header_problems", "write_npy", "count_member",
           "read_back", "check_headers", "bits_note", "fixed_width_problem", "member_name",
           "member_names_fine", "check_member_names", "WIDENING", "FREE_WIDTH_BYTES"]

WIDENING = 16
"""Fixed-width bytes may take this many times the bytes the elements hold..."""
FREE_WIDTH_BYTES = 64 << 20
"""...plus this many."""

"""The npz member (``<name>.npy``) holding the provenance record."""
_MAX_NAME = 0xFFFF  # a zip member name's length field


# -- the policy -----------------------------------------------------------------------------------------
_STORED: dict[str, tuple[str, bool, str]] = {}
"""dtype name -> (the stored dtype's descr, stored as its raw bits, the stored dtype's name), worked out once per
dtype (once per tensor costs more than writing a tiny tensor)."""


def stored_dtype(dtype: str) -> np.dtype:
    """The numpy dtype a fixed-width TensorFlow dtype is stored as (see the module doc)."""
    import numpy as np

    return np.dtype(_policy(dtype)[0])


def stored_name(dtype: str) -> str:
    """The name of the numpy dtype a fixed-width TensorFlow dtype is stored as (``float32``; ``uint16`` for
    ``bfloat16``'s bits)."""
    return _policy(dtype)[2]


def stores_bits(dtype: str) -> bool:
    """True when ``dtype`` is stored as its raw bits (numpy has no such type)."""
    found = _STORED.get(dtype)
    if found is not None:
        return found[1]
    dt = by_name(dtype.removesuffix("_ref"))
    return dt.fixed_width and dt.numpy_name is not None and _policy(dtype)[1]


def named_as_written(dtype: str) -> bool:
    """Whether a reader without ckpt's provenance record reads a tensor of ``dtype`` back as ``dtype``: a string, or
    a fixed-width dtype stored as the numpy dtype of its own name (``float32``; not ``bfloat16`` stored as
    ``uint16``, ``qint8`` as ``int8``, a variant as bytes, nor a ``_ref`` dtype)."""
    if dtype == "string":
        return True
    try:
        dt = by_name(dtype)
    except (KeyError, ValueError):
        return False
    return dt.fixed_width and dt.numpy_name is not None and stored_name(dtype) == dtype


def _policy(dtype: str) -> tuple[str, bool, str]:
    """``(descr, stored as its bits, stored name)`` of a fixed-width dtype: a dtype numpy has as itself (a
    quantized one as the integer it holds: its ``numpy_name``), another (``ml_dtypes``') as the unsigned integer of
    its width; worked out from names (:data:`~formats.io.npy_header.DESCRS`), numpy not imported (it was a third
    of a small ``convert --to npz``)."""
    found = _STORED.get(dtype)
    if found is None:
        dt = by_name(dtype.removesuffix("_ref"))
        if not dt.fixed_width or dt.numpy_name is None:
            raise UnsupportedError("", f"{dtype} is not a fixed-width dtype")
        name = dt.numpy_name if dt.numpy_name in DESCRS else f"uint{8 * dt.itemsize}"
        found = _STORED[dtype] = (DESCRS[name], name != dt.numpy_name, name)
    return found


_NAMES: dict[Any, str] = {}


def _stored_name(stored: np.dtype) -> str:
    """How :class:`Written` names a stored dtype read back (``object``, ``|S5``, ``uint16``), once per dtype."""
    found = _NAMES.get(stored)
    if found is None:
        found = "object" if stored.hasobject else (stored.str if stored.kind == "S" else stored.name)
        if len(_NAMES) < 4096:
            _NAMES[stored] = found
    return found


def bits_note(key: str, dtype: str) -> str:
    """The note a report carries for a tensor stored as its raw bits."""
    return f"{key}: {dtype} stored as {stored_name(dtype)} bits (the record keeps {dtype})"


@record(frozen=True)
class Written:
    """What :func:`write_member` stored: the stored dtype (``uint16``, ``|S5``, ``object``), the payload
    bytes, and for a pickled member the sha256 of its bytes (compared on read-back instead of its value:
    nothing is ever unpickled)."""

    stored: str
    nbytes: int
    digest: str | None = None


# -- writing one .npy -----------------------------------------------------------------------------------
_HEADERS: dict[tuple[str, tuple[int, ...]], bytes] = {}
"""(descr, shape) -> the header numpy writes for it, made once (many tensors share a few shapes)."""
_ALIGN = 64
"""numpy's ``ARRAY_ALIGN``: the magic, the length and the header together take a multiple of this many bytes."""
_GROWTH_DIGITS = 21
"""numpy's ``GROWTH_AXIS_MAX_DIGITS``: spaces for the first axis to grow to this many digits in place."""


def npy_header(descr: str, shape: tuple[int, ...]) -> bytes:
    """The ``.npy`` header ``numpy.lib.format.write_array_header_1_0`` writes for a C-order array of the plain
    ``descr`` (``'<f4'``, ``'|S5'``, ``'<U9'``) and ``shape`` (its ``_write_array_header`` and ``_wrap_header``:
    the dict's text, room for the first axis to grow, spaces and a newline to a multiple of 64 bytes; version 2.0
    where 1.0's 2-byte length cannot hold it, as ``write_array_header_2_0``), made without numpy."""
    shape = tuple(shape)
    found = _HEADERS.get((descr, shape))
    if found is None:
        import struct

        text = f"{{'descr': {descr!r}, 'fortran_order': False, 'shape': {shape!r}, }}"
        if shape:
            text += " " * (_GROWTH_DIGITS - len(repr(shape[0])))
        raw = text.encode("latin1")
        length = len(raw) + 1
        pad = _ALIGN - (10 + length) % _ALIGN
        if length + pad <= 0xFFFF:
            prefix = b"\x93NUMPY\x01\x00" + struct.pack("<H", length + pad)
        else:
            pad = _ALIGN - (12 + length) % _ALIGN
            prefix = b"\x93NUMPY\x02\x00" + struct.pack("<I", length + pad)
        found = prefix + raw + b" " * pad + b"\n"
        if len(_HEADERS) < 4096:
            _HEADERS[descr, shape] = found
    return found


def _header(f: IO[bytes], descr: str, shape: tuple[int, ...]) -> None:
    f.write(npy_header(descr, tuple(shape)))


def fixed_width_problem(dtype: str, values: Sequence[bytes]) -> str | None:
    """Why ``values`` cannot be stored as fixed-width ``S<n>`` bytes (see the module doc), or None."""
    if any(x.endswith(b"\x00") for x in values):
        return f"{dtype} tensor has elements ending in NUL bytes, which .npy fixed-width bytes would drop"
    width = max((len(x) for x in values), default=1) or 1
    held = sum(len(x) for x in values) + len(values)
    if len(values) * width > WIDENING * held + FREE_WIDTH_BYTES:
        return (f"{dtype} tensor of {len(values):,} elements would take {len(values) * width:,} bytes as .npy "
                f"fixed-width bytes (each padded to the longest, {width:,} bytes) for {held:,} bytes of data")
    return None


def _write_bytes(f: IO[bytes], key: str, dtype: str, source: Source, allow_pickle: bool, chunk: int) -> Written:
    """A string or variant tensor as fixed-width ``S<n>`` written a chunk of elements at a time, or (with
    ``allow_pickle``, when fixed width cannot hold it) as an object array (the one written with numpy)."""
    _, shape = describe(source)
    flat = elements(source)
    problem = fixed_width_problem(dtype, flat)
    if problem is not None:
        if not allow_pickle:
            raise PickleRequiredError(_origin(key, source), f"tensor {key!r}: {problem}",
                                      hint="pass allow_pickle=True to write an object array instead")
        import numpy as np

        value = np.empty(len(flat), dtype=object)
        value[:] = flat
        hashing = _Hashing(f)
        np.lib.format.write_array(hashing, value.reshape(shape), allow_pickle=True)
        return Written("object", sum(len(x) for x in flat), hashing.h.hexdigest())
    width = max((len(x) for x in flat), default=1) or 1
    descr = f"|S{width}"  # (numpy's S<width>: each element padded with NUL bytes, none of which ends one)
    _header(f, descr, shape)
    step = max(1, chunk // width)
    for start in range(0, len(flat), step):
        f.write(b"".join([x.ljust(width, b"\x00") for x in flat[start:start + step]]))
    return Written(descr, len(flat) * width)


def _origin(key: str, source: Source) -> str:
    """What an error about ``source`` names: the file it is read from, else its key."""
    files = getattr(source, "files", None)
    return str(files[0]) if files else key


def write_member(f: IO[bytes], key: str, source: Source, allow_pickle: bool = False,
                 chunk: int = CHUNK) -> Written:
    """Write ``source`` as one ``.npy`` stream to ``f`` following the policy (see the module doc)."""

    dt, shape = describe(source)
    _check_fits(key, source, dt, shape)
    if not dt.fixed_width:
        return _write_bytes(f, key, dt.name, source, allow_pickle, chunk)
    descr, _, name = _policy(dt.name)
    _header(f, descr, shape)
    size = 0
    for piece in fixed_chunks(source, chunk):
        f.write(piece)
        size += len(piece)
    _check_size(key, source, dt, shape, size)
    return Written(name, size)


def _check_fits(key: str, source: Source, dt: Any, shape: tuple[int, ...]) -> None:
    unfit = array_problem(tuple(shape), dt.itemsize or 8)
    if unfit is not None:
        raise UnsupportedError(_origin(key, source), f"tensor {key!r} has {unfit}, which an .npy file cannot hold")


def _check_size(key: str, source: Source, dt: Any, shape: tuple[int, ...], size: int) -> None:
    if size != math.prod(shape) * dt.itemsize:
        raise CorruptCheckpointError(_origin(key, source), f"tensor {key!r}: source gave {size} bytes for shape "
                                     f"{list(shape)} of {dt.name}, expected {math.prod(shape) * dt.itemsize}")


def fixed_member(key: str, source: Source, dt: Any, shape: tuple[int, ...],
                 chunk: int = CHUNK) -> tuple[bytes, Any, Written]:
    """A small fixed-width tensor as one ``.npy`` in memory: ``(header, data, written)`` (``dt`` and ``shape``:
    :func:`~formats.core.sources.describe`'s). A tensor whose bytes lie unchanged in a local file is read with
    one ``pread`` and checked against its stored CRC32C (its own ``check`` names a damaged input)."""
    if 0 in shape or len(shape) > MAX_RANK:  # else its size (under SPOOL) says it fits
        _check_fits(key, source, dt, shape)
    descr, _, stored_name = _policy(dt.name)
    header = npy_header(descr, shape)
    where = source.stored_range() if isinstance(source, TensorEntry) and source.dtype == dt.name else None
    data: Any
    if where is not None:
        fd, offset, size, crc = where
        data = os.pread(fd, size, offset)
        if len(data) != size or crc32c(data) != crc:
            source.check()  # the input's own error (a ChecksumError naming its file)
            raise CorruptCheckpointError(_origin(key, source), f"tensor {key!r} does not read back as stored")
    else:
        pieces = list(fixed_chunks(source, chunk))
        data = pieces[0] if len(pieces) == 1 else b"".join(pieces)
    size = memoryview(data).nbytes
    _check_size(key, source, dt, shape, size)
    return header, data, small_written(stored_name, size)


def small_member(dtype: str, shape: tuple[int, ...]) -> tuple[bytes, Written]:
    """The ``.npy`` header and :class:`Written` of a small tensor of the fixed-width ``dtype`` and ``shape`` written
    as :func:`fixed_member` writes it, bytes as stored (for many members of one kind at once)."""
    descr, _, stored_name = _policy(dtype)
    return npy_header(descr, shape), small_written(stored_name, math.prod(shape) * by_name(dtype).itemsize)


def small_written(stored_name: str, size: int) -> Written:
    """The :class:`Written` of a small member of ``size`` bytes stored as ``stored_name``, shared by its kind."""
    written = _WRITTEN.get((stored_name, size))
    if written is None:
        written = Written(stored_name, size)
        if len(_WRITTEN) < 4096:
            _WRITTEN[stored_name, size] = written
    return written


_WRITTEN: dict[tuple[str, int], Written] = {}
"""One (frozen) :class:`Written` for each stored dtype and size of small tensors: 100,000 tiny ones share a few."""


def header_problems(header: Any, written: Written, shape: tuple[int, ...], member_size: int) -> list[tuple[str, str]]:
    """What is wrong with a member's ``.npy`` ``header`` read back (an :class:`~formats.io.npy_header.NpyHeader`:
    numpy not imported for a plain descr) given what :func:`write_member` wrote (``written``, with ``shape``) and the
    member's size: ``(kind, problem)`` pairs, kind ``"dtype"``, ``"shape"`` or ``"value"``."""
    descr = header.descr
    if header.fortran_order:
        return [("value", "member is stored in Fortran order")]
    if header.pickled and written.digest is None:
        return [("value", "member is pickled")]
    # named as _stored_name names numpy's dtypes (a plain descr without numpy)
    got = DESCR_NAMES.get(descr) or (descr if plain_descr(descr) else _stored_name(header.dtype))
    if got != written.stored:
        return [("dtype", f"stored as {got}, expected {written.stored}")]
    if tuple(header.shape) != tuple(shape):
        return [("shape", f"stored with shape {list(header.shape)}, expected {list(shape)}")]
    if not header.pickled and header.size + header.nbytes != member_size:
        return [("value", f"the member holds {member_size:,} bytes, its header declares {header.size + header.nbytes:,}")]
    return []


# -- reading one back -----------------------------------------------------------------------------------
class _Payload(StoredBytes):
    """A tensor read back from an ``.npy`` stream ``open_member()`` opens (its header parsed here)."""

    __slots__ = ("stored",)

    def __init__(self, key: str, dtype: str, open_member: Callable[[], Any]) -> None:
        from formats.io.npy_header import NpyError, read_npy_header

        with open_member() as f:
            try:
                header = read_npy_header(f.read)
            except NpyError as exc:
                raise CorruptCheckpointError(key, f"member does not read back: {exc}") from None
        shape, fortran, stored, offset = header.shape, header.fortran_order, header.dtype, header.size
        if fortran:
            raise CorruptCheckpointError(key, "member is stored in Fortran order")
        super().__init__(key, tuple(shape), dtype, math.prod(shape) * stored.itemsize, open_member, offset)
        self.stored = stored

    def read(self) -> np.ndarray:
        """The whole value (strings as ``S`` bytes, bits viewed as their real dtype)."""
        import numpy as np

        raw = np.frombuffer(b"".join(self._chunks(CHUNK)), dtype=self.stored).reshape(self.shape)
        return raw if self.stored.kind == "S" else raw.view(by_name(self.dtype).numpy())


def read_back(out: str, expected: dict[str, tuple[str, Source]], written: dict[str, Written],
              opener: Callable[[str], Callable[[], Any]], chunk: int = CHUNK) -> RoundTripReport:
    """Compare the ``.npy`` streams of a written output with their sources.

    ``expected`` maps member name -> ``(key, source)``, ``written`` member name -> what was stored,
    ``opener`` member name -> a function that opens it for reading. Returns the comparison (by key).
    """
    report, actual, sources = _headers(out, expected, written, opener)
    compared = compare_checkpoints(actual, sources, path=out, against="sources", chunk=chunk)
    report.tensors += compared.tensors
    report.bytes += compared.bytes
    report.mismatches += compared.mismatches
    return report


def check_headers(out: str, expected: dict[str, tuple[str, Source]], written: dict[str, Written],
                  opener: Callable[[str], Callable[[], Any]]) -> RoundTripReport:
    """What :func:`read_back` checks short of the payloads' values: each member's ``.npy`` header parsed (the
    dtype stored as planned, a pickled member only where one was written, and its bytes' sha256). The caller
    checks the payloads another way (an npz: against the checksums taken as they were written)."""
    report, actual, _ = _headers(out, expected, written, opener)
    report.tensors += len(actual)
    report.bytes += sum(payload.nbytes for payload in actual.values())
    return report


def _headers(out: str, expected: dict[str, tuple[str, Source]], written: dict[str, Written],
             opener: Callable[[str], Callable[[], Any]]) -> tuple[RoundTripReport, dict[str, Any], dict[str, Source]]:
    """Each member's header checked; the report so far, and the payloads still to compare (by key) with their
    sources."""
    actual: dict[str, Any] = {}
    sources: dict[str, Source] = {}
    report = RoundTripReport(out, "sources")
    for member, (key, source) in expected.items():
        payload = _Payload(key, describe(source)[0].name, opener(member))
        if payload.stored.hasobject and written[member].digest is None:
            raise CorruptCheckpointError(key, "member is pickled")
        want, digest = written[member].stored, written[member].digest
        got = "object" if payload.stored.hasobject else (payload.stored.str if payload.stored.kind == "S"
                                                         else payload.stored.name)
        if got != want:
            report.mismatches.append(Mismatch(key, "dtype", f"stored as {got}, expected {want}"))
        elif digest is not None:
            report.tensors += 1
            if _sha256(opener(member)) != digest:
                report.mismatches.append(Mismatch(key, "value", "the pickled member does not read back as written"))
        else:
            actual[key], sources[key] = payload, source
    return report, actual, sources


def _sha256(open_member: Callable[[], Any]) -> str:
    import hashlib

    h = hashlib.sha256()
    with open_member() as f:
        for piece in iter(lambda: f.read(CHUNK), b""):
            h.update(piece)
    return h.hexdigest()


class _Hashing:
    """A write-only file that hashes what goes through it (a pickled member's bytes)."""

    def __init__(self, f: IO[bytes]) -> None:
        import hashlib

        self.f, self.h = f, hashlib.sha256()

    def write(self, data: Any) -> int:
        self.h.update(data)
        return self.f.write(data)


# -- the files ------------------------------------------------------------------------------------------
def member_name(key: str, out: str = "") -> str:
    """The npz member for ``key`` (``<key>.npy``), or InvalidOutputError (naming ``out``) when a zip cannot
    name it: not UTF-8, empty, a directory, the provenance record's name, or longer than 65,535 bytes."""
    name = key + ".npy"
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidOutputError(out or key, f"key {_shown(key)} is not valid UTF-8, which an npz member name must "
                                 "be") from None
    if size > _MAX_NAME:
        raise InvalidOutputError(out or key, f"key {_shown(key)} is {size - 4:,} bytes long; an npz member name holds "
                                 f"at most {_MAX_NAME - 4:,}")
    if key == PROVENANCE_MEMBER or key.endswith("/") or not key or "\x00" in key:  # zipfile cuts a name at NUL
        raise InvalidOutputError(out or key, f"key {_shown(key)} cannot be an npz member name")
    return name


def member_names_fine(keys: Sequence[str]) -> bool:
    """Whether :func:`member_name` takes every one of ``keys`` (ASCII ones), asked by C functions over the keys
    joined :data:`_JOINED` at a time (100,000 keys in a few ms); False where any may fail, to be asked a key at a
    time. (All joined at once, 10^5 keys were 5 MB, which the C library kept after they were freed: +10 MiB.)"""
    for first in range(0, len(keys), _JOINED):
        run = keys[first:first + _JOINED]
        joined = "\x00".join(run) + "\x00"  # (no key holds NUL where there are as many as keys: each ends at one)
        if not (joined.isascii() and joined.count("\x00") == len(run) and "/\x00" not in joined):
            return False
    return bool(keys) and max(map(len, keys)) + 4 <= _MAX_NAME and "" not in keys and \
        PROVENANCE_MEMBER not in keys  # (a byte a char)


_JOINED = 4096
"""Keys :func:`member_names_fine` joins at once."""


def check_member_names(keys: Sequence[str], out: str = "") -> None:
    """:func:`member_name` of every one of ``keys`` (:func:`member_names_fine` first: a key at a time only where one
    may fail, so that the first key refused is the one named), and InvalidOutputError (naming ``out``) when two are
    the same."""
    from formats.core.natural import ascending

    if not member_names_fine(keys):
        for key in keys:
            member_name(key, out)
    if not ascending(keys) and len(set(keys)) != len(keys):  # (a member's name is its key's, and ".npy")
        raise InvalidOutputError(out, "two tensors would be stored under the same member name")


def _shown(key: str) -> str:
    from formats.core.names import quoted_text

    return quoted_text(key, 120)


def count_member(report: WriteReport, key: str, name: str, source: Source, written: Written,
                 progress: Callable[[int, int], None] | None, described: tuple[Any, tuple[int, ...]] | None = None) -> None:
    """Count one member written in ``report``, its line with it (with a note for a tensor stored as its bits), and
    report progress (``described``: ``source``'s dtype and shape, when known)."""
    dt, shape = described or describe(source)
    report.contents.append(Stored(key, name, dt.name, written.stored, shape))  # type: ignore[attr-defined]
    tally_member(report, key, dt, written.nbytes, progress)


def tally_member(report: WriteReport, key: str, dt: Any, nbytes: int, progress: Callable[[int, int], None] | None) -> None:
    """Count one member of ``nbytes`` written in ``report``'s totals (its line made elsewhere), with a note for a
    tensor of ``dt`` stored as its bits, and report progress."""
    report.tensors += 1
    report.bytes += nbytes
    if dt.fixed_width and stores_bits(dt.name):
        report.warnings.append(bits_note(key, dt.name))
    if progress is not None:
        progress(report.bytes, report.tensors)


def write_npy(path: str | os.PathLike[str], key: str, source: Source, *, inputs: Sequence[str | Checkpoint] = (),
              force: bool = False, verify: bool = True, allow_pickle: bool = False, chunk: int = CHUNK) -> WriteReport:
    """Write one tensor to a ``.npy`` file, guarded, atomically, read back and compared (no record: a
    tensor stored as its bits is named in the report's warnings)."""
    out = os.fspath(path)
    refuse_url(out)
    guard_output(out, inputs=inputs, sources=[source], force=force)
    report = WriteReport(out, "npy", [out])
    with atomic_output(out, planned_bytes([source]), replace=force, sources=[source]) as temp:
        with open(temp, "xb") as f:
            stored = write_member(f, key, source, allow_pickle, chunk)
        count_member(report, key, os.path.basename(out), source, stored, None)
        if verify:
            report.accept(read_back(out, {"": (key, source)}, {"": stored}, lambda _: lambda: open(temp, "rb"), chunk))
    return report
