"""Run ``ckpt`` commands in a child process under an address-space limit; the test reads its report.

``python -m tests.hostile.cli_child HEADROOM STALL COMMANDS_JSON`` imports what the commands need,
limits the address space to what is mapped then plus ``HEADROOM`` bytes, and runs each command (a list
of arguments) in turn, printing one JSON line before it (``{"start": args}``) and one after it (exit
code, stdout, stderr, and ``grown``: how far the peak resident memory has grown since the commands
started, in bytes). A crash or a hang kills only this process: :func:`run_limited` reports which
command was running. ``STALL`` is the isolated HDF5 reader's stall timeout in seconds.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.installed import child_env

ROOT = Path(__file__).resolve().parents[2]


def _mapped() -> int:
    with open("/proc/self/statm", "rb") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def main() -> None:
    import resource

    from tests.installed import import_installed

    import_installed()  # formats and ckpt_cli as the tests import them, not the checkout this module runs from

    headroom, stall, commands = int(sys.argv[1]), float(sys.argv[2]), json.loads(sys.argv[3])
    import h5py  # noqa: F401 - mapped before the limit is measured, as in a real run
    import numpy  # noqa: F401
    from click.testing import CliRunner

    import formats.io.sandbox as sandbox
    import formats.keras_h5.reader  # noqa: F401
    from ckpt_cli.main import cli

    sandbox.STALL_SECONDS = stall
    limit = _mapped() + headroom
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for args in commands:
        print(json.dumps({"start": args}), flush=True)
        result = CliRunner().invoke(cli, args)
        crashed = result.exception if not isinstance(result.exception, SystemExit) else None
        grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - baseline) * 1024  # Linux: KiB
        print(json.dumps({"args": args, "exit_code": result.exit_code, "stdout": result.stdout,
                          "stderr": result.stderr, "exception": repr(crashed) if crashed else None,
                          "grown": grown}), flush=True)


def run_limited(commands: list[list[str]], headroom: int = 512 << 20, stall: float = 2.0,
                timeout: float = 120.0) -> list[dict[str, Any]]:
    """Run ``commands`` in a child (see the module docstring); one result per command, or an
    AssertionError naming the command that crashed or hung the child."""
    # the child runs this module from the checkout (``tests`` on its path); main() imports ckpt as the tests do
    env = {**child_env(COLUMNS="200", NO_COLOR="1", MALLOC_ARENA_MAX="2"), "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "tests.hostile.cli_child", str(headroom), str(stall), json.dumps(commands)]
    try:
        proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        raise AssertionError(f"hang: no answer within {timeout} s; last started: {_last_started(out)}") from None
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    results = [line for line in lines if "exit_code" in line]
    if proc.returncode != 0 or len(results) != len(commands):
        raise AssertionError(f"the child died (status {proc.returncode}) during {_last_started(proc.stdout)}: "
                             f"{proc.stderr[-2000:]}")
    return results


def _last_started(out: str) -> Any:
    started = [json.loads(line)["start"] for line in out.splitlines() if line.startswith('{"start"')]
    return started[-1] if started else None


if __name__ == "__main__":
    main()
