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

__all__ = ["NpyHeader", "NpyFields", "read_npy_header", "npy_header_of", "npy_fields_of", "NpyError",
           "MAX_HEADER_BYTES"]

MAGIC = b"\x93NUMPY"
MAX_HEADER_BYTES = 65536
"""Longest header accepted (numpy itself refuses more than 10,000 bytes unless told otherwise)."""


class NpyError(ValueError):
    """The bytes are not a ``.npy`` header this reader accepts (the message says why)."""


@record(frozen=True)
class NpyHeader:
    """A parsed header: numpy dtype, shape, Fortran order, the header's total size in bytes, and
    whether the dtype holds pickled Python objects."""

    dtype: Any
    shape: tuple[int, ...]
    fortran_order: bool
    size: int
    pickled: bool

    @property
    def nbytes(self) -> int:
        """Bytes of data that follow the header."""
        return math.prod(self.shape) * self.dtype.itemsize


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


def _dtype(descr: Any) -> Any:
    import numpy as np

    try:
        if isinstance(descr, str):
            return np.dtype(descr)
        return np.lib.format.descr_to_dtype(descr)
    except (TypeError, ValueError, KeyError, IndexError, RecursionError) as exc:
        raise NpyError(f"the .npy header's descr {str(descr)[:80]!r} is not a dtype ({exc})") from None


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
        dtype, shape, fortran = _parsed(raw, major)
        found = NpyHeader(dtype, shape, fortran, prefix + length, bool(dtype.hasobject))
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

_PARSED: dict[tuple[bytes, int], tuple[Any, tuple[int, ...], bool]] = {}
"""Headers already parsed (an npz of many tensors of one shape repeats one header: parsed once)."""
_MAX_PARSED = 4096


def _parsed(raw: bytes, major: int) -> tuple[Any, tuple[int, ...], bool]:
    """``(dtype, shape, fortran_order)`` of the header text ``raw`` (a .npy of version ``major``)."""
    found = _PARSED.get((raw, major))
    if found is not None:
        return found
    descr, shape, fortran = _fields(raw, major)
    found = _dtype(descr), shape, fortran
    if len(_PARSED) < _MAX_PARSED:
        _PARSED[raw, major] = found
    return found


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


@record(frozen=True)
class NpyFields:
    """A header's fields as written, read without numpy (a writer's read-back): ``descr`` (``'<f4'``, ``'|S5'``;
    a list for a structured dtype), ``shape``, ``fortran_order``, and the header's total size in bytes."""

    descr: Any
    shape: tuple[int, ...]
    fortran_order: bool
    size: int


_FIELDS: dict[bytes, NpyFields] = {}
"""Headers whose fields were read already (a member of an npz of many tensors of one shape: one record for all)."""


def npy_fields_of(data: bytes | memoryview) -> NpyFields:
    """The header's fields at the start of ``data`` (a member read back whole), parsed as :func:`read_npy_header`
    parses them (magic, version, a bounded dict literal) without making a numpy dtype: numpy is not imported."""
    view = memoryview(data)
    if len(view) < 10 or bytes(view[:6]) != MAGIC:
        raise NpyError("not a .npy array (no \\x93NUMPY magic)")
    major = view[6]
    if major == 1:
        (length,), prefix = struct.unpack_from("<H", view, 8), 10
    elif major in (2, 3) and len(view) >= 12:
        (length,), prefix = struct.unpack_from("<I", view, 8), 12
    else:
        raise NpyError(f"unknown .npy format version {major}.{view[7]}")
    if length > MAX_HEADER_BYTES:
        raise NpyError(f"the .npy header claims {length:,} bytes (at most {MAX_HEADER_BYTES:,} accepted)")
    if len(view) < prefix + length:
        raise NpyError("truncated .npy header")
    raw = bytes(view[:prefix + length])
    found = _FIELDS.get(raw)
    if found is None:
        found = NpyFields(*_fields(raw[prefix:], major), prefix + length)
        if len(_FIELDS) < _MAX_PARSED:
            _FIELDS[raw] = found
    return found
