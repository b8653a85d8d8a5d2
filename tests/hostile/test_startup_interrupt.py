"""Issue 36 #5: Ctrl-C at any instant - during Python's start-up and ckpt's imports (before any command runs),
while the command runs, or as it exits - ends ckpt with exit status 130 and one line on stderr, never a
traceback (exit 1 would be what ``diff -q`` means by "differ"). Both launchers: ``python -m ckpt_cli`` and
scripts/ckpt.

Before the interpreter has installed its own SIGINT handling (its first milliseconds) no program can
answer: the process is terminated by SIGINT (nothing printed; a shell reports 130). And while the
interpreter imports ``site`` (its .pth files) and, for ``-m``, ``runpy`` - before any code of ckpt runs - Python
itself reports the interrupt (:func:`pythons_own`): such a sample says nothing about ckpt."""
from __future__ import annotations

import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from formats.tf_bundle.writer import write_checkpoint

from ..installed import LAUNCHER, child_env

DELAYS_MS = (0, 5, 7, 9, 11, 13, 15, 17, 20, 25, 30, 35, 40, 45, 50, 75, 100, 150, 200, 300, 400)
"""When SIGINT is sent. Start-up is short now: `ls A` can be done by 50 ms (seen in CI's oldest tier: 20 ms still in
Python's own start-up, 50 ms finished), and on a quick machine by 20 ms (CI, 2026-11-25: 5 ms still in Python's own
start-up, 20 ms as it exited, 25 ms finished), so the samples are 2 to 5 ms apart in between, where ckpt's imports
and the command run."""
LINE = "ckpt: interrupted\n"
def pythons_own(err: str) -> bool:
    """Whether ``err`` is the interpreter's report of a KeyboardInterrupt in its own start-up, before it ran
    any code of ckpt (importing ``site`` and the environment's .pth files; checking whether the script is a
    zip file; for ``python -m``, ``runpy`` locating the package; a signal taken as the first module of ckpt is
    entered, at its "line 0", before its first statement): a traceback with no line of ckpt's code. Or no
    traceback at all, a bare ``KeyboardInterrupt``: the signal came while the interpreter read and compiled the
    launcher script, before any frame of it existed (seen since start-up got shorter: 20 ms now falls there). Or
    the interpreter's fatal error for an interrupt in any step of its initialization, before any frame of ckpt
    existed (``Fatal Python error: init_import_site``, seen in CI, 2026-11-26, for ``python -m ckpt_cli diff``;
    ``init_sys_streams`` while ``<frozen io>`` was imported, "core initialized", a ``TypeError`` for the
    interrupt, seen in CI 2026-11-27 at 5 ms)."""
    import re

    frames = re.findall(r'File "([^"]*)", line (\d+)', err)
    ours = [f for f, line in frames if ("/ckpt_cli/" in f or "/formats/" in f or f.endswith("scripts/ckpt")) and
            line != "0"]
    if err.strip() == "KeyboardInterrupt":
        return True
    if err.startswith("Fatal Python error: init_") and not ours:
        return True
    return "KeyboardInterrupt" in err and bool(frames) and not ours


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> dict[str, str]:
    """Two bundles of 3,000 tensors (24 MiB) differing in the last one: ``diff -q`` reads them all."""
    root = tmp_path_factory.mktemp("startup_interrupt")
    a, b = str(root / "a"), str(root / "b")
    values = {f"layer_{i:05d}/kernel": np.full(2048, i, np.float32) for i in range(3000)}
    write_checkpoint(a, values, verify=False)
    values["layer_02999/kernel"] = np.zeros(2048, np.float32)
    write_checkpoint(b, values, verify=False)
    return {"a": a, "b": b}


def _launchers() -> dict[str, list[str]]:
    return {"python -m ckpt_cli": [sys.executable, "-m", "ckpt_cli"],
            "scripts/ckpt": [sys.executable, str(LAUNCHER)]}


