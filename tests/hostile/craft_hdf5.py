"""Hostile HDF5 files and ``.keras`` archives, made with h5py and then patched byte by byte.

Each maker writes into a directory and returns the path. They reproduce what a fuzzer found:
libhdf5 crashing (a chunk inflating to less than its size), looping forever (zeroed global-heap
objects behind a string attribute), and small files declaring (or inflating to) gigabytes.
"""
from __future__ import annotations

import json
import struct
import zipfile
import zlib
from pathlib import Path

import h5py
import numpy as np

from ..conftest import CORPUS

K3_ZIP = CORPUS / "keras3_tagger/tagger.keras"
K2_WEIGHTS = CORPUS / "keras2_tagger/tagger_weights.h5"
K2_MODEL = CORPUS / "keras2_tagger/tagger_model.h5"
MiB = 1 << 20


def short_chunk(directory: Path, elements: int = 100_000) -> Path:
    """A gzip-chunked float32 dataset ``w`` whose one stored chunk inflates to a single byte instead of
    the chunk's 400,000: libhdf5 (h5py ``f["w"][()]``) dies with SIGSEGV reading it."""
    path = directory / "short_chunk.h5"
    with h5py.File(path, "w") as f:
        ds = f.create_dataset("w", shape=(elements,), dtype="f4", chunks=(elements,), compression="gzip")
        ds.id.write_direct_chunk((0,), zlib.compress(np.ones(elements, "f4").tobytes()))
        f.create_dataset("ok", data=np.arange(4, dtype="f4"))
        info = ds.id.get_chunk_info(0)
    data = bytearray(path.read_bytes())
    small = zlib.compress(b"\x01", 9)
    data[info.byte_offset:info.byte_offset + info.size] = small.ljust(info.size, b"\x00")
    path.write_bytes(bytes(data))
    return path


def zeroed_heap(directory: Path) -> Path:
    """A Keras 2 weights file whose ``layer_names`` is a variable-length string attribute (as tf-keras
    writes it) with its global-heap objects zeroed: libhdf5 loops forever reading the attribute."""
    path = directory / "zeroed_heap.h5"
    with h5py.File(path, "w") as f:
        f.attrs["layer_names"] = np.array(["dense"], dtype=h5py.string_dtype())
        group = f.create_group("dense")
        group.attrs["weight_names"] = [b"dense/kernel:0"]
        group.create_dataset("dense/kernel:0", data=np.ones((2, 2), "f4"))
    data = bytearray(path.read_bytes())
    at = data.index(b"GCOL")
    (size,) = struct.unpack_from("<Q", data, at + 8)
    data[at + 16:at + size] = bytes(size - 16)
    path.write_bytes(bytes(data))
    return path


