"""ckpt reads HDF5 values itself (contiguous, compact, deflate/shuffle chunks) and through libhdf5 in an
isolated child otherwise: every path agrees with h5py, streams in bounded blocks, and reports damage."""
from __future__ import annotations

import zlib

import h5py
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import formats
from formats.core.errors import CorruptCheckpointError, UsageError
from formats.io import sandbox
from formats.keras_h5 import storage

rng = np.random.default_rng(11)
LAYOUTS = {
    "contiguous": {},
    "gzip": {"chunks": (7, 5), "compression": "gzip"},
    "shuffle": {"chunks": (4, 9), "shuffle": True},
    "gzip_shuffle": {"chunks": (16, 3), "compression": "gzip", "shuffle": True, "compression_opts": 9},
    "one_chunk_larger_than_data": {"chunks": (64, 64), "compression": "gzip", "maxshape": (None, None)},
    "lzf": {"chunks": (5, 5), "compression": "lzf"},            # not decoded by ckpt: read isolated
    "fletcher32": {"chunks": (5, 5), "fletcher32": True},        # not decoded by ckpt: read isolated
    "scaleoffset": {"chunks": (5, 5), "scaleoffset": 0},         # integers only
}
DTYPES = ["<f4", ">f8", "<i8", ">i2", "u1", "bool", "<c8", "<f2"]


def _entry_values(path, key):
    with formats.open_checkpoint(path) as ckpt:
        entry = ckpt[key]
        whole = entry.read()
        chunks = np.concatenate(list(entry.iter_chunks(13))) if entry.size else np.empty(0, whole.dtype)
        raw = b"".join(bytes(b) for b in entry.byte_chunks(100))
        entry.check()
        native = storage.native(entry._info)
    return whole, chunks, raw, native


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_layout_and_type_reads_as_h5py_does(tmp_path, layout, dtype):
    options = dict(LAYOUTS[layout])
    if layout == "scaleoffset" and (np.dtype(dtype).kind not in "iu" or np.dtype(dtype).itemsize == 1):
        pytest.skip("scale-offset here is for integers (h5py cannot read it back for one-byte ones)")
    value = (rng.standard_normal((23, 17)) * 50).astype(dtype)
    path = tmp_path / "v.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("v", data=value, **options)
    with h5py.File(path, "r") as f:
        expected = f["v"][()]
    whole, chunks, raw, native = _entry_values(path, "v")
    assert whole.dtype == expected.dtype and whole.shape == expected.shape
    np.testing.assert_array_equal(whole, expected)
    np.testing.assert_array_equal(chunks, expected.reshape(-1))
    assert raw == expected.astype(expected.dtype.newbyteorder("<")).tobytes()
    assert native == (layout not in ("lzf", "fletcher32", "scaleoffset"))


def test_unwritten_chunks_and_space_read_as_the_fill_value(tmp_path):
    path = tmp_path / "fill.h5"
    with h5py.File(path, "w") as f:
        ds = f.create_dataset("partly", shape=(10, 6), dtype="<i4", chunks=(4, 4), fillvalue=-7, compression="gzip")
        ds[4:8, 0:4] = np.arange(16).reshape(4, 4)
        f.create_dataset("never", shape=(3, 2), dtype="<f8", fillvalue=2.5)
    with h5py.File(path, "r") as f:
        expected = {k: f[k][()] for k in f}
    with formats.open_checkpoint(path) as ckpt:
        for key, want in expected.items():
            np.testing.assert_array_equal(ckpt[key].read(), want)
            np.testing.assert_array_equal(ckpt[key].read_slice((slice(2, 9, 3),)), want[2:9:3])


