"""The Keras/HDF5 reader agrees with h5py and Keras on the corpus, and handles every Keras layout."""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import zipfile

import h5py
import ml_dtypes
import numpy as np
import pytest

import formats
from formats.core.errors import CheckpointError, CorruptCheckpointError, NotACheckpointError, UnsupportedError
from formats.keras_h5.naming import to_snake_case
from formats.ops.compare.verify import verify_checkpoint

from .conftest import CORPUS, MANIFEST, digest, entries_of

HDF5 = entries_of("hdf5")
K2_WEIGHTS = CORPUS / "keras2_tagger/tagger_weights.h5"
K2_MODEL = CORPUS / "keras2_tagger/tagger_model.h5"
K3_WEIGHTS = CORPUS / "keras3_tagger/tagger.weights.h5"
K3_ZIP = CORPUS / "keras3_tagger/tagger.keras"
FORMATS = {"keras2_tagger/tagger_model.h5": "keras2-h5", "keras2_tagger/tagger_weights.h5": "keras2-h5",
           "keras3_tagger/tagger.weights.h5": "keras3-h5", "seed_slots/easy_weights.h5": "keras2-h5"}
# What Keras 3 itself reports as `variable.path` for the tagger (keras.saving.load_model(...).weights)
K3_MODEL_NAMES = {
    "layers/embedding/vars/0": "embed/embeddings",
    "layers/lstm/cell/vars/0": "lstm/lstm_cell/kernel",
    "layers/lstm/cell/vars/1": "lstm/lstm_cell/recurrent_kernel",
    "layers/lstm/cell/vars/2": "lstm/lstm_cell/bias",
    "layers/batch_normalization/vars/0": "bn/gamma",
    "layers/batch_normalization/vars/1": "bn/beta",
    "layers/batch_normalization/vars/2": "bn/moving_mean",
    "layers/batch_normalization/vars/3": "bn/moving_variance",
    "layers/sequential/layers/dense/vars/0": "dense/kernel",
    "layers/sequential/layers/dense/vars/1": "dense/bias",
    "layers/sequential/layers/dense_1/vars/0": "dense_1/kernel",
    "layers/sequential/layers/dense_1/vars/1": "dense_1/bias",
}
_SLOTTED = ["embed_embeddings", "lstm_lstm_cell_kernel", "lstm_lstm_cell_recurrent_kernel", "lstm_lstm_cell_bias",
            "bn_gamma", "bn_beta", "dense_kernel", "dense_bias", "dense_1_kernel", "dense_1_bias"]
# ... and as the optimizer's variable paths
K3_OPTIMIZER_NAMES = ["adam/iteration", "adam/learning_rate"] + [
    f"adam/{v}_{slot}" for v in _SLOTTED for slot in ("momentum", "velocity")]


def test_corpus_has_the_keras_files():
    assert HDF5 == sorted(FORMATS)


@pytest.mark.parametrize("rel", HDF5)
def test_keys_shapes_dtypes_and_values(rel):
    expected = MANIFEST[rel]["tensors"]
    with formats.open_checkpoint(CORPUS / rel) as ckpt:
        assert ckpt.format == FORMATS[rel]
        assert sorted(ckpt) == sorted(expected)
        for key, want in expected.items():
            entry = ckpt[key]
            assert list(entry.shape) == want["shape"], key
            assert entry.dtype == want["dtype"], key  # float32/int64: TF and numpy names agree
            value = entry.read()
            assert value.dtype.name == want["dtype"] and value.shape == tuple(want["shape"]), key
            assert digest(value) == want["sha256"], key
            assert entry.nbytes == value.nbytes, key


@pytest.mark.parametrize("rel", HDF5)
def test_verify_is_clean(rel):
    with formats.open_checkpoint(CORPUS / rel) as ckpt:
        report = verify_checkpoint(ckpt)
    assert report.ok, report.problems
    assert report.tensors == len(MANIFEST[rel]["tensors"])


def _weight_names(path, group):
    with h5py.File(path, "r") as f:
        g = f[group] if group else f
        return [(layer, n) for layer in g.attrs["layer_names"] for n in g[layer].attrs["weight_names"]]


