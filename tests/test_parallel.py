"""Work spread over threads (``--jobs N``) gives exactly what one thread gives: results, reports, errors."""
from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest

from formats import open_checkpoint, write_checkpoint
from formats.core.parallel import available_cores, map_ordered, resolve_jobs


def test_results_come_back_in_input_order_heaviest_started_first() -> None:
    started: list[int] = []
    lock = threading.Lock()

    def work(n: int) -> int:
        with lock:
            started.append(n)
        time.sleep(0.001 * (n % 3))
        return n * n

    items = list(range(20))
    seen: list[int] = []
    out = map_ordered(work, items, 2, weight=lambda n: n, done=lambda n, r: seen.append(r))
    assert out == [n * n for n in items]
    assert sorted(seen) == sorted(out)
    assert started[:2] == [19, 18] or started[:2] == [18, 19]
    assert map_ordered(work, items, 1) == out


def test_the_first_failing_item_in_input_order_raises_after_every_earlier_one_ran() -> None:
    ran: set[int] = set()

    def work(n: int) -> int:
        ran.add(n)
        if n in (5, 12):
            raise ValueError(f"item {n}")
        return n

    for jobs in (1, 2, 4):
        ran.clear()
        with pytest.raises(ValueError, match="item 5"):
            map_ordered(work, list(range(20)), jobs, weight=lambda n: -n)
        assert set(range(6)) <= ran


def test_jobs_default_to_the_cores_this_process_may_use() -> None:
    import os

    assert available_cores() == len(os.sched_getaffinity(0))
    assert resolve_jobs(None) == resolve_jobs(0) == available_cores()
    assert resolve_jobs(3) == 3
    with pytest.raises(ValueError):
        resolve_jobs(-1)


def _damaged(tmp_path, count: int = 40) -> str:
    """A bundle of ``count`` tensors of several sizes, three of them with a flipped byte."""
    rng = np.random.default_rng(7)
    tensors = {f"layer_{i:02d}/w": rng.standard_normal((i * 50 + 3, 7)).astype(np.float32) for i in range(count)}
    prefix = str(tmp_path / "ckpt-1")
    write_checkpoint(prefix, tensors.items(), verify=False)
    with open_checkpoint(prefix) as ckpt:
        offsets = [ckpt[k].raw.offset for k in ("layer_03/w", "layer_17/w", "layer_39/w")]
    with open(prefix + ".data-00000-of-00001", "r+b") as f:
        for offset in offsets:
            f.seek(offset + 5)
            byte = f.read(1)
            f.seek(offset + 5)
            f.write(bytes([byte[0] ^ 0xFF]))
    return prefix


def test_verify_reports_the_same_with_one_thread_or_two(tmp_path, run_cli) -> None:
    prefix = _damaged(tmp_path)
    one = run_cli("verify", "--json", "--jobs", "1", prefix)
    two = run_cli("verify", "--json", "--jobs", "2", prefix)
    every = run_cli("verify", "--json", prefix)
    assert one.exit_code == two.exit_code == every.exit_code == 1
    assert one.stdout == two.stdout == every.stdout
    doc = json.loads(one.stdout)
    assert [p["where"] for p in doc["problems"]] == ["layer_03/w", "layer_17/w", "layer_39/w"]
    assert doc["tensors"] == 40
    assert run_cli("verify", "--jobs", "1", prefix).stdout == run_cli("verify", "-j", "2", prefix).stdout


def _changed_copy(tmp_path, prefix: str) -> str:
    """``prefix``'s tensors written again with three of them changed (one in shape, two in value)."""
    with open_checkpoint(prefix) as ckpt:
        tensors = {k: ckpt[k].read() for k in ckpt}
    tensors["layer_05/w"] = tensors["layer_05/w"] * 2
    tensors["layer_30/w"][3, 4] = np.nan
    tensors["layer_11/w"] = tensors["layer_11/w"][:-1]
    del tensors["layer_20/w"]
    tensors["extra"] = np.zeros(3, np.float32)
    out = str(tmp_path / "other" / "ckpt-2")
    write_checkpoint(out, tensors.items(), verify=False)
    return out


def test_diff_reports_the_same_with_one_thread_or_two(tmp_path, run_cli) -> None:
    rng = np.random.default_rng(3)
    tensors = {f"layer_{i:02d}/w": rng.standard_normal((i * 50 + 3, 7)).astype(np.float32) for i in range(40)}
    a = str(tmp_path / "ckpt-1")
    write_checkpoint(a, tensors.items(), verify=False)
    b = _changed_copy(tmp_path, a)
    for extra in ([], ["--json"]):
        one = run_cli("diff", *extra, "--jobs", "1", a, b)
        two = run_cli("diff", *extra, "--jobs", "2", a, b)
        assert one.exit_code == two.exit_code == 1
        assert one.stdout == two.stdout
    doc = json.loads(run_cli("diff", "--json", "-j", "2", a, b).stdout)
    assert [c["key"] for c in doc["changed"]] == ["layer_05/w", "layer_11/w", "layer_30/w"]
    assert (doc["only_in_a"], doc["only_in_b"], doc["same"]) == (["layer_20/w"], ["extra"], 36)
    same = run_cli("diff", "--json", "-j", "2", a, a)
    assert same.exit_code == 0 and json.loads(same.stdout)["same"] == 40


