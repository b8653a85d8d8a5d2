"""Units of work and executors without a cluster: the option's words, the missing extra, units that travel."""
from __future__ import annotations

import os
import pickle
import sys

import pytest

from formats.core.errors import UsageError
from formats.core.executors import ENVIRONMENT, LocalExecutor, executor_for
from formats.discover.units import group_keys

from .conftest import CORPUS

SEED = CORPUS / "seed_slots/tf_ckpts/ckpt-5"


def test_local_is_the_default_and_the_environment_names_one(monkeypatch):
    monkeypatch.delenv(ENVIRONMENT, raising=False)
    assert isinstance(executor_for(None, 3), LocalExecutor) and executor_for(None, 3).jobs == 3
    monkeypatch.setenv(ENVIRONMENT, "local")
    assert isinstance(executor_for(None), LocalExecutor)
    monkeypatch.setenv(ENVIRONMENT, "spark://x")
    with pytest.raises(UsageError, match=r"'spark://x' \(the CKPT_EXECUTOR environment variable\) is not an executor"):
        executor_for(None)
    with pytest.raises(UsageError, match="^'dask://' is not an executor"):
        executor_for("dask://")


@pytest.mark.parametrize("command", [["verify", str(SEED)], ["stats", str(SEED)], ["diff", str(SEED), str(SEED)]])
def test_without_dask_the_option_says_how_to_install_it(run_cli, monkeypatch, command):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    result = run_cli(*command, "--executor", "dask://127.0.0.1:8786")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "ckpt: error: a dask:// executor needs the Dask packages: pip install 'tfckpt[dask]'"]


def test_a_bad_executor_is_a_usage_error(run_cli):
    result = run_cli("verify", str(SEED), "--executor", "threads")
    assert result.exit_code == 2 and "is not an executor: give 'local' or 'dask://HOST:PORT'" in result.stderr


def test_units_are_consecutive_and_bounded():
    sizes = [("a", 10), ("b", 50), ("c", 100), ("d", 1), ("e", 1), ("f", 0)]
    assert list(group_keys(sizes, 60)) == [(("a", "b"), 60), (("c",), 100), (("d", "e", "f"), 2)]
    assert [k for k, _ in group_keys(sizes, 0)] == [("a",), ("b",), ("c",), ("d",), ("e",), ("f",)]


def test_a_unit_is_a_plain_picklable_call_and_gives_the_local_result():
    """What a worker is sent (the function, a reference to the checkpoint, keys) and sends back pickles; run in
    a fresh process-level cache it gives what verify and stats give on threads."""
    import formats
    from formats.discover import units
    from formats.ops.compare.verify import verify_unit
    from formats.ops.inspect.stats import stats_unit

    with formats.open_checkpoint(SEED) as ckpt:
        ref = units.source_ref(ckpt, "test-run")
        keys = tuple(sorted(ckpt))
    shipped = pickle.loads(pickle.dumps((verify_unit, ref, keys)))
    found = shipped[0](*shipped[1:])
    assert found == [None] * len(keys)
    stats = pickle.loads(pickle.dumps(stats_unit(ref, keys)))
    expected = formats.stats(SEED)
    assert [s.to_json() for s in stats] == [t.to_json() for t in expected.tensors]
    units._opened.pop(ref).close()


def test_worker_buffers_come_from_the_environment(monkeypatch):
    from formats.discover.units import buffer_settings

    monkeypatch.delenv("CKPT_WORKER_BUFFERS", raising=False)
    monkeypatch.delenv("CKPT_BUFFER_MB", raising=False)
    assert buffer_settings() == (2, 64 << 20)
    monkeypatch.setenv("CKPT_WORKER_BUFFERS", "1")
    monkeypatch.setenv("CKPT_BUFFER_MB", "16")
    assert buffer_settings() == (1, 16 << 20)
    monkeypatch.setenv("CKPT_BUFFER_MB", "lots")
    with pytest.raises(UsageError, match="CKPT_WORKER_BUFFERS and CKPT_BUFFER_MB must be whole numbers"):
        buffer_settings()


