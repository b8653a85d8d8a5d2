"""CRC32C (Castagnoli) with TensorFlow's masking, hardware-accelerated via the ``crc32c`` package.

The ``crc32c`` package's ``__init__`` imports ``importlib.metadata`` (tens of
milliseconds); ckpt loads its compiled extension directly so start-up stays fast,
falling back to the ordinary import.
"""
from __future__ import annotations

import os
from _thread import _local

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from array import array
    from collections.abc import Callable

MASK_DELTA = 0xA282EAD8
"""What TensorFlow/LevelDB add to a rotated CRC to mask it."""
_BUFFER = 1 << 20
_buffers = _local()


def _load() -> Callable[..., int]:
    try:
        # The import system's own classes (what importlib.machinery/util re-export), without importing
        # importlib.util and importlib._abc (start-up).
        import _frozen_importlib as bootstrap
        import _frozen_importlib_external as external
        import sys

        spec = external.PathFinder.find_spec("crc32c")
        if spec is None or not spec.submodule_search_locations:
            raise ImportError
        folder = list(spec.submodule_search_locations)[0]
        for name in os.listdir(folder):
            if name.startswith("_crc32c.") and name.endswith(tuple(external.EXTENSION_SUFFIXES)):
                path = os.path.join(folder, name)
                loader = external.ExtensionFileLoader("crc32c._crc32c", path)
                ext_spec = bootstrap.spec_from_loader("crc32c._crc32c", loader)
                if ext_spec is None:  # never, given a loader
                    raise ImportError
                module = bootstrap.module_from_spec(ext_spec)
                loader.exec_module(module)
                sys.modules.setdefault("crc32c._crc32c", module)
                return module.crc32c
        raise ImportError
    except Exception:  # pragma: no cover - unusual installs
        import crc32c

        return crc32c.crc32c


crc32c: Callable[..., int] = _load()
"""``crc32c(data, value=0) -> int``: extend a CRC32C over any bytes-like object (an mmap slice too)."""


def mask(crc: int) -> int:
    """TensorFlow/LevelDB's masked form of a CRC, as stored in files."""
    return (((crc >> 15) | (crc << 17)) + MASK_DELTA) & 0xFFFFFFFF


def unmask(masked: int) -> int:
    """Inverse of :func:`mask`."""
    rot = (masked - MASK_DELTA) & 0xFFFFFFFF
    return ((rot >> 17) | (rot << 15)) & 0xFFFFFFFF


def mask_all(crcs: list[int]) -> array:
    """:func:`mask` of each of ``crcs``, as an ``array("Q")``, without a Python step per value: the values are
    laid in 64-bit lanes of one integer, rotated and offset lane by lane (each lane's sum stays below 2**33, so no
    carry reaches the next lane) and cut back to 32 bits (about a sixth of :func:`mask`'s time per value)."""
    from array import array

    n = len(crcs)

    def lanes(value: int) -> int:
        return int.from_bytes(value.to_bytes(8, "little") * n, "little")

    low17, low32 = lanes((1 << 17) - 1), lanes(0xFFFFFFFF)
    packed = int.from_bytes(array("Q", crcs).tobytes(), "little")
    rotated = (packed >> 15) & low17 | (packed << 17) & (low32 ^ low17)
    out = array("Q")
    out.frombytes(((rotated + lanes(MASK_DELTA)) & low32).to_bytes(8 * n, "little"))
    return out


def _buffer(slot: str) -> memoryview:
    """This thread's page-aligned read buffer ``slot`` (an anonymous map: the kernel copies into an unaligned
    ``bytearray`` several times slower)."""
    view = getattr(_buffers, slot, None)
    if view is None:
        import mmap

        view = memoryview(mmap.mmap(-1, _BUFFER))
        setattr(_buffers, slot, view)
    return view


def crc32c_range(fd: int, offset: int, size: int, value: int = 0,
                 each: Callable[[memoryview, int], None] | None = None) -> int | None:
    """Extend ``value`` over ``size`` bytes of an open file from ``offset``; None when the file ends first.
    ``each(piece, at)`` is shown every piece read (``at``: its place from ``offset``) before the next one.

    The bytes are read with ``pread`` into this thread's page-aligned buffer, so nothing is mapped (no
    page faults, no page-table teardown) and the whole loop runs without the GIL on every thread. (The
    buffer is an anonymous map: the kernel copies into an unaligned ``bytearray`` several times slower.)"""
    view = _buffer("a")
    start, end = offset, offset + size
    while offset < end:
        n = os.preadv(fd, [view[:min(_BUFFER, end - offset)]], offset)
        if n <= 0:
            return None
        value = crc32c(view[:n], value)
        if each is not None:
            each(view[:n], offset - start)
        offset += n
    return value


def _same_file(fa: int, fb: int) -> bool:
    sa, sb = os.fstat(fa), os.fstat(fb)
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def same_ranges(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool | None:
    """Whether two file ranges ``(fd, offset, size, crc32c)`` hold the same bytes, each checked against its
    CRC32C on the way; None when a CRC does not match or a file ends early (the caller reads again the
    usual way, which says what is wrong). Read with ``pread`` into this thread's buffers, compared with one
    ``memcmp`` per piece: no mapping and no GIL. A difference ends the comparison early, unchecked."""
    (fa, oa, size, crc_a), (fb, ob, size_b, crc_b) = a, b
    if size != size_b:
        return False
    if oa == ob and _same_file(fa, fb):  # one range of one file (a checkpoint compared with itself)
        return crc_a == crc_b and crc32c_range(fa, oa, size) == crc_a or None
    got = _compare_ranges(fa, oa, fb, ob, size, True)
    if got is None or got is False:
        return got
    return True if got == (crc_a, crc_b) else None


def same_bytes_ranges(a: tuple[int, int, int], b: tuple[int, int, int]) -> bool | None:
    """Whether two file ranges ``(fd, offset, size)`` hold the same bytes (checked by the caller: no CRC32C is
    computed), read as :func:`same_ranges` reads them; None when a file ends early."""
    (fa, oa, size), (fb, ob, size_b) = a, b
    if size != size_b:
        return False
    if oa == ob and _same_file(fa, fb):
        return True
    got = _compare_ranges(fa, oa, fb, ob, size, False)
    return got if got is None or got is False else True


def _compare_ranges(fa: int, oa: int, fb: int, ob: int, size: int, crcs: bool) -> tuple[int, int] | bool | None:
    """The CRC32Cs of two ranges of ``size`` bytes holding the same bytes (``(0, 0)`` unless ``crcs``); False at
    their first unequal piece; None when a file ends early."""
    from formats.core.memcmp import same_bytes

    x, y = _buffer("a"), _buffer("b")
    got_a = got_b = 0
    done = 0
    while done < size:
        n = min(_BUFFER, size - done)
        if os.preadv(fa, [x[:n]], oa + done) != n or os.preadv(fb, [y[:n]], ob + done) != n:
            return None
        if not same_bytes(x[:n], y[:n]):
            return False
        if crcs:
            got_a, got_b = crc32c(x[:n], got_a), crc32c(y[:n], got_b)
        done += n
    return got_a, got_b
