"""formats.tf.train without TensorFlow: the state file, latest checkpoints, readers, variables.

Expected values come from the corpus manifest (what TensorFlow's reader saw), from files the
tests write, and from TensorFlow's behaviour as tests/interop/test_tf_api_interop.py checks it.
"""
from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

import formats
import formats.tf as tf
from formats.tf.checkpoint_utils import _READERS

from .conftest import CORPUS, MANIFEST, digest

RUN = CORPUS / "seed_keras2/tf_ckpts"  # a CheckpointManager directory, relative paths
ESTIMATOR = CORPUS / "tf1_estimator"    # an Estimator model_dir, absolute paths from another machine
ALL_DTYPES = "tf2_mixed/all_dtypes/ckpt-1"
PARTITIONED = "tf1_partitioned/model.ckpt-200"
GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture
def estimator(tmp_path: Path) -> Path:
    """A copy of tf1_estimator whose state file names the copy by absolute paths."""
    d = tmp_path / "model_dir"
    shutil.copytree(ESTIMATOR, d)
    (d / "checkpoint").write_text(f'model_checkpoint_path: "{d}/model.ckpt-200"\n'
                                  f'all_model_checkpoint_paths: "{d}/model.ckpt-1"\n'
                                  f'all_model_checkpoint_paths: "{d}/model.ckpt-200"\n')
    return d


# -- the state file ----------------------------------------------------------------------------------
def test_state_of_a_checkpoint_manager_run_joins_relative_paths():
    state = tf.train.get_checkpoint_state(str(RUN))
    want = MANIFEST["seed_keras2/tf_ckpts/checkpoint"]
    assert state.model_checkpoint_path == os.path.join(str(RUN), want["latest"])
    assert state.all_model_checkpoint_paths == [os.path.join(str(RUN), p) for p in want["all"]]
    assert len(state.all_model_checkpoint_timestamps) == 3 and state.last_preserved_timestamp > 0
    assert str(state).startswith(f'model_checkpoint_path: "{RUN}/ckpt-10"\nall_model_checkpoint_paths: ')


def test_state_keeps_absolute_paths_as_written():
    state = tf.train.get_checkpoint_state(ESTIMATOR)  # a PathLike, as TensorFlow accepts
    assert state.model_checkpoint_path == "/tmp/gen/tf1_iris/model.ckpt-200"
    assert state.all_model_checkpoint_paths == ["/tmp/gen/tf1_iris/model.ckpt-1", "/tmp/gen/tf1_iris/model.ckpt-200"]
    assert state.all_model_checkpoint_timestamps == [] and state.last_preserved_timestamp == 0.0


def test_state_is_none_without_a_readable_state_file(tmp_path: Path):
    assert tf.train.get_checkpoint_state(str(tmp_path)) is None
    assert tf.train.get_checkpoint_state(str(tmp_path / "no such dir")) is None
    assert tf.train.get_checkpoint_state(str(RUN), latest_filename="other") is None
    (tmp_path / "checkpoint").write_text("garbage {{{\n")
    assert tf.train.get_checkpoint_state(str(tmp_path)) is None
    assert tf.train.latest_checkpoint(str(tmp_path)) is None


def test_a_state_file_naming_no_latest_checkpoint_is_a_value_error(tmp_path: Path):
    (tmp_path / "checkpoint").write_text('all_model_checkpoint_paths: "ckpt-1"\n')
    for call in (tf.train.get_checkpoint_state, tf.train.latest_checkpoint, tf.train.load_checkpoint):
        with pytest.raises(ValueError, match=f"^Invalid checkpoint state loaded from {tmp_path}$"):
            call(str(tmp_path))


def test_latest_filename_names_another_state_file(tmp_path: Path):
    d = tmp_path / "run"
    shutil.copytree(RUN, d)
    os.rename(d / "checkpoint", d / "state")
    assert tf.train.latest_checkpoint(str(d)) is None
    assert tf.train.latest_checkpoint(str(d), latest_filename="state") == f"{d}/ckpt-10"


