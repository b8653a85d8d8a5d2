"""CRC32C (Castagnoli) with TensorFlow's masking, hardware-accelerated via the ``crc32c`` package.

The ``crc32c`` package's ``__init__`` imports ``importlib.metadata`` (tens of
milliseconds); ckpt loads its compiled extension directly so start-up stays fast,
falling back to the ordinary import.
"""
from __future__ import annotations

import os
from _thread import _local
from collections.abc import Callable

_MASK_DELTA = 0xA282EAD8
_BUFFER = 1 << 20
_buffers = _local()


def _load() -> Callable[..., int]:
    try:
        import importlib.machinery
        import importlib.util
        import os
        import sys

        spec = importlib.util.find_spec("crc32c")
        if spec is None or not spec.submodule_search_locations:
            raise ImportError
        folder = list(spec.submodule_search_locations)[0]
        for name in os.listdir(folder):
            if name.startswith("_crc32c.") and name.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
                path = os.path.join(folder, name)
                loader = importlib.machinery.ExtensionFileLoader("crc32c._crc32c", path)
                ext_spec = importlib.util.spec_from_loader("crc32c._crc32c", loader)
                assert ext_spec is not None
                module = importlib.util.module_from_spec(ext_spec)
                loader.exec_module(module)
                sys.modules.setdefault("crc32c._crc32c", module)
                return module.crc32c  # type: ignore[no-any-return]
        raise ImportError
    except Exception:  # pragma: no cover - unusual installs
        import crc32c

        return crc32c.crc32c  # type: ignore[no-any-return]


crc32c: Callable[..., int] = _load()
"""``crc32c(data, value=0) -> int``: extend a CRC32C over any bytes-like object (an mmap slice too)."""


def mask(crc: int) -> int:
    """TensorFlow/LevelDB's masked form of a CRC, as stored in files."""
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def unmask(masked: int) -> int:
    """Inverse of :func:`mask`."""
    rot = (masked - _MASK_DELTA) & 0xFFFFFFFF
    return ((rot >> 17) | (rot << 15)) & 0xFFFFFFFF


def crc32c_range(fd: int, offset: int, size: int, value: int = 0) -> int | None:
    """Extend ``value`` over ``size`` bytes of an open file from ``offset``; None when the file ends first.

    The bytes are read with ``pread`` into this thread's page-aligned buffer, so nothing is mapped (no
    page faults, no page-table teardown) and the whole loop runs without the GIL on every thread. (The
    buffer is an anonymous map: the kernel copies into an unaligned ``bytearray`` several times slower.)"""
    view = getattr(_buffers, "view", None)
    if view is None:
        import mmap

        view = _buffers.view = memoryview(mmap.mmap(-1, _BUFFER))
    end = offset + size
    while offset < end:
        n = os.preadv(fd, [view[:min(_BUFFER, end - offset)]], offset)
        if n <= 0:
            return None
        value = crc32c(view[:n], value)
        offset += n
    return value
