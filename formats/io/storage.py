"""Checkpoints where they live: local paths and fsspec URLs (``s3://``, ``gs://``, ``http(s)://``, ``memory://``).

Local files keep the fast path (``open``, ``mmap``); a URL goes through fsspec, imported only then.
Remote reads fetch exactly the byte ranges asked for: ``ls`` reads the index and nothing else,
one tensor reads its range, and streaming reads (verify, diff, stats) fetch bounded chunks with a
few requests in flight. Credentials come from each protocol's usual environment and config files;
nothing here logs them.
"""
from __future__ import annotations

import os
import posixpath
import stat

from formats.core.errors import CheckpointNotFoundError, CorruptCheckpointError, UnsupportedError

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Any, BinaryIO

__all__ = ["is_url", "filesystem", "read_bytes", "read_range", "file_size", "mtime", "isfile", "isdir", "glob",
           "join", "dirname", "basename", "iter_ranges", "transfer", "open_regular", "not_regular", "missing_files", "file_sizes",
           "EXTRAS"]

_URL = r"^[a-zA-Z][a-zA-Z0-9+.-]*://"  # compiled only for a path with "://" (start-up)
EXTRAS = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "http": "http", "https": "http"}
CHUNK = 8 << 20
IN_FLIGHT = 4


class _Transfer:  # created lazily: threading is not needed on the local fast path
    """Bytes fetched from remote storage in this process (for tests and benchmarks)."""

    def __init__(self) -> None:
        import threading

        self.lock = threading.Lock()
        self.bytes = 0
        self.requests = 0

    def add(self, n: int) -> None:
        with self.lock:
            self.bytes += n
            self.requests += 1

    def reset(self) -> None:
        with self.lock:
            self.bytes = self.requests = 0


TRANSFER: Any = None


def transfer() -> _Transfer:
    global TRANSFER
    if TRANSFER is None:
        TRANSFER = _Transfer()
    return TRANSFER


def is_url(path: str) -> bool:
    """Whether ``path`` is a URL with a scheme other than ``file://``."""
    if "://" not in path:
        return False
    import re

    return bool(re.match(_URL, path)) and not path.startswith("file://")


def filesystem(url: str) -> tuple[Any, str]:
    """The fsspec filesystem and in-filesystem path for ``url``; a missing extra is named in the error."""
    scheme = url.split("://", 1)[0].lower()
    try:
        from fsspec.core import url_to_fs

        return url_to_fs(url)
    except ImportError:
        extra = EXTRAS.get(scheme)
        need = f"pip install 'tfckpt[{extra}]'" if extra else "pip install fsspec and the package for this protocol"
        raise UnsupportedError(url, f"reading {scheme}:// URLs needs an optional package: {need}") from None
    except ValueError as exc:
        raise UnsupportedError(url, f"unsupported URL ({exc})") from None


def _translate(url: str, exc: Exception) -> Exception:
    if isinstance(exc, FileNotFoundError):
        return CheckpointNotFoundError(url, "no such object")
    if isinstance(exc, (UnsupportedError, CheckpointNotFoundError)):
        return exc
    return CheckpointNotFoundError(url, f"cannot read ({type(exc).__name__}: {exc})")


def not_regular(path: str) -> str | None:
    """What the local ``path`` is when it is there but is no regular file (``a FIFO``, ``a directory``, ``a
    device``, ``a socket``, ``a symbolic link to nothing``, ``a symbolic link loop``); None for a regular file
    or nothing at all. Nothing is opened."""
    import errno

    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        if not os.path.lexists(path):
            return None
        return "a symbolic link loop" if exc.errno == errno.ELOOP else \
            "a symbolic link to nothing" if exc.errno == errno.ENOENT else f"unreadable ({exc.strerror})"
    if stat.S_ISREG(mode):
        return None
    return "a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else \
        "a socket" if stat.S_ISSOCK(mode) else "a device"