# -- latest_checkpoint -------------------------------------------------------------------------------
def test_latest_checkpoint_of_runs():
    assert tf.train.latest_checkpoint(str(RUN)) == f"{RUN}/ckpt-10"
    assert tf.train.latest_checkpoint(str(RUN) + "/") == f"{RUN}/ckpt-10"
    assert tf.compat.v1.train.latest_checkpoint(RUN) == f"{RUN}/ckpt-10"


def test_latest_checkpoint_with_absolute_paths(estimator: Path):
    assert tf.train.latest_checkpoint(str(estimator)) == f"{estimator}/model.ckpt-200"


def test_stale_absolute_paths_fall_back_to_the_directory():
    # TensorFlow returns None here (the run was written in /tmp/gen/tf1_iris); ckpt finds the copy.
    assert tf.train.latest_checkpoint(str(ESTIMATOR)) == f"{ESTIMATOR}/model.ckpt-200"


def test_latest_checkpoint_is_none_when_nothing_matches(tmp_path: Path):
    assert tf.train.latest_checkpoint(str(CORPUS / "tf2_mixed/sharded")) is None  # no state file
    assert tf.train.latest_checkpoint(str(tmp_path / "missing")) is None
    assert tf.train.latest_checkpoint("") is None
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "gone-1"\n')
    assert tf.train.latest_checkpoint(str(tmp_path)) is None
    with pytest.raises(TypeError):
        tf.train.latest_checkpoint(None)


def test_latest_checkpoint_of_a_v1_prefix_is_the_data_file(tmp_path: Path):
    (tmp_path / "model.ckpt-5").write_bytes(b"x")
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-5"\n')
    assert tf.train.latest_checkpoint(str(tmp_path)) == f"{tmp_path}/model.ckpt-5"


# -- checkpoint_exists, get_checkpoint_mtimes --------------------------------------------------------
@pytest.mark.parametrize("prefix, exists", [
    ("ckpt-10", True), ("ckpt-10.index", True), ("ckpt-10.data-00000-of-00001", True), ("ckpt-1", False),
    ("ckpt-1?", True), ("ckpt-*", True), ("nothing*", False), ("", True),
])
def test_checkpoint_exists(prefix: str, exists: bool):
    assert tf.compat.v1.train.checkpoint_exists(f"{RUN}/{prefix}") is exists
    assert tf.train.checkpoint_exists(f"{RUN}/{prefix}") is exists


def test_checkpoint_mtimes_are_whole_seconds_of_the_index_or_file(tmp_path: Path):
    (tmp_path / "a.index").write_bytes(b"")
    (tmp_path / "b").write_bytes(b"")
    os.utime(tmp_path / "a.index", (0, 1_700_000_000.75))
    os.utime(tmp_path / "b", (0, 1_600_000_000.25))
    got = tf.compat.v1.train.get_checkpoint_mtimes([str(tmp_path / n) for n in ("a", "missing", "b")])
    assert got == [1_700_000_000.0, 1_600_000_000.0]


# -- load_checkpoint, list_variables, load_variable ---------------------------------------------------
@pytest.mark.parametrize("rel", [ALL_DTYPES, PARTITIONED, "seed_slots/tf_ckpts/ckpt-5"])
def test_reader_agrees_with_the_manifest(rel: str):
    reader = tf.train.load_checkpoint(str(CORPUS / rel))
    want = MANIFEST[rel]["tensors"]
    assert reader.get_variable_to_shape_map() == {k: v["shape"] for k, v in want.items()}
    dtypes = reader.get_variable_to_dtype_map()
    assert dtypes == {k: v["dtype"] for k, v in want.items()}
    assert all(isinstance(d, tf.DType) and d.name == want[k]["dtype"] for k, d in dtypes.items())
    for key, t in want.items():
        assert reader.has_tensor(key) and reader.has_tensor(key.encode())
        if t["sha256"]:
            assert digest(reader.get_tensor(key)) == t["sha256"]
        else:
            with pytest.raises(tf.errors.InternalError, match="^Tensorflow type 21 not convertible to numpy dtype.$"):
                reader.get_tensor(key)
    assert not reader.has_tensor("nope")


