"""Checkpoints in buckets and behind HTTP: read only what is needed."""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

import formats
from formats.io import storage

from ..conftest import CORPUS
from .conftest import CountingRangeHandler, big_bundle

pytest.importorskip("fsspec")


def _upload(fs, bucket: str, folder, prefix: str = "run") -> None:
    for f in sorted(os.listdir(folder)):
        fs.put_file(str(folder / f), f"{bucket}/{prefix}/{f}")


def test_s3_ls_reads_only_the_index(s3_bucket, tmp_path, run_cli):
    fs, bucket = s3_bucket
    prefix, _ = big_bundle(tmp_path)
    _upload(fs, bucket, tmp_path)
    index_size = os.path.getsize(f"{prefix}.index")
    storage.transfer().reset()
    result = run_cli("ls", "--json", f"s3://{bucket}/run/ckpt-100")
    assert result.exit_code == 0, result.stderr
    assert [t["key"] for t in json.loads(result.stdout)["tensors"]] == ["big", "small"]
    assert storage.transfer().bytes == index_size  # 16 MiB of data, not a byte of it fetched


def test_s3_show_one_tensor_reads_only_that_tensor(s3_bucket, tmp_path):
    fs, bucket = s3_bucket
    prefix, big = big_bundle(tmp_path)
    _upload(fs, bucket, tmp_path)
    with formats.open_checkpoint(f"s3://{bucket}/run/ckpt-100") as ckpt:
        storage.transfer().reset()
        assert ckpt["small"].read().tolist() == [1.0, 2.0, 3.0]
        assert storage.transfer().bytes == 12
        storage.transfer().reset()
        assert np.array_equal(ckpt["big"].read(), big)
        assert storage.transfer().bytes == big.nbytes


def test_s3_directory_state_file_and_verify_stream(s3_bucket, run_cli):
    fs, bucket = s3_bucket
    _upload(fs, bucket, CORPUS / "seed_slots/tf_ckpts", "tf_ckpts")
    url = f"s3://{bucket}/tf_ckpts"
    doc = json.loads(run_cli("ls", "--json", url).stdout)
    assert [(c["path"], c["latest"]) for c in doc["checkpoints"]] == [
        (f"{url}/ckpt-3", False), (f"{url}/ckpt-4", False), (f"{url}/ckpt-5", True)]
    result = run_cli("verify", "--json", url)
    assert result.exit_code == 0 and json.loads(result.stdout)["path"] == f"{url}/ckpt-5"


def test_s3_verify_of_a_large_tensor_streams_in_chunks(s3_bucket, tmp_path, monkeypatch):
    fs, bucket = s3_bucket
    big_bundle(tmp_path, mib=20)
    _upload(fs, bucket, tmp_path)
    monkeypatch.setattr(storage, "CHUNK", 4 << 20)
    from formats.ops.compare.verify import verify_checkpoint

    with formats.open_checkpoint(f"s3://{bucket}/run/ckpt-100") as ckpt:
        storage.transfer().reset()
        raw = ckpt.reader.entries[b"big"]
        sizes = [len(c) for c in ckpt.reader.chunks(raw, 4 << 20)]
        assert sizes == [4 << 20] * 5 and storage.transfer().requests == 5
        assert verify_checkpoint(ckpt).ok


def test_s3_corrupt_remote_data_is_a_clean_error(s3_bucket, tmp_path, run_cli):
    fs, bucket = s3_bucket
    prefix, _ = big_bundle(tmp_path, mib=1)
    data = bytearray(open(f"{prefix}.data-00000-of-00001", "rb").read())
    data[-1] ^= 0xFF
    open(f"{prefix}.data-00000-of-00001", "wb").write(bytes(data))
    _upload(fs, bucket, tmp_path)
    result = run_cli("verify", f"s3://{bucket}/run/ckpt-100")
    assert result.exit_code == 1
    assert "problem small: tensor 'small': checksum mismatch" in result.stdout