def open_regular(path: str) -> BinaryIO:
    """A local file opened for reading, if it is a regular file. Anything else is refused without
    blocking or reading: a FIFO (opened non-blocking, so no writer is waited for), a device such as
    ``/dev/zero`` behind a symlink (CorruptCheckpointError), a directory (IsADirectoryError)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "Is a directory", path)
        if not stat.S_ISREG(mode):
            raise CorruptCheckpointError(path, "not a regular file (a device, pipe or directory)")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    # Outside the try: once the file object owns ``fd``, an exception raised in fdopen (Ctrl-C arrives at any
    # instant) closes it with the object, and closing it here too failed with EBADF in place of the interrupt
    # ("cannot read (Bad file descriptor)", exit 3 for Ctrl-C). Before it owns the fd, such an exception leaves
    # the descriptor open: the process is ending.
    return os.fdopen(fd, "rb")


def read_bytes(path: str, limit: int | None = None) -> bytes:
    """The whole file (local or remote); ``limit`` refuses files larger than that many bytes. A local
    file must be a regular file (:func:`open_regular`) and is read up to the size it had when opened."""
    if not is_url(path):
        with open_regular(path) as f:
            size = os.fstat(f.fileno()).st_size
            return f.read(size if limit is None else min(size, limit + 1))
    fs, p = filesystem(path)
    try:
        data: bytes = fs.cat_file(p) if limit is None else fs.cat_file(p, start=0, end=limit + 1)
    except Exception as exc:  # noqa: BLE001 - every backend raises its own types
        raise _translate(path, exc) from None
    transfer().add(len(data))
    return data


def read_range(path: str, start: int, stop: int) -> bytes:
    """Bytes ``[start, stop)`` of a remote file."""
    if stop <= start:
        return b""
    fs, p = filesystem(path)
    try:
        data: bytes = fs.cat_file(p, start=start, end=stop)
    except Exception as exc:  # noqa: BLE001
        raise _translate(path, exc) from None
    transfer().add(len(data))
    return data


def iter_ranges(path: str, start: int, stop: int, chunk: int = CHUNK) -> Iterator[bytes]:
    """Bytes ``[start, stop)`` of a remote file in order, ``chunk`` at a time, a few requests in flight."""
    from concurrent.futures import ThreadPoolExecutor

    bounds = [(s, min(s + chunk, stop)) for s in range(start, stop, chunk)]
    if len(bounds) <= 1:
        for s, e in bounds:
            yield read_range(path, s, e)
        return
    with ThreadPoolExecutor(max_workers=IN_FLIGHT) as pool:
        pending = [pool.submit(read_range, path, s, e) for s, e in bounds[:IN_FLIGHT]]
        for i in range(len(bounds)):
            data = pending[i].result()
            if i + IN_FLIGHT < len(bounds):
                s, e = bounds[i + IN_FLIGHT]
                pending.append(pool.submit(read_range, path, s, e))
            pending[i] = None  # type: ignore[call-overload]  # release the chunk once yielded
            yield data


def _info(path: str) -> dict[str, Any] | None:
    fs, p = filesystem(path)
    try:
        return fs.info(p)
    except FileNotFoundError:
        return None
    except Exception as exc:  # noqa: BLE001
        raise _translate(path, exc) from None


def file_size(path: str) -> int:
    """Size in bytes of a local or remote file."""
    if not is_url(path):
        return os.path.getsize(path)
    info = _info(path)
    if info is None or info.get("size") is None:
        raise CheckpointNotFoundError(path, "no such object")
    return int(info["size"])


def mtime(path: str) -> float:
    """Modification time (seconds since the epoch) of a local or remote file; 0.0 when unknown."""
    if not is_url(path):
        try:
            return os.stat(path).st_mtime
        except OSError:
            return 0.0
    try:
        info = _info(path) or {}
    except CheckpointNotFoundError:
        return 0.0
    for field in ("mtime", "LastModified", "last_modified", "created", "updated"):
        value: Any = info.get(field)
        if isinstance(value, (int, float)):
            return float(value)
        if hasattr(value, "timestamp"):
            return float(value.timestamp())
        if isinstance(value, str):
            import datetime

            try:
                return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
            except ValueError:
                continue
    return 0.0


def isfile(path: str) -> bool:
    """Whether ``path`` is an existing file (object)."""
    if not is_url(path):
        return os.path.isfile(path)
    info = _info(path)
    return info is not None and info.get("type") == "file"


LOOKUPS_IN_FLIGHT = 16
"""Metadata requests for remote files in flight at once (a checkpoint of 100 data files in a bucket waits
for a few round trips, not 100)."""
def _size_or_none(path: str) -> int | None:
    if not is_url(path):
        return os.path.getsize(path) if os.path.isfile(path) else None
    info = _info(path)
    if info is None or info.get("type") != "file" or info.get("size") is None:
        return None
    return int(info["size"])


def file_sizes(files: Iterable[str]) -> dict[str, int | None]:
    """Each of ``files``' size in bytes, None for one that does not exist; remote files are looked up
    :data:`LOOKUPS_IN_FLIGHT` at a time."""
    paths = list(dict.fromkeys(files))
    remote = [f for f in paths if is_url(f)]
    found: dict[str, int | None] = {}
    if len(remote) > 1:
        from formats.core.parallel import map_ordered

        found = dict(zip(remote, map_ordered(_size_or_none, remote, min(LOOKUPS_IN_FLIGHT, len(remote)))))
    return {f: found[f] if f in found else _size_or_none(f) for f in paths}


def missing_files(files: Iterable[str]) -> list[str]:
    """Those of ``files`` (a checkpoint's) that do not exist (a bundle's data file deleted, or not yet copied
    or uploaded): its keys can be listed, their values not read. Remote files are looked up
    :data:`LOOKUPS_IN_FLIGHT` at a time."""
    paths = list(files)
    remote = [f for f in paths if is_url(f)]
    sizes = file_sizes(remote) if remote else {}
    return [f for f in paths if (sizes[f] is None if f in sizes else not os.path.exists(f))]


def isdir(path: str) -> bool:
    """Whether ``path`` is a directory (a bucket prefix with objects under it)."""
    if not is_url(path):
        return os.path.isdir(path)
    filesystem(path)  # a missing extra is reported against the path as given
    info = _info(path.rstrip("/") + "/") or _info(path)
    return info is not None and info.get("type") == "directory"


def glob(directory: str, pattern: str) -> list[str]:
    """Entries directly inside ``directory`` whose names match ``pattern`` (full paths or URLs), sorted.

    Hidden names count (``*.index`` matches ``.index``, the index ``Saver.save(sess, "dir/")`` writes),
    for local directories as for buckets."""
    import fnmatch

    if not is_url(directory):
        try:
            names = os.listdir(directory)
        except OSError:
            return []
        return sorted(os.path.join(directory, n) for n in names if fnmatch.fnmatchcase(n, pattern))
    fs, p = filesystem(directory)
    try:
        names = fs.ls(p, detail=False)
    except FileNotFoundError:
        return []
    except Exception as exc:  # noqa: BLE001
        raise _translate(directory, exc) from None
    found = []
    for name in names:
        base = posixpath.basename(name.rstrip("/"))
        if fnmatch.fnmatchcase(base, pattern):
            found.append(join(directory.rstrip("/"), base))
    return sorted(found)


def join(directory: str, name: str) -> str:
    """``directory/name`` for paths and URLs."""
    return posixpath.join(directory, name) if is_url(directory) else os.path.join(directory, name)


def dirname(path: str) -> str:
    """The containing directory of a path or URL."""
    return posixpath.dirname(path.rstrip("/")) if is_url(path) else os.path.dirname(path)


def basename(path: str) -> str:
    """The last component of a path or URL."""
    return posixpath.basename(path.rstrip("/")) if is_url(path) else os.path.basename(path)
