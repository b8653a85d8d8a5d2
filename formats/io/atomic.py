"""Pieces every writer shares: temporary names beside the output, fsync, and a free-space check.

Writers write under :func:`temp_name`, flush with :func:`fsync_file`, rename into place and
:func:`fsync_dir`; on any failure they remove the temporary, and the parent directories
:func:`make_parents` created for it (:func:`remove_created`), so an interrupted write leaves
nothing behind. A temporary's name carries the writing process's host and pid, so what a killed
writer left behind (nothing can remove it then) is found by the next write of the same output and
removed (:func:`sweep_temporaries`; :func:`atomic_output` does it first).

Publication is one step, for every output: a file by one ``rename(2)`` (:func:`publish_file`), a directory
by one rename, or one exchange of the new directory with the old (:func:`publish_dir`), a set of files
beside others by an index renamed last (:mod:`formats.io.publish`) - so a kill at any instant leaves the
whole old output or the whole new one. Without ``force`` the step is exclusive (``renameat2`` with
``RENAME_NOREPLACE``, or ``link(2)``): an output another writer put in place since the check fails the
write as if it had existed (:func:`exists_error`). :func:`ensure_space` refuses up front when the output's file system cannot hold
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
    from collections.abc import Iterable
    from typing import Any

__all__ = ["temp_name", "is_temp_name", "sweep_temporaries", "remove_tree", "fsync_file", "fsync_dir", "ensure_space",
           "atomic_output", "refuse_overstated", "refuse_url", "write_error", "WRITE_ERRNOS", "make_parents", "remove_created",
           "publish_file", "publish_dir", "publish_into_dir", "publishing", "exists_error", "new_generation", "GENERATION_KEY"]

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
    exists. A live writer's temporaries, another host's and foreign names are never touched; an old output a
    killed :func:`publish_dir` had moved aside (``.old``) is put back where nothing took its place. Returns the
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
            if match.group(2) == ".old" and not os.path.lexists(out):  # an output moved aside, then the kill
                os.rename(path, out)
                continue
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


def ensure_space(directory: str, needed: int, sources: Iterable[Any] = ()) -> None:
    """Raise :class:`OutputWriteError` (errno ``ENOSPC``) when ``directory``'s file system has less than
    ``needed`` bytes free - unless one of ``sources`` (what ``needed`` was summed from, their declared shapes)
    cannot hold what it declares: then its own error (:func:`refuse_overstated`)."""
    try:
        st = os.statvfs(directory)
    except (OSError, AttributeError):  # pragma: no cover - no statvfs: let the write itself fail
        return
    free = st.f_bavail * st.f_frsize
    if needed + MARGIN > free:
        refuse_overstated(sources)
        raise OutputWriteError("", f"No space left on device ({needed + MARGIN:,} bytes needed, "
                               f"{free:,} free in {directory})", errno=errno.ENOSPC)


def refuse_overstated(sources: Iterable[Any]) -> None:
    """Raise the format's own error (a ``CorruptCheckpointError``: exit 3) of the first of ``sources`` whose stored
    bytes cannot hold what its metadata declares (a tensor's :meth:`~formats.core.model.TensorEntry.problem`, its
    :meth:`~formats.core.model.TensorEntry.check` raising it before a byte is read), if any. Asked only where an
    output sized from the sources' declared shapes would not fit: a bundle entry that declares 4 TiB and stores 4
    bytes is a corrupt input, not a full disk (a write that fits reads the source, which says so then)."""
    from formats.core.model import TensorEntry

    for source in sources:
        if isinstance(source, TensorEntry) and source.problem() is not None:
            source.check()


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


class atomic_output:  # noqa: N801 - a context manager used as a function; no contextlib (start-up)
    """``with atomic_output(out) as temp``: a temporary path beside ``out`` to write (and verify) one file; on
    leaving the block it is flushed and put in place as ``out`` (:func:`publish_file`: replacing an existing
    one with ``replace``, else only where none is there then); on any error it is removed, with the
    directories created for it. ``needed`` bytes are checked first (``sources``: see :func:`ensure_space`). (A
    class, not ``contextlib.contextmanager``: contextlib imports collections and functools, more than a small
    write's own CPU.)"""

    __slots__ = ("out", "needed", "replace", "what", "directory", "created", "temp", "sources")

    def __init__(self, out: str, needed: int = 0, *, replace: bool = True, what: str = "output file",
                 sources: Iterable[Any] = ()) -> None:
        self.out, self.needed, self.replace, self.what, self.sources = out, needed, replace, what, sources
        self.directory, self.temp = "", ""
        self.created: list[str] = []

    def __enter__(self) -> str:
        out = self.out
        refuse_url(out)
        self.directory = os.path.dirname(os.path.abspath(out))
        try:
            self.created = make_parents(out)
        except OSError as exc:
            raise write_error(exc, out) from exc
        sweep_temporaries(out)
        self.temp = temp_name(out)
        try:
            ensure_space(self.directory, self.needed, self.sources)
        except BaseException as exc:
            self._clean_up(exc)
            raise
        return self.temp

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        if exc is None:
            try:
                fsync_file(self.temp)
                publish_file(self.temp, self.out, replace=self.replace, what=self.what)
                fsync_dir(self.directory)
            except BaseException as error:
                self._clean_up(error)
                raise
            return
        self._clean_up(exc)  # the block's own exception goes on (returning None)

    def _clean_up(self, exc: BaseException) -> None:
        """Remove the temporary and the directories created for it; an OutputWriteError from ``exc`` when it
        is about the output."""
        if os.path.lexists(self.temp):
            os.unlink(self.temp)
        remove_created(self.created)
        if _is_write_error(exc, self.temp, self.out):
            raise write_error(exc, self.out) from exc  # type: ignore[arg-type]


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


# -- publication: one step, exclusive without force ----------------------------------------------------------
GENERATION_KEY = "ckpt_generation"
"""The metadata key under which a multi-file output's index and each of its files carry the write's
:func:`new_generation` (``verify`` reports files of another generation than their index's: a mix)."""

_NOREPLACE, _EXCHANGE = 1, 2  # renameat2(2)'s RENAME_NOREPLACE, RENAME_EXCHANGE
_renameat2_cache: list[tuple[str, Any, Any] | None] = []


def new_generation() -> str:
    """A fresh id for one write of a multi-file output (16 hex digits)."""
    return os.urandom(8).hex()


def _rename_call() -> tuple[str, Any, Any] | None:
    """The C function behind :func:`_renameat2` (Linux ``renameat2``, macOS ``renamex_np``) and the getter of the
    ``errno`` it leaves, or None."""
    if not _renameat2_cache:
        from formats.io.c_library import c_function

        func: tuple[str, Any, Any] | None = None
        for name, arguments in (("renameat2", "izizI"), ("renamex_np", "zzI")):
            found = c_function(name, arguments)
            if found is not None:
                func = (name, *found)
                break
        _renameat2_cache.append(func)
    return _renameat2_cache[0]


def _renameat2(src: str, dst: str, flags: int) -> bool:
    """``rename(src, dst)`` with ``flags`` (:data:`_NOREPLACE`: fail with FileExistsError where ``dst`` exists;
    :data:`_EXCHANGE`: swap the two) in one step; False where the system or the file system cannot (the caller
    falls back). Tests wrap this function to kill a writer at each step."""
    call = _rename_call()
    if call is None:
        return False
    name, func, get_errno = call
    if name == "renameat2":
        result = func(-100, os.fsencode(src), -100, os.fsencode(dst), flags)  # AT_FDCWD
    else:  # pragma: no cover - macOS: RENAME_SWAP 2, RENAME_EXCL 4
        result = func(os.fsencode(src), os.fsencode(dst), {_NOREPLACE: 4, _EXCHANGE: 2}[flags])
    if result == 0:
        return True
    err = get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM):
        return False
    raise OSError(err, os.strerror(err), src, None, dst)