def test_a_worker_reads_at_most_its_buffers_at_once(monkeypatch):
    """Units that opened their checkpoint themselves (a worker's) take a slot each: with CKPT_WORKER_BUFFERS=1
    four threads of units never read two units at once, while inside a unit several tensors are in flight;
    units of a lent checkpoint (--jobs threads) take none."""
    import threading
    import time

    import formats
    from formats.discover import units

    monkeypatch.setenv("CKPT_WORKER_BUFFERS", "1")
    monkeypatch.setitem(units._slots, 1, threading.BoundedSemaphore(1))
    lock = threading.Lock()
    active: dict[int, int] = {}
    most = {"units": 0, "items": 0}

    def unit(ckpt, number: int) -> None:
        def item(key: str) -> None:
            with lock:
                active[number] = active.get(number, 0) + 1
                most["units"] = max(most["units"], sum(1 for n in active.values() if n))
                most["items"] = max(most["items"], sum(active.values()))
            time.sleep(0.02)
            with lock:
                active[number] -= 1
        units.each_in_unit(ckpt, item, sorted(ckpt)[:6])

    def run(ckpt) -> dict[str, int]:
        most.update(units=0, items=0)
        threads = [threading.Thread(target=unit, args=(ckpt, n)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return dict(most)

    with formats.open_checkpoint(str(SEED)) as ckpt:
        assert ckpt.concurrent_reads
        on_a_worker = run(ckpt)
        with units.lending(ckpt, units.source_ref(ckpt, "lent")):
            on_threads = run(ckpt)
    assert on_a_worker["units"] == 1 and on_a_worker["items"] > 1
    assert on_threads["units"] > 1


def test_a_cluster_write_of_a_keras_output_is_refused_before_anything_is_written(tmp_path):
    """Only bundles are written on a cluster; anything else says to use the local executor (exit 2)."""
    import formats
    from formats.core.executors import Executor
    from formats.ops.edit.on_cluster import write_on_cluster
    from formats.ops.edit import EditOptions, plan_edit
    from formats.ops.edit.edit import plan_edit_of

    class Elsewhere(Executor):
        remote = True

        def map(self, fn, units, *, weight=None, done=None):  # noqa: ANN001, ANN202 - never reached
            raise AssertionError("nothing may run")

    ckpt = formats.open_checkpoint(CORPUS / "keras3_tagger/tagger.weights.h5")
    options = EditOptions()
    with pytest.raises(UsageError, match="a write on a cluster writes TensorFlow bundles"):
        write_on_cluster(plan_edit(ckpt, options), plan_edit_of, [ckpt], options, str(tmp_path / "out.weights.h5"),
                         Elsewhere())
    ckpt.close()
    assert list(tmp_path.iterdir()) == []


def test_the_clients_fsspec_options_travel_with_a_unit(monkeypatch):
    """fsspec options configured on the client (``FSSPEC_S3_ENDPOINT_URL``, fsspec's config files) are part of the
    reference a worker opens a checkpoint by, and are applied there; a local path carries none."""
    pytest.importorskip("fsspec")
    from fsspec.config import conf

    from formats.discover import units

    class Remote:
        path, format = "s3://bucket/run/ckpt-1", "tf-bundle"

    monkeypatch.setitem(conf, "s3", {"endpoint_url": "http://127.0.0.1:9000", "anon": True})
    ref = units.source_ref(Remote(), "run-1")  # type: ignore[arg-type]
    assert ref == units.SourceRef("s3://bucket/run/ckpt-1", "tf-bundle",
                                  (("anon", True), ("endpoint_url", "http://127.0.0.1:9000")), "run-1")
    assert pickle.loads(pickle.dumps(ref)) == ref

    class Local:
        path, format = "run/ckpt-1", "tf-bundle"

    assert units.source_ref(Local()).options == ()  # type: ignore[arg-type]
    assert units.source_ref(Local()).path == os.path.abspath("run/ckpt-1")  # type: ignore[arg-type]


def test_a_convert_job_names_its_files_as_a_worker_finds_them(monkeypatch, tmp_path):
    """A worker has a working directory of its own: a template or model configuration named relative to the
    client's travels as an absolute path; a URL as it is; and the job survives pickling (as Dask ships it)."""
    from formats import verbs
    from formats.ops.convert.plan import ConvertOptions
    from formats.ops.convert.targets import ConvertJob

    monkeypatch.chdir(tmp_path)
    job = verbs._portable(ConvertJob(ConvertOptions(template="keras/ckpt", model_config="s3://b/config.json"),
                                     "tf-object"))
    assert job.options.template == str(tmp_path / "keras" / "ckpt")
    assert job.options.model_config == "s3://b/config.json"
    assert pickle.loads(pickle.dumps(job)) == job
