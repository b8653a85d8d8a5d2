"""Benchmark: ``ckpt diff --quiet A A`` of a large checkpoint vs reading both sides once with ``cat``.

Usage: python benchmarks/diff.py [--dir DIR] [--mib 1024] [--tensors 100] [--runs 3]

1. Writes a checkpoint of float32 tensors with ``formats.write_checkpoint`` (one tensor at a time from
   a generator), unless it already exists in DIR.
2. Times, each in a fresh subprocess, median of ``--runs``, page cache warm:
   - ``cat A.index A.data* A.index A.data* > /dev/null`` (both sides read once);
   - ``ckpt diff --quiet A A`` (both sides mmapped, CRC32C of both checked, bytes compared chunk by chunk),
     with its peak anonymous memory (RssAnon high-water mark; mapped file pages are not counted).
The goal (issue 7) is diff within 2x the time of cat, with bounded memory.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import json, subprocess, sys, threading, time
mode, prefix = sys.argv[1:3]
peak = 0
def anon():
    global peak
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                peak = max(peak, int(line.split()[1]))
if mode == "cat":
    files = [prefix + ".index", prefix + ".data-00000-of-00001"] * 2
    start = time.perf_counter()
    subprocess.run(["cat", *files], stdout=subprocess.DEVNULL, check=True)
    elapsed = time.perf_counter() - start
    code = 0
else:
    from click.testing import CliRunner
    from ckpt_cli.main import cli
    stop = threading.Event()
    def sample():
        while not stop.is_set():
            anon(); stop.wait(0.005)
    t = threading.Thread(target=sample, daemon=True); t.start()
    start = time.perf_counter()
    code = CliRunner().invoke(cli, ["diff", "--quiet", prefix, prefix]).exit_code
    elapsed = time.perf_counter() - start
    stop.set(); t.join(); anon()
print(json.dumps({"seconds": elapsed, "peak_anon_kib": peak, "exit": code}))
"""


def make_checkpoint(prefix: str, mib: int, tensors: int) -> None:
    """A checkpoint of ``tensors`` float32 tensors totalling about ``mib`` MiB."""
    import numpy as np

    from formats import write_checkpoint

    per = max(1, (mib << 20) // 4 // tensors)
    rng = np.random.default_rng(0)

    def gen():
        for i in range(tensors):
            yield f"layer_{i:04d}/kernel", rng.standard_normal(per, dtype=np.float32)

    write_checkpoint(prefix, gen(), verify=False)


def run(mode: str, prefix: str) -> dict[str, float]:
    """One timed subprocess."""
    out = subprocess.run([sys.executable, "-c", CHILD, mode, prefix], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    """Parse options, make the checkpoint, time both, print a summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "ckpt-bench-diff"))
    parser.add_argument("--mib", type=int, default=1024)
    parser.add_argument("--tensors", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    prefix = os.path.join(args.dir, f"big-{args.mib}m-{args.tensors}t", "ckpt-1")
    if not os.path.exists(prefix + ".index"):
        make_checkpoint(prefix, args.mib, args.tensors)
    run("cat", prefix)  # warm the page cache
    results = {}
    for mode in ("cat", "diff"):
        samples = [run(mode, prefix) for _ in range(args.runs)]
        results[mode] = samples
        secs = statistics.median(s["seconds"] for s in samples)
        extra = f", peak anon {max(s['peak_anon_kib'] for s in samples) / 1024:.0f} MiB, exit " \
                f"{samples[0]['exit']}" if mode == "diff" else ""
        print(f"{mode:5s} median {secs:.3f} s over {args.runs} runs{extra}")
    ratio = statistics.median(s["seconds"] for s in results["diff"]) / \
        statistics.median(s["seconds"] for s in results["cat"])
    size = os.path.getsize(prefix + ".data-00000-of-00001") / (1 << 20)
    print(f"diff/cat = {ratio:.2f}x on {size:.0f} MiB per side (goal: <= 2x)")


if __name__ == "__main__":
    main()
