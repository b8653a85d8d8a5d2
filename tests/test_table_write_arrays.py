"""Issue 38: a table's entries laid into blocks with arrays (formats/io/sstable/write_arrays.py) are the bytes ``add``
writes an entry at a time - the oracle: TableWriter.add, and TensorFlow's reader of the corpus (tests/test_writer.py
holds ``add`` to TensorFlow's bytes) - and a run that needs ``add``'s checks raises as ``add`` raises."""
from __future__ import annotations

import io
import random

import numpy as np  # noqa: F401  (imported: add_all lays runs with arrays)
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formats.io.sstable import write_arrays
from formats.io.sstable.table import read_table
from formats.io.sstable.writer import TableWriter


def _table(pairs: list[tuple[bytes, bytes]], block_size: int, cuts: list[int] | None = None,
           one_by_one: bool = False) -> bytes:
    out = io.BytesIO()
    writer = TableWriter(out, block_size)
    if one_by_one:
        for key, value in pairs:
            writer.add(key, value)
    else:
        bounds = [0, *(cuts or []), len(pairs)]
        for n, (a, b) in enumerate(zip(bounds, bounds[1:])):
            if n % 3 == 2:  # (now and then a part added a pair at a time between runs)
                for key, value in pairs[a:b]:
                    writer.add(key, value)
            else:
                writer.add_all(pairs[a:b])
    writer.finish()
    return out.getvalue()


@pytest.fixture
def runs(monkeypatch):
    """The entries each run laid with arrays (a run declined: 0)."""
    laid: list[int] = []
    real = write_arrays.lay_run
    monkeypatch.setattr(write_arrays, "lay_run", lambda np_, w, keys, values: laid.append(
        len(keys) if real(np_, w, keys, values) else 0) or laid[-1] > 0)
    return laid


@settings(max_examples=120, deadline=None)
@given(seed=st.integers(0, 2 ** 32), count=st.sampled_from([300, 1000, 5000, 20000]),
       block_size=st.sampled_from([64, 300, 4096, 65536, 262144]), cut=st.booleans())
def test_runs_laid_with_arrays_are_the_bytes_add_writes(seed, count, block_size, cut):
    """Keys of 0-300 bytes from small and full alphabets (shared prefixes past 127 bytes, two-byte varints), values of
    0-300 bytes, blocks of 64 bytes to 256 KiB (a block filled mid-run, every entry its own block), the pairs given in
    runs cut anywhere and mixed with ``add``."""
    rng = random.Random(seed)
    alphabet = rng.choice([b"ab", b"ab/_0123456789", bytes(range(256))])
    prefix = rng.choice([b"", b"p" * 140])
    keys = sorted({prefix + bytes(rng.choice(alphabet) for _ in range(rng.randrange(0, rng.choice([4, 20, 160]))))
                   for _ in range(count)})
    pairs = [(k, rng.randbytes(rng.choice([0, 3, 30, 130, 300]))) for k in keys]
    cuts = sorted(rng.sample(range(1, len(pairs)), 4)) if cut and len(pairs) > 5 else None
    expected = _table(pairs, block_size, one_by_one=True)
    assert _table(pairs, block_size, cuts) == expected


def test_a_run_is_laid_with_arrays_and_read_back_as_written(runs):
    keys = sorted(f"model/layer_{i // 100}/unit_{i % 100}/w".encode() for i in range(50_000))
    pairs = [(b"", b"header")] + [(k, b"\x08\x01" + i.to_bytes(4, "little")) for i, k in enumerate(keys)]
    data = _table(pairs, 262144)
    assert data == _table(pairs, 262144, one_by_one=True)
    assert sum(runs) == len(pairs) and all(runs)
    assert [(k, bytes(v)) for k, v in read_table(data, "x")] == pairs


@pytest.mark.parametrize("case", ["wide key", "large pair", "out of order", "repeated", "before the last"])
def test_runs_that_need_adds_checks_are_added_one_at_a_time(runs, case):
    """A key over WIDEST bytes or a pair of twice the block (add flushes before it): declined, the same bytes; a key
    not after the one before: declined, and add's own error."""
    pairs = [(b"k%06d" % i, b"v" * 10) for i in range(1000)]
    if case == "wide key":
        pairs[500] = (b"k000500" + b"w" * write_arrays.WIDEST, b"")
    elif case == "large pair":
        pairs[500] = (pairs[500][0], b"x" * 9000)
    elif case == "out of order":
        pairs[500], pairs[501] = pairs[501], pairs[500]
    elif case == "repeated":
        pairs[501] = pairs[500]
    block_size = 4096
    if case in ("out of order", "repeated"):
        messages = []
        for one_by_one in (True, False):
            with pytest.raises(ValueError) as caught:
                _table(pairs, block_size, one_by_one=one_by_one)
            messages.append(str(caught.value))
        assert messages[0] == messages[1] and messages[0].startswith("keys must be strictly increasing")
    elif case == "before the last":  # a run whose first key is not after the last key added
        out = io.BytesIO()
        writer = TableWriter(out, block_size)
        writer.add_all(pairs)
        with pytest.raises(ValueError, match="keys must be strictly increasing"):
            writer.add_all(pairs[-300:])
    else:
        assert _table(pairs, block_size) == _table(pairs, block_size, one_by_one=True)
    assert runs and runs[-1] == 0  # (the run declined: added one at a time)


def test_every_entry_of_a_block_of_its_own_and_the_restart_points():
    """Blocks smaller than an entry: each entry flushes its block; restart points every 16 entries otherwise."""
    pairs = [(b"key%05d" % i, bytes(40)) for i in range(600)]
    for block_size in (32, 2000):
        data = _table(pairs, block_size)
        assert data == _table(pairs, block_size, one_by_one=True)
        assert [(k, bytes(v)) for k, v in read_table(data, "x")] == pairs