@pytest.mark.parametrize("path,group", [(K2_WEIGHTS, ""), (K2_MODEL, "model_weights")])
def test_keras2_names_are_weight_names_without_suffix(path, group):
    listed = _weight_names(path, group)
    assert len(listed) == 12
    prefix = f"{group}/" if group else ""
    with formats.open_checkpoint(path) as ckpt:
        model = [(k, e.name) for k, e in ckpt.items() if e.role == "variable"]
        assert model == [(f"{prefix}{layer}/{n}", n[:-len(":0")]) for layer, n in listed]
    assert model[0] == (f"{prefix}embed/embed/embeddings:0", "embed/embeddings")


def test_keras2_full_model_optimizer_and_metadata():
    with h5py.File(K2_MODEL, "r") as f:
        opt_names = list(f["optimizer_weights"].attrs["weight_names"])
    with formats.open_checkpoint(K2_MODEL) as ckpt:
        optimizer = [(k, e.name) for k, e in ckpt.items() if e.role == "optimizer"]
        meta = ckpt.metadata
    assert optimizer == [(f"optimizer_weights/{n}", n[:-len(":0")]) for n in opt_names]
    assert optimizer[:2] == [("optimizer_weights/iteration:0", "iteration"),
                             ("optimizer_weights/Adam/m/embed/embeddings:0", "Adam/m/embed/embeddings")]
    assert meta["keras_version"] == "2.21.0" and meta["backend"] == "tensorflow"
    assert meta["layers"] == ["tokens", "embed", "lstm", "bn", "head"]
    assert meta["model_config"]["class_name"] == "Functional"
    assert [la["name"] for la in meta["model_config"]["config"]["layers"]] == meta["layers"]
    assert meta["training_config"]["optimizer_config"]["class_name"] == "Custom>Adam"  # as tf-keras writes it


def test_keras2_weights_metadata_has_no_model_config():
    with h5py.File(K2_WEIGHTS, "r") as f:  # each layer's weight keys in weight_names order, as h5py reads them
        names = [*f.attrs["layer_names"], "top_level_model_weights"]  # the model's own weights' group too
        weights = {str(n): [f"{n}/{w}" for w in f[n].attrs["weight_names"]] for n in names}
    with formats.open_checkpoint(K2_WEIGHTS) as ckpt:
        assert ckpt.metadata == {"layout": "keras2-h5", "keras_version": "2.21.0", "backend": "tensorflow",
                                 "layers": ["tokens", "embed", "lstm", "bn", "head"], "layer_weights": weights}
        assert list(ckpt) == [k for keys in weights.values() for k in keys]


def test_keras3_names_roles_and_numeric_order():
    with formats.open_checkpoint(K3_WEIGHTS) as ckpt:
        names = {k: e.name for k, e in ckpt.items() if e.role == "variable"}
        optimizer = [(k, e.name) for k, e in ckpt.items() if e.role == "optimizer"]
    assert names == K3_MODEL_NAMES
    # no config.json beside a bare .weights.h5: optimizer variables are named by index, in numeric order
    assert optimizer == [(f"optimizer/vars/{i}", f"adam/{i}") for i in range(22)]


def test_keras_archive_lists_the_same_tensors_as_the_weights_file():
    with formats.open_checkpoint(K3_WEIGHTS) as loose, formats.open_checkpoint(K3_ZIP) as packed:
        assert packed.format == "keras-zip"
        assert list(packed) == list(loose)
        for key in loose:
            a, b = loose[key], packed[key]
            assert (a.shape, a.dtype, a.nbytes) == (b.shape, b.dtype, b.nbytes), key
            assert a.role == b.role or key.startswith("optimizer/"), key
            assert digest(a.read()) == digest(b.read()), key
        assert {k: e.name for k, e in packed.items() if e.role == "variable"} == K3_MODEL_NAMES
        # config.json names the optimizer (Adam) and the layer order, so its slots get Keras' own names
        # and are tied to their variables (the bare weights file's shapes repeat: its slots stay unnamed)
        optimizer = [e for e in packed.values() if e.key.startswith("optimizer/")]
        assert [e.name for e in optimizer] == K3_OPTIMIZER_NAMES
        assert [e.role for e in optimizer] == ["optimizer"] * 2 + ["slot"] * 20
        by_name = {e.name: k for k, e in packed.items() if e.role == "variable"}
        assert [(e.slot_of, e.slot_name, e.optimizer) for e in optimizer[2:4]] == [
            (by_name["embed/embeddings"], "momentum", "Adam"), (by_name["embed/embeddings"], "velocity", "Adam")]
        assert all(packed[e.slot_of].shape == e.shape for e in optimizer[2:])


