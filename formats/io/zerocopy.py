"""Bytes moved between files without passing through Python: kernel copies and hard links.

:func:`copy_range` asks the kernel to copy (``copy_file_range``: no user-space buffer, and a
shared extent - a reflink - where the file system can), falling back to ``sendfile`` and then to
plain reads and writes where the platform or the file systems refuse. :func:`try_link` hard-links
a file under a new name when both names are on one file system. Neither ever opens the source
for writing.
"""
from __future__ import annotations

import errno
import os

__all__ = ["copy_range", "try_link"]

_UNSUPPORTED = {errno.EXDEV, errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EBADF, errno.EPERM, errno.ENOTSUP}
_STEP = 1 << 30  # bytes asked of the kernel per call (each call may copy less)


def copy_range(src_fd: int, dst_fd: int, size: int, src_offset: int, dst_offset: int) -> None:
    """Copy ``size`` bytes from ``src_offset`` of ``src_fd`` to ``dst_offset`` of ``dst_fd`` (file offsets
    of neither descriptor move). Raises ``OSError`` when the source ends early."""
    done = 0
    if hasattr(os, "copy_file_range"):
        done = _kernel_copy(src_fd, dst_fd, size, src_offset, dst_offset)
    if done < size:
        _copy_by_reads(src_fd, dst_fd, size - done, src_offset + done, dst_offset + done)


def _kernel_copy(src_fd: int, dst_fd: int, size: int, src_offset: int, dst_offset: int) -> int:
    """Bytes copied by ``copy_file_range`` before it finished or declined (0 when it is unsupported here)."""
    done = 0
    while done < size:
        try:
            n = os.copy_file_range(src_fd, dst_fd, min(size - done, _STEP), src_offset + done, dst_offset + done)
        except OSError as exc:
            if exc.errno in _UNSUPPORTED:
                return done
            raise
        if n == 0:
            raise OSError(errno.EIO, f"the source ended {size - done} bytes early")
        done += n
    return done


def _copy_by_reads(src_fd: int, dst_fd: int, size: int, src_offset: int, dst_offset: int) -> None:
    buffer = bytearray(min(size, 8 << 20))
    view = memoryview(buffer)
    done = 0
    while done < size:
        n = os.preadv(src_fd, [view[:min(len(buffer), size - done)]], src_offset + done)
        if n == 0:
            raise OSError(errno.EIO, f"the source ended {size - done} bytes early")
        written = 0
        while written < n:
            written += os.pwrite(dst_fd, view[written:n], dst_offset + done + written)
        done += n


def try_link(src: str, dst: str) -> bool:
    """Hard-link ``src`` as ``dst`` (which must not exist); False when the two are not on one file system or
    the file system has no hard links."""
    try:
        os.link(src, dst, follow_symlinks=True)
    except OSError as exc:
        if exc.errno in (errno.EXDEV, errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK):
            return False
        raise
    return True
