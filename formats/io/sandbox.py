"""Run a parser of untrusted bytes in a forked child process, with time and memory limits.

Some readers live in C libraries that a hostile file can crash (SIGSEGV), send into an endless loop
or make allocate without bound - libhdf5 does all three. Such a library is only ever called inside
:func:`run_isolated`: a forked child runs ``task(beat)`` under an address-space limit and sends back
the bytes it returns; the parent turns a crash, a stall, an exhausted memory limit or an error into a
one-line :class:`~formats.core.errors.CheckpointError` naming the file, and never waits forever.

``beat()`` tells the parent the child is still making progress: a child that sends nothing for
:data:`STALL_SECONDS` is stopped, however long the whole task may legitimately take. Fork is cheap
(the child shares the parent's imported modules), so the cost is a few milliseconds per call. Where
``os.fork`` does not exist the task runs in-process, unprotected.
"""
from __future__ import annotations

from _collections_abc import Callable  # collections.abc's classes, without the collections package
import json
import os
import select
import signal
import time
from contextlib import AbstractContextManager, nullcontext

from formats.core import errors
from formats.core.errors import CheckpointError, CorruptCheckpointError

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["run_isolated", "STALL_SECONDS", "Beat"]

STALL_SECONDS = 10.0
"""A child silent for this long (no ``beat()``, no result) is stopped: it is stuck inside the library."""
Beat = Callable[[], None]
_BEAT_EVERY = 0.25
_OK, _ERROR, _MEMORY, _BUG = b"R", b"E", b"M", b"X"
_READ = 1 << 20


def run_isolated(task: Callable[[Beat], bytes], path: str, *, what: str, memory: int, max_output: int,
                 seconds: float | None = None, hold: AbstractContextManager[Any] | None = None) -> bytes:
    """``task(beat)`` run in a forked child; the bytes it returns.

    ``memory`` is the address space the child may add to what the parent already maps; ``max_output``
    bounds what it may send back; ``seconds`` bounds the whole run (``None``: only stalls are stopped).
    A :class:`CheckpointError` the task raises is raised again here; a crash, a stall, the memory limit
    or an oversized answer becomes a :class:`CorruptCheckpointError` naming ``path`` and ``what`` was
    being read. Anything else the task raises (a bug) becomes a ``RuntimeError``. ``hold`` is a lock
    held while forking (a library's global lock, so no other thread holds it in the child).
    """
    if not hasattr(os, "fork"):
        return task(lambda: None)
    for attempt in range(2):  # a stall is tried once more: a loaded machine can starve a child too
        raw, status, stopped = _run_once(task, memory, seconds, max_output, hold)
        if stopped is None or attempt or not stopped.startswith("no progress"):
            break
    if stopped is not None:
        raise CorruptCheckpointError(path, f"{what}: {stopped}")
    return _answer(raw, status, path, what, memory)


def _run_once(task: Callable[[Beat], bytes], memory: int, seconds: float | None, max_output: int,
              hold: AbstractContextManager[Any] | None) -> tuple[bytes, int, str | None]:
    """One forked run: what the child sent, its wait status, and why it was stopped (or None)."""
    read_end, write_end = os.pipe()
    with hold if hold is not None else nullcontext():
        pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child, which never returns
        os.close(read_end)
        _child(task, write_end, memory)
    os.close(write_end)
    try:
        raw, stopped = _collect(read_end, pid, seconds, max_output)
    except BaseException:  # interrupted: never leave the child behind
        _reap(pid, kill=True)
        raise
    finally:
        os.close(read_end)
    return raw, _reap(pid, kill=stopped is not None), stopped


