"""The ``.npy`` header, parsed without trusting it: magic, version, a bounded header dict read with
:func:`ast.literal_eval` (literals only: nothing is executed or unpickled), and a dtype that holds
no Python objects.

Layout (numpy's ``format.py``): ``\\x93NUMPY``, major and minor version bytes, the header length
(2 bytes little-endian in version 1, 4 bytes in versions 2 and 3), then the header: a Python dict
literal ``{'descr': ..., 'fortran_order': bool, 'shape': tuple}`` padded with spaces and ``\\n``.
"""
from __future__ import annotations

import ast
import math
import struct

from formats.core.records import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["NpyHeader", "read_npy_header", "npy_header_of", "NpyError", "MAX_HEADER_BYTES"]

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
    text = raw.decode("utf-8" if major == 3 else "latin-1", "replace")
    header = _literal(text)
    if not isinstance(header, dict) or set(header) != {"descr", "fortran_order", "shape"}:
        raise NpyError("the .npy header is not a dict of descr, fortran_order and shape")
    if not isinstance(header["fortran_order"], bool):
        raise NpyError("the .npy header's fortran_order is not True or False")
    found = _dtype(header["descr"]), _shape(header["shape"]), header["fortran_order"]
    if len(_PARSED) < _MAX_PARSED:
        _PARSED[raw, major] = found
    return found
