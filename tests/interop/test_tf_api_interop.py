"""Every formats.tf function against its TensorFlow twin, on the corpus's directories and prefixes.

Each case calls both and asserts the same result (or the same error class, by name). The
documented leniencies are asserted as such: where TensorFlow gives up on a directory whose state
file names stale absolute paths, on a ``.index``/``.data-*``/Keras path, or on a pattern matching no
V1 file that a bundle is literally named by, formats.tf finds the checkpoint, and values TensorFlow cannot return (``UnimplementedError``: V1 partitioned and
complex64 variables) it returns; everything else is equal.
"""
from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import formats.tf as ours
from formats.core.registry import get_format

from ..conftest import CORPUS

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

pytestmark = pytest.mark.interop


def outcome(fn: Callable[..., Any], *args: Any) -> tuple[str, Any]:
    """``("ok", value)`` or ``("raise", error class name)``."""
    try:
        return "ok", fn(*args)
    except Exception as exc:  # noqa: BLE001 - the class is what is compared
        return "raise", type(exc).__name__


def same(ours_fn: Callable[..., Any], tf_fn: Callable[..., Any], *args: Any,
         norm: Callable[[Any], Any] = lambda v: v) -> Any:
    """Assert both give the same (normalised) value or raise the same class; return the value."""
    mine, theirs = outcome(ours_fn, *args), outcome(tf_fn, *args)
    if mine[0] == theirs[0] == "ok":
        assert norm(mine[1]) == norm(theirs[1]), args
    elif theirs == ("raise", "UnimplementedError") and mine[0] == "ok":
        pass  # V1 partitioned and complex64 variables: TensorFlow's reader cannot return them, ckpt's can
    else:
        assert mine == theirs, args
    return mine[1]


def _state(s: Any) -> Any:
    if s is None:
        return None
    return (s.model_checkpoint_path, list(s.all_model_checkpoint_paths), list(s.all_model_checkpoint_timestamps),
            s.last_preserved_timestamp)


