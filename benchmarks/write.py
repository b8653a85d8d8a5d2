"""Benchmark: copy a ~1 GB checkpoint with ``write_checkpoint`` vs ``cp`` of the same bytes.

Usage: python benchmarks/write.py [--dir DIR] [--mib 1024] [--tensors 200] [--runs 3]

1. Generates a checkpoint of float32 tensors with ckpt's own writer, one tensor at a time from a
   generator (so the generator itself stays bounded), unless it already exists in DIR.
2. Times, each in a fresh subprocess, median of ``--runs``:
   - ``cp`` of the index and data file, and ``cp`` followed by an fsync of the copies (the writer fsyncs);
   - ``write_checkpoint(out, opened_source)`` with verification on, and with ``verify=False``.
   Each subprocess reports its wall time and peak RSS (``resource.getrusage``); RSS counts the file
   pages a process has mapped, so the anonymous part (RssAnon high-water mark) is shown too.
The page cache is warm for every run (the source was just written or read), and ``sync`` runs
before each run so no run pays for flushing the previous one's writes.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import json, os, resource, sys, time
mode, src, out = sys.argv[1:4]
peak_anon = 0
def anon():
    global peak_anon
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                peak_anon = max(peak_anon, int(line.split()[1]))
if mode.startswith("cp"):
    import subprocess
    start = time.perf_counter()
    for suffix in (".index", ".data-00000-of-00001"):
        subprocess.run(["cp", src + suffix, out + suffix], check=True)
        if mode == "cp+fsync":
            fd = os.open(out + suffix, os.O_RDONLY); os.fsync(fd); os.close(fd)
    elapsed = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
else:
    import threading
    import formats
    stop = threading.Event()
    def sample():
        while not stop.is_set():
            anon(); stop.wait(0.01)
    t = threading.Thread(target=sample, daemon=True); t.start()
    start = time.perf_counter()
    with formats.open_checkpoint(src) as ckpt:
        formats.write_checkpoint(out, ckpt, verify=(mode == "ckpt-verify"))
    elapsed = time.perf_counter() - start
    stop.set(); t.join(); anon()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": elapsed, "peak_rss_kib": rss, "peak_anon_kib": peak_anon}))
"""


def generate(prefix: str, total_mib: int, count: int) -> None:
    """Write ``count`` float32 tensors totalling ``total_mib`` MiB, generated one at a time."""
    import numpy as np

    import formats

    per = total_mib * (1 << 20) // count // 4
    rows = 1024

    def tensors():
        rng = np.random.default_rng(0)
        for i in range(count):
            yield f"model/layer_{i:03d}/kernel/.ATTRIBUTES/VARIABLE_VALUE", \
                rng.standard_normal((rows, per // rows), dtype=np.float32)

    formats.write_checkpoint(prefix, tensors(), verify=False)


def run(mode: str, src: str, out_dir: str) -> dict:
    """One timed copy in a fresh process; the output is removed afterwards."""
    out = os.path.join(out_dir, "copy")
    os.sync()  # no dirty pages left over from the previous run to be flushed during this one
    result = subprocess.run([sys.executable, "-c", CHILD, mode, src, out], check=True, capture_output=True, text=True)
    for suffix in (".index", ".data-00000-of-00001"):
        if os.path.exists(out + suffix):
            os.unlink(out + suffix)
    return json.loads(result.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "ckpt-bench-write"))
    parser.add_argument("--mib", type=int, default=1024)
    parser.add_argument("--tensors", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    src = os.path.join(args.dir, "source")
    if not os.path.exists(src + ".index"):
        start = time.perf_counter()
        generate(src, args.mib, args.tensors)
        print(f"generated {args.tensors} tensors, {args.mib} MiB in {time.perf_counter() - start:.1f} s")
    size = sum(os.path.getsize(src + s) for s in (".index", ".data-00000-of-00001"))
    out_dir = os.path.join(args.dir, "out")
    os.makedirs(out_dir, exist_ok=True)
    run("cp", src, out_dir)  # warm the page cache
    results = {}
    for mode in ("cp", "cp+fsync", "ckpt-noverify", "ckpt-verify"):
        runs = [run(mode, src, out_dir) for _ in range(args.runs)]
        results[mode] = {"seconds": statistics.median(r["seconds"] for r in runs),
                         "peak_rss_mib": max(r["peak_rss_kib"] for r in runs) / 1024,
                         "peak_anon_mib": max(r["peak_anon_kib"] for r in runs) / 1024}
    shutil.rmtree(out_dir)
    print(f"source: {size / (1 << 20):.0f} MiB in {args.tensors} tensors; median of {args.runs} runs")
    base = results["cp"]["seconds"]
    synced = results["cp+fsync"]["seconds"]
    for mode, r in results.items():
        print(f"{mode:14s} {r['seconds']:7.2f} s  {r['seconds'] / base:5.2f}x cp  {r['seconds'] / synced:5.2f}x cp+fsync"
              f"  peak RSS {r['peak_rss_mib']:7.1f} MiB  (anonymous {r['peak_anon_mib']:6.1f} MiB)")


if __name__ == "__main__":
    main()