def test_keras_archive_is_read_in_place(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(zipfile.ZipFile, "extract", lambda *a, **k: pytest.fail("extracted"))
    monkeypatch.setattr(zipfile.ZipFile, "extractall", lambda *a, **k: pytest.fail("extracted"))
    with formats.open_checkpoint(K3_ZIP) as ckpt:
        assert ckpt._image.container == "zip"
        assert ckpt._image.size == zipfile.ZipFile(K3_ZIP).getinfo("model.weights.h5").file_size
        for entry in ckpt.values():
            entry.read()
    assert list(tmp_path.iterdir()) == []


def test_keras_archive_metadata():
    with formats.open_checkpoint(K3_ZIP) as ckpt:
        meta = ckpt.metadata
    assert meta["layout"] == "keras3-h5"
    assert meta["keras_version"] == "3.15.1" and meta["date_saved"] == "2026-11-22@01:24:46"
    assert meta["layers"] == ["tokens", "embed", "lstm", "bn", "head"]
    assert meta["model_config"]["class_name"] == "Functional"
    assert meta["model_config"]["compile_config"]["optimizer"]["class_name"] == "Adam"


def _repack(tmp_path, compression, name="model.weights.h5"):
    out = tmp_path / "repacked.keras"
    with zipfile.ZipFile(K3_ZIP) as src, zipfile.ZipFile(out, "w", compression) as dst:
        for info in src.infolist():
            dst.writestr(name if info.filename == "model.weights.h5" else info.filename, src.read(info))
    return out


def test_deflated_keras_archive(tmp_path):
    path = _repack(tmp_path, zipfile.ZIP_DEFLATED)
    with formats.open_checkpoint(K3_ZIP) as want, formats.open_checkpoint(path) as got:
        assert got.format == "keras-zip"
        assert {k: digest(e.read()) for k, e in got.items()} == {k: digest(e.read()) for k, e in want.items()}


def _patch_central_size(path, member, size):
    data = bytearray(path.read_bytes())
    at = data.index(b"PK\x01\x02")
    while True:
        name_len = int.from_bytes(data[at + 28:at + 30], "little")
        if data[at + 46:at + 46 + name_len] == member.encode():
            data[at + 24:at + 28] = size.to_bytes(4, "little")
            break
        extra, comment = (int.from_bytes(data[at + o:at + o + 2], "little") for o in (30, 32))
        at += 46 + name_len + extra + comment
    path.write_bytes(bytes(data))


def test_zip_bomb_is_refused_before_inflating(tmp_path):
    path = _repack(tmp_path, zipfile.ZIP_DEFLATED)
    _patch_central_size(path, "model.weights.h5", 0x7FFF0000)
    with pytest.raises(CorruptCheckpointError, match=r"claims 2,147,418,112 bytes from .* refusing to expand it"):
        formats.open_checkpoint(path)


def test_zip_without_weights_member(tmp_path):
    path = _repack(tmp_path, zipfile.ZIP_STORED, name="other.bin")
    with pytest.raises(NotACheckpointError, match="zip archive without model.weights.h5: not a Keras .keras file"):
        formats.open_checkpoint(path)


def test_truncated_keras_archive(tmp_path):
    path = tmp_path / "cut.keras"
    path.write_bytes(K3_ZIP.read_bytes()[:40000])
    with pytest.raises(CorruptCheckpointError, match="damaged zip archive"):
        formats.open_checkpoint(path)


def test_flipped_byte_in_stored_member_fails_the_crc(tmp_path):
    path = tmp_path / "flip.keras"
    data = bytearray(K3_ZIP.read_bytes())
    data[-2000] ^= 0xFF  # inside model.weights.h5's raw data, before the central directory
    path.write_bytes(bytes(data))
    with formats.open_checkpoint(path) as ckpt:
        report = verify_checkpoint(ckpt)
    assert [p.where for p in report.problems][:1] == ["model.weights.h5"]
    assert "does not match the archive's" in report.problems[0].message


# ---- synthetic layouts, written with h5py the way Keras writes them --------------------------------

def _keras2_file(path, layers, split=False):
    with h5py.File(path, "w") as f:
        names = [n.encode() for n in layers]
        if split:
            f.attrs["layer_names0"], f.attrs["layer_names1"] = names[:1], names[1:]
        else:
            f.attrs["layer_names"] = names
        f.attrs["keras_version"], f.attrs["backend"] = b"2.15.0", b"tensorflow"
        for layer, weights in layers.items():
            g = f.create_group(layer)
            if not weights:
                g.attrs["weight_names"] = np.array([], dtype=np.float64)
            elif split:
                wn = [w.encode() for w in weights]
                g.attrs["weight_names0"], g.attrs["weight_names1"] = wn[:1], wn[1:]
            else:
                g.attrs["weight_names"] = [w.encode() for w in weights]
            for w, value in weights.items():
                g.create_dataset(w, data=value)


@pytest.mark.parametrize("split", [False, True])
def test_keras2_split_attributes_and_weightless_layers(tmp_path, split):
    k, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.ones(3, np.float16)
    path = tmp_path / "w.h5"
    _keras2_file(path, {"input_1": {}, "dense": {"dense/kernel:0": k, "dense/bias:0": b}, "dropout": {}}, split)
    with formats.open_checkpoint(path) as ckpt:
        assert ckpt.format == "keras2-h5"
        assert [(key, e.name, e.dtype) for key, e in ckpt.items()] == [
            ("dense/dense/kernel:0", "dense/kernel", "float32"), ("dense/dense/bias:0", "dense/bias", "float16")]
        assert ckpt.metadata["layers"] == ["input_1", "dense", "dropout"]
        np.testing.assert_array_equal(ckpt["dense/dense/kernel:0"].read(), k)
        assert verify_checkpoint(ckpt).ok


def test_keras2_weight_names_without_dataset_is_a_verify_problem(tmp_path):
    path = tmp_path / "w.h5"
    _keras2_file(path, {"dense": {"dense/kernel:0": np.zeros((2, 2), np.float32)}})
    with h5py.File(path, "a") as f:
        f["dense"].attrs["weight_names"] = [b"dense/kernel:0", b"dense/bias:0"]
        f.attrs["layer_names"] = [b"dense", b"gone"]
    with formats.open_checkpoint(path) as ckpt:
        assert list(ckpt) == ["dense/dense/kernel:0"]
        problems = [(p.where, p.message) for p in verify_checkpoint(ckpt).problems]
    assert problems == [
        ("dense/dense/bias:0", "weight_names lists this weight, but the file has no such dataset"),
        ("gone", "layer_names lists this layer, but the file has no such group")]


def _keras3_file(path, objects):
    """``objects``: object path -> (vars name attribute, [arrays]); bfloat16 arrays get the dtype mark."""
    with h5py.File(path, "w") as f:
        for obj, (name, values) in objects.items():
            g = f.create_group(f"{obj}/vars" if obj else "vars")
            g.attrs["name"] = name
            for i, v in enumerate(values):
                ds = g.create_dataset(str(i), data=v)
                if v.dtype == ml_dtypes.bfloat16:
                    ds.attrs["dtype"] = "bfloat16"


def test_keras3_bfloat16_is_read_as_bfloat16(tmp_path):
    kernel = (np.arange(6, dtype=np.float32) / 4).reshape(3, 2).astype(ml_dtypes.bfloat16)
    path = tmp_path / "m.weights.h5"
    _keras3_file(path, {"": ("sequential", []), "layers/dense": ("d", [kernel, np.zeros(2, ml_dtypes.bfloat16)])})
    with formats.open_checkpoint(path) as ckpt:
        entry = ckpt["layers/dense/vars/0"]
        assert (ckpt.format, entry.dtype, entry.name, entry.nbytes) == ("keras3-h5", "bfloat16", "d/kernel", 12)
        value = entry.read()
    assert value.dtype == np.dtype(ml_dtypes.bfloat16) and value.dtype.name == "bfloat16"
    np.testing.assert_array_equal(value.astype(np.float32), kernel.astype(np.float32))


def test_keras3_roles_from_class_in_path_and_index_fallback(tmp_path):
    path = tmp_path / "m.weights.h5"
    v = np.zeros(3, np.float32)
    _keras3_file(path, {
        "layers/dense_2": ("logits", [np.zeros((3, 3), np.float32)]),           # use_bias=False
        "layers/batch_normalization": ("bn", [v, v]),                          # center=scale=False
        "layers/layer_normalization": ("ln", [v, v, v]),                       # not LayerNorm's: index
        "layers/my_block": ("blk", [v] * 12),                                  # unknown class: index
        "layers/conv2d": ("c", [np.zeros((1, 1, 3, 3), np.float32), v]),
    })
    with formats.open_checkpoint(path) as ckpt:
        names = {k: e.name for k, e in ckpt.items()}
        keys = list(ckpt)
    assert names["layers/dense_2/vars/0"] == "logits/kernel"
    assert [names[f"layers/batch_normalization/vars/{i}"] for i in range(2)] == ["bn/moving_mean", "bn/moving_variance"]
    assert [names[f"layers/layer_normalization/vars/{i}"] for i in range(3)] == ["ln/0", "ln/1", "ln/2"]
    assert [names["layers/conv2d/vars/0"], names["layers/conv2d/vars/1"]] == ["c/kernel", "c/bias"]
    blk = [k for k in keys if k.startswith("layers/my_block/")]
    assert blk == [f"layers/my_block/vars/{i}" for i in range(12)]  # numeric, not "0, 1, 10, 11, 2"
    assert names["layers/my_block/vars/11"] == "blk/11"


def test_snake_case_matches_keras():
    assert [to_snake_case(c) for c in ("BatchNormalization", "Conv2D", "LSTMCell", "SimpleRNN", "PReLU")] == [
        "batch_normalization", "conv2d", "lstm_cell", "simple_rnn", "p_re_lu"]


def test_generic_hdf5_every_dataset(tmp_path):
    path = tmp_path / "data.h5"
    with h5py.File(path, "w") as f:
        f["a/b/x"] = np.arange(4, dtype=np.int16)
        f["a/words"] = np.array([b"hello", b"hdf5"], dtype=h5py.string_dtype("ascii"))
        f["scalar"] = np.float64(2.5)
        f["pairs"] = np.zeros(2, dtype=[("p", "i4"), ("q", "f4")])
    with formats.open_checkpoint(path) as ckpt:
        assert ckpt.format == "hdf5"
        assert [(k, e.dtype, e.shape, e.name) for k, e in ckpt.items()] == [
            ("a/b/x", "int16", (4,), "a/b/x"), ("a/words", "string", (2,), "a/words"),
            ("pairs", "[('p', '<i4'), ('q', '<f4')]", (2,), "pairs"), ("scalar", "float64", (), "scalar")]
        assert "skipped" not in ckpt.metadata
        assert ckpt["pairs"].unreadable == "HDF5 type [('p', '<i4'), ('q', '<f4')] has no TensorFlow dtype"
        words = ckpt["a/words"].read()
        assert words.dtype == object and list(words) == [b"hello", b"hdf5"]
        assert ckpt["scalar"].read() == np.float64(2.5)
        assert [tuple(p) for p in verify_checkpoint(ckpt).problems] == [
            ("pairs", "HDF5 type [('p', '<i4'), ('q', '<f4')] has no TensorFlow dtype")]


def test_absurd_declared_size_is_refused_without_allocating(tmp_path):
    path = tmp_path / "huge.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("huge", shape=(1 << 40,), dtype=np.float32, chunks=(1 << 16,))
    with formats.open_checkpoint(path) as ckpt:
        entry = ckpt["huge"]
        assert entry.nbytes == 4 << 40
        with pytest.raises(CorruptCheckpointError, match=r"huge: declares shape \(1099511627776,\) "
                                                          r"\(4,398,046,511,104 bytes\) but stores only 0 bytes"):
            entry.read()
        assert [p.where for p in verify_checkpoint(ckpt).problems] == ["huge"]


def test_external_storage_is_not_followed(tmp_path):
    secret = tmp_path / "secret.bin"
    secret.write_bytes(b"\x01" * 64)
    path = tmp_path / "ext.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", shape=(16,), dtype=np.float32, external=[(str(secret), 0, 64)])
    with formats.open_checkpoint(path) as ckpt:
        with pytest.raises(UnsupportedError, match="x: stored in external file"):
            ckpt["x"].read()


