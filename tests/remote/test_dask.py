"""ckpt on a real Dask cluster: two worker processes (``LocalCluster``) reading a multi-shard checkpoint from an S3
API (moto's server) on 127.0.0.1. Every command must give what local threads give, and what a local copy gives.

One server, one bucket and one cluster for the module (starting a cluster costs seconds)."""
from __future__ import annotations

import json
import os
import shutil
import types
import uuid

import numpy as np
import pytest

pytest.importorskip("distributed")
pytest.importorskip("s3fs")
moto_server = pytest.importorskip("moto.server")

SHARDS = 4


def _tensors(seed: int) -> dict[str, np.ndarray]:
    """Thirty-seven tensors of several dtypes, strings among them, over ``SHARDS`` data files; ``seed`` moves the float values."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for i in range(16):
        out[f"layer_{i:02d}/kernel"] = (rng.standard_normal((64, 96 + i)) * 0.1).astype(np.float32)
        out[f"layer_{i:02d}/bias"] = np.arange(96 + i, dtype=np.float64) / (seed + 1)
    out["embedding"] = (rng.standard_normal((3000, 128))).astype(np.float16)  # 768 KB: its own unit
    out["global_step"] = np.array(1000 + seed, dtype=np.int64)
    out["counts"] = np.arange(10, dtype=np.int32) * (seed + 1)
    out["has_nan"] = np.array([1.0, np.nan, np.inf, 0.0], dtype=np.float32)
    out["vocab"] = np.array([b"alpha", b"b" * seed, b""], dtype=object)  # a string tensor: its own CRC layout
    return out


def _write(prefix: str, seed: int) -> None:
    from formats import write_checkpoint

    tensors = _tensors(seed)
    shards = [min(i * SHARDS // len(tensors), SHARDS - 1) for i in range(len(tensors))]
    write_checkpoint(prefix, tensors, shards=shards, force=True)


@pytest.fixture(scope="module")
def bucket(tmp_path_factory):
    """The moto server, its environment (set before the cluster starts: the workers inherit it) and a bucket
    with ``run/ckpt-1`` and ``run/ckpt-2`` (``SHARDS`` data files each) and a copy of them on disk."""
    import s3fs

    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{server._server.server_port}"
    with pytest.MonkeyPatch.context() as mp:
        for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                           "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint,
                           "AWS_ENDPOINT_URL_S3": endpoint}.items():
            mp.setenv(key, value)
        mp.delenv("CKPT_EXECUTOR", raising=False)
        s3fs.S3FileSystem.clear_instance_cache()
        fs = s3fs.S3FileSystem(anon=False, client_kwargs={"endpoint_url": endpoint})
        name = f"ckpt-dask-{uuid.uuid4().hex[:8]}"
        fs.mkdir(name)
        local = tmp_path_factory.mktemp("dask") / "run"
        local.mkdir()
        for step in (1, 2):
            _write(str(local / f"ckpt-{step}"), step)
        for f in sorted(os.listdir(local)):
            fs.put_file(str(local / f), f"{name}/run/{f}")
        try:
            yield types.SimpleNamespace(fs=fs, name=name, local=local, url=f"s3://{name}/run")
        finally:
            s3fs.S3FileSystem.clear_instance_cache()
            server.stop()


@pytest.fixture(scope="module")
def dask_url(bucket):
    """``dask://127.0.0.1:PORT`` of a cluster of two single-threaded worker processes."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      host="127.0.0.1") as cluster:
        yield cluster.scheduler_address.replace("tcp://", "dask://")


def _doc(result, *replace: tuple[str, str]) -> object:
    text = result.stdout
    for old, new in replace:
        text = text.replace(old, new)
    return json.loads(text)


