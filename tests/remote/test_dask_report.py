"""``ckpt report`` on a real Dask cluster (two worker processes, ``LocalCluster``) reading a multi-shard checkpoint
from an S3 API (moto's server) on 127.0.0.1: the report's JSON and its page are those of local threads and of a
local copy, and a worker lost mid-run changes nothing.

The bucket and the cluster are :mod:`.test_dask`'s fixtures (module-scoped: this module starts its own, after
that module's are gone)."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

from ..test_report import block_means
from . import test_dask
from .test_dask import SHARDS, KillOnce, _tensors

bucket, dask_url = test_dask.bucket, test_dask.dask_url  # its fixtures, started again for this module

CHECKPOINT_TENSORS = len(_tensors(2))


def _report_three(run_cli, bucket, dask_url, tmp_path: Path, *paths: str) -> tuple[dict, dict, dict, list[bytes]]:
    """``ckpt report PATHS --json -o PAGE`` ({} the checkpoints' folder) on the cluster, on three local threads
    (same URLs) and on the local copy: the three JSON documents (the copy's paths written as the URL) and the
    three pages (the copy's likewise)."""
    url, local = bucket.url, str(bucket.local)
    runs = {"dask": ([p.format(url) for p in paths], ["--executor", dask_url]),
            "threads": ([p.format(url) for p in paths], ["--executor", "local", "-j", "3"]),
            "copy": ([p.format(local) for p in paths], [])}
    docs, pages = [], []
    for name, (args, where) in runs.items():
        page = tmp_path / f"{name}.html"
        result = run_cli("report", *args, "--json", "-o", str(page), *where)
        assert result.exit_code == 0, (name, result.stderr)
        docs.append(json.loads(result.stdout.replace(local, url)))
        pages.append(page.read_bytes().replace(local.encode(), url.encode()))
    return docs[0], docs[1], docs[2], pages


def test_checkpoint_report_on_the_cluster(run_cli, bucket, dask_url, tmp_path):
    dask, threads, copy, pages = _report_three(run_cli, bucket, dask_url, tmp_path, "{}/ckpt-2")
    assert dask == threads == copy
    assert pages[0] == pages[1] == pages[2]  # byte for byte (the copy's folder written as the URL)
    body = dask["checkpoint"]
    assert body["tensors"] == CHECKPOINT_TENSORS and len(body["files"]) == SHARDS + 1
    by_key = {v["key"]: v for v in body["variables"]}
    values = _tensors(2)
    assert sorted(by_key) == sorted(values)
    kernel = values["layer_03/kernel"].astype(np.float64)
    stats = by_key["layer_03/kernel"]["stats"]
    assert stats["mean"] == pytest.approx(kernel.mean(), rel=1e-12)
    assert stats["l2"] == pytest.approx(np.linalg.norm(kernel), rel=1e-12)
    linear = by_key["layer_03/kernel"]["histograms"]["linear"]
    counts, _ = np.histogram(kernel, bins=len(linear["counts"]), range=(linear["edges"][0], linear["edges"][-1]))
    assert linear["counts"] == counts.tolist()
    assert by_key["has_nan"]["flags"] == ["nan", "inf"]
    assert by_key["vocab"]["histograms"] == {} and by_key["global_step"]["stats"]["max"] == 1002


def test_pair_report_on_the_cluster(run_cli, bucket, dask_url, tmp_path):
    dask, threads, copy, pages = _report_three(run_cli, bucket, dask_url, tmp_path, "{}/ckpt-1", "{}/ckpt-2")
    assert dask == threads == copy
    assert pages[0] == pages[1] == pages[2]
    a, b = _tensors(1), _tensors(2)
    changed = {c["key"]: c for c in dask["diff"]["changed"]}
    assert sorted(changed) == sorted(k for k in a if a[k].tolist() != b[k].tolist() and k != "has_nan")
    drawn = sorted(k for k, c in changed.items() if c["heatmap"] is not None)
    assert drawn == sorted(k for k in changed if a[k].ndim == 2)  # the kernels and the embedding
    for key in ("layer_00/kernel", "embedding"):
        d = np.abs(b[key].astype(np.float64) - a[key].astype(np.float64))
        assert changed[key]["heatmap"]["cells"] == pytest.approx(block_means(d).ravel().tolist(), rel=1e-9)


def test_run_report_on_the_cluster(run_cli, bucket, dask_url, tmp_path):
    import time

    dask, threads, copy, pages = _report_three(run_cli, bucket, dask_url, tmp_path, "{}")
    times = [[row.pop("mtime") for row in doc["run"]["checkpoints"]] for doc in (dask, threads, copy)]
    assert times[0] == times[1] and all(t > 0 for t in times[0] + times[2])  # the objects' times, the files'
    assert dask == threads == copy
    assert pages[0] == pages[1]
    shown = (rb'"mtime":[0-9.e+]+', rb"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC")  # a time, as JSON and as the table shows it
    for page, stamps in ((pages[2], times[2]), (pages[0], times[0])):  # each page shows its own files' times, in order
        assert re.findall(shown[0], page) == [b'"mtime":' + json.dumps(t).encode() for t in stamps]
        assert re.findall(shown[1], page) == [time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t)).encode()
                                               for t in stamps]
    blank = [re.sub(shown[1], b"TIME", re.sub(shown[0], b'"mtime":0', page)) for page in (pages[2], pages[0])]
    assert blank[0] == blank[1]  # the copy's page is the bucket's but for the times (replacing one time by another
    # in place would chain when a local time equals another checkpoint's object time)
    assert [c["step"] for c in dask["run"]["checkpoints"]] == [1, 2]
    a, b = _tensors(1), _tensors(2)
    trends = {v["key"]: v for v in dask["run"]["variables"]}
    assert "vocab" not in trends and trends["has_nan"]["nonfinite"] == [2, 2]
    for key in ("layer_07/kernel", "embedding", "counts"):
        x, y = a[key].astype(np.float64), b[key].astype(np.float64)
        assert trends[key]["norm"] == pytest.approx([np.linalg.norm(x), np.linalg.norm(y)], rel=1e-12)
        assert trends[key]["change"][0] is None
        assert trends[key]["change"][1] == pytest.approx(np.linalg.norm(y - x), rel=1e-12)


@pytest.mark.parametrize("unit,paths", [("ckpt-stats_unit", ("ckpt-2",)),
                                        ("ckpt-heatmap_unit", ("ckpt-1", "ckpt-2")),
                                        ("ckpt-change_unit", ("",))])
def test_a_worker_killed_mid_report_gives_the_same_report(run_cli, bucket, dask_url, tmp_path, unit, paths):
    from distributed import Client, WorkerPlugin

    marker = str(tmp_path / "killed")
    plugin = type("KillOncePlugin", (KillOnce, WorkerPlugin), {"unit": unit})(marker)
    urls = [f"{bucket.url}/{p}".rstrip("/") for p in paths]  # "": the run directory
    with Client(dask_url.replace("dask://", "tcp://"), set_as_default=False) as client:
        client.register_plugin(plugin)
        try:
            dask = run_cli("report", *urls, "--json", "--executor", dask_url)
        finally:
            client.unregister_worker_plugin(KillOnce.name)
        client.wait_for_workers(2, timeout=60)
    assert os.path.exists(marker)  # a worker did die, running that unit
    local = run_cli("report", *urls, "--json", "--executor", "local")
    assert dask.exit_code == local.exit_code == 0, dask.stderr
    assert json.loads(dask.stdout) == json.loads(local.stdout)


@pytest.mark.parametrize("paths", [("ckpt-2",), ("ckpt-1", "ckpt-2")])
def test_progress_follows_the_units_on_the_cluster(bucket, dask_url, paths, monkeypatch):
    import formats

    monkeypatch.setattr("formats.ops.units.UNIT_BYTES", 256 << 10)  # several units (cut on the client)
    calls: list[tuple[int, int]] = []
    total = 0
    for path in paths:  # a pair's progress counts the bytes of both sides
        with formats.open_checkpoint(f"{bucket.local}/{path}") as ckpt:
            total += sum(e.nbytes for e in ckpt.values())
    formats.report(*[f"{bucket.url}/{p}" for p in paths], executor=dask_url,
                   progress=lambda done, items: calls.append((done, items)))
    assert len(calls) >= 4 and calls == sorted(calls)  # each unit as it finished, never backwards
    assert calls[-1] == (total, CHECKPOINT_TENSORS)  # every tensor (or pair) and its bytes