def test_truncated_hdf5_gives_one_line_error(tmp_path):
    path = tmp_path / "cut.h5"
    data = K2_MODEL.read_bytes()
    path.write_bytes(data[:1000])
    with pytest.raises(CorruptCheckpointError) as info:
        formats.open_checkpoint(path)
    assert info.value.message == f"HDF5 file is truncated (1,000 of {len(data):,} bytes present)"


@pytest.mark.parametrize("source", [K2_MODEL, K3_WEIGHTS])
def test_damaged_files_end_in_a_checkpoint_error(tmp_path, source):
    """Seeded truncations and byte flips: success or a CheckpointError, nothing else."""
    data = source.read_bytes()
    rng = np.random.default_rng(4)
    outcomes = set()
    for trial in range(120):
        damaged = bytearray(data)
        if trial % 3 == 0:
            damaged = damaged[:int(rng.integers(8, len(data)))]
        else:
            for at in rng.integers(0, len(data), size=int(rng.integers(1, 8))):
                damaged[at] ^= int(rng.integers(1, 256))
        path = tmp_path / f"d{trial}.h5"
        path.write_bytes(bytes(damaged))
        try:
            with formats.open_checkpoint(path) as ckpt:
                verify_checkpoint(ckpt)
                outcomes.add("opened")
        except CheckpointError as exc:
            assert "\n" not in str(exc)
            outcomes.add("error")
    assert outcomes == {"opened", "error"}