def _three(run_cli, bucket, dask_url, *args: str, shard_files: bool = True) -> tuple[object, object, object]:
    """The JSON of ``ckpt ARGS`` (``{}`` standing for the checkpoints' folder) on the cluster, on local threads
    (same URL) and on the local copy, with the copy's paths written as the URL."""
    url, local = bucket.url, str(bucket.local)
    dask = run_cli(*[a.format(url) for a in args], "--json", "--executor", dask_url)
    threads = run_cli(*[a.format(url) for a in args], "--json", "--executor", "local", "-j", "3")
    copy = run_cli(*[a.format(local) for a in args], "--json")
    assert dask.exit_code == threads.exit_code == copy.exit_code, (dask.stderr, threads.stderr, copy.stderr)
    return _doc(dask), _doc(threads), _doc(copy, (local, url))


def test_verify_on_the_cluster_is_verify_on_threads_and_on_a_local_copy(run_cli, bucket, dask_url):
    dask, threads, copy = _three(run_cli, bucket, dask_url, "verify", "{}/ckpt-1")
    assert dask == threads == copy
    assert dask["ok"] and dask["tensors"] == len(_tensors(1)) and len(dask["files"]) == SHARDS + 1


def test_stats_on_the_cluster(run_cli, bucket, dask_url, monkeypatch):
    monkeypatch.setenv("CKPT_EXECUTOR", dask_url)  # the environment's default; --executor still wins
    dask, threads, copy = _three(run_cli, bucket, dask_url, "stats", "{}/ckpt-2")
    assert dask == threads == copy
    by_key = {t["key"]: t for t in dask["tensors"]}
    assert by_key["has_nan"]["nan"] == 1 and by_key["has_nan"]["inf"] == 1
    assert by_key["counts"]["max"] == 27 and by_key["global_step"]["min"] == 1002
    kernel = _tensors(2)["layer_03/kernel"].astype(np.float64)
    assert by_key["layer_03/kernel"]["mean"] == pytest.approx(kernel.mean(), rel=1e-12)
    from_env = run_cli("stats", "--json", f"{bucket.url}/ckpt-2")  # CKPT_EXECUTOR: the cluster
    assert from_env.exit_code == 0 and json.loads(from_env.stdout) == dask


def test_diff_on_the_cluster(run_cli, bucket, dask_url):
    dask, threads, copy = _three(run_cli, bucket, dask_url, "diff", "{}/ckpt-1", "{}/ckpt-2")
    assert dask == threads == copy
    a, b = _tensors(1), _tensors(2)
    differing = sorted(k for k in a if a[k].tolist() != b[k].tolist() and k != "has_nan")
    assert sorted(c["key"] for c in dask["changed"]) == differing
    x, y = (t["layer_00/kernel"].astype(np.float64) for t in (a, b))
    change = next(c for c in dask["changed"] if c["key"] == "layer_00/kernel")
    assert change["rel_l2"] == pytest.approx(np.linalg.norm(x - y) / np.linalg.norm(x), rel=1e-12)


def test_verify_api_with_an_executor_object(bucket, dask_url):
    import formats
    from formats.core.executors import executor_for

    with executor_for(dask_url) as executor:
        first = formats.verify(f"{bucket.url}/ckpt-2", executor=executor)
        second = formats.stats(f"{bucket.url}/ckpt-2", ["layer_0*"], executor=executor)
    assert first.ok and first.tensors == len(_tensors(2))
    assert [t.key for t in second.tensors] == sorted(k for k in _tensors(2) if k.startswith("layer_0"))


