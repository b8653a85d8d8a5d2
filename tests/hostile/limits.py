"""Run ``ckpt`` in a child process with a wall-clock limit and an address-space limit (RLIMIT_AS), so a
hang, a runaway allocation or a crash fails one case cleanly instead of the test session."""
from __future__ import annotations

import os
import resource
import subprocess
import sys
from dataclasses import dataclass

from ..installed import child_env

__all__ = ["Outcome", "run_limited", "assert_clean", "MiB"]

MiB = 1 << 20
_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "COLUMNS": "200",
        "PYTHONFAULTHANDLER": "", "PYTHONDONTWRITEBYTECODE": "1"}


@dataclass
class Outcome:
    """What one limited run did: exit code (negative: killed by that signal; None: timed out), output."""

    code: int | None
    stdout: str
    stderr: str


def _limit(memory: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run_limited(*args: str | os.PathLike[str], seconds: float = 60, memory: int = 768 * MiB,
                cwd: str | os.PathLike[str] | None = None) -> Outcome:
    """``python -m ckpt_cli ARGS`` with at most ``memory`` bytes of address space and ``seconds`` of time."""
    env = child_env(**_ENV)
    env.pop("PYTHONFAULTHANDLER")
    try:
        done = subprocess.run([sys.executable, "-m", "ckpt_cli", *map(str, args)], capture_output=True, text=True,
                              timeout=seconds, env=env, cwd=cwd, preexec_fn=lambda: _limit(memory))
    except subprocess.TimeoutExpired as exc:
        return Outcome(None, str(exc.stdout or ""), str(exc.stderr or ""))
    return Outcome(done.returncode, done.stdout, done.stderr)


def assert_clean(outcome: Outcome, code: int, *needles: str) -> str:
    """The run ended with ``code`` and, when it failed, one ``ckpt: error:`` line (plus at most a hint)
    holding each of ``needles``; returns that line."""
    assert outcome.code is not None, "timed out"
    err = outcome.stderr.strip().splitlines()
    assert outcome.code == code, (outcome.code, outcome.stderr[-2000:])
    assert "Traceback" not in outcome.stderr and "internal error" not in outcome.stderr, outcome.stderr[-2000:]
    if code in (0, 1):
        return ""
    assert 1 <= len(err) <= 2 and err[0].startswith("ckpt: error: "), err
    assert len(err) == 1 or err[1].startswith("  hint: "), err
    for needle in needles:
        assert needle in err[0], (needle, err[0])
    return err[0]
