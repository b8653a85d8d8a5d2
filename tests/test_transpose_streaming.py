"""Issue 37 #6: ``convert --to hf`` streams its transposed kernels at the speed of a copy, and still proves them.

- :func:`formats.core.transpose.transpose_rows` (two passes, 16-byte groups) gives, byte for byte, the rows of
  numpy's own ``ascontiguousarray(a.T)``: odd shapes, partial row ranges, every item size the converter meets
  (bfloat16, float16, float32, float64, int8, complex128), NaN payloads, rows that are a view of a wider array;
- :func:`formats.core.transpose.moved_positions` (the read-back's index arithmetic) against numpy moving an
  ``arange``: transposes, permutations, reshapes;
- :class:`MappedEntry` computed into reused chunk buffers (``fill_chunks``, as :mod:`formats.io.placed` writes
  it on two threads) and streamed (``iter_chunks``) equals numpy's ``transpose``/``astype`` of the value: 1-D,
  2-D, conv1d 3-D, conv2d 4-D, ``permute:0,2,1``, a transpose with a cast to bfloat16, a reshape;
- a wrong transpose injected into the writer is caught by the read-back's spot check, which names the tensor,
  and nothing takes the output's name (the CLI: exit code 4, one line); a writing thread's error reaches the
  caller without leaving it waiting for a buffer.
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from formats.core.model import TensorEntry
from formats.core.transpose import moved_positions, transpose_rows
from formats.io import placed
from formats.io.chunk_buffers import ChunkBuffers
from formats.ops.convert.hf import entries as hf_entries
from formats.ops.convert.hf.entries import MappedEntry

HF_H5 = Path(__file__).resolve().parent / "data" / "hf_h5"
NP = {"float32": np.float32, "bfloat16": ml_dtypes.bfloat16, "float16": np.float16, "float64": np.float64,
      "int8": np.int8, "complex128": np.complex128}


class ArrayEntry(TensorEntry):
    """An in-memory stored tensor."""

    __slots__ = ("value",)

    def __init__(self, key: str, dtype: str, value: np.ndarray) -> None:
        super().__init__(key, tuple(value.shape), dtype, value.nbytes)
        self.value = value

    def read(self) -> np.ndarray:
        return self.value


def _random(shape: tuple[int, ...], dtype: str, seed: int = 0) -> np.ndarray:
    """Random bytes as ``dtype`` (every bit pattern: NaNs with payloads, negative zeros, subnormals)."""
    size = int(np.prod(shape)) * np.dtype(NP[dtype]).itemsize
    raw = np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8)
    return raw.view(NP[dtype]).reshape(shape)


@pytest.mark.parametrize("dtype", sorted(NP))
@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (2, 70001), (7, 18573), (1000, 1001), (4099, 1027), (1024, 256)])
def test_transpose_rows_is_numpys_transpose_byte_for_byte(shape: tuple[int, int], dtype: str) -> None:
    a = _random(shape, dtype, seed=shape[0])
    want = np.ascontiguousarray(a.T)
    rows = shape[1]
    for start, stop in {(0, rows), (1, max(1, rows - 1)), (rows // 3, rows // 3 + 1), (5 % rows, min(rows, 700))}:
        out = np.empty((stop - start, shape[0]), dtype=a.dtype)
        transpose_rows(a, start, stop, out, np.empty(1 << 20, np.uint8))
        assert out.tobytes() == want[start:stop].tobytes(), (start, stop)


def test_transpose_rows_of_views_and_a_small_scratch() -> None:
    wide = _random((600, 2051), "float32", seed=3)
    for a in (wide[:, 3:1027], wide[::2, :1024], wide[:, ::2]):  # rows a view of wider ones; strided columns
        out = np.empty(a.shape[::-1], dtype=a.dtype)
        transpose_rows(a, 0, a.shape[1], out, np.empty(64, np.uint8))  # a scratch too small: one of its own
        assert out.tobytes() == np.ascontiguousarray(a.T).tobytes()


@pytest.mark.parametrize("shape, steps, final", [
    ((3, 4), [("axes", (1, 0))], (4, 3)),
    ((2, 3, 5), [("axes", (2, 1, 0))], (5, 3, 2)),
    ((2, 3, 4, 5), [("axes", (3, 2, 0, 1))], (5, 4, 2, 3)),
    ((4, 6, 5), [("axes", (0, 2, 1))], (4, 5, 6)),
    ((6, 10), [("reshape", (6, 2, 5)), ("axes", (2, 1, 0))], (5, 2, 6)),
    ((6, 10), [("axes", (1, 0)), ("reshape", (2, 5, 6))], (10, 6)),
])
def test_moved_positions_is_where_numpy_moves_each_element(shape: tuple[int, ...], steps: list, final: tuple) -> None:
    value = np.arange(int(np.prod(shape))).reshape(shape)
    moved = value
    for kind, arg in steps:
        moved = moved.reshape(arg) if kind == "reshape" else moved.transpose(arg)
    moved = moved.reshape(final).reshape(-1)
    where = np.empty_like(moved)
    where[moved] = np.arange(moved.size)  # the output position of each input element
    index = np.unravel_index(np.arange(value.size), shape)
    assert moved_positions(shape, steps, index, final).tolist() == where.tolist()


CASES = [  # (stored shape, stored dtype, ops, output dtype, numpy's oracle)
    ((4096,), "float32", ("transpose",), "float32", lambda v: v),
    ((37, 1029), "float32", ("transpose",), "float32", lambda v: v.T),
    ((1024, 3000), "float32", ("transpose",), "float32", lambda v: v.T),
    ((515, 77), "bfloat16", ("transpose",), "bfloat16", lambda v: v.T),
    ((300, 129), "float32", ("transpose",), "bfloat16", lambda v: v.T.astype(ml_dtypes.bfloat16)),
    ((3, 64, 96), "float32", ("transpose",), "float32", lambda v: v.transpose(2, 1, 0)),
    ((3, 5, 16, 24), "float16", ("conv2d",), "float16", lambda v: v.transpose(3, 2, 0, 1)),
    ((8, 40, 12), "float32", ("permute:0,2,1",), "float32", lambda v: v.transpose(0, 2, 1)),
    ((64, 96), "float64", ("reshape", "transpose"), "float64", lambda v: v.reshape(64, 8, 12).transpose(2, 1, 0)),
]


def _mapped(case: tuple, key: str = "k") -> tuple[MappedEntry, np.ndarray]:
    shape, dtype, ops, out_dtype, oracle = case
    value = _random(shape, dtype, seed=len(shape))
    if dtype != out_dtype:  # values a cast keeps finite: random bits would make NaNs whose payloads casts may drop
        value = np.random.default_rng(1).standard_normal(shape).astype(NP[dtype])
    want = np.ascontiguousarray(oracle(value))
    return MappedEntry(ArrayEntry(key, dtype, value), key, tuple(want.shape), out_dtype, ops), want


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}-{'+'.join(c[2])}-{c[3]}")
def test_a_mapped_tensor_computed_into_chunk_buffers_and_streamed_is_numpys(case: tuple) -> None:
    entry, want = _mapped(case)
    buffers = ChunkBuffers(2, 64 << 10)  # small chunks: many blocks of rows, buffers reused
    filled = entry.fill_chunks(buffers)
    if not entry.transposes:
        assert filled is None  # nothing moves: the stored bytes stream as they are
    else:
        assert filled is not None
        got = bytearray()
        for buffer, n in filled:
            got += buffer[:n]
            buffers.give(buffer)
        assert bytes(got) == want.tobytes()
    streamed = b"".join(bytes(p) for p in entry.byte_chunks(48 << 10))
    assert streamed == want.tobytes()
    assert entry.read().tobytes() == want.tobytes()


def _write(tmp_path: Path, items: list[placed.Placed], chunk: int) -> str:
    path = str(tmp_path / "out.bin")
    with open(path, "wb") as out:
        placed.write_placed(out, items, chunk)
    return path


def _items(cases: list[tuple]) -> tuple[list[placed.Placed], bytes]:
    items, offset, data = [], 0, b""
    for n, case in enumerate(cases):
        entry, want = _mapped(case, key=f"t{n}")
        items.append(placed.Placed(entry.key, entry, offset, want.nbytes, entry.dtype))
        offset += want.nbytes
        data += want.tobytes()
    return items, data


def test_write_placed_on_two_threads_writes_numpys_bytes_and_reads_back_clean(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(placed, "PIPELINE_BYTES", 1)  # the two-thread path, with three buffers of 16 KiB
    sent: list[int] = []
    real = placed.os.sendfile
    monkeypatch.setattr(placed.os, "sendfile", lambda *a: sent.append(a[3]) or real(*a))
    items, data = _items(CASES)
    path = _write(tmp_path, items, 16 << 10)
    assert Path(path).read_bytes() == data
    assert placed.check_placed(path, items) == []
    if hasattr(os, "memfd_create"):  # the computed chunks went to the file by the kernel's copy
        moved = sum(item.size for item in items if item.source.transposes)
        assert sum(sent) == moved and max(sent) == 16 << 10


def _wrong_transpose(a: np.ndarray, start: int, stop: int, out: np.ndarray, scratch: object = None) -> None:
    """A transpose that swaps two rows of each block it computes (as an off-by-one in a tile's place would)."""
    np.copyto(out, a[:, start:stop].T)
    if len(out) > 2:
        out[[1, 2]] = out[[2, 1]]


def test_a_wrong_transpose_is_caught_by_the_read_back_and_named(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    items, data = _items([CASES[1], CASES[0], CASES[2]])
    monkeypatch.setattr(hf_entries, "transpose_rows", _wrong_transpose)
    path = _write(tmp_path, items, 64 << 10)
    assert Path(path).read_bytes() != data
    problems = placed.check_placed(path, items)
    assert [key for key, _ in problems] == ["t0", "t2"]  # the 1-D tensor moves nothing
    assert all("differ from the source's values" in p and "computed wrongly" in p for _, p in problems)


def test_the_cli_refuses_a_wrongly_transposed_output_and_writes_nothing(run_cli, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    case = json.loads((HF_H5 / "cases.json").read_text())["bert"]
    monkeypatch.setattr(hf_entries, "transpose_rows", _wrong_transpose)
    out = tmp_path / "hf"
    result = run_cli("convert", HF_H5 / case["dir"], "-o", out, "--to", "hf")
    assert result.exit_code == 4, result.output
    assert "verification failed" in result.stderr and "computed wrongly" in result.stderr
    assert ".weight" in result.stderr.split("computed wrongly")[0]  # the tensor is named
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith(f"ckpt: error: {out / 'model.safetensors'}: verification failed")  # not the stage
    assert not out.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("send", [True, False], ids=["sendfile", "write"])
def test_a_writing_threads_error_reaches_the_caller_without_a_wait(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   send: bool) -> None:
    monkeypatch.setattr(placed, "PIPELINE_BYTES", 1)
    items, _ = _items(CASES[1:4])
    calls = [0]

    def full(*args: object) -> int:
        """A disk that fills up after two writes (by ``write`` or by ``sendfile``)."""
        calls[0] += 1
        if calls[0] > 2:
            raise OSError(28, "No space left on device")
        return real_sendfile(*args) if send else real_write(*args)  # type: ignore[arg-type]

    real_sendfile, real_write = placed.os.sendfile, placed._Sink._write_plain
    if send:
        monkeypatch.setattr(placed.os, "sendfile", full)
    else:
        monkeypatch.setattr(placed.ChunkBuffers, "place", lambda self, buffer: None)
        monkeypatch.setattr(placed._Sink, "_write_plain", lambda self, data: full(self, data))
    errors: list[BaseException] = []

    def run() -> None:
        with open(tmp_path / "out.bin", "wb") as f:
            try:
                placed.write_placed(f, items, 16 << 10)
            except OSError as exc:
                errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "the caller waits for a buffer the failed writer never gave back"
    assert [e.errno for e in errors] == [28]  # type: ignore[attr-defined]
    assert calls[0] == 3


def test_hdf5_tensors_go_through_the_chunk_buffers_as_h5py_reads_them(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """``tf_model.h5``'s tensors, as they are (read straight into the chunks at an offset) and transposed (from
    the file's mapped pages), in chunks of 1 KiB on two threads: the file holds h5py's values."""
    import h5py

    import formats

    monkeypatch.setattr(placed, "PIPELINE_BYTES", 1)
    path = HF_H5 / "bert" / "tf_model.h5"
    with h5py.File(path, "r") as f, formats.open_checkpoint(str(path)) as ckpt:
        items, data, offset = [], b"", 0
        for n, key in enumerate(ckpt):
            value = np.asarray(f[key])
            entry = ckpt[key]
            if n % 2 and value.ndim == 2:
                entry, value = MappedEntry(entry, key, value.shape[::-1], entry.dtype, ("transpose",)), value.T
            assert entry.nbytes == value.nbytes
            items.append(placed.Placed(key, entry, offset, value.nbytes, entry.dtype))
            data += np.ascontiguousarray(value).tobytes()
            offset += value.nbytes
        assert sum(isinstance(i.source, MappedEntry) for i in items) >= 5
        assert max(i.size for i in items) > 4 << 10  # tensors of several chunks
        out = _write(tmp_path, items, 1 << 10)
        assert Path(out).read_bytes() == data
        assert placed.check_placed(out, items) == []