def _child(task: Callable[[Beat], bytes], fd: int, memory: int) -> None:  # pragma: no cover - in the child
    """Run the task and send ``status byte + payload``; never returns (no atexit, no buffer flushes)."""
    try:
        _limit(memory)
        last = [time.monotonic()]

        def beat() -> None:
            now = time.monotonic()
            if now - last[0] >= _BEAT_EVERY:
                last[0] = now
                os.write(fd, b".")

        try:
            message = _OK + task(beat)
        except CheckpointError as exc:
            message = _ERROR + json.dumps({"cls": type(exc).__name__, "path": exc.path,
                                           "message": exc.message}).encode()
        except MemoryError:
            message = _MEMORY
        except BaseException as exc:  # noqa: BLE001 - reported to the parent as a bug
            message = _BUG + f"{type(exc).__name__}: {exc}".encode("utf-8", "replace")
        _write_all(fd, message)
    finally:
        os._exit(0)


def _limit(memory: int) -> None:  # pragma: no cover - in the child
    """No core dumps; address space: what is mapped now plus ``memory`` (within the hard limit)."""
    try:
        import resource
    except ImportError:
        return
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    mapped = _mapped_bytes()
    if mapped is None:
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = mapped + memory
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _mapped_bytes() -> int | None:
    """The process's virtual size (Linux ``/proc/self/statm``), or None where it is not known."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _write_all(fd: int, data: bytes) -> None:  # pragma: no cover - in the child
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _collect(fd: int, pid: int, seconds: float | None, max_output: int) -> tuple[bytes, str | None]:
    """Everything the child sends (heartbeats dropped), or why it was stopped."""
    start = last = time.monotonic()
    parts: list[bytes] = []
    size = 0
    started = False
    while True:
        now = time.monotonic()
        wait = STALL_SECONDS - (now - last)
        if seconds is not None:
            wait = min(wait, seconds - (now - start))
        if wait <= 0:
            return b"", (f"no progress for {STALL_SECONDS:g} s" if seconds is None or now - start < seconds
                         else f"not finished within {seconds:g} s") + "; stopped (damaged file?)"
        ready, _, _ = select.select([fd], [], [], wait)
        if not ready:
            continue
        piece = os.read(fd, _READ)
        if not piece:
            return b"".join(parts), None
        last = time.monotonic()
        if not started:
            piece = piece.lstrip(b".")
            started = bool(piece)
        size += len(piece)
        if size > max_output + 1:
            return b"", f"the reader's answer exceeds {max_output:,} bytes; stopped"
        parts.append(piece)


def _reap(pid: int, kill: bool) -> int:
    """Wait for the child (killing it first when asked); its wait status."""
    if kill:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    while True:
        try:
            return os.waitpid(pid, 0)[1]
        except InterruptedError:
            continue


def _answer(raw: bytes, status: int, path: str, what: str, memory: int) -> bytes:
    """The payload of a successful run; the matching error otherwise."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else f"signal {sig}"
        raise CorruptCheckpointError(path, f"{what}: the reader crashed ({name}) on this file: damaged or "
                                           "hostile content")
    kind, payload = raw[:1], raw[1:]
    if kind == _OK:
        return payload
    if kind == _ERROR:
        raise _error(payload, path)
    if kind == _MEMORY:
        raise CorruptCheckpointError(path, f"{what} needs more than {memory:,} bytes of memory; refusing "
                                           "(damaged file?)")
    if kind == _BUG:
        raise RuntimeError(f"{what} failed in the isolated reader: {payload.decode('utf-8', 'replace')}")
    raise CorruptCheckpointError(path, f"{what}: the reader exited without an answer (status {status})")


def _error(payload: bytes, path: str) -> CheckpointError:
    """The child's CheckpointError, rebuilt (a known class by name; anything else as corrupt)."""
    try:
        doc = json.loads(payload)
        cls = getattr(errors, str(doc["cls"]), None)
        message, where = str(doc["message"]), str(doc["path"])
    except (ValueError, KeyError, TypeError, RecursionError):
        return CorruptCheckpointError(path, "the isolated reader sent an unreadable error")
    if not (isinstance(cls, type) and issubclass(cls, CheckpointError)):
        cls = CorruptCheckpointError
    return cls(where or path, message)
