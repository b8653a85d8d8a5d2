"""``Spool``: bytes written in pieces come back from the start in chunks of the size asked (the last shorter), held
in memory up to its limit (joined a chunk at a time) or from its temporary file past it."""
from __future__ import annotations

import random

import pytest

from formats.io.spool import Spool


@pytest.mark.parametrize("seed", range(60))
def test_chunks_are_what_was_written_none_over_the_size(seed: int) -> None:
    rng = random.Random(seed)
    pieces = [rng.randbytes(rng.choice([0, 1, 3, 10, 64, 100, 1000])) for _ in range(rng.randrange(0, 40))]
    size = rng.choice([1, 7, 64, 100, 4096])
    limit = rng.choice([0, 50, 500, 1 << 20])
    with Spool(limit) as spool:
        for piece in pieces:
            assert spool.write(piece) == len(piece)
        assert spool.size == sum(map(len, pieces))
        for _ in range(2):  # (read again: the same)
            chunks = list(spool.chunks(size))
            assert b"".join(chunks) == b"".join(pieces)
            assert all(len(chunk) == size for chunk in chunks[:-1]) and 0 < len(chunks[-1] if chunks else b"x") <= size