@pytest.mark.parametrize("index", [
    (5,), (-1,), (slice(None, None, -1),), (slice(20, 2, -4),), (slice(3, 3),), (slice(-5, None), 2),
    (slice(None), slice(1, 4)), (Ellipsis, 0), (np.int64(7), slice(None, None, 2)), (slice(30, 40),),
])
def test_read_slice_reads_only_the_rows_it_needs_and_agrees_with_numpy(tmp_path, index, monkeypatch):
    value = np.arange(23 * 17, dtype="<f4").reshape(23, 17)
    path = tmp_path / "s.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("v", data=value, chunks=(4, 8), compression="gzip")
    rows: list[tuple[int, int]] = []
    real = storage.read_rows
    monkeypatch.setattr(storage, "read_rows", lambda image, info, a, b, n: rows.append((a, b)) or real(image, info, a, b, n))
    with formats.open_checkpoint(path) as ckpt:
        np.testing.assert_array_equal(ckpt["v"].read_slice(index), value[index])
    if index[0] is not Ellipsis:
        wanted = np.arange(23)[index[0]]
        assert sum(b - a for a, b in rows) == (np.ptp(wanted) + 1 if np.size(wanted) else 0)


def test_a_bad_slice_is_a_usage_error_naming_the_tensor(tmp_path):
    path = tmp_path / "s.h5"
    with h5py.File(path, "w") as f:
        f["v"] = np.zeros((3, 2), "f4")
    with formats.open_checkpoint(path) as ckpt, pytest.raises(UsageError, match="bad slice for shape"):
        ckpt["v"].read_slice((7,))


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(1, 9), min_size=1, max_size=3), data=st.data())
def test_random_shapes_and_chunks_round_trip(tmp_path_factory, shape, data):
    chunks = tuple(data.draw(st.integers(1, d + 2)) for d in shape)
    gzip = data.draw(st.booleans())
    value = np.arange(np.prod(shape), dtype="<i4").reshape(shape)
    path = tmp_path_factory.mktemp("h") / "r.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("v", data=value, chunks=chunks, compression="gzip" if gzip else None, shuffle=not gzip,
                         maxshape=(None,) * len(shape))
    whole, flat, _, native = _entry_values(path, "v")
    assert native
    np.testing.assert_array_equal(whole, value)
    np.testing.assert_array_equal(flat, value.reshape(-1))


def _patched_chunk(tmp_path, payload: bytes, name="c.h5"):
    path = tmp_path / name
    with h5py.File(path, "w") as f:
        ds = f.create_dataset("w", shape=(1000,), dtype="<f4", chunks=(1000,), compression="gzip")
        ds.id.write_direct_chunk((0,), payload)
    return path


@pytest.mark.parametrize("payload,message", [
    (zlib.compress(b"\x01" * 10), "chunk at offset [0] inflates to 10 bytes, the chunk size is 4,000"),
    (zlib.compress(b"\x01" * 5000), "chunk at offset [0] inflates to more than the chunk size (4,000 bytes)"),
    (zlib.compress(b"\x00" * 4000)[:20], "chunk at offset [0]: its deflate stream is truncated"),
    (b"not a deflate stream at all", "chunk at offset [0] does not inflate"),
])
def test_damaged_chunks_are_one_line_errors(tmp_path, payload, message):
    path = _patched_chunk(tmp_path, payload)
    with formats.open_checkpoint(path) as ckpt:
        for use in (lambda e: e.read(), lambda e: list(e.iter_chunks()), lambda e: e.check(),
                    lambda e: e.read_slice((slice(0, 2),))):
            with pytest.raises(CorruptCheckpointError) as info:
                use(ckpt["w"])
            assert message in info.value.message and str(path) == info.value.path


def test_chunk_claiming_to_lie_beyond_the_file(tmp_path):
    path = _patched_chunk(tmp_path, zlib.compress(bytes(4000)))
    with h5py.File(path, "r") as f:
        info = f["w"].id.get_chunk_info(0)
    data = bytearray(path.read_bytes())
    path.write_bytes(bytes(data[:info.byte_offset + 5]))  # the chunk's bytes cut off
    with pytest.raises(CorruptCheckpointError):
        with formats.open_checkpoint(path) as ckpt:
            ckpt["w"].read()