def test_a_unit_asks_the_store_only_about_the_files_it_reads(bucket, monkeypatch):
    """A unit opens the checkpoint again where it runs: with the sizes the client found it asks the store about
    no data file, without them only about the one it reads, never about all SHARDS of them."""
    import formats
    from formats.discover.units import for_unit, source_ref
    from formats.io import storage
    from formats.ops.compare.verify import verify_unit
    from formats.ops.units import new_token

    asked: list[str] = []
    real = storage._size_or_none
    monkeypatch.setattr(storage, "_size_or_none", lambda path: asked.append(path) or real(path))
    url = f"{bucket.url}/ckpt-2"
    with formats.open_checkpoint(url) as ckpt:
        assert asked == []  # opening a bundle in a bucket looks up no data file
        key = "layer_00/kernel"
        data_file = f"{url}.data-00000-of-0000{SHARDS}"
        assert [f for f in ckpt[key].files if ".data-" in f] == [data_file]
        bare = source_ref(ckpt, new_token())
        assert verify_unit(bare, (key,)) == [None]  # opened anew: nothing lent
        assert asked == [data_file]
        ckpt.problems()  # the client's own checks look every data file up, all at once
        assert sorted(asked[1:]) == [f"{url}.data-0000{k}-of-0000{SHARDS}" for k in range(SHARDS)]
        asked.clear()
        sized = for_unit(source_ref(ckpt, new_token()), ckpt, [key])
        assert sized.sizes == ((data_file, bucket.fs.size(data_file[5:])),)
        assert verify_unit(sized, (key,)) == [None]
        assert asked == []


class KillOnce:
    """A worker plugin: the first ckpt unit to start on a worker kills that worker's process (once: the marker
    file says it happened). The nanny starts a new worker and the scheduler runs the unit again."""

    name = "ckpt-kill-once"
    unit = "ckpt-verify_unit"

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def setup(self, worker: object) -> None:
        pass

    def teardown(self, worker: object) -> None:
        pass

    def transition(self, key: object, start: str, finish: str, **kwargs: object) -> None:
        if finish == "executing" and self.unit in str(key) and not os.path.exists(self.marker):
            with open(self.marker, "w") as f:
                f.write(str(os.getpid()))
            os._exit(1)


def test_a_worker_killed_mid_run_gives_the_same_report(run_cli, bucket, dask_url, tmp_path):
    from distributed import Client, WorkerPlugin

    marker = str(tmp_path / "killed")
    plugin = type("KillOncePlugin", (KillOnce, WorkerPlugin), {})(marker)
    with Client(dask_url.replace("dask://", "tcp://"), set_as_default=False) as client:
        client.register_plugin(plugin)
        try:
            dask = run_cli("verify", "--json", f"{bucket.url}/ckpt-1", "--executor", dask_url)
        finally:
            client.unregister_worker_plugin(KillOnce.name)
        client.wait_for_workers(2, timeout=60)
    assert os.path.exists(marker)  # a worker did die
    local = run_cli("verify", "--json", f"{bucket.url}/ckpt-1", "--executor", "local")
    assert dask.exit_code == local.exit_code == 0, dask.stderr
    assert json.loads(dask.stdout) == json.loads(local.stdout)


def _upload_flipped(bucket, tmp_path, stem: str, prefix: str) -> tuple[object, int]:
    """A local copy of the checkpoints with one bit flipped in the middle of ``stem``'s data file 2, and ``stem``
    uploaded from it under ``prefix`` of the bucket: (the copy's folder, the flipped byte's offset)."""
    copy = tmp_path / "bad"
    shutil.copytree(bucket.local, copy)
    data = copy / f"{stem}.data-00002-of-0000{SHARDS}"
    raw = bytearray(data.read_bytes())
    flipped = len(raw) // 2
    raw[flipped] ^= 0x40
    data.write_bytes(bytes(raw))
    for f in sorted(os.listdir(copy)):
        if f.startswith(f"{stem}."):
            bucket.fs.put_file(str(copy / f), f"{bucket.name}/{prefix}/{f}")
    return copy, flipped


