"""Start-up benchmark: `ckpt ls` vs TensorFlow's `tf.train.list_variables`, each a fresh process.

    python benchmarks/startup.py [CHECKPOINT] [--runs N]

Reports the median wall time of N runs of each (TensorFlow only when it is importable) and the ratio.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "tests/data/corpus/seed_slots/tf_ckpts/ckpt-5"
TF_SNIPPET = "import sys, tensorflow as tf\nfor k, s in tf.train.list_variables(sys.argv[1]): print(k, s)"


def _median_seconds(cmd: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _has_tensorflow() -> bool:
    probe = subprocess.run([sys.executable, "-c", "import importlib.util as u; "
                            "raise SystemExit(u.find_spec('tensorflow') is None)"])
    return probe.returncode == 0


def main() -> None:
    """Run the comparison and print one line per tool."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", nargs="?", default=str(DEFAULT))
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    ours = {
        "ckpt ls (table, piped)": [sys.executable, "-m", "ckpt_cli", "ls", args.checkpoint],
        "ckpt ls --json": [sys.executable, "-m", "ckpt_cli", "ls", "--json", args.checkpoint],
    }
    results = {name: _median_seconds(cmd, args.runs) for name, cmd in ours.items()}
    tf = None
    if _has_tensorflow():
        tf = _median_seconds([sys.executable, "-c", TF_SNIPPET, args.checkpoint], max(3, args.runs // 2))
        print(f"{'tf.train.list_variables':28s} {tf * 1000:8.0f} ms")
    for name, seconds in results.items():
        ratio = f"  {tf / seconds:5.1f}x faster" if tf else ""
        print(f"{name:28s} {seconds * 1000:8.0f} ms{ratio}")
    if tf is None:
        print("(TensorFlow not installed: install the 'interop' extra to compare)")


if __name__ == "__main__":
    main()
