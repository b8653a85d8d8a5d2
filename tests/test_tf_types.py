"""formats.tf's dtypes, errors and gfile without TensorFlow (values recorded from TensorFlow 2.21)."""
from __future__ import annotations

import os
import pickle
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import formats
import formats.tf as tf
from formats.tf.dtypes import datatype_name

from .conftest import CORPUS

# tf.dtypes.<alias>: name, DataType, is_floating, is_integer, is_complex, is_bool, is_unsigned, is_quantized,
# is_numpy_compatible, size, numpy dtype (None: KeyError), real_dtype -- as TensorFlow 2.21 reports them.
TF_DTYPES = [
    ("bfloat16", "bfloat16", 14, True, False, False, False, False, False, True, 2, "bfloat16", "bfloat16"),
    ("bool", "bool", 10, False, False, False, True, False, False, True, 1, "bool", "bool"),
    ("complex128", "complex128", 18, False, False, True, False, False, False, True, 16, "complex128", "float64"),
    ("complex64", "complex64", 8, False, False, True, False, False, False, True, 8, "complex64", "float32"),
    ("double", "float64", 2, True, False, False, False, False, False, True, 8, "float64", "float64"),
    ("float16", "float16", 19, True, False, False, False, False, False, True, 2, "float16", "float16"),
    ("float32", "float32", 1, True, False, False, False, False, False, True, 4, "float32", "float32"),
    ("float64", "float64", 2, True, False, False, False, False, False, True, 8, "float64", "float64"),
    ("half", "float16", 19, True, False, False, False, False, False, True, 2, "float16", "float16"),
    ("int16", "int16", 5, False, True, False, False, False, False, True, 2, "int16", "int16"),
    ("int32", "int32", 3, False, True, False, False, False, False, True, 4, "int32", "int32"),
    ("int64", "int64", 9, False, True, False, False, False, False, True, 8, "int64", "int64"),
    ("int8", "int8", 6, False, True, False, False, False, False, True, 1, "int8", "int8"),
    ("qint16", "qint16", 15, False, False, False, False, False, True, True, 2, "[('qint16', '<i2')]", "qint16"),
    ("qint32", "qint32", 13, False, False, False, False, False, True, True, 4, "[('qint32', '<i4')]", "qint32"),
    ("qint8", "qint8", 11, False, False, False, False, False, True, True, 1, "[('qint8', 'i1')]", "qint8"),
    ("quint16", "quint16", 16, False, False, False, False, False, True, True, 2, "[('quint16', '<u2')]", "quint16"),
    ("quint8", "quint8", 12, False, False, False, False, False, True, True, 1, "[('quint8', 'u1')]", "quint8"),
    ("resource", "resource", 20, False, False, False, False, False, False, False, 0, None, "resource"),
    ("string", "string", 7, False, False, False, False, False, False, True, 0, "object", "string"),
    ("uint16", "uint16", 17, False, True, False, False, True, False, True, 2, "uint16", "uint16"),
    ("uint32", "uint32", 22, False, True, False, False, True, False, True, 4, "uint32", "uint32"),
    ("uint64", "uint64", 23, False, True, False, False, True, False, True, 8, "uint64", "uint64"),
    ("uint8", "uint8", 4, False, True, False, False, True, False, True, 1, "uint8", "uint8"),
    ("variant", "variant", 21, False, False, False, False, False, False, False, 0, None, "variant"),
]


@pytest.mark.parametrize("row", TF_DTYPES, ids=[r[0] for r in TF_DTYPES])
def test_dtypes_behave_as_tensorflows(row):
    alias, name, enum, floating, integer, cplx, boolean, unsigned, quantized, np_ok, size, np_name, real = row
    d = getattr(tf, alias)
    assert (d.name, d.as_datatype_enum, d.is_floating, d.is_integer, d.is_complex, d.is_bool, d.is_unsigned,
            d.is_quantized, d.is_numpy_compatible, d.size, d.real_dtype.name) == (
        name, enum, floating, integer, cplx, boolean, unsigned, quantized, np_ok, size, real)
    if np_name is None:
        with pytest.raises(KeyError):
            d.as_numpy_dtype  # noqa: B018
    else:
        assert str(np.dtype(d.as_numpy_dtype)) == np_name
    assert d == name and d == enum and d == tf.as_dtype(name) and d == getattr(tf.dtypes, alias)
    assert hash(d) == enum and repr(d) == f"tf.{name}" and str(d) == f"<dtype: '{name}'>"
    assert pickle.loads(pickle.dumps(d)) == d and d.base_dtype is d


def test_dtype_equality_and_numpy():
    assert tf.float32 == np.float32 and tf.float32 == np.dtype("float32") and tf.string == object  # noqa: E721 (DType compares with types)
    assert tf.float32 != "int32" and tf.float32 != "nonsense" and tf.float32 != None  # noqa: E711
    assert tf.float32.as_numpy_dtype is np.float32 and tf.bfloat16.as_numpy_dtype is ml_dtypes.bfloat16
    assert tf.as_dtype("float") == tf.float32 and tf.as_dtype("half") == tf.float16
    assert tf.as_dtype(np.dtype([("qint8", "i1")])) == tf.qint8 and tf.as_dtype("float32_ref").base_dtype == tf.float32
    assert {"float32": 1}.get(tf.float32.name) == 1 and {tf.float32: "x"}[tf.as_dtype(1)] == "x"
    with pytest.raises(TypeError):
        tf.as_dtype("nonsense")
    with pytest.raises(TypeError):
        tf.as_dtype(99)


