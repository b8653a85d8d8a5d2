"""Run one test case in a forked child with an address-space limit (RLIMIT_AS), a Python allocation
budget (tracemalloc) and a wall-clock limit: a hang, a crash (a signal, as libhdf5's SIGSEGV) or a runaway
allocation fails that case with a reason instead of taking the test session down. Forking keeps each case
cheap: the child inherits the imported modules of a warmed-up parent."""
from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import signal
import threading
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Verdict", "run_forked", "can_fork"]

can_fork = hasattr(os, "fork") and os.path.exists("/proc/self/statm")
_M_ARENA_MAX = -8


@dataclass
class Verdict:
    """How a case ended: ``kind`` is the case's own outcome (what ``fn`` returned), or ``hang``, ``crash``
    (killed by a signal), ``raised`` (``fn`` raised) or ``memory`` (past the Python allocation budget)."""

    kind: str
    detail: str = ""
    peak: int = 0


def _address_space() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * resource.getpagesize()


def _child(fn: Callable[[], tuple[str, str]], headroom: int, budget: int) -> dict[str, object]:
    with contextlib.suppress(OSError, AttributeError):  # one malloc arena: threads reserve no 64 MiB arenas
        import ctypes

        ctypes.CDLL(None).mallopt(_M_ARENA_MAX, 1)
    limit = _address_space() + headroom
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    tracemalloc.start()
    try:
        kind, detail = fn()
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        kind, detail = "raised", f"{type(exc).__name__}: {exc}"
    peak = tracemalloc.get_traced_memory()[1]
    if peak > budget and kind not in ("raised",):
        kind, detail = "memory", f"allocated {peak:,} bytes, budget {budget:,} ({kind}: {detail})"
    return {"kind": kind, "detail": detail[:4000], "peak": peak}


def _await_single_thread(seconds: float) -> None:
    """Fork only from a process whose other threads are asleep in daemon threads: wait for threads that are ending
    (a command's fsync thread) for at most ``seconds``, then insist that what remains is daemon threads. A test run
    in several worker processes (pytest-xdist) may have run, in this process, a test that left a library's idle
    daemon pools behind (Dask's, tqdm's monitor); the child runs only ckpt's reading code and needs no lock of theirs,
    and a child that hangs anyway ends in the ``hang`` verdict after its wall-clock limit, never a hung session."""
    deadline = time.monotonic() + seconds
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join(max(0.0, deadline - time.monotonic()))
    others = [t.name for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    assert not others, f"fork only from a process without other working threads; still running after {seconds} s: " \
        f"{others}"


def run_forked(fn: Callable[[], tuple[str, str]], seconds: float, headroom: int, budget: int) -> Verdict:
    """Run ``fn`` (returning ``(outcome, detail)``) in a child: ``headroom`` bytes of address space beyond
    what the parent has mapped, at most ``budget`` bytes allocated through Python at once, ``seconds``."""
    _await_single_thread(30.0)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(read)
            payload = json.dumps(_child(fn, headroom, budget)).encode()
            view = memoryview(payload)
            while view:
                view = view[os.write(write, view):]
        finally:
            os._exit(0)
    os.close(write)
    chunks, deadline = [], time.monotonic() + seconds
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([read], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return Verdict("hang", f"no answer within {seconds} s")
            chunk = os.read(read, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return Verdict("crash", f"killed by signal {os.WTERMSIG(status)}")
    if not chunks:
        return Verdict("crash", f"exited with status {os.waitstatus_to_exitcode(status)} without an answer")
    answer = json.loads(b"".join(chunks))
    return Verdict(answer["kind"], answer["detail"], answer["peak"])