def exists_error(out: str, what: str = "output file") -> CheckpointError:
    """The error of a write whose output exists (``what`` names it: ``output checkpoint exists``) - also when
    another writer put it in place between the check and the publication."""
    from formats.core.errors import OutputExistsError

    return OutputExistsError(out, f"{what} exists", hint="pass force=True to replace it")


def publish_file(temp: str, out: str, *, replace: bool = True, what: str = "output file") -> None:
    """Put the finished file ``temp`` in place as ``out`` in one step. With ``replace`` an existing ``out`` is
    replaced (``rename(2)``); without, the step fails where anything is at ``out`` at that instant
    (``renameat2(RENAME_NOREPLACE)``, else ``link(2)`` then unlinking ``temp``), raising :func:`exists_error`:
    of two writers of one new output, the second fails as if the output had existed."""
    if replace:
        os.replace(temp, out)
        return
    try:
        if _renameat2(temp, out, _NOREPLACE):
            return
        try:
            os.link(temp, out, follow_symlinks=False)
        except FileExistsError:
            raise
        except OSError:  # no hard links on this file system: the check and the rename are two steps here
            if os.path.lexists(out):
                raise FileExistsError(errno.EEXIST, "exists", out) from None
            os.replace(temp, out)
            return
        os.unlink(temp)
    except FileExistsError:
        raise exists_error(out, what) from None