def test_a_corrupt_range_is_reported_as_locally(run_cli, bucket, dask_url, tmp_path):
    copy, flipped = _upload_flipped(bucket, tmp_path, "ckpt-1", "bad")
    url = f"s3://{bucket.name}/bad/ckpt-1"
    dask = run_cli("verify", "--json", url, "--executor", dask_url)
    threads = run_cli("verify", "--json", url, "--executor", "local")
    local = run_cli("verify", "--json", str(copy / "ckpt-1"))
    assert dask.exit_code == threads.exit_code == local.exit_code == 1
    doc = json.loads(dask.stdout)
    assert doc == json.loads(threads.stdout)
    assert doc == json.loads(local.stdout.replace(str(copy), f"s3://{bucket.name}/bad"))
    import formats

    with formats.open_checkpoint(str(bucket.local / "ckpt-1")) as ckpt:  # the tensor the index puts there
        hit = [k.decode() for k, e in ckpt.reader.entries.items()
               if k and e.shard_id == 2 and e.offset <= flipped < e.offset + e.size]
    assert len(hit) == 1
    assert [p["where"] for p in doc["problems"]] == hit
    assert doc["problems"][0]["message"].startswith(f"tensor {hit[0]!r}: checksum mismatch (index says 0x")


# -- writes on the cluster ----------------------------------------------------------------------------------------
def _objects(bucket, prefix: str) -> dict[str, bytes]:
    """Every object under ``prefix`` of the bucket: name -> bytes."""
    names = sorted(bucket.fs.find(f"{bucket.name}/{prefix}"))
    return {n.rsplit("/", 1)[1]: bucket.fs.cat_file(n) for n in names}


def _files(folder, stem: str) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in sorted(folder.iterdir()) if f.name.startswith(stem)}


def _written_three(run_cli, bucket, dask_url, tmp_path, name: str, *args: str):
    """``ckpt ARGS -o OUT`` ({} the inputs' folder) on the cluster and on threads (S3 in, S3 out), and on the
    local copy (local in, local out): the three outputs' files, by name."""
    url = bucket.url
    dask = run_cli(*[a.format(url) for a in args], "-o", f"s3://{bucket.name}/{name}-dask/out",
                   "--executor", dask_url, "--json")
    threads = run_cli(*[a.format(url) for a in args], "-o", f"s3://{bucket.name}/{name}-threads/out",
                      "--executor", "local", "--json")
    copy = run_cli(*[a.format(str(bucket.local)) for a in args], "-o", str(tmp_path / "out"), "--json")
    assert dask.exit_code == threads.exit_code == copy.exit_code == 0, (dask.stderr, threads.stderr, copy.stderr)
    docs = [json.loads(r.stdout) for r in (dask, threads, copy)]
    assert docs[0]["written"]["contents"] == docs[1]["written"]["contents"] == docs[2]["written"]["contents"]
    return (_objects(bucket, f"{name}-dask"), _objects(bucket, f"{name}-threads"), _files(tmp_path, "out"))


def test_average_on_the_cluster_writes_the_same_bytes(run_cli, bucket, dask_url, tmp_path):
    dask, threads, copy = _written_three(run_cli, bucket, dask_url, tmp_path, "avg",
                                         "average", "{}/ckpt-1", "{}/ckpt-2")
    assert sorted(dask) == [f"out.data-0000{k}-of-0000{SHARDS}" for k in range(SHARDS)] + ["out.index"]
    assert dask == threads == copy
    local_out = tmp_path / "on-disk"  # the workers write the data files to a local folder (renamed when whole)
    result = run_cli("average", f"{bucket.url}/ckpt-1", f"{bucket.url}/ckpt-2", "-o", str(local_out / "out"),
                     "--executor", dask_url)
    assert result.exit_code == 0, result.stderr
    assert _files(local_out, "") == copy  # and no temporary file is left beside them
    import formats

    a, b = _tensors(1), _tensors(2)
    with formats.open_checkpoint(str(tmp_path / "out")) as out:
        for key in ("layer_05/kernel", "embedding"):
            expected = ((a[key].astype(np.float64) + b[key].astype(np.float64)) / 2).astype(a[key].dtype)
            assert out[key].read().tobytes() == expected.tobytes()
        assert int(out["global_step"].read()) == 1002  # the newest input's


