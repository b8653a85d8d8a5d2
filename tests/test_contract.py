"""The contract, checked the same way for every registered format on every corpus file it reads.

Each case opens a corpus path as a user would type it and checks what the contract promises
(formats/core/model.py): metadata equal to what TensorFlow/h5py saw (the manifests), ``read()`` equal
to the recorded digests, chunked reading, byte streams and slices equal to the whole value, no
problems on files TensorFlow wrote, and TensorFlow meaning that is internally consistent. A new
format gets these checks by having its corpus family in a manifest.
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

import formats
from formats.core import registry
from formats.core.model import Role
from formats.discover.resolve import claim, resolve

from .conftest import CORPUS, digest

# manifest "format" -> the registry format that must claim the path
REGISTERED = {"tf-bundle": "tf-bundle", "hdf5": "keras-h5", "tf-v1": "tf-v1", "saved-model": "saved-model",
              "keras3-dir": "keras3-dir", "keras3-sharded": "keras3-sharded"}


def _manifest_entries() -> list[tuple[str, dict[str, Any]]]:
    entries: dict[str, Any] = {}
    for name in ("manifest.json", "manifest_more.json"):
        path = CORPUS / name
        if path.exists():
            entries.update(json.loads(path.read_text())["entries"])
    return sorted((k, v) for k, v in entries.items() if v["format"] in REGISTERED)


CASES = [pytest.param(rel, spec, id=rel) for rel, spec in _manifest_entries()
         if (CORPUS / rel).exists() or any(CORPUS.glob(rel + "*"))]


def _visible(spec: dict[str, Any]) -> dict[str, Any]:
    """The manifest's tensors as our keys (TF lists every key; h5py paths are our HDF5 keys)."""
    return spec["tensors"]


@pytest.mark.parametrize("rel,spec", CASES)
def test_metadata_and_values(rel: str, spec: dict[str, Any]) -> None:
    with formats.open_checkpoint(CORPUS / rel) as ckpt:
        expected = _visible(spec)
        assert sorted(ckpt) == sorted(expected)
        for key, want in expected.items():
            entry = ckpt[key]
            assert list(entry.shape) == want["shape"], key
            assert _dtype_matches(entry.dtype, want["dtype"]), (key, entry.dtype, want["dtype"])
            if want.get("sha256"):
                value = entry.read()
                # manifest_more digests scalar strings as numpy holds them (trailing NULs dropped)
                stripped = np.array([x.rstrip(b"\0") for x in value.reshape(-1)], dtype=object) \
                    if entry.dtype == "string" else value
                assert want["sha256"] in (digest(value), digest(stripped)), key


def _dtype_matches(ours: str, theirs: str) -> bool:
    aliases = {"object": "string", "|S": "string", "bool": "bool"}
    return ours == theirs or aliases.get(theirs) == ours or (theirs.startswith(("|S", "object")) and ours == "string")


@pytest.mark.parametrize("rel,spec", CASES)
def test_chunks_bytes_and_slices_equal_the_whole(rel: str, spec: dict[str, Any]) -> None:
    with formats.open_checkpoint(CORPUS / rel) as ckpt:
        for key, entry in ckpt.items():
            if spec["tensors"].get(key, {}).get("sha256") is None and key in spec["tensors"]:
                continue  # DT_VARIANT: TensorFlow itself returns no value
            whole = entry.read()
            chunks = list(entry.iter_chunks(7))
            flat = np.concatenate(chunks) if chunks else whole.reshape(-1)[:0]
            assert _same(flat, whole.reshape(-1)), key
            assert all(c.size <= 7 for c in chunks), key
            assert _same(entry.read_slice(None), whole), key
            if whole.ndim:
                assert _same(entry.read_slice((slice(0, 1),)), whole[0:1]), key
            if whole.dtype != object:
                data = b"".join(bytes(c) for c in entry.byte_chunks(5))
                assert data == np.ascontiguousarray(whole).astype(whole.dtype.newbyteorder("<")).tobytes(), key


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype == object or b.dtype == object:
        return a.shape == b.shape and list(a.reshape(-1)) == list(b.reshape(-1))
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("rel,spec", CASES)
def test_no_problems_in_what_tensorflow_wrote(rel: str, spec: dict[str, Any]) -> None:
    with formats.open_checkpoint(CORPUS / rel) as ckpt:
        assert ckpt.problems() == []
        for entry in ckpt.values():
            assert entry.problem() is None, entry.key
            entry.check()
        assert all(isinstance(f, str) for f in ckpt.files) and ckpt.files


@pytest.mark.parametrize("rel,spec", CASES)
def test_names_and_roles_are_consistent(rel: str, spec: dict[str, Any]) -> None:
    roles = {r.value for r in Role}
    with formats.open_checkpoint(CORPUS / rel) as ckpt:
        for key, entry in ckpt.items():
            assert str(entry.role) in roles, (key, entry.role)
            assert isinstance(entry.name, str) and entry.name, key
            if entry.role == Role.SLOT:
                assert entry.slot_of in ckpt, (key, entry.slot_of)
                assert entry.slot_name, key
            else:
                assert entry.slot_of is None, key


@pytest.mark.parametrize("rel,spec", CASES)
def test_the_registered_format_claims_the_path(rel: str, spec: dict[str, Any]) -> None:
    target = resolve(CORPUS / rel)
    assert target.kind == REGISTERED[spec["format"]]
    fmt = registry.get_format(target.kind)
    assert fmt.name == target.kind
    if not (CORPUS / rel).is_dir():
        assert claim(str(CORPUS / rel)) == target
