"""The ``.npy`` header, parsed without trusting it: magic, version, a bounded header dict read with
:func:`ast.literal_eval` (literals only: nothing is executed or unpickled), and a dtype that holds
no Python objects.

Layout (numpy's ``format.py``): ``\\x93NUMPY``, major and minor version bytes, the header length
(2 bytes little-endian in version 1, 4 bytes in versions 2 and 3), then the header: a Python dict
literal ``{'descr': ..., 'fortran_order': bool, 'shape': tuple}`` padded with spaces and ``\\n``.
"""
from __future__ import annotations

import math
import struct

from formats.core.records import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["NpyHeader", "read_npy_header", "npy_header_of", "NpyError", "MAX_HEADER_BYTES", "DESCRS", "DESCR_NAMES",
           "plain_descr"]

MAGIC = b"\x93NUMPY"
MAX_HEADER_BYTES = 65536
"""Longest header accepted (numpy itself refuses more than 10,000 bytes unless told otherwise)."""


class NpyError(ValueError):
    """The bytes are not a ``.npy`` header this reader accepts (the message says why)."""


DESCRS = {"bool": "|b1", "int8": "|i1", "uint8": "|u1", "int16": "<i2", "uint16": "<u2", "int32": "<i4",
          "uint32": "<u4", "int64": "<i8", "uint64": "<u8", "float16": "<f2", "float32": "<f4", "float64": "<f8",
          "complex64": "<c8", "complex128": "<c16"}
"""numpy's own fixed-width dtypes by name, each with the ``descr`` its ``.npy`` header gives it (little-endian):
what a header of one of these (or of bytes ``|S<n>``, text ``<U<n>``) says is known without importing numpy."""
DESCR_NAMES = {descr: name for name, descr in DESCRS.items()}
"""The name of the numpy dtype of each descr of :data:`DESCRS`."""


def plain_descr(descr: Any) -> tuple[str, int] | None:
    """``(kind, itemsize)`` of a plain descr - one of :data:`DESCRS`, ``|S<n>`` or ``<U<n>`` (``n`` from 1, as numpy
    writes it) - as numpy's dtype has them (``'f'``, 4; ``'S'``, 5; ``'U'``, 4n); None for any other (numpy reads
    it)."""
    if type(descr) is not str:
        return None
    name = DESCR_NAMES.get(descr)
    if name is not None:
        return descr[1], int(descr[2:])
    if descr[:2] in ("|S", "<U") and descr[2:].isdigit() and descr.isascii() and descr[2] != "0" and len(descr) < 14:
        itemsize = int(descr[2:]) * (1 if descr[1] == "S" else 4)
        return (descr[1], itemsize) if itemsize < 1 << 31 else None  # (numpy's item sizes are C ints)
    return None


@record(frozen=True)
class NpyHeader:
    """A parsed header: its ``descr`` as written, shape, Fortran order, the header's total size in bytes, and
    whether the dtype holds pickled Python objects. Its numpy :attr:`dtype` is made when asked for: a plain descr
    (:func:`plain_descr`) says its kind and item size without numpy (``ls`` of an npz: a third of the
    instructions); any other descr was checked to be a dtype as the header was read."""

    descr: Any
    shape: tuple[int, ...]
    fortran_order: bool
    size: int
    pickled: bool

    @property
    def dtype(self) -> Any:
        """The numpy dtype (numpy imported here)."""
        return _dtype(self.descr)

    @property
    def kind(self) -> str:
        """The dtype's kind (``'f'``, ``'S'``, ``'U'``, ``'O'``...)."""
        plain = plain_descr(self.descr)
        return plain[0] if plain is not None else self.dtype.kind

    @property
    def big_endian(self) -> bool:
        """Whether the values are stored big-endian."""
        return plain_descr(self.descr) is None and self.dtype.byteorder == ">"

    @property
    def nbytes(self) -> int:
        """Bytes of data that follow the header."""
        plain = plain_descr(self.descr)
        return math.prod(self.shape) * (plain[1] if plain is not None else self.dtype.itemsize)


def _exact(read: Callable[[int], bytes], n: int, what: str) -> bytes:
    data = read(n)
    if len(data) != n:
        raise NpyError(f"truncated .npy {what}")
    return data


def _literal(text: str) -> Any:
    import ast  # (a header of numpy's own form is read without it: :func:`_plain_fields`)

    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        raise NpyError(f"the .npy header is not a Python literal ({type(exc).__name__})") from None


def _shape(value: Any) -> tuple[int, ...]:
    if not isinstance(value, tuple) or len(value) > 64:
        raise NpyError(f"the .npy header's shape is {type(value).__name__}, not a tuple of at most 64 sizes")
    if not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 1 << 63 for d in value):
        raise NpyError(f"the .npy header's shape {value!r} holds something other than sizes")
    return value


_DTYPES: dict[str, Any] = {}
"""descr -> its numpy dtype, made once (a string descr; a structured one's list is made each time)."""


