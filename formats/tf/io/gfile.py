"""``tf.io.gfile`` (and TF1's ``tf.gfile``) over local paths and fsspec URLs (``s3://``, ``gs://``, ...).

``exists``, ``isdir``, ``listdir``, ``glob`` and ``GFile`` behave like TensorFlow's: a missing
directory in ``listdir`` and a missing file on the first read of a ``GFile`` raise
``NotFoundError``, a directory read as a file ``FailedPreconditionError``, a bad mode
``InvalidArgumentError``; ``GFile`` opens lazily, reads ``str`` in ``"r"`` and ``bytes`` in
``"rb"``, without newline translation. ``glob`` matches in every path component and hidden
names too (TensorFlow's matching). One deliberate difference: ``listdir`` and ``glob`` return
sorted lists, where TensorFlow returns the file system's order.
"""
from __future__ import annotations

import fnmatch
import os
import posixpath
import re

from formats.io import storage
from formats.tf._missing import module_getattr
from formats.tf.errors import (FailedPreconditionError, InvalidArgumentError, NotFoundError, OpError,
                               PermissionDeniedError, translate)

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import IO, Any

__all__ = ["exists", "isdir", "listdir", "glob", "GFile", "Exists", "IsDirectory", "ListDirectory", "Glob", "Open",
           "FastGFile"]

_MODES = {"r", "w", "a", "r+", "w+", "a+"}
_MAGIC = re.compile(r"[*?[]")


def _fspath(path: Any) -> str:
    path = os.fspath(path)
    return path.decode("utf-8", "surrogateescape") if isinstance(path, bytes) else path


def exists(path: Any) -> bool:
    """Whether a file or directory exists at ``path``."""
    path = _fspath(path)
    if not storage.is_url(path):
        return os.path.exists(path)
    fs, p = storage.filesystem(path)
    return bool(fs.exists(p))


def isdir(path: Any) -> bool:
    """Whether ``path`` is a directory."""
    return storage.isdir(_fspath(path))


def listdir(path: Any) -> list[str]:
    """The names in directory ``path`` (sorted); ``NotFoundError`` when it is not a directory."""
    path = _fspath(path)
    if not isdir(path):
        raise NotFoundError(None, None, f"Could not find directory {path}")
    if not storage.is_url(path):
        return sorted(os.listdir(path))
    fs, p = storage.filesystem(path)
    names = {posixpath.basename(n.rstrip("/")) for n in fs.ls(p, detail=False)}
    return sorted(n for n in names if n)


def glob(pattern: Any) -> list[str]:
    """Paths matching ``pattern`` (``*``, ``?``, ``[...]`` in any component), sorted."""
    pattern = _fspath(pattern)
    try:
        if storage.is_url(pattern):
            return _glob_url(pattern)
        return sorted(_glob_local(pattern))
    except OpError:
        raise
    except (OSError, ValueError) as exc:
        raise InvalidArgumentError(None, None, f"Failed to get matching files on {pattern}: {exc}") from None


def _glob_local(pattern: str) -> list[str]:
    parts = pattern.split(os.sep)
    fixed = 0
    while fixed < len(parts) and not _MAGIC.search(parts[fixed]):
        fixed += 1
    if fixed == len(parts):
        return [pattern] if os.path.lexists(pattern) else []
    base = os.sep.join(parts[:fixed]) or ("" if not pattern.startswith(os.sep) else os.sep)
    found = [base]
    for i, part in enumerate(parts[fixed:], fixed):
        last = i == len(parts) - 1
        found = [_join(d, name) for d in found for name in _matching(d, part, need_dir=not last)]
    return found


def _join(directory: str, name: str) -> str:
    return os.path.join(directory, name) if directory else name


def _matching(directory: str, part: str, need_dir: bool) -> list[str]:
    if not _MAGIC.search(part):
        path = _join(directory, part)
        return [part] if (os.path.isdir(path) if need_dir else os.path.lexists(path)) else []
    try:
        names = os.listdir(directory or ".")
    except (FileNotFoundError, NotADirectoryError):
        return []
    hits = [n for n in names if fnmatch.fnmatchcase(n, part)]
    return [n for n in hits if os.path.isdir(_join(directory, n))] if need_dir else hits


def _glob_url(pattern: str) -> list[str]:
    fs, p = storage.filesystem(pattern)
    protocol = pattern.split("://", 1)[0]
    out = []
    for found in map(str, fs.glob(p)):
        out.append(found if "://" in found else f"{protocol}://{found.lstrip('/')}")
    return sorted(out)


class GFile:
    """``tf.io.gfile.GFile(name, mode="r")``: a file object, opened on first use."""

    def __init__(self, name: Any, mode: str = "r") -> None:
        self._name = _fspath(name)
        if mode.replace("b", "", 1) not in _MODES:
            raise InvalidArgumentError(None, None, "mode is not 'r' or 'w' or 'a' or 'r+' or 'w+' or 'a+'")
        self._mode = mode
        self._binary = "b" in mode
        self._file: IO[bytes] | None = None

    @property
    def name(self) -> str:
        """The path or URL."""
        return self._name

    @property
    def mode(self) -> str:
        """The mode it was opened with."""
        return self._mode

    def _handle(self) -> IO[bytes]:
        if self._file is None:
            self._file = _open(self._name, self._mode.replace("b", "") + "b")
        return self._file

    def _value(self, data: bytes) -> Any:
        return data if self._binary else data.decode("utf-8")

    def read(self, n: int = -1) -> Any:
        """``n`` bytes (all when -1): ``bytes`` in a binary mode, else ``str``."""
        return self._value(self._handle().read(n))

    def readline(self) -> Any:
        """The next line, with its newline."""
        return self._value(self._handle().readline())

    def readlines(self) -> list[Any]:
        """All remaining lines."""
        return [self._value(line) for line in self._handle().readlines()]

    def __iter__(self) -> GFile:
        return self

    def __next__(self) -> Any:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def write(self, data: Any) -> None:
        """Write ``str`` (UTF-8) or bytes."""
        self._handle().write(data.encode("utf-8") if isinstance(data, str) else bytes(data))

    def seek(self, offset: int, whence: int = 0) -> int:
        """Move to ``offset`` (from the start, the current position or the end)."""
        return self._handle().seek(offset, whence)

    def tell(self) -> int:
        """The current position."""
        return self._handle().tell()

    def size(self) -> int:
        """The file's size in bytes."""
        try:
            return storage.file_size(self._name)
        except Exception as exc:  # noqa: BLE001 - reported as TensorFlow reports it
            raise translate(exc) from None

    def seekable(self) -> bool:
        """True."""
        return True

    def flush(self) -> None:
        """Push written bytes to the file."""
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        """Flush and close."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> GFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _open(name: str, mode: str) -> IO[bytes]:
    try:
        if storage.is_url(name):
            fs, p = storage.filesystem(name)
            return fs.open(p, mode)
        return open(name, mode)  # noqa: SIM115 - GFile closes it
    except FileNotFoundError:
        raise NotFoundError(None, None, f"{name}; No such file or directory") from None
    except IsADirectoryError:
        raise FailedPreconditionError(None, None, f"{name}; Is a directory") from None
    except PermissionError:
        raise PermissionDeniedError(None, None, f"{name}; Permission denied") from None


Exists = exists
IsDirectory = isdir
ListDirectory = listdir
Glob = glob
Open = GFile
FastGFile = GFile

__getattr__ = module_getattr("tf.io.gfile")
