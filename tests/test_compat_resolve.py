"""The TensorFlow drop-ins, path resolution, the state file, and slice-key encoding."""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import formats
from formats.core.errors import AmbiguousCheckpointError, CheckpointNotFoundError
from formats.concepts.state import CheckpointState, format_state, parse_state
from formats.concepts.slice_key import SliceKeyError, decode_slice_key, encode_slice_key

from .conftest import CORPUS, MANIFEST, digest, entries_of


@pytest.mark.parametrize("rel", ["tf2_mixed/all_dtypes/ckpt-1", "tf1_partitioned/model.ckpt-200"])
def test_load_checkpoint_is_a_drop_in(rel):
    reader = formats.load_checkpoint(CORPUS / rel)
    want = MANIFEST[rel]["tensors"]
    assert reader.get_variable_to_shape_map() == {k: v["shape"] for k, v in want.items()}
    assert reader.get_variable_to_dtype_map() == {k: v["dtype"] for k, v in want.items()}
    for key, t in want.items():
        assert reader.has_tensor(key)
        value = reader.get_tensor(key)
        if t["sha256"]:
            assert digest(value) == t["sha256"]
    assert not reader.has_tensor("nope")
    with pytest.raises(KeyError):
        reader.get_tensor("nope")


def test_get_tensor_returns_scalars_like_tensorflow():
    reader = formats.load_checkpoint(CORPUS / "tf2_mixed/all_dtypes/ckpt-1")
    assert isinstance(reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"), bytes)
    scalar = reader.get_tensor("scalar/.ATTRIBUTES/VARIABLE_VALUE")
    assert isinstance(scalar, np.float32) and scalar == 3.5


def test_list_variables_is_sorted_key_shape_pairs():
    got = formats.list_variables(CORPUS / "tf1_adam")
    want = sorted((k, v["shape"]) for k, v in MANIFEST["tf1_adam/model.ckpt-200"]["tensors"].items())
    assert got == want


@pytest.mark.parametrize("rel", entries_of("checkpoint-state"))
def test_directory_opens_the_latest_named_by_the_state_file(rel):
    folder = CORPUS / os.path.dirname(rel)
    with formats.open_checkpoint(folder) as ckpt:
        assert ckpt.path == str(folder / os.path.basename(MANIFEST[rel]["latest"]))


def test_state_file_relative_absolute_and_stale(tmp_path, corpus_copy):
    d = corpus_copy("tf1_estimator")
    (d / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-1"\n')
    assert formats.open_checkpoint(d).path == str(d / "model.ckpt-1")
    (d / "checkpoint").write_text(f'model_checkpoint_path: "{d}/model.ckpt-200"\n')
    assert formats.open_checkpoint(d).path == str(d / "model.ckpt-200")
    (d / "checkpoint").write_text('model_checkpoint_path: "/gone/elsewhere/model.ckpt-1"\n')
    assert formats.open_checkpoint(d).path == str(d / "model.ckpt-1")


def test_directory_without_state_file(corpus_copy):
    d = corpus_copy("tf1_estimator")
    os.remove(d / "checkpoint")
    with pytest.raises(AmbiguousCheckpointError) as info:
        formats.open_checkpoint(d)
    assert info.value.message == ("holds 2 checkpoints and no state file names one: model.ckpt-1, model.ckpt-200")
    for f in d.glob("model.ckpt-1.*"):
        f.unlink()
    assert formats.open_checkpoint(d).path == str(d / "model.ckpt-200")


def test_data_file_without_index(corpus_copy):
    d = corpus_copy("tf1_adam")
    os.remove(d / "model.ckpt-1.index")
    with pytest.raises(CheckpointNotFoundError, match="index file missing"):
        formats.open_checkpoint(d / "model.ckpt-1.data-00000-of-00001")


def test_state_file_round_trip_with_escapes():
    state = CheckpointState("dir/ckpt-2", ["dir/ckpt-1", "dir/ckpt-2", 'q"uote\\é'], [1.5, 2.25], 0.5)
    assert parse_state(format_state(state).encode()) == state


# -- slice keys (values from ../shared/FORMATS.md) ----------------------------------------------

def test_slice_key_known_bytes():
    key = encode_slice_key("w", [(0, -1), (5, 100), (300, 2)])
    assert key == b"\x00" + b"w\x00\x01" + b"\x01\x03" + b"\x80\x7f" + b"\x85\xc0\x64" + b"\xc1\x2c\x82"
    assert decode_slice_key(key) == (b"w", [(0, -1), (5, 100), (300, 2)])


@given(st.text(), st.lists(st.tuples(st.integers(-(2 ** 63), 2 ** 63 - 1), st.integers(-(2 ** 63), 2 ** 63 - 1)),
                           max_size=6))
def test_slice_keys_round_trip(name, extents):
    key = encode_slice_key(name, extents)
    assert decode_slice_key(key) == (name.encode("utf-8", "surrogateescape"), extents)


@pytest.mark.parametrize("bad", [b"", b"\x01", b"\x00w", b"\x00w\x00\x02", b"\x00w\x00\x01\x01\x01", b"\x00w\x00\x01\x00x"])
def test_bad_slice_keys(bad):
    with pytest.raises(SliceKeyError):
        decode_slice_key(bad)