def test_get_tensor_returns_numpy_scalars_and_bytes():
    reader = tf.compat.v1.train.NewCheckpointReader(str(CORPUS / ALL_DTYPES))
    assert isinstance(reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"), bytes)
    scalar = reader.get_tensor(b"scalar/.ATTRIBUTES/VARIABLE_VALUE")
    assert isinstance(scalar, np.float32) and scalar == 3.5
    assert reader.get_tensor("empty/.ATTRIBUTES/VARIABLE_VALUE").shape == (0, 7)
    strings = reader.get_tensor("typed/string/.ATTRIBUTES/VARIABLE_VALUE")
    assert strings.dtype == object and strings.shape == (3, 4) and strings[0, 0] == b"ab"


def test_missing_key():
    reader = tf.train.load_checkpoint(str(RUN))
    with pytest.raises(tf.errors.NotFoundError, match="^Key nope not found in checkpoint$") as info:
        reader.get_tensor("nope")
    assert isinstance(info.value, KeyError) and info.value.error_code == tf.errors.NOT_FOUND
    with pytest.raises(tf.errors.NotFoundError, match="^Key save_counter/.ATTRIBUTES/VARIABLE_VALUE:0 not found"):
        reader.get_tensor("save_counter/.ATTRIBUTES/VARIABLE_VALUE:0")  # only load_variable strips :0
    with pytest.raises(tf.errors.NotFoundError):
        tf.train.load_variable(str(RUN), "nope")


def test_load_variable_strips_a_trailing_colon_zero():
    assert tf.train.load_variable(str(RUN), "save_counter/.ATTRIBUTES/VARIABLE_VALUE:0") == 10
    assert tf.train.load_variable(str(RUN / "ckpt-8"), "save_counter/.ATTRIBUTES/VARIABLE_VALUE") == 8


def test_list_variables_is_sorted_key_shape_pairs(estimator: Path):
    want = sorted((k, v["shape"]) for k, v in MANIFEST["tf1_estimator/model.ckpt-200"]["tensors"].items())
    assert tf.train.list_variables(str(estimator)) == want
    assert tf.train.list_variables(str(ESTIMATOR)) == want  # stale paths: the copy in the directory
    assert tf.train.list_variables(str(estimator / "model.ckpt-200")) == want
    assert formats.list_variables(estimator) == want


def test_one_reader_per_checkpoint_reopened_when_its_files_change(tmp_path: Path):
    d = tmp_path / "run"
    shutil.copytree(RUN, d)
    first = _READERS.get(f"{d}/ckpt-10")
    assert _READERS.get(f"{d}/ckpt-10") is first
    tf.train.load_variable(str(d), "step/.ATTRIBUTES/VARIABLE_VALUE")
    assert _READERS.get(f"{d}/ckpt-10") is first
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copy(d / f"ckpt-8{suffix}", d / f"ckpt-10{suffix}")  # a checkpoint rewritten in place
    assert tf.train.load_variable(str(d), "save_counter/.ATTRIBUTES/VARIABLE_VALUE") == 8
    assert _READERS.get(f"{d}/ckpt-10") is not first


def test_load_checkpoint_of_a_directory_without_checkpoints(tmp_path: Path):
    for d in (tmp_path, CORPUS / "tf2_mixed/sharded"):
        with pytest.raises(ValueError, match=f"^Couldn't find 'checkpoint' file or checkpoints in given directory {d}$"):
            tf.train.load_checkpoint(str(d))
        with pytest.raises(ValueError, match="Couldn't find 'checkpoint' file"):
            tf.train.list_variables(str(d))


@pytest.mark.parametrize("path, error, message", [
    ("nope", tf.errors.NotFoundError,
     "Unsuccessful TensorSliceReader constructor: Failed to find any matching files for {p}"),
    ("", tf.errors.NotFoundError, "Unsuccessful TensorSliceReader constructor: Failed to find any matching files for "),
    ("ckpt-*", tf.errors.OpError, "{p}.index; No such file or directory"),
    (".", tf.errors.DataLossError, "Unable to open table file {p}: FAILED_PRECONDITION: {p}; Is a directory"),
])
def test_reader_errors(path: str, error: type, message: str):
    p = str(RUN / path) if path else ""
    with pytest.raises(error) as info:
        tf.compat.v1.train.NewCheckpointReader(p)
    assert str(info.value).startswith(message.format(p=p))
    assert isinstance(info.value, tf.errors.OpError) and isinstance(info.value, formats.CheckpointError)


def test_reader_errors_on_files_that_are_not_checkpoints(tmp_path: Path):
    (tmp_path / "junk.bin").write_bytes(b"\x00" * 100)
    with pytest.raises(tf.errors.DataLossError, match="junk.bin"):
        tf.compat.v1.train.NewCheckpointReader(str(tmp_path / "junk.bin"))
    with pytest.raises(TypeError, match="^Expected binary or unicode string, got None$"):
        tf.compat.v1.train.NewCheckpointReader(None)
    with pytest.raises(TypeError):
        tf.train.load_checkpoint(None)


def test_damaged_checkpoints_raise_data_loss(tmp_path: Path):
    shutil.copytree(RUN, tmp_path / "run")
    data = tmp_path / "run/ckpt-10.data-00000-of-00001"
    data.write_bytes(bytes(b ^ 0xFF for b in data.read_bytes()))  # every stored value damaged
    reader = tf.train.load_checkpoint(str(tmp_path / "run"))
    failed = []
    for key, dtype in reader.get_variable_to_dtype_map().items():
        try:
            reader.get_tensor(key)
        except tf.errors.DataLossError as exc:
            failed.append(key)
            assert "checksum" in str(exc) or "CRC" in str(exc)
        except tf.errors.InternalError:
            assert dtype == tf.variant
    assert len(failed) == len(reader.get_variable_to_shape_map()) - 1  # all but the variant
    os.remove(data)
    # as TensorFlow's BundleReader: the index opens, a tensor in the missing data file is NotFound
    reader = tf.train.load_checkpoint(str(tmp_path / "run"))
    with pytest.raises(tf.errors.NotFoundError, match="missing"):
        reader.get_tensor(next(k for k, d in reader.get_variable_to_dtype_map().items() if d != tf.variant))


def test_more_lenient_than_tensorflow_on_paths_it_understands():
    # TensorFlow: an empty reader for ".index", DataLossError for ".data-*" and Keras files.
    index = tf.compat.v1.train.NewCheckpointReader(str(RUN / "ckpt-10.index"))
    data = tf.compat.v1.train.NewCheckpointReader(str(RUN / "ckpt-10.data-00000-of-00001"))
    assert index.get_variable_to_shape_map() == data.get_variable_to_shape_map() == \
        {k: v["shape"] for k, v in MANIFEST["seed_keras2/tf_ckpts/ckpt-10"]["tensors"].items()}
    h5 = tf.train.load_checkpoint(str(CORPUS / "keras2_tagger/tagger_weights.h5"))
    assert h5.get_variable_to_shape_map() == {k: v["shape"] for k, v in
                                              MANIFEST["keras2_tagger/tagger_weights.h5"]["tensors"].items()}


@pytest.mark.parametrize("rel, name", [(PARTITIONED, "tf1_partitioned"), (ALL_DTYPES, "all_dtypes"),
                                       ("seed_slots/tf_ckpts/ckpt-5", "seed_slots_ckpt5")])
def test_debug_string_is_tensorflows(rel: str, name: str):
    # Written by TensorFlow 2.21's reader.debug_string(); partitioned variables appear as their slices.
    reader = tf.compat.v1.train.NewCheckpointReader(str(CORPUS / rel))
    assert reader.debug_string() == (GOLDEN / f"tf_debug_string_{name}.bin").read_bytes()


def test_concurrent_get_tensor():
    reader = tf.train.load_checkpoint(str(CORPUS / PARTITIONED))
    keys = sorted(reader.get_variable_to_shape_map())
    want = {k: digest(reader.get_tensor(k)) for k in keys}
    got: dict[int, dict[str, str]] = {}

    def work(i: int) -> None:
        got[i] = {k: digest(reader.get_tensor(k)) for k in keys[i % len(keys):] + keys[:i % len(keys)]}

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == {i: want for i in range(8)}


def test_checkpoints_iterator_yields_the_latest_then_stops_on_timeout(tmp_path: Path, monkeypatch):
    assert list(tf.train.checkpoints_iterator(str(RUN), timeout=0)) == [f"{RUN}/ckpt-10"]
    assert list(tf.train.checkpoints_iterator(str(tmp_path), timeout=0)) == []
    d = tmp_path / "run"
    shutil.copytree(RUN, d)
    clock = [0.0]
    monkeypatch.setattr("formats.tf.checkpoint_utils.time.time", lambda: clock[0])

    def sleep(seconds: float) -> None:  # training writes ckpt-11 while the iterator waits
        clock[0] += seconds
        if clock[0] >= 3:
            (d / "checkpoint").write_text('model_checkpoint_path: "ckpt-9"\n')

    monkeypatch.setattr("formats.tf.checkpoint_utils.time.sleep", sleep)
    asked = []

    def timeout_fn() -> bool:
        asked.append(clock[0])
        return len(asked) == 3

    got = list(tf.train.checkpoints_iterator(str(d), min_interval_secs=2, timeout=5, timeout_fn=timeout_fn))
    assert got == [f"{d}/ckpt-10", f"{d}/ckpt-9"]
    assert len(asked) == 3  # after each yield, and once after a timeout


def test_formats_api_names_are_formats_tf_ones():
    from formats.tf import checkpoint_utils, reader

    assert formats.load_checkpoint is checkpoint_utils.load_checkpoint
    assert formats.list_variables is checkpoint_utils.list_variables
    assert formats.CheckpointReader is reader.CheckpointReader


# -- TF1 V1 runs (where the corpus holds them and a V1 reader is registered) --------------------------
def _v1_manifest() -> dict:
    import json

    path = CORPUS / "manifest_more.json"
    if not path.is_file():
        pytest.skip("no V1 checkpoints in this corpus")
    from formats.core.registry import get_format

    try:
        get_format("tf-v1")
    except Exception:  # noqa: BLE001
        pytest.skip("no tf-v1 reader in this build")
    return json.loads(path.read_text())["entries"]


@pytest.mark.parametrize("rel, latest", [("tf1_v1_adam", "model.ckpt-30"),
                                         ("tf1_v1_sharded", "model.ckpt-?????-of-00003")])
def test_v1_runs_with_stale_absolute_paths(rel: str, latest: str):
    manifest = _v1_manifest()
    d = CORPUS / rel
    assert tf.train.get_checkpoint_state(str(d)).model_checkpoint_path == f"/home/user/experiments/{rel}/{latest}"
    assert tf.train.latest_checkpoint(str(d)) == f"{d}/{latest}"  # TensorFlow: None (stale paths)
    want = manifest[f"{rel}/{latest}"]["tensors"]
    assert tf.train.list_variables(str(d)) == sorted((k, t["shape"]) for k, t in want.items())
    for key, t in want.items():
        assert digest(tf.train.load_variable(str(d), key + ":0")) == t["sha256"]
    assert tf.compat.v1.train.checkpoint_exists(f"{d}/{latest}")


def test_v1_debug_string_counts_slices():
    # TensorFlow 2.21's TensorSliceReader::DebugString, its lines sorted (it prints them in hash order): a V1
    # partitioned variable once, with ", 3 slices".
    _v1_manifest()
    reader = tf.train.load_checkpoint(str(CORPUS / "tf1_v1_adam/model.ckpt-30"))
    assert reader.debug_string() == (GOLDEN / "tf_debug_string_tf1_v1_adam.bin").read_bytes()
    assert b"input_layer/embedding/weights/Adam (DT_FLOAT) [32,7], 3 slices\n" in reader.debug_string()


def test_v1_missing_key_is_tensorslicereaders_message():
    _v1_manifest()
    v1 = tf.train.load_checkpoint(str(CORPUS / "tf1_v1_adam/model.ckpt-30"))
    with pytest.raises(tf.errors.NotFoundError) as info:
        v1.get_tensor("v3")
    assert str(info.value) == "v3 not found in checkpoint file" and isinstance(info.value, KeyError)
    with pytest.raises(tf.errors.NotFoundError) as info:
        tf.train.load_variable(str(CORPUS / "tf1_v1_sharded"), "v3:0")
    assert str(info.value) == "v3 not found in checkpoint file"
    with pytest.raises(tf.errors.NotFoundError) as info:
        tf.train.load_checkpoint(str(RUN)).get_tensor("v3")
    assert str(info.value) == "Key v3 not found in checkpoint"  # a bundle: BundleReader's message


def test_v1_file_through_a_pattern_beside_a_bundle_named_by_it(tmp_path: Path):
    # "model.ckp[t]": its ".index" as a pattern matches no file (the bundle is literally "model.ckp[t]"), so
    # TensorFlow takes the path for a V1 pattern and opens model.ckpt; a bundle opens only when nothing matches.
    want = _v1_manifest()["tf1_v1_adam/model.ckpt-30"]["tensors"]
    shutil.copy(CORPUS / "tf1_v1_adam/model.ckpt-30", tmp_path / "model.ckpt")
    for name in ("ckpt-10.index", "ckpt-10.data-00000-of-00001"):
        shutil.copy(RUN / name, tmp_path / name.replace("ckpt-10", "model.ckp[t]"))
    pattern = str(tmp_path / "model.ckp[t]")
    for reader in (tf.train.load_checkpoint(pattern), tf.compat.v1.train.NewCheckpointReader(pattern)):
        assert reader.get_variable_to_shape_map() == {k: t["shape"] for k, t in sorted(want.items())}
        assert reader.checkpoint.format == "tf-v1" and reader.checkpoint.files == [str(tmp_path / "model.ckpt")]
    assert tf.train.list_variables(pattern) == sorted((k, t["shape"]) for k, t in want.items())
    os.remove(tmp_path / "model.ckpt")
    bundle = {k: v["shape"] for k, v in MANIFEST["seed_keras2/tf_ckpts/ckpt-10"]["tensors"].items()}
    assert tf.train.load_checkpoint(pattern).get_variable_to_shape_map() == bundle  # TensorFlow: NotFoundError


def test_runs_behind_fsspec_urls():
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    for name in os.listdir(RUN):
        fs.pipe(f"/tfapi_run/{name}", (RUN / name).read_bytes())
    try:
        url = "memory://tfapi_run"
        assert tf.train.latest_checkpoint(url) == f"{url}/ckpt-10"
        assert tf.train.get_checkpoint_state(url).all_model_checkpoint_paths == [f"{url}/ckpt-{n}" for n in (8, 9, 10)]
        assert tf.train.load_variable(url, "save_counter/.ATTRIBUTES/VARIABLE_VALUE") == 10
        assert tf.train.list_variables(url) == tf.train.list_variables(str(RUN))
        assert tf.compat.v1.train.checkpoint_exists(f"{url}/ckpt-9") and len(
            tf.compat.v1.train.get_checkpoint_mtimes([f"{url}/ckpt-9", f"{url}/ckpt-1"])) == 1
        with pytest.raises(tf.errors.NotFoundError, match="Failed to find any matching files for memory://"):
            tf.compat.v1.train.NewCheckpointReader(f"{url}/ckpt-1")
    finally:
        fs.rm("/tfapi_run", recursive=True)
