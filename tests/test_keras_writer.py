"""Keras weight file writers: the corpus files re-written attribute for attribute and byte for byte,
tf-keras' chunked list attributes, bfloat16 as Keras 3 stores it, atomicity and refusals."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import h5py
import ml_dtypes
import numpy as np
import pytest

from formats.api import open_checkpoint
from formats.core.errors import UnsupportedError
from formats.keras_h5.writer import (HDF5_OBJECT_HEADER_LIMIT, Keras2Layer, Keras3Group, write_keras2_h5,
                                     write_keras3_h5)
from formats.core.sources import TensorValue
from formats.tf_bundle.writer import OutputExistsError, OutputIsInputError

from .conftest import CORPUS

K2 = CORPUS / "keras2_tagger" / "tagger_weights.h5"
K3 = CORPUS / "keras3_tagger" / "tagger.weights.h5"


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def dump(path: Path) -> list[tuple[Any, ...]]:
    """Every object of an HDF5 file: path, kind, attributes (values and string storage), shape, dtype, bytes."""
    out: list[tuple[Any, ...]] = []
    with h5py.File(path, "r") as h5:
        def attrs(obj: Any) -> dict[str, Any]:
            found = {}
            for k in obj.attrs:
                t = obj.attrs.get_id(k).get_type()
                found[k] = (repr(obj.attrs[k]), t.is_variable_str() if isinstance(t, h5py.h5t.TypeStringID) else None)
            return found

        out.append(("/", "root", attrs(h5)))

        def visit(name: str, obj: Any) -> None:
            if isinstance(obj, h5py.Dataset):
                out.append((name, "dataset", attrs(obj), obj.shape, obj.dtype.str, obj[()].tobytes()))
            else:
                out.append((name, "group", attrs(obj)))
        h5.visititems(visit)
    return sorted(out, key=lambda item: item[0])


def test_keras2_corpus_file_rewritten_identically(tmp_path: Path) -> None:
    out = tmp_path / "w.h5"
    with open_checkpoint(str(K2)) as src, h5py.File(K2, "r") as h5:
        names = [_text(n) for n in h5.attrs["layer_names"]]
        layers = [Keras2Layer(n, [(_text(w), src[f"{n}/{_text(w)}"]) for w in h5[n].attrs["weight_names"]])
                  for n in names]
        report = write_keras2_h5(out, layers, keras_version="2.21.0")
    summary = {k: v for k, v in report.to_json().items() if k != "contents"}
    assert summary == {"path": str(out), "format": "keras2-h5", "files": [str(out)], "tensors": 12, "bytes": 9616,
                       "verified": True, "warnings": []}
    assert [c.stored_as for c in report.contents] == [f"{layer.name}/{w}" for layer in layers for w, _ in layer.weights]
    assert dump(out) == dump(K2)


def test_keras3_corpus_file_rewritten_identically(tmp_path: Path) -> None:
    out = tmp_path / "w.weights.h5"
    groups = []
    with open_checkpoint(str(K3)) as src, h5py.File(K3, "r") as h5:
        def visit(name: str, obj: Any) -> None:
            if isinstance(obj, h5py.Group) and (name == "vars" or name.endswith("/vars")):
                owner = name[:-4].rstrip("/")
                groups.append(Keras3Group(owner, _text(obj.attrs["name"]),
                                          [src[f"{name}/{i}"] for i in range(len(obj))]))
        h5.visititems(visit)
        report = write_keras3_h5(out, groups)
    assert report.tensors == 34 and report.roundtrip is not None and report.roundtrip.ok
    assert dump(out) == dump(K3)


def test_long_weight_names_are_chunked_as_tf_keras_does(tmp_path: Path) -> None:
    names = [f"layer/{'w' * 900}_{i}:0" for i in range(150)]  # ~136 kB of names
    weights = [(n, np.full((2,), i, np.float32)) for i, n in enumerate(names)]
    out = tmp_path / "long.h5"
    write_keras2_h5(out, [Keras2Layer("layer", weights)])
    with h5py.File(out, "r") as h5:
        attrs = sorted(h5["layer"].attrs)
        # np.asarray(names) is S906 x 150 = 135,900 bytes: 3 chunks of <= 64512 bytes (50 names each)
        assert attrs == ["weight_names0", "weight_names1", "weight_names2"]
        assert [len(h5["layer"].attrs[a]) for a in attrs] == [50, 50, 50]
        assert all(h5["layer"].attrs[a].nbytes <= HDF5_OBJECT_HEADER_LIMIT for a in attrs)
    with open_checkpoint(str(out)) as back:
        assert list(back) == [f"layer/{n}" for n in names]
        assert back[f"layer/{names[77]}"].read().tolist() == [77.0, 77.0]


def test_bfloat16_in_keras3_is_opaque_with_dtype_attribute(tmp_path: Path) -> None:
    value = np.arange(6, dtype=np.float32).reshape(3, 2).astype(ml_dtypes.bfloat16)
    out = tmp_path / "bf.weights.h5"
    write_keras3_h5(out, [Keras3Group("", "model"), Keras3Group("layers/dense", "d", [value, value[0]])])
    with h5py.File(out, "r") as h5:
        ds = h5["layers/dense/vars/0"]
        assert ds.dtype.str == "|V2" and ds.attrs["dtype"] == "bfloat16"
        assert ds.id.get_type().get_class() == h5py.h5t.OPAQUE
        assert dict(h5["vars"].attrs) == {"name": "model"} and len(h5["vars"]) == 0
    with open_checkpoint(str(out)) as back:
        entry = back["layers/dense/vars/0"]
        assert entry.dtype == "bfloat16"
        assert entry.read().tobytes() == value.tobytes()


def test_streamed_in_small_chunks_scalars_and_empties(tmp_path: Path) -> None:
    big = np.random.default_rng(0).normal(size=(37, 5, 3)).astype(np.float64)
    out = tmp_path / "s.h5"
    write_keras2_h5(out, [Keras2Layer("a", [("a/big:0", big), ("a/s:0", np.int64(7)),
                                            ("a/e:0", np.zeros((0, 4), np.float32))])], chunk=40)
    with open_checkpoint(str(out)) as back:
        assert back["a/a/big:0"].read().tobytes() == big.tobytes()
        assert back["a/a/s:0"].shape == () and back["a/a/s:0"].read() == 7
        assert back["a/a/e:0"].shape == (0, 4)


def test_layers_without_weights_and_layer_order(tmp_path: Path) -> None:
    out = tmp_path / "o.h5"
    write_keras2_h5(out, [Keras2Layer("zeta", [("zeta/k:0", np.ones(2, np.float32))]),
                          Keras2Layer("alpha", [("alpha/k:0", np.zeros(2, np.float32))])],
                    layer_names=["input", "zeta", "alpha"])
    with h5py.File(out, "r") as h5:
        assert [_text(n) for n in h5.attrs["layer_names"]] == ["input", "zeta", "alpha"]
        assert list(h5) == ["alpha", "input", "top_level_model_weights", "zeta"]
        assert h5["input"].attrs["weight_names"].dtype == np.float64 and len(h5["input"].attrs["weight_names"]) == 0
        assert _text(h5.attrs["backend"]) == "tensorflow"
    with open_checkpoint(str(out)) as back:
        assert back.metadata["layers"] == ["input", "zeta", "alpha"]
        assert list(back) == ["zeta/zeta/k:0", "alpha/alpha/k:0"]


def test_refuses_existing_output_unless_forced(tmp_path: Path) -> None:
    out = tmp_path / "x.h5"
    out.write_bytes(b"keep me")
    with pytest.raises(OutputExistsError, match="exists"):
        write_keras2_h5(out, [Keras2Layer("a", [("a/k:0", np.ones(1, np.float32))])])
    assert out.read_bytes() == b"keep me"
    write_keras2_h5(out, [Keras2Layer("a", [("a/k:0", np.ones(1, np.float32))])], force=True)
    with open_checkpoint(str(out)) as back:
        assert list(back) == ["a/a/k:0"]


def test_refuses_to_overwrite_its_input(tmp_path: Path) -> None:
    copy = tmp_path / "in.h5"
    copy.write_bytes(K2.read_bytes())
    with open_checkpoint(str(copy)) as src:
        with pytest.raises(OutputIsInputError, match="being read"):
            write_keras2_h5(copy, [Keras2Layer("embed", [("embed/embeddings:0", src["embed/embed/embeddings:0"])])],
                            force=True)
    assert copy.read_bytes() == K2.read_bytes()


def test_failure_leaves_no_file(tmp_path: Path) -> None:
    out = tmp_path / "bad.weights.h5"
    with pytest.raises(UnsupportedError, match="string tensor cannot be stored"):
        write_keras3_h5(out, [Keras3Group("layers/x", "x", [np.ones(2, np.float32), TensorValue([b"a"], "string")])])
    assert os.listdir(tmp_path) == []


def test_bad_names_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="repeated weight name"):
        write_keras2_h5(tmp_path / "a.h5", [Keras2Layer("a", [("k:0", np.ones(1)), ("k:0", np.ones(1))])])
    with pytest.raises(ValueError, match="repeated object path"):
        write_keras3_h5(tmp_path / "b.h5", [Keras3Group("layers/a"), Keras3Group("layers/a")])
    with pytest.raises(ValueError, match="not listed"):
        write_keras2_h5(tmp_path / "c.h5", [Keras2Layer("a", [])], layer_names=["b"])
    assert os.listdir(tmp_path) == []

