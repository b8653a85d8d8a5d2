"""The bundle reader agrees with TensorFlow's own reader on every corpus checkpoint."""
from __future__ import annotations

import pytest

import formats

from .conftest import CORPUS, MANIFEST, digest, entries_of
from .proto_oracle import oracle

BUNDLES = entries_of("tf-bundle")


def test_corpus_has_every_kind_of_bundle():
    assert len(BUNDLES) == 18
    assert "tf1_partitioned/model.ckpt-1" in BUNDLES and "tf2_mixed/sharded/ckpt" in BUNDLES


@pytest.mark.parametrize("rel", BUNDLES)
def test_keys_shapes_dtypes_and_values(rel):
    expected = MANIFEST[rel]["tensors"]
    with formats.open_checkpoint(CORPUS / rel) as ckpt:
        assert sorted(ckpt) == sorted(expected)
        for key, want in expected.items():
            entry = ckpt[key]
            assert list(entry.shape) == want["shape"], key
            assert entry.dtype == want["dtype"], key
            value = entry.read()
            assert value.shape == tuple(want["shape"]), key
            if want["sha256"] is not None:
                assert digest(value) == want["sha256"], key


@pytest.mark.parametrize("rel", BUNDLES)
def test_format_and_data_files(rel):
    with formats.open_checkpoint(CORPUS / rel) as ckpt:
        has_graph = MANIFEST[rel]["object_graph"] is not None
        assert ckpt.format == ("tf-object" if has_graph else "tf-name")
        data = sorted(f.rsplit("/", 1)[-1] for f in ckpt.files if ".data-" in f)
        assert data == MANIFEST[rel]["data_files"]


def _variant_keys():
    return [(rel, key) for rel in BUNDLES for key, t in MANIFEST[rel]["tensors"].items() if t["dtype"] == "variant"]


@pytest.mark.parametrize("rel,key", _variant_keys())
def test_variant_elements_are_variant_tensor_data(rel, key):
    with formats.open_checkpoint(CORPUS / rel) as ckpt:
        value = ckpt[key].read()
    assert value.dtype == object and value.shape == tuple(MANIFEST[rel]["tensors"][key]["shape"])
    for element in value.reshape(-1):
        proto = oracle("VariantTensorDataProto").FromString(element)
        assert proto.type_name  # every serialized variant names its type
        assert proto.SerializeToString() == element


def test_variant_keys_exist():
    assert len(_variant_keys()) >= 6  # the dataset iterators of seed_keras2 and seed_slots


def test_partitioned_variable_is_assembled_and_slices_hidden():
    with formats.open_checkpoint(CORPUS / "tf1_partitioned/model.ckpt-200") as ckpt:
        assert not any(k.startswith("\x00") for k in ckpt)
        entry = ckpt["input_layer/embedding/weights"]
        assert entry.shape == (97, 8) and entry.nbytes == 97 * 8 * 4
        slices = ckpt.reader.entries[b"input_layer/embedding/weights"].slices
        assert slices == [[(0, 33), (0, 8)], [(33, 32), (0, 8)], [(65, 32), (0, 8)]]


def test_strings_and_special_dtypes():
    with formats.open_checkpoint(CORPUS / "tf2_mixed/all_dtypes/ckpt-1") as ckpt:
        strings = ckpt["typed/string/.ATTRIBUTES/VARIABLE_VALUE"].read()
        assert strings.dtype == object and strings.shape == (3, 4)
        assert strings[0, 0] == b"ab" and strings[0, 1] == b"" and strings[0, 2] == "héllo".encode()
        assert strings[0, 3] == bytes(range(256))
        assert str(ckpt["typed/bfloat16/.ATTRIBUTES/VARIABLE_VALUE"].read().dtype) == "bfloat16"
        empty = ckpt["empty/.ATTRIBUTES/VARIABLE_VALUE"]
        assert empty.shape == (0, 7) and empty.nbytes == 0 and empty.read().shape == (0, 7)
        assert ckpt["scalar/.ATTRIBUTES/VARIABLE_VALUE"].read().shape == ()


def test_nothing_is_mapped_until_read():
    with formats.open_checkpoint(CORPUS / "tf2_mixed/sharded/ckpt") as ckpt:
        assert ckpt.reader._maps == {}
        ckpt["w/0/.ATTRIBUTES/VARIABLE_VALUE"].read()
        assert list(ckpt.reader._maps) == [0]  # only the shard holding that tensor
        ckpt["w/3/.ATTRIBUTES/VARIABLE_VALUE"].read()  # split by TF's sharding policy over shards 2 and 3
        assert sorted(ckpt.reader._maps) == [0, 2, 3]


def test_sharded_bundle_reads_from_seven_files():
    with formats.open_checkpoint(CORPUS / "tf2_mixed/sharded/ckpt") as ckpt:
        shards = {e.shard_id for e in ckpt.reader.entries.values() if e.size}
        assert shards == set(range(7))
