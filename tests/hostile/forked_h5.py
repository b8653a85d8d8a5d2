"""Run a test case in a forked child of pytest, with an address-space limit and a timeout, so that a
crash, a hang or a runaway allocation fails the case instead of taking pytest down (and so that
the case does not pay for a new interpreter: the child shares pytest's imported modules)."""
from __future__ import annotations

import json
import os
import select
import signal
import time
import traceback
from collections.abc import Callable
from typing import Any


def _mapped() -> int:
    with open("/proc/self/statm", "rb") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def run_forked(case: Callable[[], Any], headroom: int, seconds: float) -> tuple[str, Any]:
    """``("ok", value)`` with what ``case()`` returned (JSON-able), ``("raised", "Type: message\\ntraceback")``,
    ``("crashed", signal name)``, ``("hung", seconds)`` or ``("died", status)``."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            import resource

            os.close(read_end)
            limit = _mapped() + headroom
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            try:
                message = json.dumps(["ok", case()])
            except BaseException as exc:  # noqa: BLE001 - reported to the test
                message = json.dumps(["raised", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-3000:]}"])
            data = message.encode()
            while data:
                data = data[os.write(write_end, data):]
        finally:
            os._exit(0)
    os.close(write_end)
    chunks: list[bytes] = []
    deadline = time.monotonic() + seconds
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([read_end], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return "hung", seconds
            piece = os.read(read_end, 1 << 16)
            if not piece:
                break
            chunks.append(piece)
    finally:
        os.close(read_end)
    status = os.waitpid(pid, 0)[1]
    if os.WIFSIGNALED(status):
        return "crashed", signal.Signals(os.WTERMSIG(status)).name
    if not chunks:
        return "died", status
    kind, value = json.loads(b"".join(chunks))
    return kind, value