def _dtype(descr: Any) -> Any:
    found = _DTYPES.get(descr) if type(descr) is str else None
    if found is not None:
        return found
    import numpy as np

    try:
        found = np.dtype(descr) if isinstance(descr, str) else np.lib.format.descr_to_dtype(descr)
    except (TypeError, ValueError, KeyError, IndexError, RecursionError) as exc:
        raise NpyError(f"the .npy header's descr {str(descr)[:80]!r} is not a dtype ({exc})") from None
    if type(descr) is str and len(_DTYPES) < _MAX_PARSED:
        _DTYPES[descr] = found
    return found


def read_npy_header(read: Callable[[int], bytes]) -> NpyHeader:
    """Parse the header at the start of ``read`` (a file's ``read``); :class:`NpyError` when it is not one."""
    start = _exact(read, 8, "magic")
    if start[:6] != MAGIC:
        raise NpyError("not a .npy array (no \\x93NUMPY magic)")
    major = start[6]
    if major == 1:
        (length,), prefix = struct.unpack("<H", _exact(read, 2, "header length")), 10
    elif major in (2, 3):
        (length,), prefix = struct.unpack("<I", _exact(read, 4, "header length")), 12
    else:
        raise NpyError(f"unknown .npy format version {major}.{start[7]}")
    if length > MAX_HEADER_BYTES:
        raise NpyError(f"the .npy header claims {length:,} bytes (at most {MAX_HEADER_BYTES:,} accepted)")
    raw = _exact(read, length, "header")
    found = _HEADERS.get((raw, major))
    if found is None:
        descr, shape, fortran = _fields(raw, major)
        pickled = plain_descr(descr) is None and bool(_dtype(descr).hasobject)  # (any other descr checked here)
        found = NpyHeader(descr, shape, fortran, prefix + length, pickled)
        if len(_HEADERS) < _MAX_PARSED:
            _HEADERS[raw, major] = found
    return found


_HEADERS: dict[tuple[bytes, int], NpyHeader] = {}
"""Headers already read (an npz of many tensors of one shape repeats one header: one record for all)."""


def npy_header_of(data: bytes | memoryview) -> NpyHeader:
    """:func:`read_npy_header` of the bytes ``data`` starts with (a member read back whole)."""
    view = memoryview(data)
    if len(view) >= 10 and view[6] == 1 and bytes(view[:6]) == MAGIC:  # version 1.0: the header's bytes are
        (length,) = struct.unpack_from("<H", view, 8)  # the key of the headers already read
        found = _HEADERS.get((bytes(view[10:10 + length]), 1))
        if found is not None:
            return found
    at = 0

    def read(n: int) -> bytes:
        nonlocal at
        piece = bytes(view[at:at + n])
        at += len(piece)
        return piece

    return read_npy_header(read)

_MAX_PARSED = 4096
"""Headers (and dtypes) kept once read."""


def _fields(raw: bytes, major: int) -> tuple[Any, tuple[int, ...], bool]:
    """``(descr, shape, fortran_order)`` of the header text ``raw`` (a .npy of version ``major``), checked as a
    reader checks them but for the descr, which is as written (a string, or a list for a structured dtype)."""
    text = raw.decode("utf-8" if major == 3 else "latin-1", "replace")
    plain = _plain_fields(text)
    if plain is not None:
        return plain
    header = _literal(text)
    if not isinstance(header, dict) or set(header) != {"descr", "fortran_order", "shape"}:
        raise NpyError("the .npy header is not a dict of descr, fortran_order and shape")
    if not isinstance(header["fortran_order"], bool):
        raise NpyError("the .npy header's fortran_order is not True or False")
    return header["descr"], _shape(header["shape"]), header["fortran_order"]


_DESCR_CHARS = frozenset("<>|=abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_DIGITS = frozenset("0123456789")


def _plain_fields(text: str) -> tuple[str, tuple[int, ...], bool] | None:
    """``(descr, shape, fortran_order)`` of a header in the one form numpy writes for a plain dtype
    (``{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }``, then spaces and a newline), read without
    :mod:`ast` (whose import is a tenth of a small write's); None for any other text (:func:`_literal` reads it)."""
    head = "{'descr': '"
    body = text.rstrip(" \n")
    if not body.startswith(head) or not body.endswith("), }"):
        return None
    end = body.find("'", len(head))
    descr = body[len(head):end]
    if end < 0 or not descr or not _DESCR_CHARS.issuperset(descr):
        return None
    rest = body[end:-4]  # from the descr's closing quote to the shape's closing parenthesis
    for fortran in (False, True):
        middle = f"', 'fortran_order': {fortran}, 'shape': ("
        if rest.startswith(middle):
            break
    else:
        return None
    inner = rest[len(middle):]
    parts = [] if not inner else [inner[:-1]] if inner.endswith(",") else inner.split(", ")
    if (len(parts) == 1) != inner.endswith(",") or not all(
            p and _DIGITS.issuperset(p) and (p[0] != "0" or p == "0") for p in parts):  # (05: not a Python int)
        return None
    return descr, _shape(tuple(map(int, parts))), fortran
