"""Pieces every writer shares: temporary names beside the output, fsync, and a free-space check.

Writers write under :func:`temp_name`, flush with :func:`fsync_file`, rename into place and
:func:`fsync_dir`; on any failure they remove the temporary, and the parent directories
:func:`make_parents` created for it (:func:`remove_created`), so an interrupted write leaves
nothing behind. A temporary's name carries the writing process's host and pid, so what a killed
writer left behind (nothing can remove it then) is found by the next write of the same output and
removed (:func:`sweep_temporaries`; :func:`atomic_output` does it first). :func:`ensure_space` refuses up front when the output's file system cannot hold
what is about to be written, so a full disk is a clean error before any byte is written (HDF5 in
particular does not fail gracefully mid-file). What the
operating system refuses while an output is written surfaces as
:class:`~formats.core.errors.OutputWriteError` (:func:`write_error`).
"""
from __future__ import annotations

import errno
import os

from formats.core.errors import CheckpointError, InvalidOutputError, OutputWriteError

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Iterator
    from contextlib import AbstractContextManager

__all__ = ["temp_name", "is_temp_name", "sweep_temporaries", "remove_tree", "fsync_file", "fsync_dir", "ensure_space",
           "atomic_output", "refuse_url", "write_error", "WRITE_ERRNOS", "make_parents", "remove_created"]

MARGIN = 1 << 20  # metadata, headers and index beyond the tensor bytes
WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS})  # only writing fails this way


def _host() -> str:
    """This host in temporary names: 8 hex digits of the sha1 of its name (without importing socket and
    OpenSSL's hashlib, which would cost a write of a few files more than the write itself)."""
    try:
        name = os.uname().nodename  # what socket.gethostname() returns on POSIX
    except AttributeError:  # pragma: no cover - Windows
        import socket

        name = socket.gethostname()
    try:
        from _sha1 import sha1  # type: ignore[import-not-found]  # CPython's built-in implementation (no stubs)
    except ImportError:  # pragma: no cover - a build without it
        from hashlib import sha1
    return sha1(name.encode("utf-8", "surrogateescape")).hexdigest()[:8]


def temp_name(out: str) -> str:
    """A fresh temporary name in the output's directory: ``.<name>.tmp-<random>-<host>-<pid>``."""
    directory = os.path.dirname(os.path.abspath(out))
    return os.path.join(directory, f".{os.path.basename(out)}.tmp-{os.urandom(4).hex()}-{_host()}-{os.getpid()}")


_TEMP = r"^\..+\.tmp-[0-9a-f]{8}"  # compiled only for a name with ".tmp-" (start-up)


class ignoring:  # noqa: N801 - a drop-in for contextlib.suppress
    """``with ignoring(OSError): ...``: :func:`contextlib.suppress`, without importing contextlib on every
    bundle write (start-up)."""

    def __init__(self, *exceptions: type[BaseException]) -> None:
        self.exceptions = exceptions

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: object, tb: object) -> bool:
        return kind is not None and issubclass(kind, self.exceptions)


def sweep_temporaries(out: str) -> list[str]:
    """Remove what killed writers of ``out`` left beside it: temporaries (files, staging directories, a
    bundle's ``<temp>.index``/``<temp>.data-*``) whose name says this host and a process that no longer
    exists. A live writer's temporaries, another host's and foreign names are never touched. Returns the
    paths removed."""
    directory = os.path.dirname(os.path.abspath(out))
    lead = f".{os.path.basename(out)}.tmp-"
    try:
        names = [n for n in os.listdir(directory) if n.startswith(lead)]
    except OSError:
        return []
    if not names:  # nothing to match: re stays unimported (start-up)
        return []
    import re

    owned = re.compile(rf"^\.{re.escape(os.path.basename(out))}\.tmp-[0-9a-f]{{8}}-{_host()}-(\d+)(\..*)?$")
    removed = []
    for name in names:
        match = owned.match(name)
        if match is None or _alive(int(match.group(1))):
            continue
        path = os.path.join(directory, name)
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                remove_tree(path)
            else:
                os.unlink(path)
        except OSError:  # removed meanwhile, or not ours to remove
            continue
        removed.append(path)
    return removed


def remove_tree(path: str) -> None:
    """Remove a directory and everything under it, however deep (no recursion; symlinks are removed, never
    followed); what is already gone is fine."""
    folders, todo = [], [path]
    while todo:
        folder = todo.pop()
        folders.append(folder)
        try:
            entries = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                todo.append(entry.path)
            else:
                with ignoring(FileNotFoundError):
                    os.unlink(entry.path)
    for folder in reversed(folders):
        with ignoring(FileNotFoundError):
            os.rmdir(folder)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists (this process counts; unknown means alive)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True
    return True


def is_temp_name(path: str) -> bool:
    """Whether ``path`` (or a file named after it, ``<temp>.index``) is a :func:`temp_name`: a write in
    progress or one that was killed, never an output."""
    name = os.path.basename(path.rstrip(os.sep))
    if ".tmp-" not in name:
        return False
    import re

    return bool(re.match(_TEMP, name))


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


def atomic_output(out: str, needed: int = 0) -> AbstractContextManager[str]:
    """``with atomic_output(out) as temp``: a temporary path beside ``out`` to write (and verify) one file; on
    leaving the block it is flushed and renamed to ``out``; on any error it is removed, with the directories
    created for it. ``needed`` bytes are checked first. (contextlib is imported here, on a single-file write,
    not with this module, which every bundle write imports.)"""
    import contextlib

    return contextlib.contextmanager(_atomic_output)(out, needed)


def _atomic_output(out: str, needed: int) -> Iterator[str]:
    refuse_url(out)
    directory = os.path.dirname(os.path.abspath(out))
    try:
        created = make_parents(out)
    except OSError as exc:
        raise write_error(exc, out) from exc
    sweep_temporaries(out)
    temp = temp_name(out)
    try:
        ensure_space(directory, needed)
        yield temp
        fsync_file(temp)
        os.replace(temp, out)
        fsync_dir(directory)
    except BaseException as exc:
        if os.path.lexists(temp):
            os.unlink(temp)
        remove_created(created)
        if _is_write_error(exc, temp, out):
            raise write_error(exc, out) from exc  # type: ignore[arg-type]
        raise


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