def test_same_bytes_compares_any_buffers_exactly() -> None:
    import mmap

    from formats.core import memcmp

    data = bytes(range(256)) * 4096
    assert memcmp.same_bytes(data, bytearray(data)) and memcmp.same_bytes(b"", memoryview(b""))
    changed = bytearray(data)
    changed[-1] ^= 1
    assert not memcmp.same_bytes(data, changed) and not memcmp.same_bytes(data, data[:-1])
    with mmap.mmap(-1, len(data)) as m:
        m.write(data)
        assert memcmp.same_bytes(memoryview(m)[10:5000], data[10:5000])
        assert not memcmp.same_bytes(memoryview(m)[10:5000], data[11:5001])
    assert memcmp._copying_compare(data, memoryview(data)) and not memcmp._copying_compare(data, changed)


def test_same_bytes_set_up_by_several_threads_at_once() -> None:
    """Regression: the first comparisons of a diff on two threads set up the comparer twice, each declaring
    the shared ``ctypes.pythonapi`` functions with its own buffer structure, and a thread's call no longer
    matched them (an internal error, exit 5). The comparer is set up once and uses functions of its own."""
    import ctypes

    from formats.core import memcmp

    data = bytes(range(256)) * (memcmp.SMALL // 128)  # (below SMALL bytes, buffers are copied and compared)
    for _ in range(10):
        memcmp._compare = None
        barrier = threading.Barrier(8)
        results: list[object] = []

        def work(barrier: threading.Barrier = barrier, results: list[object] = results) -> None:
            barrier.wait()
            try:
                results.append(memcmp.same_bytes(data, bytearray(data)))
            except Exception as exc:  # noqa: BLE001 - the failure this test is about
                results.append(exc)

        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == [True] * 8
    shared = ctypes.pythonapi.PyObject_GetBuffer
    before = shared.argtypes
    shared.argtypes = (ctypes.py_object, ctypes.c_char_p, ctypes.c_int)  # another user of ctypes declares it
    try:
        assert memcmp.same_bytes(data, bytearray(data)) and not memcmp.same_bytes(data, data[::-1])
    finally:
        shared.argtypes = before


def test_stats_are_the_same_with_one_thread_or_two(tmp_path, run_cli) -> None:
    prefix = str(tmp_path / "ckpt-1")
    rng = np.random.default_rng(5)
    tensors = {f"t{i:02d}": rng.standard_normal((i * 300 + 1,)).astype(np.float32) for i in range(30)}
    tensors["t07"][3] = np.inf
    tensors["steps"] = np.arange(10, dtype=np.int64)
    write_checkpoint(prefix, tensors.items(), verify=False)
    one = run_cli("stats", "--json", "--check-finite", "--jobs", "1", prefix)
    two = run_cli("stats", "--json", "--check-finite", "--jobs", "2", prefix)
    assert one.exit_code == two.exit_code == 1
    assert one.stdout == two.stdout
    doc = json.loads(one.stdout)
    assert doc["nonfinite"] == ["t07"]
    assert [t["key"] for t in doc["tensors"]] == sorted(tensors)
    assert doc["tensors"][0]["key"] == "steps" and doc["tensors"][0]["max"] == 9
    assert run_cli("stats", "-j", "1", prefix).stdout == run_cli("stats", "-j", "2", prefix).stdout


@pytest.mark.parametrize("command", [
    ["rename", "--map", "layer_0=block_0"], ["convert", "--to", "tf-object"], ["edit", "--select", "layer_1*"],
    ["average"]], ids=["rename", "convert", "edit", "average"])
def test_writers_read_back_the_same_with_one_thread_or_two(tmp_path, run_cli, command: list[str]) -> None:
    """Write commands verify their output on --jobs threads: the output's bytes and the report are the same."""
    rng = np.random.default_rng(5)
    inputs = []
    for step in (1, 2):
        tensors = {f"layer_{i:02d}/w": rng.standard_normal((i * 40 + 3, 5)).astype(np.float32) for i in range(24)}
        inputs.append(str(tmp_path / f"ckpt-{step}"))
        write_checkpoint(inputs[-1], tensors.items(), verify=False)
    sources = inputs if command == ["average"] else inputs[:1]
    outputs = {}
    for jobs in ("1", "2"):
        out = str(tmp_path / f"jobs{jobs}" / "ckpt-2")
        result = run_cli(command[0], *sources, *command[1:], "-o", out, "--json", "--jobs", jobs)
        assert result.exit_code == 0, result.output
        doc = json.loads(result.stdout)
        files = sorted(p.name for p in (tmp_path / f"jobs{jobs}").iterdir())
        outputs[jobs] = (doc, files, {f: (tmp_path / f"jobs{jobs}" / f).read_bytes() for f in files})
    (doc1, files1, bytes1), (doc2, files2, bytes2) = outputs["1"], outputs["2"]
    assert files1 == files2 == ["ckpt-2.data-00000-of-00001", "ckpt-2.index"]
    assert bytes1 == bytes2
    assert json.dumps(doc1, sort_keys=True).replace("jobs1", "jobs2") == json.dumps(doc2, sort_keys=True)
    assert doc1["written"]["verified"] is True and doc1["written"]["tensors"] == (10 if command[0] == "edit" else
                                                                             26 if command[0] == "convert" else 24)  # convert: + save_counter