def _interrupted_at(argv: list[str], delay: float) -> tuple[int | None, str]:
    """Exit status and stderr of ``argv`` sent SIGINT ``delay`` seconds after it was spawned; None for the
    status when the command had finished before then (no signal sent: a fast ``ls`` on a quiet machine)."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=child_env(),
                            start_new_session=True)  # the signal reaches ckpt alone, as a terminal's Ctrl-C would
    time.sleep(delay)
    finished = proc.poll() is not None
    if not finished:
        proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    return None if finished else proc.returncode, err.decode("utf-8", "replace")


@pytest.mark.parametrize("launcher", sorted(_launchers()))
@pytest.mark.parametrize("command", ["diff -q A B", "ls A"])
def test_ctrl_c_at_any_instant_exits_130_with_one_line(big, launcher: str, command: str) -> None:
    argv = [*_launchers()[launcher], *(big.get(w.lower(), w) if w in "AB" else w for w in command.split())]
    seen = []
    for ms in DELAYS_MS:
        status, err = _interrupted_at(argv, ms / 1000)
        seen.append((ms, status))
        if status is None:  # the command had finished before the signal was sent
            continue
        if pythons_own(err):  # the interpreter's start-up (slow on a loaded machine): says nothing about ckpt
            continue
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, (ms, err)
        if status == -signal.SIGINT:
            # Terminated before Python had any handler: nothing printed. Once (a clean CI run at 20 ms, on a loaded
            # machine; not reproduced in 1,000 local tries) the process printed the one line and then ended by
            # SIGINT rather than exit 130: a shell reports 130 for both, with the same one line.
            assert err in ("", LINE), (ms, err)
            continue
        if status in (0, 1) and err == "":
            # The command had finished: the signal came as Python shut down, after ckpt's last line, when the
            # interpreter runs no signal handler (seen at 75 ms for `ls A` on a quiet machine). A known gap,
            # noted on issue 36: the launchers would have to end with os._exit to close it.
            continue
        assert (status, err) == (130, LINE), (ms, status, err)
    assert any(status == 130 for _, status in seen), seen


def test_the_exit_status_is_the_documented_one() -> None:
    from ckpt_cli import interrupt
    from formats.core.errors import ExitCode

    assert interrupt.INTERRUPTED == int(ExitCode.INTERRUPTED) == 130


def test_a_command_still_cleans_up_on_ctrl_c(tmp_path, big) -> None:
    """In a command, Ctrl-C is a KeyboardInterrupt the command cleans up after (the handler the launcher
    installed is handed back for the command's run): a write interrupted midway leaves nothing behind."""
    argv = [*_launchers()["python -m ckpt_cli"], "convert", big["a"], "-o", str(tmp_path / "out" / "ckpt-1"), "--to",
            "tf-object"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=child_env(), start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (tmp_path / "out").exists():
        time.sleep(0.002)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    if proc.returncode == 0:
        pytest.skip("the write finished before the signal")
    assert (proc.returncode, err.decode()) == (130, LINE)
    left = list((tmp_path / "out").iterdir()) if (tmp_path / "out").exists() else []  # its folder is removed too
    assert not [p.name for p in left if p.name.startswith("ckpt-1")]


IMPORT_INTERRUPTED = """
import _signal, sys, time
from ckpt_cli import interrupt
_signal.signal(_signal.SIGINT, interrupt._keyboard_interrupt)  # what command_running installs under a launcher
sys.path.insert(0, sys.argv[1])
try:
    import interrupted_module
    print("imported", interrupted_module.done)
    time.sleep(10)
    print("not interrupted")
except KeyboardInterrupt:
    print("interrupted", "interrupted_module" in sys.modules)
"""


def test_ctrl_c_during_an_import_is_raised_once_the_import_is_over(tmp_path) -> None:
    """While a command runs, Ctrl-C is a KeyboardInterrupt, but never inside an import: raised in importlib's
    module-lock bookkeeping it was swallowed and could leave the import lock held, and a worker thread importing
    numpy then waited for ever (``diff -q A B`` interrupted at 40 ms hung in CI's oldest tier). The signal comes
    in a module's body here: the import finishes, and the KeyboardInterrupt follows it within milliseconds."""
    (tmp_path / "interrupted_module.py").write_text(
        "import os, signal\nos.kill(os.getpid(), signal.SIGINT)\ndone = sum(range(200_000)) > 0\n")
    done = subprocess.run([sys.executable, "-c", IMPORT_INTERRUPTED, str(tmp_path)], capture_output=True, text=True,
                          env=child_env(), timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "imported True\ninterrupted True\n", "")


def test_ctrl_c_as_a_file_is_wrapped_stays_an_interrupt(tmp_path, monkeypatch) -> None:
    """Ctrl-C raised in ``os.fdopen`` once its file object owns the descriptor (the object, dropped, closes it):
    the interrupt goes on. ``open_regular`` closed the descriptor a second time, and that EBADF replaced the
    interrupt: ``diff -q A B`` interrupted at 25 ms said "b.index: cannot read (Bad file descriptor)", exit 3."""
    from formats.io import storage

    path = tmp_path / "f"
    path.write_bytes(b"x")
    real = storage.os.fdopen

    def interrupted(fd: int, *args, **kwargs):
        wrapped = real(fd, *args, **kwargs)
        del wrapped  # closes fd
        raise KeyboardInterrupt

    monkeypatch.setattr(storage.os, "fdopen", interrupted)
    with pytest.raises(KeyboardInterrupt):
        storage.read_bytes(str(path))


def test_the_interpreters_own_reports_are_told_from_ckpts() -> None:
    site = ("Fatal Python error: init_import_site: Failed to import the site module\nPython runtime state: "
            "initialized\nKeyboardInterrupt\n\nCurrent thread 0x00007f0de668fb80 (most recent call first):\n"
            "  <no Python frame>\n")
    assert pythons_own(site) and pythons_own("KeyboardInterrupt\n")
    ours = 'Traceback (most recent call last):\n  File "/x/site-packages/ckpt_cli/main.py", line 3, in <module>\n' \
           "KeyboardInterrupt\n"
    streams = ("Fatal Python error: init_sys_streams: can't initialize sys standard streams\nPython runtime state: "
               "core initialized\nTraceback (most recent call last):\n  File \"<frozen io>\", line 111, in <module>\n"
               "TypeError: expected a message argument\n")
    assert pythons_own(streams) and pythons_own(site.replace("KeyboardInterrupt", "TypeError"))  # (no ckpt frame)
    assert not pythons_own(ours) and not pythons_own(streams.replace('"<frozen io>", line 111',
                                                                     '"/x/site-packages/formats/core/errors.py", line 2'))