def publish_dir(stage: str, final: str, *, replace: bool, what: str = "output directory") -> None:
    """Put the complete directory ``stage`` (beside ``final``) in place as ``final`` in one step, and flush.

    Where nothing is at ``final`` it is renamed there exclusively (``renameat2(RENAME_NOREPLACE)``; elsewhere
    ``mkdir(final)`` claims the name, and the rename replaces that empty directory); an empty directory at
    ``final`` is removed first. Without ``replace``, anything else at ``final`` - also put there by another
    writer since the check - raises :func:`exists_error`. With ``replace`` an existing ``final`` is exchanged
    with ``stage`` in one ``renameat2(RENAME_EXCHANGE)`` and then removed (``stage`` holds it): a kill at any
    instant leaves the old directory or the new one, whole. Where the system cannot exchange, the old directory
    is renamed aside to a ``.old`` temporary first, which :func:`sweep_temporaries` puts back where a killed
    write left no ``final``."""
    directory = os.path.dirname(os.path.abspath(final))
    for _ in range(3):  # an empty directory at final, removed; or final removed by someone meanwhile
        if not os.path.lexists(final) or not replace:
            try:
                if os.path.isdir(final) and not os.path.islink(final):
                    os.rmdir(final)  # only an empty one: OSError (not empty) means it exists
                _place_new_dir(stage, final)
            except FileNotFoundError:
                continue
            except FileExistsError:
                if not replace:
                    raise exists_error(final, what) from None
                continue
            except OSError as exc:
                if exc.errno in (errno.ENOTEMPTY, errno.EEXIST) and not replace:
                    raise exists_error(final, what) from None
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
                continue
            fsync_dir(directory)
            return
        if not os.path.isdir(final):
            from formats.core.errors import InvalidOutputError

            raise InvalidOutputError(final, "output exists and is not a directory")
        if _renameat2(stage, final, _EXCHANGE):
            fsync_dir(directory)
        else:  # two renames: the old directory is kept aside (and put back by the next write if killed between)
            old = temp_name(final) + ".old"
            os.rename(final, old)
            try:
                os.rename(stage, final)
            except BaseException:
                os.rename(old, final)
                raise
            fsync_dir(directory)
            stage = old
        with ignoring(OSError):  # left for the next write's sweep
            if os.path.islink(stage):  # a symbolic link was replaced: the directory it named is not ours
                os.unlink(stage)
            else:
                remove_tree(stage)
        return
    raise exists_error(final, what)


def _place_new_dir(stage: str, final: str) -> None:
    """Rename ``stage`` to ``final`` where nothing is; FileExistsError (or ENOTEMPTY) where something is."""
    if _renameat2(stage, final, _NOREPLACE):
        return
    os.mkdir(final)  # claims the name: a second writer's mkdir fails
    try:
        os.rename(stage, final)  # replaces the empty directory just made
    except BaseException:
        with ignoring(OSError):
            os.rmdir(final)
        raise


