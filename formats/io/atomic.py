"""Pieces every writer shares: temporary names beside the output, fsync, and a free-space check.

Writers write under :func:`temp_name`, flush with :func:`fsync_file`, rename into place and
:func:`fsync_dir`; on any failure they remove the temporary, and the parent directories
:func:`make_parents` created for it (:func:`remove_created`), so an interrupted write leaves
nothing behind. :func:`ensure_space` refuses up front when the output's file system cannot hold
what is about to be written, so a full disk is a clean error before any byte is written (HDF5 in
particular does not fail gracefully mid-file). What the
operating system refuses while an output is written surfaces as
:class:`~formats.core.errors.OutputWriteError` (:func:`write_error`).
"""
from __future__ import annotations

import contextlib
import errno
import os
import re
from collections.abc import Iterator

from formats.core.errors import CheckpointError, InvalidOutputError, OutputWriteError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["temp_name", "is_temp_name", "fsync_file", "fsync_dir", "ensure_space", "atomic_output", "refuse_url",
           "write_error", "WRITE_ERRNOS", "make_parents", "remove_created", "hold", "remove_stale_temps"]

MARGIN = 1 << 20  # metadata, headers and index beyond the tensor bytes
WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS})  # only writing fails this way


def temp_name(out: str) -> str:
    """A fresh temporary name in the output's directory."""
    directory = os.path.dirname(os.path.abspath(out))
    return os.path.join(directory, f".{os.path.basename(out)}.tmp-{os.urandom(4).hex()}")


_TEMP = re.compile(r"^\..+\.tmp-[0-9a-f]{8}")


def is_temp_name(path: str) -> bool:
    """Whether ``path`` (or a file named after it, ``<temp>.index``) is a :func:`temp_name`: a write in
    progress or one that was killed, never an output."""
    return bool(_TEMP.match(os.path.basename(path.rstrip(os.sep))))


def hold(fd: int) -> None:
    """Mark a write in progress: an exclusive lock on one of its temporary files (``fd``), held until the
    file is closed or the process ends - a killed writer's lock goes with it. :func:`remove_stale_temps`
    leaves the files of a held write alone."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock: stale files are then told by age
        return
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


STALE_AGE = 24 * 3600
"""Where locks are unavailable, temporary files older than this (seconds) are taken as a killed write's."""


def remove_stale_temps(out: str) -> list[str]:
    """Remove what killed writes of ``out`` left: the :func:`temp_name` files beside it (``.<name>.tmp-*``)
    whose write no longer runs (no file of it is :func:`hold`-locked). Returns the files removed."""
    directory, base = os.path.split(os.path.abspath(out))
    stem = f".{base}.tmp-"
    try:
        names = [n for n in os.listdir(directory) if n.startswith(stem) and _TEMP.match(n)]
    except OSError:
        return []
    writes: dict[str, list[str]] = {}
    for name in names:
        writes.setdefault(name[:len(stem) + 8], []).append(os.path.join(directory, name))
    removed: list[str] = []
    for files in writes.values():
        if not any(_in_progress(f) for f in files):
            for f in files:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(f)
                    removed.append(f)
    return removed


def _in_progress(path: str) -> bool:
    """Whether a running write holds ``path`` (see :func:`hold`)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover
        import time

        return time.time() - os.lstat(path).st_mtime < STALE_AGE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False  # gone, a dangling link or a directory: nobody writes it through this name
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


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
    """Raise :class:`OutputWriteError` (errno ``ENOSPC``) when ``directory``'s file system has less than
    ``needed`` bytes free."""
    try:
        st = os.statvfs(directory)
    except (OSError, AttributeError):  # pragma: no cover - no statvfs: let the write itself fail
        return
    free = st.f_bavail * st.f_frsize
    if needed + MARGIN > free:
        raise OutputWriteError("", f"No space left on device ({needed + MARGIN:,} bytes needed, "
                               f"{free:,} free in {directory})", errno=errno.ENOSPC)


def write_error(exc: OSError, out: str) -> OutputWriteError:
    """``exc``, raised by the operating system while ``out`` was written, as the library's output error."""
    return OutputWriteError(out, exc.strerror or str(exc), errno=exc.errno)


def make_parents(path: str) -> list[str]:
    """Create the missing directories above ``path``; return those created, outermost first."""
    missing: list[str] = []
    directory = os.path.dirname(os.path.abspath(path))
    while not os.path.isdir(directory) and os.path.dirname(directory) != directory:
        missing.append(directory)
        directory = os.path.dirname(directory)
    created: list[str] = []
    try:
        for folder in reversed(missing):
            try:
                os.mkdir(folder)
            except FileExistsError:  # made meanwhile by someone else (or a file: the next mkdir says so)
                continue
            created.append(folder)
    except BaseException:
        remove_created(created)
        raise
    return created


def remove_created(directories: list[str]) -> None:
    """Remove the directories :func:`make_parents` created, innermost first, where they are still empty."""
    for folder in reversed(directories):
        try:
            os.rmdir(folder)
        except OSError:  # not empty (or gone): leave it
            return


@contextlib.contextmanager
def atomic_output(out: str, needed: int = 0) -> Iterator[str]:
    """Yield a temporary path beside ``out`` to write (and verify) one file; on leaving the block it is
    flushed and renamed to ``out``; on any error it is removed, with the directories created for it.
    ``needed`` bytes are checked first. What killed writes of ``out`` left is removed first; this
    write marks itself as running with a held ``<temp>.lock`` (see :func:`hold`)."""
    refuse_url(out)
    directory = os.path.dirname(os.path.abspath(out))
    try:
        created = make_parents(out)
    except OSError as exc:
        raise write_error(exc, out) from exc
    remove_stale_temps(out)
    temp = temp_name(out)
    lock = None
    try:
        lock = open(temp + ".lock", "xb")  # noqa: SIM115 - closed below
        hold(lock.fileno())
        ensure_space(directory, needed)
        yield temp
        fsync_file(temp)
        os.replace(temp, out)
        _release(lock, temp)
        fsync_dir(directory)
    except BaseException as exc:
        if os.path.lexists(temp):
            os.unlink(temp)
        _release(lock, temp)
        remove_created(created)
        if _is_write_error(exc, temp, out):
            raise write_error(exc, out) from exc  # type: ignore[arg-type]
        raise


def _release(lock: Any, temp: str) -> None:
    """Close and remove a write's lock file (done once; a second call does nothing)."""
    if lock is not None and not lock.closed:
        lock.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp + ".lock")


def _is_write_error(exc: BaseException, temp: str, out: str) -> bool:
    """An OSError about the output (its temporary, or a kind only writing raises), not about an input."""
    if not isinstance(exc, OSError) or isinstance(exc, CheckpointError):
        return False
    return exc.errno in WRITE_ERRNOS or exc.filename in (temp, out)


def refuse_url(out: str) -> None:
    """Single-file outputs (Keras HDF5, npz, safetensors, extracted arrays) are written locally only."""
    from formats.io.storage import is_url

    if is_url(out):
        raise InvalidOutputError(out, "this output is written to local disk only; write it locally and upload it "
                                 "(TensorFlow bundles can be written to a URL directly)")