def test_dtype_limits():
    assert tf.int8.min == -128 and tf.uint64.max == 2 ** 64 - 1 and type(tf.int32.max) is int
    assert tf.float32.min == np.finfo(np.float32).min and tf.float16.max == np.float16(65504)
    assert float(tf.bfloat16.max) == float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)
    for d in (tf.bool, tf.complex64, tf.string, tf.qint8):
        with pytest.raises(TypeError):
            d.min  # noqa: B018


@pytest.mark.parametrize("name, dt", [("float32", "DT_FLOAT"), ("float64", "DT_DOUBLE"), ("float16", "DT_HALF"),
                                      ("bfloat16", "DT_BFLOAT16"), ("string", "DT_STRING"), ("int64", "DT_INT64"),
                                      ("float32_ref", "DT_FLOAT_REF"), ("variant", "DT_VARIANT")])
def test_datatype_names(name, dt):
    assert datatype_name(tf.as_dtype(name)) == dt


# -- errors -------------------------------------------------------------------------------------------
ERRORS = [("CancelledError", 1, ()), ("UnknownError", 2, ()), ("InvalidArgumentError", 3, (ValueError,)),
          ("DeadlineExceededError", 4, (TimeoutError,)), ("NotFoundError", 5, (FileNotFoundError, KeyError)),
          ("AlreadyExistsError", 6, (FileExistsError,)), ("PermissionDeniedError", 7, (PermissionError,)),
          ("ResourceExhaustedError", 8, (MemoryError,)), ("FailedPreconditionError", 9, (OSError,)),
          ("AbortedError", 10, ()), ("OutOfRangeError", 11, (IndexError,)),
          ("UnimplementedError", 12, (NotImplementedError,)), ("InternalError", 13, (RuntimeError,)),
          ("UnavailableError", 14, (ConnectionError,)), ("DataLossError", 15, (ValueError,)),
          ("UnauthenticatedError", 16, (PermissionError,))]


@pytest.mark.parametrize("name, code, builtins", ERRORS)
def test_error_classes(name, code, builtins):
    cls = getattr(tf.errors, name)
    e = cls(None, None, "what went wrong")
    assert isinstance(e, tf.errors.OpError) and isinstance(e, formats.CheckpointError)
    assert all(isinstance(e, b) for b in builtins)
    assert (str(e), e.message, e.error_code, e.op, e.node_def, e.experimental_payloads) == (
        "what went wrong", "what went wrong", code, None, None, {})
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is cls and back.message == "what went wrong" and back.error_code == code


def test_op_error_takes_its_code():
    e = tf.errors.OpError(None, None, "m", tf.errors.UNKNOWN)
    assert e.error_code == 2 and pickle.loads(pickle.dumps(e)).error_code == 2


def test_translate_keeps_messages():
    from formats.core import errors as ce
    from formats.tf.errors import translate

    cases = [(ce.CheckpointNotFoundError("p", "gone"), tf.errors.NotFoundError),
             (ce.TensorNotFoundError("p", "no key"), tf.errors.NotFoundError),
             (ce.ChecksumError("p", "bad crc"), tf.errors.DataLossError),
             (ce.NotACheckpointError("p", "junk"), tf.errors.DataLossError),
             (ce.UnsupportedError("p", "dtype"), tf.errors.UnimplementedError),
             (ce.AmbiguousCheckpointError("p", "two"), tf.errors.InvalidArgumentError),
             (PermissionError(13, "denied"), tf.errors.PermissionDeniedError),
             (RuntimeError("x"), tf.errors.OpError)]
    for exc, cls in cases:
        got = translate(exc)
        assert type(got) is cls and got.message == str(exc)


# -- gfile --------------------------------------------------------------------------------------------
def test_gfile_on_local_paths(tmp_path: Path):
    g = tf.io.gfile
    run = CORPUS / "seed_keras2"
    assert g.exists(run) and g.isdir(str(run)) and not g.exists(run / "nope") and not g.isdir(run / "checkpoint")
    assert g.listdir(str(run)) == sorted(os.listdir(run)) == g.listdir(f"{run}/")
    assert g.glob(f"{run}/tf_ckpts/*.index") == [f"{run}/tf_ckpts/ckpt-{n}.index" for n in (10, 8, 9)]
    assert g.glob(f"{run}/*/ckpt-1?.index") == [f"{run}/tf_ckpts/ckpt-10.index"]
    assert g.glob(f"{tmp_path}/nothing/*") == [] and g.glob(f"{run}/checkpoint") == [f"{run}/checkpoint"]
    (tmp_path / ".hidden").write_text("x")
    assert g.glob(f"{tmp_path}/*") == [f"{tmp_path}/.hidden"]  # TensorFlow's matching includes hidden names
    with pytest.raises(tf.errors.NotFoundError, match=f"^Could not find directory {tmp_path}/nope$"):
        g.listdir(tmp_path / "nope")
    assert tf.compat.v1.gfile.Exists(run) and tf.compat.v1.gfile.ListDirectory(run) == g.listdir(run)