def test_edit_on_the_cluster_writes_the_same_bytes(run_cli, bucket, dask_url, tmp_path):
    dask, threads, copy = _written_three(run_cli, bucket, dask_url, tmp_path, "edit", "edit", "{}/ckpt-2",
                                         "--select", "layer_1*", "--select", "embedding", "--select", "vocab",
                                         "--cast", "float32=float16",
                                         "--shards", "3")
    assert sorted(dask) == [f"out.data-0000{k}-of-00003" for k in range(3)] + ["out.index"]
    assert dask == threads == copy
    import formats

    with formats.open_checkpoint(str(tmp_path / "out")) as out:
        assert sorted(out) == sorted(k for k in _tensors(2) if k.startswith("layer_1") or k in ("embedding", "vocab"))
        assert out["vocab"].read().tolist() == [b"alpha", b"bb", b""]
        kernel = _tensors(2)["layer_12/kernel"]
        assert out["layer_12/kernel"].read().tobytes() == kernel.astype(np.float16).tobytes()


def _same_tensors(bucket, name: str, local) -> None:
    """The checkpoint written at ``name``/out in the bucket holds what the one at ``local`` holds: the same keys,
    dtypes, shapes and bytes of every tensor (the object graph included). A local write of local inputs takes
    their data files over whole (a kernel copy), so its data file orders the tensors by input file: the same
    tensors at other offsets."""
    import formats

    with formats.open_checkpoint(f"s3://{bucket.name}/{name}/out") as a, formats.open_checkpoint(str(local)) as b:
        assert a.format == b.format and sorted(a) == sorted(b)
        for key in a:
            assert (a[key].dtype, a[key].shape) == (b[key].dtype, b[key].shape), key
            va, vb = a[key].read(), b[key].read()
            assert (va.tolist() == vb.tolist()) if va.dtype == object else va.tobytes() == vb.tobytes(), key


def test_convert_on_the_cluster_writes_the_same_bytes(run_cli, bucket, dask_url, tmp_path):
    """A name-based bundle as an object-based one (its object graph built on the client, planned again on
    every worker): the same files as on threads, the same tensors as from the local copy."""
    dask, threads, copy = _written_three(run_cli, bucket, dask_url, tmp_path, "convert", "convert", "{}/ckpt-2",
                                         "--to", "tf-object")
    assert sorted(dask) == sorted(copy) == ["out.data-00000-of-00001", "out.index"]  # convert writes one data file
    assert dask == threads
    _same_tensors(bucket, "convert-dask", tmp_path / "out")
    import formats

    with formats.open_checkpoint(str(tmp_path / "out")) as out:
        assert out.format == "tf-object"
        kernel = {e.name: e for e in out.values() if e.name}["layer_03/kernel"]
        assert kernel.read().tobytes() == _tensors(2)["layer_03/kernel"].tobytes()


def test_rename_on_the_cluster_writes_the_same_bytes(run_cli, bucket, dask_url, tmp_path):
    dask, threads, copy = _written_three(run_cli, bucket, dask_url, tmp_path, "rename", "rename", "{}/ckpt-1",
                                         "--regex", "^layer_(.*)=block_\\1", "--map", "embedding=tok/embedding")
    assert sorted(dask) == sorted(copy)
    assert dask == threads
    _same_tensors(bucket, "rename-dask", tmp_path / "out")
    import formats

    with formats.open_checkpoint(str(tmp_path / "out")) as out:
        expected = {("block_" + k[6:] if k.startswith("layer_") else "tok/embedding" if k == "embedding" else k): v
                    for k, v in _tensors(1).items()}
        assert sorted(out) == sorted(expected)
        assert out["block_07/bias"].read().tobytes() == expected["block_07/bias"].tobytes()
        assert out["tok/embedding"].read().tobytes() == expected["tok/embedding"].tobytes()