def test_s3_missing_object_and_missing_shard(s3_bucket, tmp_path, run_cli):
    fs, bucket = s3_bucket
    result = run_cli("ls", f"s3://{bucket}/nothing/here")
    assert result.exit_code == 3
    assert result.stderr == f"ckpt: error: s3://{bucket}/nothing/here: no such object, directory or checkpoint prefix\n"
    big_bundle(tmp_path, mib=1)
    fs.put_file(str(tmp_path / "ckpt-100.index"), f"{bucket}/half/ckpt-100.index")
    result = run_cli("ls", f"s3://{bucket}/half/ckpt-100")  # the index alone lists the keys, with a warning
    assert result.exit_code == 0
    assert result.stderr == (f"ckpt: warning: s3://{bucket}/half/ckpt-100.data-00000-of-00001: missing; the keys "
                             "are listed, their values cannot be read\n")
    assert "ckpt-100: tf-name, 2 tensors" in result.stdout
    result = run_cli("verify", f"s3://{bucket}/half/ckpt-100")
    assert result.exit_code == 1
    assert "problem ckpt-100.data-00000-of-00001: data file missing (shard 1 of 1" in result.stdout


def test_http_server_serving_a_corpus_directory(http_root, run_cli):
    pytest.importorskip("aiohttp")
    base, root = http_root
    shutil.copytree(CORPUS / "seed_slots/tf_ckpts", root / "run")
    result = run_cli("ls", "--json", f"{base}/run/ckpt-5")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["format"] == "tf-object" and len(doc["tensors"]) == 15
    assert CountingRangeHandler.sent == os.path.getsize(root / "run/ckpt-5.index")
    with formats.open_checkpoint(f"{base}/run/ckpt-5") as ckpt:
        kernel = ckpt["net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE"].read()
    with formats.open_checkpoint(CORPUS / "seed_slots/tf_ckpts/ckpt-5") as local:
        assert np.array_equal(kernel, local["net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE"].read())


def test_missing_extra_is_named(monkeypatch, run_cli):
    import builtins

    real_import = builtins.__import__

    def no_fsspec(name, *args, **kwargs):
        if name.startswith("fsspec"):
            raise ImportError("No module named 'fsspec'", name="fsspec")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_fsspec)
    result = run_cli("ls", "gs://bucket/run/ckpt-1")
    assert result.exit_code == 3
    assert result.stderr == ("ckpt: error: gs://bucket/run/ckpt-1: reading gs:// URLs needs an optional package: "
                             "pip install 'tfckpt[gcs]'\n")


def test_write_to_a_bucket_and_read_it_back(s3_bucket, run_cli):
    fs, bucket = s3_bucket
    url = f"s3://{bucket}/out/ckpt-1"
    src = CORPUS / "tf2_mixed/all_dtypes/ckpt-1"
    with formats.open_checkpoint(src) as ckpt:
        report = formats.write_checkpoint(url, dict(ckpt.items()))
    assert report.files == [f"{url}.data-00000-of-00001", f"{url}.index"]
    result = run_cli("verify", url, "--against", src)
    assert result.exit_code == 0, result.stdout + result.stderr
    with formats.open_checkpoint(src) as ckpt, pytest.raises(formats.CheckpointError, match="output checkpoint exists"):
        formats.write_checkpoint(url, dict(ckpt.items()))


def test_failed_upload_leaves_no_object_under_the_final_name(s3_bucket, tmp_path, monkeypatch):
    from formats.io import remote_write

    fs, bucket = s3_bucket
    prefix, _ = big_bundle(tmp_path, mib=1)
    calls = []
    real_put = type(fs).put_file

    def flaky_put(self, lpath, rpath, *args, **kwargs):
        calls.append(rpath)
        if rpath.endswith(".index"):
            raise OSError("connection reset")
        return real_put(self, lpath, rpath, *args, **kwargs)

    monkeypatch.setattr(type(fs), "put_file", flaky_put)
    with pytest.raises(OSError, match="connection reset"):
        remote_write.upload_checkpoint(str(prefix), f"s3://{bucket}/up/ckpt-100")
    assert [c.rsplit("/", 1)[-1] for c in calls] == ["ckpt-100.data-00000-of-00001", "ckpt-100.index"]
    fs.invalidate_cache()
    assert not fs.exists(f"{bucket}/up/ckpt-100.index") and not fs.exists(f"{bucket}/up/ckpt-100.data-00000-of-00001")


