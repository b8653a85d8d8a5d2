"""``crc32c_range``: the CRC32C of a file range read with pread, as verify computes it."""
from __future__ import annotations

import os
import threading
import zlib

import pytest

from formats.io.crc import crc32c, crc32c_range

# CRC32C check value of b"123456789" (RFC 3720, appendix B.4), computed independently of the package
CHECK = 0xE3069283


def _file(tmp_path, data: bytes) -> int:
    path = tmp_path / "data"
    path.write_bytes(data)
    return os.open(path, os.O_RDONLY)


def test_the_standard_check_value(tmp_path) -> None:
    fd = _file(tmp_path, b"xx123456789yy")
    try:
        assert crc32c_range(fd, 2, 9) == CHECK
        assert crc32c_range(fd, 0, 0) == 0
    finally:
        os.close(fd)


@pytest.mark.parametrize("offset, size", [(0, 3 << 20), (12345, (1 << 20) + 7), ((1 << 20) - 1, 2)])
def test_ranges_across_the_buffer_size_equal_one_crc_of_the_bytes(tmp_path, offset: int, size: int) -> None:
    data = bytes(range(256)) * ((4 << 20) // 256)
    fd = _file(tmp_path, data)
    try:
        assert crc32c_range(fd, offset, size) == crc32c(data[offset:offset + size])
        assert crc32c_range(fd, offset, size, 7) == crc32c(data[offset:offset + size], 7)  # extends a CRC
    finally:
        os.close(fd)


def test_a_file_that_ends_early_gives_none(tmp_path) -> None:
    fd = _file(tmp_path, b"abc")
    try:
        assert crc32c_range(fd, 1, 5) is None
    finally:
        os.close(fd)


def test_threads_use_their_own_buffers(tmp_path) -> None:
    blocks = [bytes([i]) * (3 << 20) + zlib.compress(bytes([i]) * 100) for i in range(4)]
    fd = _file(tmp_path, b"".join(blocks))
    offsets = [sum(map(len, blocks[:i])) for i in range(4)]
    results: dict[int, int | None] = {}
    try:
        threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, crc32c_range(fd, offsets[i],
                                                                                           len(blocks[i]))))
                   for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        os.close(fd)
    assert results == {i: crc32c(blocks[i]) for i in range(4)}


def _ranges(tmp_path, a: bytes, b: bytes) -> tuple[int, int]:
    (tmp_path / "a").write_bytes(a)
    (tmp_path / "b").write_bytes(b)
    return os.open(tmp_path / "a", os.O_RDONLY), os.open(tmp_path / "b", os.O_RDONLY)


def _one_byte_apart(tmp_path, size: int) -> tuple[bytes, bytes, int, int]:
    """``size`` bytes, the same with the last byte changed, and files ``a`` (``xy`` then the bytes) and ``b`` (the
    changed bytes, then the bytes) open for reading."""
    data = (bytes(range(251)) * (size // 251 + 1))[:size]
    changed = bytearray(data)
    changed[-1] ^= 1
    return data, bytes(changed), *_ranges(tmp_path, b"xy" + data, bytes(changed) + data)


@pytest.mark.parametrize("size", [5, (1 << 20) + 3, 3 << 20])
def test_same_ranges_compares_bytes_and_checks_both_crcs(tmp_path, size: int) -> None:
    from formats.io.crc import same_ranges

    data, changed, fa, fb = _one_byte_apart(tmp_path, size)
    try:
        good, bad = crc32c(data), crc32c(changed)
        assert same_ranges((fa, 2, size, good), (fb, size, size, good)) is True
        assert same_ranges((fa, 2, size, good), (fb, 0, size, bad)) is False
        assert same_ranges((fa, 2, size, good ^ 1), (fb, size, size, good)) is None  # a's checksum is wrong
        assert same_ranges((fa, 2, size, good), (fb, size, size, good ^ 1)) is None
        assert same_ranges((fa, 2, size + 1, good), (fb, size, size + 1, good)) is None  # the files end early
        assert same_ranges((fa, 2, size, good), (fb, size, size - 1, good)) is False
    finally:
        os.close(fa)
        os.close(fb)


def test_bundle_tensors_say_where_their_bytes_are(tmp_path) -> None:
    import numpy as np

    import formats

    prefix = str(tmp_path / "ckpt")
    values = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "s": np.array([b"x"], dtype=object),
              "empty": np.zeros((0,), np.int64)}
    formats.write_checkpoint(prefix, values.items())
    with formats.open_checkpoint(prefix) as ckpt:
        fd, offset, size, crc = ckpt["a"].stored_range()
        assert (offset, size) == (ckpt["a"].raw.offset, 24)
        assert os.pread(fd, size, offset) == values["a"].tobytes() and crc == crc32c(values["a"].tobytes())
        assert ckpt["s"].stored_range() is None and ckpt["empty"].stored_range() is None  # strings; no bytes


def test_a_range_compared_with_itself_is_checked_once(tmp_path) -> None:
    from formats.io.crc import same_ranges

    data = bytes(range(256)) * 9000
    fa, fb = _ranges(tmp_path, data, b"")
    other = os.open(tmp_path / "a", os.O_RDONLY)  # the same file, opened again
    try:
        good = crc32c(data[7:])
        assert same_ranges((fa, 7, len(data) - 7, good), (other, 7, len(data) - 7, good)) is True
        assert same_ranges((fa, 7, len(data) - 7, good ^ 1), (other, 7, len(data) - 7, good ^ 1)) is None
        assert same_ranges((fa, 7, len(data) - 7, good), (other, 7, len(data) - 7, good ^ 1)) is None
    finally:
        for fd in (fa, fb, other):
            os.close(fd)


@pytest.mark.parametrize("size", [5, (1 << 20) + 3, 3 << 20])
def test_same_bytes_ranges_compares_bytes_without_checksums(tmp_path, size: int) -> None:
    from formats.io.crc import same_bytes_ranges

    _, _, fa, fb = _one_byte_apart(tmp_path, size)
    try:
        assert same_bytes_ranges((fa, 2, size), (fb, size, size)) is True
        assert same_bytes_ranges((fa, 2, size), (fb, 0, size)) is False  # the last byte differs
        assert same_bytes_ranges((fa, 2, size + 1), (fb, size, size + 1)) is None  # the files end early
        assert same_bytes_ranges((fa, 2, size), (fb, size, size - 1)) is False
        assert same_bytes_ranges((fa, 2, size), (fa, 2, size)) is True  # one range of one file
    finally:
        os.close(fa)
        os.close(fb)


def test_string_tensors_say_where_their_checked_bytes_are(tmp_path) -> None:
    import numpy as np

    import formats

    prefix = str(tmp_path / "ckpt")
    values = {"a": np.arange(3, dtype=np.float32), "s": np.array(b"abc", dtype=object),
              "t": np.array([b"x", b"", b"yz"], dtype=object)}
    formats.write_checkpoint(prefix, values.items())
    with formats.open_checkpoint(prefix) as ckpt:
        assert ckpt["a"].checked_bytes_range() is None  # fixed width: stored_range says where
        fd, offset, size = ckpt["s"].checked_bytes_range()
        assert os.pread(fd, size, offset) == b"\x03" + b"c?\x7f(" + b"abc"  # FORMATS.md's scalar "abc"
        fd, offset, size = ckpt["t"].checked_bytes_range()
        assert (offset, size) == (ckpt["t"].raw.offset, 3 + 4 + 3)