def gzip_bomb(directory: Path, total: int = 1 << 30, chunk: int = 4 * MiB) -> Path:
    """A small file (about ``total / 1000`` bytes) holding a float32 dataset ``zeros`` of ``total`` bytes,
    every gzip chunk a valid stream of ``chunk`` zero bytes, plus a small dataset ``small``."""
    path = directory / "gzip_bomb.h5"
    elements, per_chunk = total // 4, chunk // 4
    stream = zlib.compress(bytes(chunk), 9)
    with h5py.File(path, "w") as f:
        ds = f.create_dataset("zeros", shape=(elements // 1024, 1024), dtype="f4", chunks=(per_chunk // 1024, 1024),
                              compression="gzip")
        for row in range(0, elements // 1024, per_chunk // 1024):
            ds.id.write_direct_chunk((row, 0), stream)
        f.create_dataset("small", data=np.arange(6, dtype="f4").reshape(2, 3))
    return path


def unwritten_strings(directory: Path, elements: int = 200_000_000) -> Path:
    """A 1-2 KB file declaring a chunked variable-length string dataset of ``elements`` never written."""
    path = directory / "unwritten_strings.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("s", shape=(elements,), dtype=h5py.string_dtype(), chunks=(1 << 20,))
        f.create_dataset("ok", data=np.arange(3, dtype="i4"))
    return path


def duplicate_layer(directory: Path) -> Path:
    """A Keras 2 weights file whose ``layer_names`` lists one layer twice."""
    path = directory / "duplicate_layer.h5"
    path.write_bytes(K2_WEIGHTS.read_bytes())
    with h5py.File(path, "a") as f:
        names = list(f.attrs["layer_names"])
        f.attrs["layer_names"] = names + [names[1]]
    return path


def nested_model_config(directory: Path, depth: int = 100_000) -> Path:
    """A Keras 2 full-model file whose ``model_config`` attribute nests ``depth`` lists."""
    path = directory / "nested_model.h5"
    path.write_bytes(K2_MODEL.read_bytes())
    with h5py.File(path, "a") as f:
        f.attrs["model_config"] = ("[" * depth + "]" * depth).encode()
    return path


# -- .keras archives -------------------------------------------------------------------------------
def _members(config: bytes | None = None) -> dict[str, bytes]:
    with zipfile.ZipFile(K3_ZIP) as zf:
        members = {info.filename: zf.read(info) for info in zf.infolist()}
    if config is not None:
        members["config.json"] = config
    return members


def keras_archive(directory: Path, name: str, config: bytes | None = None) -> Path:
    """The corpus ``.keras`` with another ``config.json`` (stored members, as Keras writes them)."""
    path = directory / name
    with zipfile.ZipFile(path, "w") as zf:
        for member, data in _members(config).items():
            zf.writestr(member, data)
    return path


def nested_config(directory: Path, depth: int = 100_000) -> Path:
    """A ``.keras`` whose ``config.json`` nests ``depth`` objects."""
    return keras_archive(directory, "nested.keras", ('{"a":' * depth + "1" + "}" * depth).encode())


CONFUSED_CONFIGS = {
    "config_is_a_list": lambda c: {**c, "config": [1, 2]},
    "layer_config_is_text": lambda c: {**c, "config": {**c["config"], "layers": [{"config": "oops"}]}},
    "optimizer_config_is_a_list": lambda c: {**c, "compile_config": {"optimizer": {"class_name": "Adam",
                                                                                   "config": [1]}}},
    "momentum_is_text": lambda c: {**c, "compile_config": {"optimizer": {"class_name": "SGD",
                                                                         "config": {"momentum": "big"}}}},
    "layer_name_is_a_list": lambda c: {**c, "config": {"layers": [{"class_name": "Dense", "config": {"name": [1]}}]}},
    "config_is_text": lambda c: "just text",
    "compile_config_is_a_number": lambda c: {**c, "compile_config": 3},
}
"""Type-confused ``config.json`` variants: name -> change to the real config."""


def confused_config(directory: Path, variant: str) -> Path:
    """A ``.keras`` whose ``config.json`` has values of unexpected JSON types (see :data:`CONFUSED_CONFIGS`)."""
    config = json.loads(_members()["config.json"])
    return keras_archive(directory, f"{variant}.keras", json.dumps(CONFUSED_CONFIGS[variant](config)).encode())


def stored_said_deflated(directory: Path) -> Path:
    """A ``.keras`` whose central directory says ``model.weights.h5`` is deflated although it is stored."""
    path = keras_archive(directory, "said_deflated.keras")
    data = bytearray(path.read_bytes())
    at = data.index(b"PK\x01\x02")
    while at >= 0:
        name_len = int.from_bytes(data[at + 28:at + 30], "little")
        if data[at + 46:at + 46 + name_len] == b"model.weights.h5":
            data[at + 10:at + 12] = (zipfile.ZIP_DEFLATED).to_bytes(2, "little")
        at = data.find(b"PK\x01\x02", at + 4)
    path.write_bytes(bytes(data))
    return path


def _raw_zip(path: Path, members: list[tuple[str, int, bytes, int, int]]) -> None:
    """A zip of ``(name, method, stored bytes, crc32, uncompressed size)`` members, written as given."""
    out, central = bytearray(), bytearray()
    for name, method, data, crc, size in members:
        raw = name.encode()
        offset = len(out)
        fields = struct.pack("<HHHHHIII", 20, 0, method, 0, 0x21, crc, len(data), size)
        out += b"PK\x03\x04" + fields + struct.pack("<HH", len(raw), 0) + raw + data
        central += (b"PK\x01\x02" + struct.pack("<H", 20) + fields
                    + struct.pack("<HHHHHII", len(raw), 0, 0, 0, 0, 0, offset) + raw)
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(members), len(members), len(central), len(out), 0)
    path.write_bytes(bytes(out + central + end))


def keras_bomb(directory: Path, total: int = 1 << 30) -> Path:
    """A ``.keras`` of about ``total / 1000`` bytes whose deflated ``model.weights.h5`` (a Keras 3 file with
    one float32 variable of ``total`` bytes, all zeros) inflates to a little more than ``total``."""
    h5 = directory / "bomb_member.h5"
    with h5py.File(h5, "w") as f:
        group = f.create_group("layers/dense/vars")
        group.attrs["name"] = "dense"
        space = h5py.h5s.create_simple((total // 4,))
        plist = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        plist.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
        plist.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
        dsid = h5py.h5d.create(group.id, b"0", h5py.h5t.IEEE_F32LE, space, dcpl=plist)
        offset = dsid.get_offset()
    size = h5.stat().st_size
    with open(h5, "rb") as f:
        head = f.read(offset)
        f.seek(offset + total)
        tail = f.read()
    h5.unlink()
    assert offset + total + len(tail) == size
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    stream = bytearray(compressor.compress(head) + compressor.flush(zlib.Z_FULL_FLUSH))
    zeros = compressor.compress(bytes(MiB)) + compressor.flush(zlib.Z_FULL_FLUSH)  # history reset: repeatable
    crc = zlib.crc32(head)
    zero_crc = bytes(MiB)
    for _ in range(total // MiB):
        stream += zeros
        crc = zlib.crc32(zero_crc, crc)
    stream += compressor.compress(tail) + compressor.flush()
    crc = zlib.crc32(tail, crc)
    members = [(n, 0, d, zlib.crc32(d), len(d)) for n, d in _members().items() if n != "model.weights.h5"]
    members.append(("model.weights.h5", zipfile.ZIP_DEFLATED, bytes(stream), crc, size))
    path = directory / "bomb.keras"
    _raw_zip(path, members)
    return path