def test_variable_length_strings_are_read_isolated(tmp_path):
    words = [b"alpha", b"", "\u00e9t\u00e9".encode(), b"\xffraw"]
    path = tmp_path / "s.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("words", data=np.array(words, dtype=object).reshape(2, 2), dtype=h5py.string_dtype("ascii"))
        f.create_dataset("one", data="scalar text", dtype=h5py.string_dtype())
        f.create_dataset("fixed", data=np.array([b"ab", b"c"], dtype="S2"))
    with formats.open_checkpoint(path) as ckpt:
        assert ckpt["words"].read().tolist() == [[b"alpha", b""], ["\u00e9t\u00e9".encode(), b"\xffraw"]]
        assert ckpt["one"].read()[()] == b"scalar text"
        assert ckpt["fixed"].read().tolist() == [b"ab", b"c"]
        assert [list(c) for c in ckpt["words"].iter_chunks(3)] == [[b"alpha", b"", "\u00e9t\u00e9".encode()],
                                                                   [b"\xffraw"]]


def test_the_isolated_reader_crashing_is_a_one_line_error(tmp_path, monkeypatch):
    import ctypes

    path = tmp_path / "w.h5"
    with h5py.File(path, "w") as f:
        f["v"] = np.zeros(3, "f4")
    from formats.keras_h5 import probe

    monkeypatch.setattr(probe, "describe_file", lambda *a: ctypes.string_at(0))
    with pytest.raises(CorruptCheckpointError) as info:
        formats.open_checkpoint(path)
    assert info.value.message == "reading the HDF5 structure: the reader crashed (SIGSEGV) on this file: damaged or " \
                                 "hostile content"


def test_the_isolated_reader_stalling_is_stopped(tmp_path, monkeypatch):
    import time

    path = tmp_path / "w.h5"
    with h5py.File(path, "w") as f:
        f["v"] = np.zeros(3, "f4")
    from formats.keras_h5 import probe

    monkeypatch.setattr(probe, "describe_file", lambda *a: time.sleep(60))
    monkeypatch.setattr(sandbox, "STALL_SECONDS", 0.5)
    with pytest.raises(CorruptCheckpointError, match=r"no progress for 0.5 s; stopped \(damaged file\?\)"):
        formats.open_checkpoint(path)


def test_the_isolated_reader_running_out_of_memory(tmp_path, monkeypatch):
    path = tmp_path / "w.h5"
    with h5py.File(path, "w") as f:
        f["v"] = np.zeros(3, "f4")
    from formats.keras_h5 import image, probe

    monkeypatch.setattr(probe, "describe_file", lambda *a: bytes(bytearray(1 << 30)))
    monkeypatch.setattr(image, "MEMORY", 64 << 20)
    with pytest.raises(CorruptCheckpointError, match="reading the HDF5 structure needs more than"):
        formats.open_checkpoint(path)


def test_never_written_rows_cost_no_work_per_chunk(tmp_path):
    """2^26 one-row chunks of which two are written: streamed as fill in large blocks, not chunk by chunk."""
    path = tmp_path / "sparse.h5"
    with h5py.File(path, "w") as f:
        ds = f.create_dataset("v", shape=(1 << 26,), dtype="u1", chunks=(1,), fillvalue=3, compression="gzip")
        ds[5] = 9
        ds[(1 << 26) - 1] = 8
        f.create_dataset("empty_rows", shape=(1 << 40, 0), dtype="f4")
    with formats.open_checkpoint(path) as ckpt:
        sizes = [c.size for c in ckpt["v"].iter_chunks(1 << 24)]
        assert sum(sizes) == 1 << 26 and len(sizes) < 10
        value = ckpt["v"].read()
        assert ckpt["empty_rows"].read().shape == (1 << 40, 0)
        assert list(ckpt["empty_rows"].iter_chunks()) == []
    assert value[5] == 9 and value[-1] == 8 and value[4] == 3 and int(value.sum()) == 3 * ((1 << 26) - 2) + 17