def test_convert_from_and_to_a_bucket_round_trips(s3_bucket, run_cli):
    fs, bucket = s3_bucket
    _upload(fs, bucket, CORPUS / "tf1_estimator", "est")
    src = f"s3://{bucket}/est/model.ckpt-200"
    out = f"s3://{bucket}/tf2/ckpt-1"
    result = run_cli("convert", src, "-o", out, "--to", "tf-object")
    assert result.exit_code == 0, result.stdout + result.stderr
    back = f"s3://{bucket}/tf1/model.ckpt-200"
    result = run_cli("convert", out, "-o", back, "--to", "tf-name", "--slot-names", "tf1")
    assert result.exit_code == 0, result.stdout + result.stderr
    # every variable comes back, bytes and all; the tf-object step added tf.train.Checkpoint's save_counter, which
    # the name-based result keeps under its name (a pairing by name leaves it out as bookkeeping)
    result = run_cli("verify", back, "--against", CORPUS / "tf1_estimator/model.ckpt-200", "--match", "name")
    assert result.exit_code == 0, result.stdout
    keys = [t["key"] for t in json.loads(run_cli("ls", "--json", back).stdout)["tensors"]]
    with formats.open_checkpoint(CORPUS / "tf1_estimator/model.ckpt-200") as original:
        assert sorted(keys) == sorted([*original, "save_counter"])
    result = run_cli("convert", out, "-o", out, "--to", "tf-name", "--force")
    assert result.exit_code == 4 and f"output would overwrite {out}.index, which is being read" in result.stderr


@pytest.mark.parametrize("args", [["convert", "{src}", "-o", "s3://b/x.npz", "--to", "npz"],
                                  ["extract", "{src}", "-o", "s3://b/x.npz"]])
def test_single_file_outputs_to_urls_are_refused_cleanly(tmp_path, run_cli, args):
    src = CORPUS / "tf1_adam/model.ckpt-1"
    result = run_cli(*[a.format(src=src) for a in args])
    assert result.exit_code == 4
    assert result.stderr.startswith("ckpt: error: s3://b/x.npz: this output is written to local disk only")
    assert not (tmp_path / "s3:").exists() and not os.path.exists("s3:")


def test_a_bucket_prefix_of_many_checkpoints_is_listed_with_requests_in_flight_together(s3_bucket, tmp_path,
                                                                                          run_cli, monkeypatch):
    """``ls`` of a prefix reads the checkpoints' indexes concurrently, and lists them as one at a time would."""
    import threading
    import time

    from formats.discover import scan
    from formats.io import storage

    fs, bucket = s3_bucket
    for step in range(1, 41):
        formats.write_checkpoint(tmp_path / "run" / f"ckpt-{step}", {"w": np.full((3,), step, np.float32)}.items())
    fs.put(str(tmp_path / "run") + "/", f"{bucket}/run/", recursive=True)
    state = {"now": 0, "most": 0}
    lock = threading.Lock()
    read_bytes = storage.read_bytes

    def slow_read(path: str) -> bytes:
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        try:
            time.sleep(0.02)
            return read_bytes(path)
        finally:
            with lock:
                state["now"] -= 1

    monkeypatch.setattr(storage, "read_bytes", slow_read)
    result = run_cli("ls", "--json", f"s3://{bucket}/run")
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)["checkpoints"]
    assert [r["step"] for r in rows] == list(range(1, 41))
    assert all(r["tensors"] == 1 and r["nbytes"] == 12 for r in rows)
    assert state["most"] > 4
    monkeypatch.setattr(scan, "REMOTE_REQUESTS", 1)
    state["most"] = 0
    one_at_a_time = run_cli("ls", "--json", f"s3://{bucket}/run")
    assert one_at_a_time.stdout == result.stdout and state["most"] == 1


def test_s3_report_of_a_checkpoint_a_pair_and_a_run_is_the_local_one(s3_bucket, tmp_path, run_cli):
    fs, bucket = s3_bucket
    _upload(fs, bucket, CORPUS / "seed_slots/tf_ckpts", "tf_ckpts")
    url, local = f"s3://{bucket}/tf_ckpts", CORPUS / "seed_slots/tf_ckpts"
    for names, kind in (["ckpt-5"], "checkpoint"), (["ckpt-3", "ckpt-5"], "diff"), ([], "run"):
        result = run_cli("report", *([f"{url}/{n}" for n in names] or [url]), "--json", "-o", tmp_path / f"{kind}.html")
        assert result.exit_code == 0, result.stderr
        got = json.loads(result.stdout.replace(url, str(local)))
        want = json.loads(json.dumps(formats.report(*([local / n for n in names] or [local])).to_json()))
        for doc in (got, want):
            for row in doc.get("run", {}).get("checkpoints", []):
                row.pop("mtime")  # the object's time in the bucket, the file's here
        assert got == want and got["kind"] == kind
        assert (tmp_path / f"{kind}.html").read_text().count('<article class="var"') > 0