@pytest.mark.parametrize("content,expected", [
    (b"version https://git-lfs.github.com/spec/v1\noid sha256:ab\nsize 123\n", "is a Git LFS pointer"),
    (b"<!DOCTYPE html><html><body>404</body></html>", "is an HTML/XML page"),
    (b"\xef\xbb\xbf<head><title>Sign in</title></head><html>", "is an HTML/XML page"),
    (b"just some text that is long enough", "not a checkpoint: unrecognised content"),
])
def test_foreign_files_named_h5(tmp_path, content, expected):
    path = tmp_path / "model.h5"
    path.write_bytes(content)
    with pytest.raises(NotACheckpointError, match=expected):
        formats.open_checkpoint(path)


def test_importing_formats_and_listing_a_bundle_does_not_import_h5py():
    code = ("import sys, formats; from formats.ops.inspect.summary import summarise; from formats.discover.scan import scan_directory\n"
            f"summarise(formats.open_checkpoint({str(CORPUS / 'tf1_adam/model.ckpt-200')!r}))\n"
            f"scan_directory({str(CORPUS / 'tf1_adam')!r})\n"
            "print('h5py' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_closed_checkpoint_releases_the_file(tmp_path):
    path = tmp_path / "w.h5"
    shutil.copy(K2_WEIGHTS, path)
    ckpt = formats.open_checkpoint(path)
    ckpt.close()
    with h5py.File(path, "a"):  # would fail if a read handle were still open with locking
        pass
