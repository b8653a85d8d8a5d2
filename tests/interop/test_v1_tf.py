"""TensorFlow and V1 checkpoints: ckpt reads every dtype TensorFlow writes in V1 (partitioned variables
and complex64 too), and a V1 checkpoint migrated with `ckpt convert` restores in TensorFlow."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import formats

from ..conftest import CORPUS, digest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

pytestmark = pytest.mark.interop
MORE = json.loads((CORPUS / "manifest_more.json").read_text())["entries"]
# every dtype TensorFlow 2.x saves in V1 (bfloat16, uint32 and uint64 have no V1 save kernel)
DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "bool",
          "complex64", "complex128", "string"]


def _value(dtype: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    n = int(np.prod(shape))
    if dtype == "string":
        return np.array([bytes(rng.integers(0, 256, i % 5, dtype=np.uint8)) for i in range(n)], object).reshape(shape)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.startswith("complex"):
        return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dtype)
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    return rng.normal(size=shape).astype(dtype)


def _save_v1(prefix: str, values: dict[str, np.ndarray], partitioned: dict[str, tuple[np.ndarray, list[int]]]) -> str:
    v1 = tf.compat.v1
    from tensorflow.core.protobuf import saver_pb2

    with tf.Graph().as_default():
        for name, value in values.items():
            v1.get_variable(name, initializer=tf.constant(value, dtype=tf.as_dtype(value.dtype.name if value.dtype
                                                                                    != object else "string")))
        for name, (value, parts) in partitioned.items():
            v1.get_variable(name, initializer=tf.constant(value), partitioner=lambda shape, dtype, p=parts: p)
        saver = v1.train.Saver(write_version=saver_pb2.SaverDef.V1)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            return saver.save(sess, prefix, write_meta_graph=False, write_state=False)


def test_every_dtype_tensorflow_writes_in_v1(tmp_path):
    rng = np.random.default_rng(7)
    values = {f"v/{d}": _value(d, (2, 3), rng) for d in DTYPES}
    values.update({"scalar": np.float64(2.5) * np.ones((), "f8"), "empty": np.zeros((0, 3), "f4"),
                   "word": np.array(b"\x00one", dtype=object),
                   "rank4": _value("int32", (2, 1, 3, 2), rng)})
    partitioned = {"rows": (_value("float32", (10, 4), rng), [4, 1]), "cols": (_value("float64", (3, 8), rng), [1, 3])}
    prefix = _save_v1(str(tmp_path / "model.ckpt"), values, partitioned)
    assert not os.path.exists(prefix + ".index")
    with formats.open_checkpoint(prefix) as ckpt:
        assert ckpt.format == "tf-v1"
        assert sorted(ckpt) == sorted([*values, *partitioned])
        for key, want in [*values.items(), *((k, v) for k, (v, _) in partitioned.items())]:
            got = ckpt[key].read()
            assert (got.shape, got.dtype) == (want.shape, want.dtype), key
            if want.dtype == object:
                assert got.tolist() == want.tolist(), key
            else:
                np.testing.assert_array_equal(got, want, err_msg=key)
    reader = tf.train.load_checkpoint(prefix)  # what TensorFlow itself lists agrees
    assert reader.get_variable_to_shape_map() == {k: list(np.shape(v)) for k, v in values.items()} | \
        {k: list(v.shape) for k, (v, _) in partitioned.items()}


def _restore(prefix: str, shapes: dict[str, list[int]], dtypes: dict[str, str]) -> dict[str, np.ndarray]:
    """A TF1 Saver over whole variables named as the V1 checkpoint names them, restored from ``prefix``."""
    v1 = tf.compat.v1
    with tf.Graph().as_default():
        variables = {name: v1.Variable(tf.zeros(shapes[name], tf.as_dtype(dtypes[name])), name=f"restored_{i}")
                     for i, name in enumerate(sorted(shapes))}
        saver = v1.train.Saver(variables)
        with v1.Session() as sess:
            saver.restore(sess, prefix)
            return sess.run(variables)


@pytest.mark.parametrize("to", ["tf-name", "tf-object"])
@pytest.mark.parametrize("rel", ["tf1_v1_adam/model.ckpt-30", "tf1_v1_sharded/model.ckpt-?????-of-00003"])
def test_migrated_v1_restores_in_tensorflow(run_cli, tmp_path, rel, to):
    out = tmp_path / "v2" / "model.ckpt"
    result = run_cli("convert", CORPUS / rel, "-o", out, "--to", to)
    assert result.exit_code == 0, result.output
    want = MORE[rel]["tensors"]
    values = _restore(str(out), {k: v["shape"] for k, v in want.items()}, {k: v["dtype"] for k, v in want.items()})
    assert sorted(values) == sorted(want)
    for name, value in values.items():
        if want[name]["dtype"] == "string":
            value = np.array(value.tolist(), object)
        assert digest(value) == want[name]["sha256"], name
    if to == "tf-object":
        keys = tf.train.load_checkpoint(str(out)).get_variable_to_shape_map()
        # the object graph and tf.train.Checkpoint's save_counter besides the variables
        assert "_CHECKPOINTABLE_OBJECT_GRAPH" in keys and "save_counter/.ATTRIBUTES/VARIABLE_VALUE" in keys
        assert len(keys) == len(want) + 2