def test_gfile_relative_glob(monkeypatch):
    monkeypatch.chdir(CORPUS / "seed_keras2")
    assert tf.io.gfile.glob("tf_ckpts/ckpt-8.*") == ["tf_ckpts/ckpt-8.data-00000-of-00001", "tf_ckpts/ckpt-8.index"]
    assert tf.io.gfile.glob("*.index") == ["easy_checkpoint.index", "tf_list_example-1.index"]


def test_gfile_files(tmp_path: Path):
    path = tmp_path / "f.txt"
    with tf.io.gfile.GFile(str(path), "w") as f:
        f.write("héllo\r\nworld\n")
        f.write(b"bytes\n")
    with tf.io.gfile.GFile(path) as f:
        assert f.read() == "héllo\r\nworld\nbytes\n"
        assert f.size() == len("héllo\r\nworld\nbytes\n".encode())
    with tf.io.gfile.GFile(path, "rb") as f:
        assert f.readline() == "héllo\r\n".encode() and list(f) == [b"world\n", b"bytes\n"]
        f.seek(1)
        assert f.tell() == 1 and f.read(2) == "é".encode()
    with tf.io.gfile.GFile(path, "a") as f:
        f.write("more")
    assert tf.io.gfile.GFile(path).readlines() == ["héllo\r\n", "world\n", "bytes\n", "more"]


def test_gfile_errors(tmp_path: Path):
    lazy = tf.io.gfile.GFile(str(tmp_path / "missing"))  # opens on first use, as TensorFlow's
    with pytest.raises(tf.errors.NotFoundError, match="missing; No such file or directory$"):
        lazy.read()
    with pytest.raises(tf.errors.FailedPreconditionError, match="; Is a directory$"):
        tf.io.gfile.GFile(str(tmp_path)).read()
    with pytest.raises(tf.errors.InvalidArgumentError, match="^mode is not 'r' or 'w'"):
        tf.io.gfile.GFile(str(tmp_path / "x"), "x")


def test_gfile_over_fsspec_urls():
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    fs.pipe("/tfapi/run/ckpt-1.index", b"i")
    fs.pipe("/tfapi/run/ckpt-1.data-00000-of-00001", b"d")
    fs.pipe("/tfapi/run/sub/x", b"x")
    g = tf.io.gfile
    assert g.exists("memory://tfapi/run/ckpt-1.index") and not g.exists("memory://tfapi/run/nope")
    assert g.isdir("memory://tfapi/run") and not g.isdir("memory://tfapi/run/ckpt-1.index")
    assert g.listdir("memory://tfapi/run") == ["ckpt-1.data-00000-of-00001", "ckpt-1.index", "sub"]
    assert g.glob("memory://tfapi/run/*.index") == ["memory://tfapi/run/ckpt-1.index"]
    with g.GFile("memory://tfapi/run/new.txt", "w") as f:
        f.write("text")
    assert g.GFile("memory://tfapi/run/new.txt").read() == "text"
    with pytest.raises(tf.errors.NotFoundError):
        g.GFile("memory://tfapi/run/gone").read()
    with pytest.raises(tf.errors.NotFoundError):
        g.listdir("memory://tfapi/none")
    fs.rm("/tfapi", recursive=True)


# -- what the stand-in lacks -------------------------------------------------------------------------
@pytest.mark.parametrize("where, name", [(tf, "keras"), (tf, "__version__"), (tf.train, "Saver"),
                                         (tf.compat.v1, "placeholder"), (tf.io.gfile, "rmtree"),
                                         (tf.errors, "something")])
def test_missing_names_say_tensorflow_is_needed(where, name):
    from formats.tf._missing import NeedsTensorFlowError

    with pytest.raises(NeedsTensorFlowError, match=f"\\.{name} is not part of ckpt's TensorFlow stand-in "
                                                   r"\(formats.tf\), which only reads checkpoints: this needs "
                                                   r"TensorFlow itself \(pip install tensorflow\)$"):
        getattr(where, name)
    assert not hasattr(where, name) and getattr(where, name, 7) == 7  # an AttributeError


def test_namespaces():
    assert tf.compat.v2 is tf and tf.compat.v1.train is tf.train and tf.compat.v1.gfile is tf.io.gfile
    assert tf.compat.v1.float32 is tf.float32 and tf.compat.v1.errors is tf.errors
    assert tf.python.pywrap_tensorflow.NewCheckpointReader is tf.train.NewCheckpointReader
    tf.compat.v1.disable_v2_behavior()
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
    assert {"train", "float32", "as_dtype", "errors", "io"} <= set(dir(tf))
