"""TensorFlow itself reads every checkpoint ckpt writes, and writes the very same bytes for the same tensors."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings

import formats

from ..conftest import CORPUS, MANIFEST, digest, entries_of
from .conftest import ALL_DTYPES, canonical, checkpoints, source_order

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

pytestmark = pytest.mark.interop
BUNDLES = entries_of("tf-bundle")
DATA = ".data-00000-of-00001"


def _tf_view(prefix: str) -> tuple[dict, dict, object]:
    reader = tf.train.load_checkpoint(prefix)
    shapes = reader.get_variable_to_shape_map()
    dtypes = {k: v.name for k, v in reader.get_variable_to_dtype_map().items()}
    return shapes, dtypes, reader


@pytest.mark.parametrize("rel", BUNDLES)
def test_tensorflow_reads_rewritten_corpus_bundle(rel, tmp_path):
    prefix = str(tmp_path / "ckpt")
    with formats.open_checkpoint(CORPUS / rel) as ckpt:
        formats.write_checkpoint(prefix, [(k, ckpt[k]) for k in source_order(ckpt)])
    shapes, dtypes, reader = _tf_view(prefix)
    expected = MANIFEST[rel]["tensors"]
    assert {k: list(v) for k, v in shapes.items()} == {k: t["shape"] for k, t in expected.items()}
    assert dtypes == {k: t["dtype"] for k, t in expected.items()}
    for key, want in expected.items():
        if want["sha256"] is not None:
            assert digest(reader.get_tensor(key)) == want["sha256"], key


def _tf_save(prefix: str, tensors: dict) -> None:
    names = list(tensors)
    values = [tf.constant(np.asarray(getattr(v, "value", v))) for v in tensors.values()]
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names), tensors=values)


def _same_files(a: str, b: str) -> bool:
    return all(Path(a + s).read_bytes() == Path(b + s).read_bytes() for s in (".index", DATA))


def _check_tf_reads(prefix: str, tensors: dict) -> None:
    shapes, dtypes, reader = _tf_view(prefix)
    assert sorted(shapes) == sorted(tensors)
    for key, value in tensors.items():
        dtype, shape, content = canonical(value)
        assert (dtypes[key], tuple(shapes[key])) == (dtype, shape), key
        raw = reader.get_tensor(key)
        if dtype == "string":  # a scalar comes back as bytes: np.asarray would make it S1 and drop trailing NULs
            assert ([raw] if isinstance(raw, bytes) else list(np.asarray(raw, dtype=object).reshape(-1))) == content, key
        else:
            assert np.asarray(raw).tobytes() == content, key


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tensors=checkpoints(ALL_DTYPES))
@example(tensors={"0": np.array(b"\x00", dtype=object)})  # a scalar string ending in NUL (found by hypothesis)
def test_hypothesis_checkpoints_read_by_tensorflow_and_identical_to_its_writer(tensors, tmp_path_factory):
    folder = tmp_path_factory.mktemp("tf")
    ours, theirs = str(folder / "ours"), str(folder / "theirs")
    formats.write_checkpoint(ours, tensors)
    _check_tf_reads(ours, tensors)
    if tensors:  # SaveV2 needs at least one tensor
        _tf_save(theirs, tensors)
        assert _same_files(ours, theirs)


def test_every_dtype_scalar_and_empty_identical_to_tensorflow(tmp_path):
    from .conftest import numpy_dtype

    tensors: dict = {}
    for name in ALL_DTYPES:
        if name == "string":
            tensors["s/scalar"], tensors["s/empty"] = np.array(b"abc", dtype=object), np.array([], dtype=object)
            tensors["s/matrix"] = np.array([[b"", b"x" * 200], [b"\0\xff", "é".encode()]], dtype=object)
            continue
        dt = numpy_dtype(name)
        tensors[f"{name}/scalar"] = np.ones((), dt)
        tensors[f"{name}/empty"] = np.zeros((0, 3), dt)
        tensors[f"{name}/rank3"] = (np.arange(24) % 7).astype(np.int8).astype(dt).reshape(2, 3, 4)
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    formats.write_checkpoint(ours, tensors)
    _tf_save(theirs, tensors)
    _check_tf_reads(ours, tensors)
    assert _same_files(ours, theirs)


def test_index_of_many_blocks_identical_to_tensorflow(tmp_path):
    # ~20000 long keys: a multi-block index, so block boundaries and their separators are TensorFlow's
    tensors = {f"model/layer_{i:05d}/{'sub/' * (i % 5)}kernel/.ATTRIBUTES/VARIABLE_VALUE": np.float32(i)
               for i in range(20000)}
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    formats.write_checkpoint(ours, tensors)
    _tf_save(theirs, tensors)
    assert Path(ours + ".index").stat().st_size > 4 * 256 * 1024
    assert _same_files(ours, theirs)
    shapes, _, reader = _tf_view(ours)
    assert len(shapes) == 20000 and reader.get_tensor("model/layer_12345/kernel/.ATTRIBUTES/VARIABLE_VALUE") == 12345


def test_tensorflow_restores_a_rewritten_object_checkpoint(tmp_path):
    prefix = str(tmp_path / "ckpt")
    with formats.open_checkpoint(CORPUS / "seed_keras2" / "easy_checkpoint") as ckpt:
        formats.write_checkpoint(prefix, ckpt)
        kernel = ckpt["l1/kernel/.ATTRIBUTES/VARIABLE_VALUE"].read()
    root = tf.train.Checkpoint(l1=tf.Module())
    root.l1.kernel = tf.Variable(tf.zeros(kernel.shape))
    root.l1.bias = tf.Variable(tf.zeros([kernel.shape[1]]))
    status = root.read(prefix)
    status.assert_existing_objects_matched()
    np.testing.assert_array_equal(root.l1.kernel.numpy(), kernel)


def test_a_replaced_checkpoint_loads_in_tensorflow_at_both_stages(tmp_path, monkeypatch):
    """Issue 24 item 18: a replacement is put in place padded with an empty data file (names the old
    checkpoint does not use), then settled under its own shard count; TensorFlow reads both layouts."""
    import formats.tf_bundle.files as files

    prefix = str(tmp_path / "c")
    formats.write_checkpoint(prefix, {"a": np.ones(3, np.float32)})
    formats.write_checkpoint(prefix, {"a": np.full(3, 2, np.float32)}, force=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.data-00000-of-00001", "c.index"]
    assert tf.train.load_checkpoint(prefix).get_tensor("a").tolist() == [2, 2, 2]
    monkeypatch.setattr(files, "settle", lambda *args: None)  # stop after the first stage
    formats.write_checkpoint(prefix, {"a": np.full(3, 3, np.float32)}, force=True)
    assert [p.name for p in sorted(tmp_path.iterdir()) if not p.name.startswith(".")] == \
        ["c.data-00000-of-00002", "c.data-00001-of-00002", "c.index"]
    assert tf.train.load_checkpoint(prefix).get_tensor("a").tolist() == [3, 3, 3]
