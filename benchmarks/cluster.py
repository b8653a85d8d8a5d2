"""``verify`` on a Dask cluster beside reading the same bytes with fsspec ``cat`` (issue 29; not a timed test).

    python benchmarks/cluster.py [--shards 100] [--mib 4] [--runs 5] [--out benchmarks/cluster.md]

An S3 API (moto's server, its own process) on 127.0.0.1 holds a generated checkpoint of ``--shards`` data files
of ``--mib`` MiB each (one float32 tensor per file). Measured, alternately, ``--runs`` times each, from one
client process: ``cat`` - fsspec's ``cat`` of every data file, all requested at once (s3fs runs them
concurrently), the bytes only; ``verify`` on local threads (``--executor local``); ``verify`` on a
``LocalCluster`` of 1 and of 2 single-threaded worker processes (``--executor dask://...``; the cluster is
started once, before its runs, as a long-lived cluster would be). Every run reads every byte from the server.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server() -> tuple[subprocess.Popen[bytes], str]:
    """moto's S3 server in its own process, and the environment pointing at it."""
    port = _port()
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    os.environ.update({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint, "AWS_ENDPOINT_URL_S3": endpoint})
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return server, endpoint
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("moto's server did not start")


def upload(fs: object, bucket: str, shards: int, mib: int) -> tuple[str, list[str], int]:
    """Write the checkpoint locally with ckpt's writer, upload it; (URL prefix, data file URLs, data bytes)."""
    from formats import write_checkpoint

    work = Path(tempfile.mkdtemp(prefix="ckpt-cluster-bench-"))
    try:
        n = mib << 18
        tensors = ((f"layer_{i:03d}/kernel", np.random.default_rng(i).standard_normal(n, dtype=np.float32))
                   for i in range(shards))
        write_checkpoint(str(work / "ckpt-1"), tensors, shards=list(range(shards)), verify=False)
        for f in sorted(os.listdir(work)):
            fs.put_file(str(work / f), f"{bucket}/run/{f}")  # type: ignore[attr-defined]
        data = sorted(f for f in os.listdir(work) if ".data-" in f)
        size = sum((work / f).stat().st_size for f in data)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return f"s3://{bucket}/run/ckpt-1", [f"{bucket}/run/{f}" for f in data], size


def timed(fn: object, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shards", type=int, default=100)
    parser.add_argument("--mib", type=int, default=4, help="MiB per data file")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "cluster.md"))
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    import s3fs
    from distributed import LocalCluster

    import formats
    from formats.core.executors import executor_for

    load = os.getloadavg()[0]
    server, endpoint = start_server()
    try:
        fs = s3fs.S3FileSystem(client_kwargs={"endpoint_url": endpoint})
        fs.mkdir("bench")
        url, files, size = upload(fs, "bench", args.shards, args.mib)
        fs.invalidate_cache()

        def cat() -> None:
            got = fs.cat(files)
            assert sum(len(v) for v in got.values()) == size

        def verify(executor: object) -> None:
            assert formats.verify(url, executor=executor).ok  # type: ignore[arg-type]

        results: dict[str, list[float]] = {"cat": [], "local": []}
        for _ in range(args.runs):  # alternately
            results["cat"] += timed(cat, 1)
            results["local"] += timed(lambda: verify("local"), 1)
        for workers in (1, 2):
            with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                              host="127.0.0.1") as cluster, \
                    executor_for(cluster.scheduler_address.replace("tcp://", "dask://")) as ex:
                verify(ex)  # the workers import ckpt and open the index once (warm, as a long-lived cluster)
                key = f"dask{workers}"
                results[key] = []
                for _ in range(args.runs):
                    results[key] += timed(lambda: verify(ex), 1)
                    results["cat"] += timed(cat, 1)
    finally:
        server.terminate()
        server.wait()
    write_table(args, results, size, load)


def write_table(args: argparse.Namespace, results: dict[str, list[float]], size: int, load: float) -> None:
    mib = size / (1 << 20)
    cat = statistics.median(results["cat"])
    names = {"cat": "fsspec cat of every data file (the limit)", "local": "ckpt verify --executor local (threads)",
             "dask1": "ckpt verify --executor dask://... (1 worker)",
             "dask2": "ckpt verify --executor dask://... (2 workers)"}
    lines = [f"Measured {datetime.date.today()} on {platform.machine()} {platform.system()}, {os.cpu_count()} cores, "
             f"Python {platform.python_version()}; load average {load:.1f} at the start; {args.shards} data files of "
             f"{args.mib} MiB ({mib:.0f} MiB) in moto's S3 server on 127.0.0.1 (its own process); {args.runs} runs "
             "each (cat {len})".replace("{len}", str(len(results['cat']))) + ", median (min-max).", "",
             "| operation | time | throughput | vs cat |", "|---|---|---|---|"]
    for key, label in names.items():
        t = results[key]
        med = statistics.median(t)
        lines.append(f"| {label} | {med:.2f} s ({min(t):.2f}-{max(t):.2f}) | {mib / med:.0f} MiB/s | "
                     f"{med / cat:.2f}x |")
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
