"""TensorFlow is the oracle for what ``verify`` calls a loader refusal (issue 24, items 4 and 23): its V1 reader
refuses exactly the dtypes and names ckpt reports, its protobuf parser stops at the nesting ckpt reports, and
it aborts on the reference dtypes ckpt refuses."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import formats
from formats.saved_model.nesting import SCHEMA, nesting_refusal

from ..hostile.craft import bundle, entry, string_tensor
from ..hostile.craft_saved_model import FLOAT as FLOAT_DT
from ..hostile.craft_saved_model import field, meta_graph, object_graph, saved_model, user_object
from ..hostile.craft_v1 import FLOAT, floats, simple
from ..hostile.test_saved_model_hostile import serving_composite

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

pytestmark = pytest.mark.interop
DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "bool", "complex64",
          "complex128"]


def _tf_reads(prefix: str, key: str) -> bool:
    try:
        tf.train.load_checkpoint(prefix).get_tensor(key)
    except (tf.errors.OpError, ValueError):
        return False
    return True


def test_v1_dtypes_tensorflow_refuses_are_the_loader_refusals(tmp_path):
    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        for name in DTYPES:
            v1.Variable(np.zeros([2], dtype=name), name=name)
        saver = v1.train.Saver(write_version=v1.train.SaverDef.V1)
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            prefix = saver.save(session, str(tmp_path / "model.ckpt"))
    refused_by_tf = sorted(name for name in DTYPES if not _tf_reads(prefix, name))
    assert refused_by_tf == ["complex128", "complex64", "float16", "uint16"]
    with formats.open_checkpoint(prefix) as ckpt:
        assert ckpt.format == "tf-v1"
        assert [p.where for p in ckpt.loader_refusals()] == refused_by_tf



@pytest.mark.parametrize("rel", ["tf1_v1_adam/model.ckpt-1", "tf1_v1_adam/model.ckpt-30"])
def test_v1_corpus_loader_refusals_are_what_tensorflow_refuses(rel):
    """Partitioned variables ("Sliced checkpoints are not supported") and complex64 in the corpus's V1 files."""
    from ..conftest import CORPUS

    prefix = str(CORPUS / rel)
    keys = tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
    refused_by_tf = sorted(k for k in keys if not _tf_reads(prefix, k))
    assert len(refused_by_tf) == 4
    with formats.open_checkpoint(prefix) as ckpt:
        assert sorted(p.where for p in ckpt.loader_refusals()) == refused_by_tf

def test_v1_name_that_is_not_utf8(tmp_path):
    path = simple(tmp_path / "n.ckpt", b"w\xff", FLOAT, [2], floats([1.0, 2.0]))
    with pytest.raises(tf.errors.OpError):
        tf.train.load_checkpoint(str(path))
    good = simple(tmp_path / "g.ckpt", b"w", FLOAT, [2], floats([1.0, 2.0]))
    assert tf.train.load_checkpoint(str(good)).get_tensor("w").tolist() == [1.0, 2.0]
    with formats.open_checkpoint(path) as ckpt:
        assert [p.where for p in ckpt.loader_refusals()] == ["w\udcff"]


@pytest.mark.parametrize("dtype", [101, 107])
def test_tensorflow_aborts_on_the_reference_dtypes_ckpt_refuses(tmp_path, dtype):
    data, crc = string_tensor([b"ab", b"c"]) if dtype == 107 else (np.zeros(2, "<f4").tobytes(), None)
    prefix = bundle(tmp_path, "c", [(b"x", entry(dtype, [2], 0, len(data), data=None if crc else data, crc=crc))],
                    data)
    script = f"import tensorflow as tf; tf.train.load_checkpoint({str(prefix)!r}).get_tensor('x')"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="0"))
    assert result.returncode != 0 and f"Unexpected type: {dtype}" in result.stderr
    with formats.open_checkpoint(prefix) as ckpt:
        assert ckpt["x"].problem().startswith(f"reference dtype {ckpt['x'].dtype} ({dtype}): ")
        with pytest.raises(formats.UnsupportedError):
            ckpt["x"].read()


def test_the_shipped_verify_exits_1_on_tensorflows_refusals(tmp_path):
    path = Path(simple(tmp_path / "n.ckpt", b"w\xff", FLOAT, [2], floats([1.0, 2.0])))
    ckpt = [sys.executable, "-c", "import sys; from ckpt_cli.fast import main; sys.exit(main())"]
    assert subprocess.run([*ckpt, "verify", str(path)], capture_output=True).returncode == 1
    assert subprocess.run([*ckpt, "verify", "--allow-loader-refusals", str(path)], capture_output=True).returncode == 0


def _function_signature(depth: int) -> bytes:
    value = field(33, field(2, field(2, field(1, 3))) + field(3, FLOAT_DT))  # a spec of shape [3]
    for _ in range(depth):
        value = field(53, field(1, field(1, "k") + field(2, value)))  # dict_value { fields { key value } }
    nodes = [user_object([(1, "f")]), field(6, field(1, "fn"))]
    return saved_model(meta_graph(graph=object_graph(nodes, {"fn": field(3, value)})))


def _protobuf_parses(data: bytes) -> bool:
    from tensorflow.core.protobuf import saved_model_pb2

    try:
        saved_model_pb2.SavedModel.FromString(data)
    except Exception:  # noqa: BLE001 - protobuf's DecodeError, whichever backend
        return False
    return True


@pytest.mark.parametrize("make, depths", [(_function_signature, range(28, 34)),
                                          (serving_composite, range(44, 49)),
                                          (serving_composite, [5000])])
def test_nesting_refusals_are_where_tensorflows_parser_stops(make, depths):
    for depth in depths:
        data = make(depth)
        assert (nesting_refusal(data) is None) == _protobuf_parses(data), depth


def test_the_nesting_schema_is_tensorflows():
    """Walked from SavedModel along SCHEMA, every field number is a message field of TensorFlow's own descriptors,
    of the type SCHEMA names (map entries aside, whose names differ per map)."""
    from tensorflow.core.protobuf import saved_model_pb2

    stack, seen = [("SavedModel", saved_model_pb2.SavedModel.DESCRIPTOR)], set()
    while stack:
        kind, descriptor = stack.pop()
        if kind in seen:
            continue
        seen.add(kind)
        assert kind.endswith("Entry") or descriptor.name == kind
        for number, child in SCHEMA[kind].items():
            message = descriptor.fields_by_number[number].message_type
            assert message is not None and (child.endswith("Entry") or message.name == child), (kind, number)
            if child in SCHEMA:
                stack.append((child, message))
    assert seen == set(SCHEMA)