def test_no_verify_on_the_cluster_reads_nothing_back(run_cli, bucket, dask_url, tmp_path):
    """--no-verify: the workers write and do not read their data files back (the report says it was not
    verified); the bytes are those of a verified write."""
    from distributed import Client

    def reads(client) -> int:
        return sum(client.run(lambda: __import__("formats.io.storage", fromlist=["x"]).transfer().requests).values())

    def reset(client) -> None:
        client.run(lambda: __import__("formats.io.storage", fromlist=["x"]).transfer().reset())

    args = ("edit", f"{bucket.url}/ckpt-2", "--cast", "float32=float16")
    with Client(dask_url.replace("dask://", "tcp://"), set_as_default=False) as client:
        reset(client)
        checked = run_cli(*args, "-o", f"s3://{bucket.name}/nv-checked/out", "--executor", dask_url, "--json")
        with_read_back = reads(client)
        reset(client)
        unchecked = run_cli(*args, "-o", f"s3://{bucket.name}/nv-unchecked/out", "--executor", dask_url, "--json",
                            "--no-verify")
        without = reads(client)
    assert checked.exit_code == unchecked.exit_code == 0, (checked.stderr, unchecked.stderr)
    assert json.loads(checked.stdout)["written"]["verified"] is True
    assert json.loads(unchecked.stdout)["written"]["verified"] is False
    written_files = sum(".data-" in k for k in _objects(bucket, "nv-checked"))
    assert without > 0  # the workers read their inputs
    assert with_read_back - without >= written_files  # and, verifying, each data file they wrote, once at least
    assert _objects(bucket, "nv-checked") == _objects(bucket, "nv-unchecked")


def test_link_is_refused_on_the_cluster(run_cli, bucket, dask_url, tmp_path):
    result = run_cli("rename", str(bucket.local / "ckpt-1"), "-o", str(tmp_path / "linked" / "out"), "--map", "a=b",
                     "--link", "--executor", dask_url)
    assert result.exit_code == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"ckpt: error: {tmp_path / 'linked' / 'out'}: linking data files applies to writes on this machine, not on a "
        "cluster"]
    assert not (tmp_path / "linked").exists()


def test_a_keras_output_is_refused_on_the_cluster(run_cli, bucket, dask_url, tmp_path):
    result = run_cli("convert", f"{bucket.url}/ckpt-1", "-o", str(tmp_path / "w.npz"), "--to", "npz",
                     "--executor", dask_url)
    assert result.exit_code == 2, result.stderr
    assert "write it with the local executor" in result.stderr
    assert not (tmp_path / "w.npz").exists()


def test_a_worker_killed_while_writing_gives_the_same_bytes(run_cli, bucket, dask_url, tmp_path):
    from distributed import Client, WorkerPlugin

    marker = str(tmp_path / "killed")
    plugin = type("KillOncePlugin", (KillOnce, WorkerPlugin), {"unit": "ckpt-write_data_unit"})(marker)
    args = ("average", f"{bucket.url}/ckpt-1", f"{bucket.url}/ckpt-2")
    with Client(dask_url.replace("dask://", "tcp://"), set_as_default=False) as client:
        client.register_plugin(plugin)
        try:
            dask = run_cli(*args, "-o", f"s3://{bucket.name}/killed/out", "--executor", dask_url)
        finally:
            client.unregister_worker_plugin(KillOnce.name)
        client.wait_for_workers(2, timeout=60)
    assert os.path.exists(marker) and dask.exit_code == 0, dask.stderr
    local = run_cli(*args, "-o", f"s3://{bucket.name}/killed-local/out", "--executor", "local")
    assert local.exit_code == 0
    assert _objects(bucket, "killed") == _objects(bucket, "killed-local")


def test_a_failed_write_leaves_nothing_behind(run_cli, bucket, dask_url, tmp_path):
    """One input's data file 2 is corrupt: the unit writing data file 2 fails on its checksum, the others have
    written theirs; no index is published and the data files written are removed."""
    _upload_flipped(bucket, tmp_path, "ckpt-2", "badrun")
    result = run_cli("average", f"{bucket.url}/ckpt-1", f"s3://{bucket.name}/badrun/ckpt-2",
                     "-o", f"s3://{bucket.name}/failed/out", "--executor", dask_url)
    assert result.exit_code == 3 and "checksum" in result.stderr, result.stderr
    assert bucket.fs.find(f"{bucket.name}/failed") == []
