"""Write -> read round trips: every corpus bundle re-written, and hypothesis-generated checkpoints."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

import formats
from formats.core.roundtrip import compare_checkpoints

from .conftest import CORPUS, MANIFEST, digest, entries_of
from .interop.conftest import canonical, checkpoints, source_order

BUNDLES = entries_of("tf-bundle")
# written whole (partitioned) or into one data file (sharded): same tensors, different bytes
REARRANGED = {"tf1_partitioned/model.ckpt-1", "tf1_partitioned/model.ckpt-200", "tf2_mixed/sharded/ckpt"}


def _rewrite(rel: str, out: Path) -> str:
    prefix = str(out / "ckpt")
    with formats.open_checkpoint(CORPUS / rel) as ckpt:
        report = formats.write_checkpoint(prefix, [(k, ckpt[k]) for k in source_order(ckpt)])
    assert report.roundtrip is not None and report.roundtrip.ok
    return prefix


@pytest.mark.parametrize("rel", BUNDLES)
def test_rewritten_corpus_bundle_reads_back_identical(rel, tmp_path):
    prefix = _rewrite(rel, tmp_path)
    expected = MANIFEST[rel]["tensors"]
    with formats.open_checkpoint(prefix) as ckpt:
        assert sorted(ckpt) == sorted(expected)
        for key, want in expected.items():
            assert (list(ckpt[key].shape), ckpt[key].dtype) == (want["shape"], want["dtype"]), key
            if want["sha256"] is not None:
                assert digest(ckpt[key].read()) == want["sha256"], key
        with formats.open_checkpoint(CORPUS / rel) as src:
            assert compare_checkpoints(ckpt, src).ok


@pytest.mark.parametrize("rel", BUNDLES)
def test_rewritten_corpus_bundle_is_byte_identical(rel, tmp_path):
    prefix = _rewrite(rel, tmp_path)
    index_same = Path(prefix + ".index").read_bytes() == (CORPUS / (rel + ".index")).read_bytes()
    data = CORPUS / (rel + ".data-00000-of-00001")
    data_same = data.exists() and Path(prefix + ".data-00000-of-00001").read_bytes() == data.read_bytes()
    assert (index_same and data_same) == (rel not in REARRANGED)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tensors=checkpoints(variants=True))
def test_hypothesis_write_read_round_trip(tensors, tmp_path_factory):
    prefix = str(tmp_path_factory.mktemp("rt") / "ckpt")
    report = formats.write_checkpoint(prefix, tensors)
    assert report.tensors == len(tensors) and report.roundtrip.ok
    with formats.open_checkpoint(prefix) as ckpt:
        assert sorted(ckpt) == sorted(tensors)
        for key, value in tensors.items():
            dtype, shape, content = canonical(value)
            entry = ckpt[key]
            assert (entry.dtype, entry.shape) == (dtype, shape), key
            got = entry.read()
            assert (list(got.reshape(-1)) if got.dtype == object else got.tobytes()) == content, key


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tensors=checkpoints(max_size=4))
def test_hypothesis_copy_of_a_copy_is_byte_identical(tensors, tmp_path_factory):
    folder = tmp_path_factory.mktemp("cc")
    formats.write_checkpoint(folder / "a", tensors)
    with formats.open_checkpoint(folder / "a") as first:
        formats.write_checkpoint(folder / "b", [(k, first[k]) for k in source_order(first)])
    for suffix in (".index", ".data-00000-of-00001"):
        assert (folder / ("b" + suffix)).read_bytes() == (folder / ("a" + suffix)).read_bytes()


@pytest.mark.parametrize("rel", ["keras3_tagger/tagger.weights.h5", "keras2_tagger/tagger_weights.h5"])
def test_keras_weights_written_as_a_bundle(rel, tmp_path):
    with formats.open_checkpoint(CORPUS / rel) as src:
        report = formats.write_checkpoint(tmp_path / "ckpt", src, inputs=[src])
        assert report.roundtrip.ok and report.tensors == len(src)
        with formats.open_checkpoint(tmp_path / "ckpt") as out:
            assert compare_checkpoints(out, src).ok
            assert {k: (e.dtype, e.shape) for k, e in out.items()} == {k: (e.dtype, e.shape) for k, e in src.items()}
