"""Pieces every writer shares: temporary names beside the output, fsync, and a free-space check.

Writers write under :func:`temp_name`, flush with :func:`fsync_file`, rename into place and
:func:`fsync_dir`; on any failure they remove the temporary. :func:`ensure_space` refuses up front
when the output's file system cannot hold what is about to be written, so a full disk is a clean
error before any byte is written (HDF5 in particular does not fail gracefully mid-file).
"""
from __future__ import annotations

import contextlib
import errno
import os
import re
from collections.abc import Iterator

__all__ = ["temp_name", "is_temp_name", "fsync_file", "fsync_dir", "ensure_space", "atomic_output", "refuse_url"]

MARGIN = 1 << 20  # metadata, headers and index beyond the tensor bytes


def temp_name(out: str) -> str:
    """A fresh temporary name in the output's directory."""
    directory = os.path.dirname(os.path.abspath(out))
    return os.path.join(directory, f".{os.path.basename(out)}.tmp-{os.urandom(4).hex()}")


_TEMP = re.compile(r"^\..+\.tmp-[0-9a-f]{8}")


def is_temp_name(path: str) -> bool:
    """Whether ``path`` (or a file named after it, ``<temp>.index``) is a :func:`temp_name`: a write in
    progress or one that was killed, never an output."""
    return bool(_TEMP.match(os.path.basename(path.rstrip(os.sep))))


def fsync_file(path: str) -> None:
    """Flush a closed file's data to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(directory: str) -> None:
    """Flush a directory entry (a rename) to disk where the platform allows."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory handles
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def ensure_space(directory: str, needed: int) -> None:
    """Raise ``OSError(ENOSPC)`` when ``directory``'s file system has less than ``needed`` bytes free."""
    try:
        st = os.statvfs(directory)
    except (OSError, AttributeError):  # pragma: no cover - no statvfs: let the write itself fail
        return
    free = st.f_bavail * st.f_frsize
    if needed + MARGIN > free:
        raise OSError(errno.ENOSPC, f"No space left on device ({needed + MARGIN:,} bytes needed, "
                      f"{free:,} free in {directory})")


@contextlib.contextmanager
def atomic_output(out: str, needed: int = 0) -> Iterator[str]:
    """Yield a temporary path beside ``out`` to write (and verify) one file; on leaving the block it is
    flushed and renamed to ``out``; on any error it is removed. ``needed`` bytes are checked first."""
    refuse_url(out)
    directory = os.path.dirname(os.path.abspath(out))
    os.makedirs(directory, exist_ok=True)
    ensure_space(directory, needed)
    temp = temp_name(out)
    try:
        yield temp
        fsync_file(temp)
        os.replace(temp, out)
        fsync_dir(directory)
    except BaseException:
        if os.path.lexists(temp):
            os.unlink(temp)
        raise


def refuse_url(out: str) -> None:
    """Single-file outputs (Keras HDF5, npz, safetensors, extracted arrays) are written locally only."""
    from formats.io.storage import is_url

    if is_url(out):
        from formats.core.errors import UnsupportedError

        raise UnsupportedError(out, "this output is written to local disk only; write it locally and upload it "
                               "(TensorFlow bundles can be written to a URL directly)")
