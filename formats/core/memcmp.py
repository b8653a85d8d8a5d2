"""Whether two buffers hold the same bytes: one ``memcmp``, without copying and without the GIL.

Python has no such call for arbitrary buffers: ``memoryview == memoryview`` compares element by
element (a few hundred MB/s), and ``bytearray == buffer`` (one ``memcmp``) first needs a copy, made
while holding the GIL. Here the C library's ``memcmp`` is called through :mod:`ctypes` on the
buffers' own memory (``PyObject_GetBuffer``), so comparisons of memory-mapped tensors run on every
core at memory speed. Where that is unavailable (another Python implementation, no C library
symbols), the copy-then-compare fallback gives the same answers. Buffers under :data:`SMALL` bytes are compared
that way too: copying them costs less than the call through ctypes, and a small checkpoint's read-back no import
of ctypes (7.5 million instructions, a fifth of Python's own start-up).
"""
from __future__ import annotations

import _thread

__all__ = ["same_bytes", "SMALL"]

SMALL = 1 << 16
"""Buffers shorter than this are copied and compared, without loading ctypes."""


def _ctypes_comparer():  # type: ignore[no-untyped-def]
    import ctypes

    class PyBuffer(ctypes.Structure):  # Py_buffer, part of the stable ABI since Python 3.11
        _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.c_void_p), ("len", ctypes.c_ssize_t),
                    ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                    ("format", ctypes.c_char_p), ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                    ("suboffsets", ctypes.c_void_p), ("internal", ctypes.c_void_p)]

    # our own function objects, with addresses for arguments: ctypes.pythonapi's are shared with every other
    # user of ctypes in the process, whose argtypes may differ
    api = ctypes.PyDLL(None)
    get_buffer = api.PyObject_GetBuffer
    get_buffer.argtypes = (ctypes.py_object, ctypes.c_void_p, ctypes.c_int)
    get_buffer.restype = ctypes.c_int
    release = api.PyBuffer_Release
    release.argtypes = (ctypes.c_void_p,)
    release.restype = None
    memcmp = ctypes.CDLL(None).memcmp  # a foreign call: ctypes releases the GIL around it
    memcmp.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
    memcmp.restype = ctypes.c_int

    def compare(a: object, b: object) -> bool:
        x, y = PyBuffer(), PyBuffer()
        get_buffer(a, ctypes.addressof(x), 0)  # PyBUF_SIMPLE: contiguous bytes (raises otherwise)
        try:
            get_buffer(b, ctypes.addressof(y), 0)
            try:
                return x.len == y.len and (x.len == 0 or memcmp(x.buf, y.buf, x.len) == 0)
            finally:
                release(ctypes.addressof(y))
        finally:
            release(ctypes.addressof(x))

    if not compare(b"ckpt", bytearray(b"ckpt")) or compare(b"ckpt", b"ckpT"):
        raise OSError("memcmp gives wrong answers")
    return compare


def _copying_compare(a: object, b: object) -> bool:
    return bytearray(a) == b  # type: ignore[call-overload]


def _load():  # type: ignore[no-untyped-def]
    try:
        return _ctypes_comparer()
    except Exception:  # pragma: no cover - not CPython, or no C library symbols
        return _copying_compare


_compare = None
_LOADING = _thread.allocate_lock()


def same_bytes(a: object, b: object) -> bool:
    """Whether the contiguous buffers ``a`` and ``b`` (bytes, bytearray, memoryview, mmap...) are equal.
    Safe from any thread (the first calls from several threads at once set it up once)."""
    global _compare
    if memoryview(a).nbytes < SMALL:  # type: ignore[arg-type]
        return _copying_compare(a, b)
    if _compare is None:
        with _LOADING:
            if _compare is None:
                _compare = _load()
    return _compare(a, b)
