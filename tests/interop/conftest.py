"""Shared helpers for writer round trips: hypothesis strategies for whole checkpoints, corpus ordering."""
from __future__ import annotations

import math
import os
from typing import Any

import ml_dtypes
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes

from formats.core.sources import TensorValue

# TF dtype name -> how to build a value of that dtype from hypothesis data
RAW_DTYPES = ["float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
              "uint32", "uint64", "complex64", "complex128", "float8_e5m2", "float8_e4m3fn"]
OTHER_DTYPES = ["bool", "int4", "uint4", "string"]
ALL_DTYPES = RAW_DTYPES + OTHER_DTYPES
_ML_DTYPES = {"bfloat16", "float8_e5m2", "float8_e4m3fn", "int4", "uint4"}
KEY_ALPHABET = "abcxyz019_-/. éü中文🙂"

keys = st.text(alphabet=KEY_ALPHABET, min_size=1, max_size=16).filter(lambda k: k != "_CHECKPOINTABLE_OBJECT_GRAPH")


def numpy_dtype(name: str) -> Any:
    """The numpy dtype for a TF dtype name used here."""
    return np.dtype(getattr(ml_dtypes, name)) if name in _ML_DTYPES else np.dtype(name)


@st.composite
def tensor_values(draw: Any, dtypes: list[str] = ALL_DTYPES, variants: bool = False) -> Any:
    """One source value (numpy array or TensorValue) of a drawn dtype and shape (scalars and empties too)."""
    names = dtypes + (["variant"] if variants else [])
    name = draw(st.sampled_from(names))
    shape = draw(array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    n = math.prod(shape)
    if name in ("string", "variant"):
        items = draw(st.lists(st.binary(max_size=300), min_size=n, max_size=n))
        arr = np.empty(n, dtype=object)
        arr[:] = items
        arr = arr.reshape(shape)
        return TensorValue(arr, name) if name == "variant" else arr
    if name == "bool":
        return np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool).reshape(shape)
    if name in ("int4", "uint4"):
        lo, hi = (-8, 7) if name == "int4" else (0, 15)
        ints = draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n))
        return np.array(ints, dtype=np.int8).astype(numpy_dtype(name)).reshape(shape)
    dt = numpy_dtype(name)
    raw = draw(st.binary(min_size=n * dt.itemsize, max_size=n * dt.itemsize))
    return np.frombuffer(raw, dtype=dt).reshape(shape).copy()


def checkpoints(dtypes: list[str] = ALL_DTYPES, variants: bool = False, max_size: int = 6) -> Any:
    """Dicts key -> value: whole checkpoints to write."""
    return st.dictionaries(keys, tensor_values(dtypes, variants), min_size=0, max_size=max_size)


def canonical(value: Any) -> tuple[str, tuple[int, ...], Any]:
    """(dtype name, shape, comparable content) of a written source value."""
    arr = value.value if isinstance(value, TensorValue) else value
    if arr.dtype == object:
        return ("variant" if isinstance(value, TensorValue) else "string"), arr.shape, list(arr.reshape(-1))
    return arr.dtype.name, arr.shape, arr.tobytes()


def source_order(ckpt: Any) -> list[str]:
    """Keys of a bundle in the order of their bytes in the data files (how TensorFlow wrote them)."""
    def where(key: str) -> tuple[int, int, bool, str]:
        raw = ckpt[key].raw  # an empty tensor shares its offset with the next one and came first
        return (raw.shard_id, raw.offset, raw.size > 0, key)

    return sorted(ckpt, key=where)


def keras_env(legacy: bool) -> dict[str, str]:
    """The environment of a TensorFlow subprocess: quiet, on the CPU, Keras on TensorFlow; tf-keras where
    ``legacy`` (``TF_USE_LEGACY_KERAS=1``), else Keras 3 (the variable taken out)."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", KERAS_BACKEND="tensorflow", CUDA_VISIBLE_DEVICES="")
    env.pop("TF_USE_LEGACY_KERAS", None)
    if legacy:
        env["TF_USE_LEGACY_KERAS"] = "1"
    return env