def _write_state(d: Path, latest: str, every: list[str]) -> None:
    lines = [f'model_checkpoint_path: "{latest}"'] + [f'all_model_checkpoint_paths: "{p}"' for p in every]
    (d / "checkpoint").write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Checkpoint directories in every state TensorFlow scripts meet (copies: the tests write state files)."""
    root = tmp_path_factory.mktemp("tfapi")
    out: dict[str, Path] = {}

    def copy(name: str, rel: str) -> Path:
        out[name] = root / name
        shutil.copytree(CORPUS / rel, out[name])
        return out[name]

    copy("manager", "seed_keras2/tf_ckpts")          # CheckpointManager: relative paths, timestamps
    copy("manager_slots", "seed_slots/tf_ckpts")
    d = copy("estimator_absolute", "tf1_estimator")  # Estimator model_dir, absolute paths that exist
    _write_state(d, f"{d}/model.ckpt-200", [f"{d}/model.ckpt-1", f"{d}/model.ckpt-200"])
    d = copy("estimator_stale", "tf1_estimator")     # absolute paths of the machine that trained
    _write_state(d, "/nonexistent/tf1_iris/model.ckpt-200", ["/nonexistent/tf1_iris/model.ckpt-1",
                                                             "/nonexistent/tf1_iris/model.ckpt-200"])
    d = copy("adam_relative", "tf1_adam")
    _write_state(d, "model.ckpt-200", ["model.ckpt-1", "model.ckpt-200"])
    d = copy("partitioned", "tf1_partitioned")
    _write_state(d, "model.ckpt-200", ["model.ckpt-200"])
    copy("no_state", "tf2_mixed/sharded")            # checkpoints, no state file
    d = copy("names_missing", "tf2_mixed/all_dtypes")
    _write_state(d, "ckpt-7", ["ckpt-7"])            # names a checkpoint that is gone
    d = copy("no_latest", "tf2_mixed/all_dtypes")
    (d / "checkpoint").write_text('all_model_checkpoint_paths: "ckpt-1"\n')
    d = copy("unparseable", "tf2_mixed/all_dtypes")
    (d / "checkpoint").write_text("garbage {{{\n")
    (root / "empty").mkdir()
    out["empty"] = root / "empty"
    out["nonexistent"] = root / "nonexistent"
    for rel in ("tf1_v1_adam", "tf1_v1_sharded"):  # TF1 V1 runs, where the corpus and a V1 reader exist
        if (CORPUS / rel).is_dir() and _has_format("tf-v1"):
            d = copy(rel, rel)
            text = (d / "checkpoint").read_text()
            (d / "checkpoint").write_text(text.replace(f"/home/user/experiments/{rel}/", ""))
    return out


def _has_format(name: str) -> bool:
    try:
        get_format(name)
    except Exception:  # noqa: BLE001 - not registered in this build
        return False
    return True


STALE = {"estimator_stale"}
DIRS = ["manager", "manager_slots", "estimator_absolute", "estimator_stale", "adam_relative", "partitioned",
        "no_state", "names_missing", "no_latest", "unparseable", "empty", "nonexistent", "tf1_v1_adam",
        "tf1_v1_sharded"]


def _dir(dirs: dict[str, Path], name: str) -> str:
    if name not in dirs:
        pytest.skip(f"{name}: corpus folder or its format not available here")
    return str(dirs[name])


@pytest.mark.parametrize("name", DIRS)
def test_state_and_latest_checkpoint(dirs: dict[str, Path], name: str) -> None:
    d = _dir(dirs, name)
    for latest_filename in (None, "other_state"):
        same(ours.train.get_checkpoint_state, tf.train.get_checkpoint_state, d, latest_filename, norm=_state)
    same(ours.train.get_checkpoint_state, tf.train.get_checkpoint_state, Path(d), norm=_state)
    same(ours.compat.v1.train.get_checkpoint_state, tf.compat.v1.train.get_checkpoint_state, d + "/", norm=_state)
    if name in STALE:
        assert tf.train.latest_checkpoint(d) is None  # TensorFlow: nothing at the stale paths
        assert ours.train.latest_checkpoint(d) == f"{d}/model.ckpt-200"  # ckpt: the same name in the directory
        return
    same(ours.train.latest_checkpoint, tf.train.latest_checkpoint, d)
    same(ours.train.latest_checkpoint, tf.train.latest_checkpoint, d + "/")
    same(lambda p: list(ours.train.checkpoints_iterator(p, timeout=0)),
         lambda p: list(tf.train.checkpoints_iterator(p, timeout=0)), d)


@pytest.mark.parametrize("name", DIRS)
def test_readers_variables_and_values(dirs: dict[str, Path], name: str) -> None:
    d = _dir(dirs, name)
    if name in STALE:
        with pytest.raises(ValueError, match="Couldn't find 'checkpoint' file"):
            tf.train.load_checkpoint(d)
        d = f"{d}/model.ckpt-200"  # the same checkpoint by its prefix, which TensorFlow opens
    listed = same(ours.train.list_variables, tf.train.list_variables, d)
    same(lambda p: _maps(ours.train.load_checkpoint(p)), lambda p: _maps(tf.train.load_checkpoint(p)), d)
    if not isinstance(listed, list):
        return
    theirs_reader, our_reader = tf.train.load_checkpoint(d), ours.train.load_checkpoint(d)
    theirs_debug = theirs_reader.debug_string()
    if name.startswith("tf1_v1"):  # TensorSliceReader prints its lines in hash order
        theirs_debug = b"".join(sorted(theirs_debug.splitlines(True)))
    assert our_reader.debug_string() == theirs_debug
    missing = [(our_reader.get_tensor, theirs_reader.get_tensor, "v3"), (ours.train.load_variable,
               tf.train.load_variable, d, "no/such/key:0")]
    for our_fn, tf_fn, *args in missing:
        assert _message(our_fn, *args) == _message(tf_fn, *args)
    for key, _ in listed + [("no/such/key", None)]:
        for asked in (key, key + ":0", key.encode()):
            same(ours.train.load_variable, tf.train.load_variable, d, asked, norm=_value)
            same(our_reader.get_tensor, theirs_reader.get_tensor, asked, norm=_value)
            same(our_reader.has_tensor, theirs_reader.has_tensor, asked)


def _message(fn: Callable[..., Any], *args: Any) -> tuple[str, str]:
    """The class name and message of the error ``fn(*args)`` raises."""
    with pytest.raises(Exception) as info:  # noqa: PT011 - the class is compared by name
        fn(*args)
    return type(info.value).__name__, str(info.value)


def _maps(reader: Any) -> Any:
    dtypes = reader.get_variable_to_dtype_map()
    return (reader.get_variable_to_shape_map(),
            {k: (d.name, d.as_datatype_enum, d.is_floating, d.is_integer, repr(d)) for k, d in dtypes.items()})


def _value(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return v.dtype.str, v.shape, v.tobytes() if v.dtype != object else v.tolist()
    return type(v).__name__, v


@pytest.mark.parametrize("rel", [
    "seed_keras2/tf_ckpts/ckpt-10", "seed_keras2/tf_ckpts/ckpt-1", "seed_keras2/tf_ckpts/ckpt-1?",
    "seed_keras2/tf_ckpts/ckpt-*", "seed_keras2/tf_ckpts", "tf2_mixed/sharded/ckpt", "tf1_partitioned/model.ckpt-1",
    "tf2_mixed/all_dtypes/ckpt-1", "nope/ckpt-1", "",
])
def test_new_checkpoint_reader_exists_and_mtimes(rel: str) -> None:
    p = str(CORPUS / rel) if rel else ""
    same(lambda x: _maps(ours.compat.v1.train.NewCheckpointReader(x)),
         lambda x: _maps(tf.compat.v1.train.NewCheckpointReader(x)), p)
    same(lambda x: _maps(ours.python.pywrap_tensorflow.NewCheckpointReader(x)),
         lambda x: _maps(tf.compat.v1.train.NewCheckpointReader(x)), p.encode())
    same(ours.compat.v1.train.checkpoint_exists, tf.compat.v1.train.checkpoint_exists, p)
    same(ours.compat.v1.train.get_checkpoint_mtimes, tf.compat.v1.train.get_checkpoint_mtimes, [p, p + "x"])


@pytest.mark.parametrize("layout", ["v1_beside_bundle_named_by_pattern", "v1_beside_bundle_of_its_name",
                                    "bundle_named_by_pattern"])
def test_a_pattern_names_what_tensorflow_opens(tmp_path: Path, layout: str) -> None:
    # "model.ckp[t]": TensorFlow globs "model.ckp[t].index"; a match makes it a V2 prefix (refused, as no file is
    # literally named so), no match a V1 pattern (the V1 file model.ckpt, whatever bundle the literal name has).
    if not _has_format("tf-v1"):
        pytest.skip("no tf-v1 reader in this build")
    bundle = "model.ckpt" if layout == "v1_beside_bundle_of_its_name" else "model.ckp[t]"
    if layout != "bundle_named_by_pattern":
        shutil.copy(CORPUS / "tf1_v1_adam/model.ckpt-30", tmp_path / "model.ckpt")
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copy(CORPUS / f"seed_keras2/tf_ckpts/ckpt-10{suffix}", tmp_path / f"{bundle}{suffix}")
    pattern = str(tmp_path / "model.ckp[t]")
    mine = outcome(lambda p: _maps(ours.train.load_checkpoint(p)), pattern)
    theirs = outcome(lambda p: _maps(tf.train.load_checkpoint(p)), pattern)
    if layout == "bundle_named_by_pattern":  # TensorFlow finds no V1 file; ckpt opens the bundle by its name
        assert theirs == ("raise", "NotFoundError") and mine[0] == "ok"
        return
    assert mine == theirs
    if layout == "v1_beside_bundle_named_by_pattern":
        assert len(mine[1][0]) == 26  # the V1 checkpoint's, not the bundle's 12
        same(lambda p: ours.train.load_checkpoint(p).debug_string(),
             lambda p: b"".join(sorted(tf.train.load_checkpoint(p).debug_string().splitlines(True))), pattern)
    else:
        assert _message(ours.train.load_checkpoint, pattern) == _message(tf.train.load_checkpoint, pattern)


@pytest.mark.parametrize("rel", ["seed_keras2/tf_ckpts/ckpt-10.index", "seed_keras2/tf_ckpts/ckpt-10.data-00000-of-00001",
                                 "keras2_tagger/tagger_weights.h5"])
def test_paths_tensorflow_reads_as_nothing_or_as_data_loss(rel: str) -> None:
    p = str(CORPUS / rel)
    mine = ours.compat.v1.train.NewCheckpointReader(p).get_variable_to_shape_map()
    assert mine  # ckpt opens the checkpoint the path belongs to
    theirs = outcome(lambda: tf.compat.v1.train.NewCheckpointReader(p).get_variable_to_shape_map())
    assert theirs in (("ok", {}), ("raise", "DataLossError"))


def test_errors_are_tensorflows() -> None:
    for name in ("OpError", "NotFoundError", "DataLossError", "InvalidArgumentError", "InternalError",
                 "UnimplementedError", "FailedPreconditionError", "PermissionDeniedError", "OutOfRangeError"):
        theirs, mine = getattr(tf.errors, name), getattr(ours.errors, name)
        e_t = theirs(None, None, "m") if name != "OpError" else theirs(None, None, "m", tf.errors.UNKNOWN)
        e_o = mine(None, None, "m") if name != "OpError" else mine(None, None, "m", ours.errors.UNKNOWN)
        assert (str(e_o), e_o.message, e_o.error_code, e_o.op, e_o.node_def) == (
            str(e_t), e_t.message, e_t.error_code, e_t.op, e_t.node_def)
        assert [c.__name__ for c in type(e_o).__mro__ if c.__name__.endswith("Error") and
                c.__module__ == ours.errors.__name__] == [c.__name__ for c in type(e_t).__mro__
                                                          if c.__name__.endswith("Error") and c is not Exception]
    assert ours.errors.NOT_FOUND == tf.errors.NOT_FOUND and ours.errors.DATA_LOSS == tf.errors.DATA_LOSS


def test_every_dtype_is_tensorflows() -> None:
    for name in dir(tf.dtypes):
        theirs = getattr(tf.dtypes, name)
        if not isinstance(theirs, tf.dtypes.DType):
            continue
        mine = getattr(ours, name)
        for attr in ("name", "as_datatype_enum", "is_floating", "is_integer", "is_complex", "is_bool", "is_unsigned",
                     "is_quantized", "is_numpy_compatible", "size", "min", "max", "as_numpy_dtype"):
            assert outcome(getattr, mine, attr) == outcome(getattr, theirs, attr), (name, attr)
        assert (repr(mine), str(mine), hash(mine), mine.real_dtype.name) == (
            repr(theirs), str(theirs), hash(theirs), theirs.real_dtype.name)
        assert mine == theirs.name and theirs == mine.name and mine == theirs.as_datatype_enum
        for other in ("float32", "int64", np.float32, np.dtype("int8"), 7, "nonsense", None):
            assert (mine == other) == (theirs == other), (name, other)


@pytest.mark.parametrize("pattern", ["seed_keras2/tf_ckpts/*.index", "seed_keras2/*", "*/tf_ckpts/ckpt-1?.*",
                                     "nothing/*", "tf1_estimator/model.ckpt-[12]*", "seed_keras2"])
def test_gfile(pattern: str) -> None:
    p = str(CORPUS / pattern)
    same(ours.io.gfile.glob, tf.io.gfile.glob, p, norm=sorted)
    for path in {p, str(CORPUS / pattern.split("*", 1)[0].rstrip("/"))}:
        same(ours.io.gfile.exists, tf.io.gfile.exists, path)
        same(ours.io.gfile.isdir, tf.io.gfile.isdir, path)
        same(ours.io.gfile.listdir, tf.io.gfile.listdir, path, norm=sorted)
        same(lambda x: ours.io.gfile.GFile(x, "rb").read(), lambda x: tf.io.gfile.GFile(x, "rb").read(), path)
    state = str(CORPUS / "seed_keras2/tf_ckpts/checkpoint")
    same(lambda x: ours.io.gfile.GFile(x).readlines(), lambda x: tf.io.gfile.GFile(x).readlines(), state)
    same(ours.compat.v1.gfile.Glob, tf.compat.v1.gfile.Glob, p, norm=sorted)


def test_a_v1_file_through_a_glob_pattern(tmp_path: Path) -> None:
    """Issue 24 item 16: TensorFlow opens a V1 file through a pattern (``model.ckp[t]``) - and refuses the
    pattern when a V2 bundle's ``.index`` matches it too (TensorFlow 2.21 takes it for a V2 prefix); ckpt does
    both the same, and words a missing key as each of TensorFlow's readers does."""
    v1 = tf.compat.v1
    with tf.Graph().as_default():
        v1.Variable([1.0, 2.0], name="w")
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            v1.train.Saver(write_version=v1.train.SaverDef.V1).save(session, str(tmp_path / "only.ckpt"),
                                                                    write_meta_graph=False)
            v1.train.Saver(write_version=v1.train.SaverDef.V1).save(session, str(tmp_path / "both.ckpt"),
                                                                    write_meta_graph=False)
            v1.train.Saver().save(session, str(tmp_path / "both.ckpt"), write_meta_graph=False)
    for pattern in (str(tmp_path / "only.ckp[t]"), str(tmp_path / "both.ckp[t]"), str(tmp_path / "both.ckpt")):
        same(lambda p: _maps(ours.train.load_checkpoint(p)), lambda p: _maps(tf.train.load_checkpoint(p)), pattern)
    with pytest.raises(tf.errors.NotFoundError) as theirs:
        tf.train.load_checkpoint(str(tmp_path / "only.ckp[t]")).get_tensor("v3")
    with pytest.raises(ours.errors.NotFoundError) as mine:
        ours.train.load_checkpoint(str(tmp_path / "only.ckp[t]")).get_tensor("v3")
    assert str(mine.value) == str(theirs.value) == "v3 not found in checkpoint file"