class publishing:  # noqa: N801 - used as a context manager
    """``with publishing(directory):`` - publications of outputs in ``directory`` by cooperating writers
    (every ckpt process) take turns: an exclusive ``flock`` on the directory, released when the block ends or
    the process dies. A publication of several steps (a bundle's data files, then its index) checks, inside,
    that the output is still absent when it must be. Where the directory cannot be locked it goes ahead."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.fd: int | None = None

    def __enter__(self) -> publishing:
        try:
            import fcntl

            self.fd = os.open(self.directory, os.O_RDONLY)
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except (OSError, ImportError):  # pragma: no cover - no flock here (Windows, some network file systems)
            if self.fd is not None:
                os.close(self.fd)
            self.fd = None
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)  # releases the lock
            self.fd = None


def publish_into_dir(stage: str, root: str, *, replace: bool, what: str = "output file") -> bool:
    """Put the files under ``stage`` (a directory beside ``root``, same relative paths) into the existing
    directory ``root`` in one step, keeping what else ``root`` holds: a new directory is built beside it from
    ``root``'s entries (hard links, never copies) and the staged files, and exchanged with ``root``
    (:func:`publish_dir`) - a kill at any instant leaves the old directory or the new one, whole. A staged file
    whose name is taken in ``root`` raises :func:`exists_error` unless ``replace``. What appears in the old
    directory while the new one is built is moved over after the exchange. Returns False, having changed
    nothing, where this cannot be done (``root`` a mount point or on another file system than its parent, a
    file system without hard links or without an exchange, more than :data:`MAX_LINKED` entries in ``root``):
    the caller then moves the files in one by one. ``root`` is a new directory afterwards (a process whose
    working directory it was sees the old one, removed)."""
    root = os.path.realpath(root)
    parent = os.path.dirname(root)
    try:
        if os.stat(root).st_dev != os.stat(parent).st_dev or _rename_call() is None:
            return False
    except OSError:
        return False
    with publishing(parent):
        clone = temp_name(root)
        try:
            _merge_tree(root, stage, clone, replace, what)
        except _NotLinkable:
            remove_tree(clone)
            return False
        except BaseException:
            remove_tree(clone)
            raise
        if not _renameat2(clone, root, _EXCHANGE):
            remove_tree(clone)
            return False
        fsync_dir(parent)
        _move_stragglers(clone, root)  # ``clone`` is the old directory now
        with ignoring(OSError):
            remove_tree(clone)
    return True


MAX_LINKED = 200_000
"""The most entries an existing directory may hold for :func:`publish_into_dir` to rebuild it (hard links);
beyond, the files are moved in one by one."""


class _NotLinkable(Exception):
    """An entry of the existing directory cannot be hard-linked into the new one."""


def _merge_tree(root: str, stage: str, clone: str, replace: bool, what: str) -> None:
    """Build ``clone``: ``root``'s entries hard-linked (directories recreated with their modes), then the staged
    files renamed in over them (an existing one only with ``replace``)."""
    import stat as st

    modes: list[tuple[str, os.stat_result]] = []
    todo = [("", root)]
    os.mkdir(clone)
    count = 0
    while todo:
        rel, folder = todo.pop()
        modes.append((os.path.join(clone, rel) if rel else clone, os.stat(folder)))
        for entry in os.scandir(folder):
            count += 1
            if count > MAX_LINKED:
                raise _NotLinkable(root)
            target = os.path.join(clone, rel, entry.name)
            if entry.is_dir(follow_symlinks=False):
                os.mkdir(target)
                todo.append((os.path.join(rel, entry.name), entry.path))
            elif entry.is_symlink():
                os.symlink(os.readlink(entry.path), target)
            else:
                try:
                    os.link(entry.path, target, follow_symlinks=False)
                except OSError as exc:
                    if exc.errno in (errno.EPERM, errno.EXDEV, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP):
                        raise _NotLinkable(entry.path) from exc
                    raise
    todo = [("", stage)]
    while todo:
        rel, folder = todo.pop()
        for entry in os.scandir(folder):
            target = os.path.join(clone, rel, entry.name)
            if entry.is_dir(follow_symlinks=False) and os.path.isdir(target) and not os.path.islink(target):
                todo.append((os.path.join(rel, entry.name), entry.path))
                continue
            if os.path.lexists(target):
                shown = os.path.join(root, rel, entry.name)
                if not replace:
                    raise exists_error(shown, what)
                if os.path.isdir(target) and not os.path.islink(target) or entry.is_dir(follow_symlinks=False):
                    from formats.core.errors import InvalidOutputError

                    raise InvalidOutputError(shown, "a file and a directory would have the same name here")
            os.replace(entry.path, target)
    for path, status in reversed(modes):  # innermost first: a read-only directory is filled before
        with ignoring(OSError):
            os.chmod(path, st.S_IMODE(status.st_mode))
        with ignoring(OSError):
            os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))
    with ignoring(OSError):
        os.chown(clone, modes[0][1].st_uid, modes[0][1].st_gid)


def _move_stragglers(old: str, new: str) -> None:
    """Entries that appeared in the ``old`` directory tree while the ``new`` one was built, moved over."""
    todo = [""]
    while todo:
        rel = todo.pop()
        try:
            entries = list(os.scandir(os.path.join(old, rel)))
        except OSError:
            continue
        for entry in entries:
            target = os.path.join(new, rel, entry.name)
            if not os.path.lexists(target):
                with ignoring(OSError):
                    os.rename(entry.path, target)
            elif entry.is_dir(follow_symlinks=False) and os.path.isdir(target):
                todo.append(os.path.join(rel, entry.name))
