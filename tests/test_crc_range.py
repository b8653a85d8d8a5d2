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
