"""An SSTable's keys out of order are named by block and position, whichever key it is (issue 38: the order is
checked over a block's keys at once, the key named by the walk it replaced)."""
from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from formats.core.errors import CorruptCheckpointError
from formats.io.sstable.table import Table, read_table

from .hostile import craft
from .installed import LAUNCHER, child_env


def _table(blocks: list[list[tuple[bytes, bytes]]], separators: list[bytes]) -> tuple[bytes, list[int]]:
    """An SSTable of ``blocks`` (each a data block, no prefix compression) under ``separators``, and each data
    block's offset; built byte by byte (:func:`craft.blocks_table`)."""
    return craft.blocks_table([craft.block(pairs) for pairs in blocks], separators)


def _first_out_of_order(blocks: list[list[tuple[bytes, bytes]]], separators: list[bytes]) -> tuple[int, int] | None:
    """(block, position) of the first key that is not above the key before it in its block, not above the
    separator of the block before, or above its own block's separator; None when every key is in order."""
    for i, pairs in enumerate(blocks):
        for n, (key, _) in enumerate(pairs):
            if n and key <= pairs[n - 1][0]:
                return i, n
            if i and key <= separators[i - 1]:
                return i, n
            if key > separators[i]:
                return i, n
    return None


def _keys(rng: random.Random, count: int) -> list[bytes]:
    alphabet = b"ab/_0\x00\xff"
    keys: set[bytes] = set()
    while len(keys) < count:
        keys.add(bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 6))))
    return sorted(keys)


def _case(rng: random.Random) -> tuple[list[list[tuple[bytes, bytes]]], list[bytes]]:
    """Keys in blocks under their separators (each block's last key, or a key between it and the next block's
    first), then changed as a damaged or hostile file may have them: two keys swapped, a key repeated, a key
    replaced, a separator moved, or nothing."""
    keys = _keys(rng, rng.randint(1, 40))
    cuts = sorted(rng.sample(range(1, len(keys)), min(len(keys) - 1, rng.randint(0, 4)))) if len(keys) > 1 else []
    bounds = [0, *cuts, len(keys)]
    blocks = [[(k, bytes([j % 256])) for j, k in enumerate(keys[a:b])] for a, b in zip(bounds, bounds[1:])]
    separators = [pairs[-1][0] + (b"" if rng.random() < 0.5 else b"\x00") for pairs in blocks]
    separators = [s if i + 1 == len(blocks) or s < blocks[i + 1][0][0] else blocks[i][-1][0]
                  for i, s in enumerate(separators)]
    flat = [(i, n) for i, pairs in enumerate(blocks) for n in range(len(pairs))]
    change = rng.choice(["swap", "repeat", "replace", "separator", "none"])
    if change == "swap" and len(flat) > 1:
        (i, n), (j, m) = rng.sample(flat, 2)
        (ki, vi), (kj, vj) = blocks[i][n], blocks[j][m]
        blocks[i][n], blocks[j][m] = (kj, vi), (ki, vj)
    elif change == "repeat" and len(flat) > 1:
        (i, n), (j, m) = rng.sample(flat, 2)
        blocks[i][n] = (blocks[j][m][0], blocks[i][n][1])
    elif change == "replace":
        i, n = rng.choice(flat)
        blocks[i][n] = (bytes(rng.choice(b"ab/\x00\xff") for _ in range(rng.randint(0, 6))), blocks[i][n][1])
    elif change == "separator":
        i = rng.randrange(len(separators))
        separators[i] = bytes(rng.choice(b"ab/\x00\xff") for _ in range(rng.randint(0, 6)))
    return blocks, separators


@pytest.mark.parametrize("seed", range(400))
def test_the_first_key_out_of_order_is_named_whichever_it_is(seed) -> None:
    """400 random tables (1 to 5 blocks, keys of zero to six bytes, changed at random): every block's keys come back
    as written where the oracle finds them in order; else the first block out of order is refused naming the
    position the oracle names, and the blocks before it read as written (separators out of order: the table is
    refused when opened)."""
    rng = random.Random(seed)
    blocks, separators = _case(rng)
    data, offsets = _table(blocks, separators)
    falling = next((i for i in range(1, len(separators)) if separators[i] <= separators[i - 1]), None)
    if falling is not None:  # the index block's own keys out of order: refused on opening
        with pytest.raises(CorruptCheckpointError, match=f"index keys are not increasing at block {falling}$"):
            Table(data, "t.index", "index")
        return
    table = Table(data, "t.index", "index")
    bad = _first_out_of_order(blocks, separators)
    for i, pairs in enumerate(blocks):
        if bad is not None and i == bad[0]:
            with pytest.raises(CorruptCheckpointError) as caught:
                table.entries(i)
            assert str(caught.value) == (f"t.index: corrupt index: data block at offset {offsets[i]}: key {bad[1]} "
                                         "is out of order")
            return
        assert [(k, bytes(v)) for k, v in table.entries(i)] == pairs
    assert bad is None
    assert [(k, bytes(v)) for k, v in read_table(data, "t.index")] == [p for pairs in blocks for p in pairs]


@pytest.mark.parametrize(("blocks", "separators", "named"), [
    ([[(b"b", b""), (b"a", b"")]], [b"b"], (0, 1)),  # descending
    ([[(b"a", b""), (b"a", b"")]], [b"a"], (0, 1)),  # repeated
    ([[(b"a", b""), (b"c", b"")]], [b"b"], (0, 1)),  # the last above its separator
    ([[(b"a", b"")], [(b"a", b""), (b"b", b"")]], [b"a", b"b"], (1, 0)),  # the first not above the block before's
    ([[(b"a", b"")], [(b"b", b""), (b"b", b"")]], [b"a", b"b"], (1, 1)),
    ([[(b"c", b""), (b"d", b"")]], [b"b"], (0, 0)),  # every key above the separator: the first named
])
def test_a_key_out_of_order_is_named(blocks, separators, named) -> None:
    data, offsets = _table(blocks, separators)
    table = Table(data, "t.index", "index")
    for i in range(named[0]):
        table.entries(i)
    with pytest.raises(CorruptCheckpointError, match=f"data block at offset {offsets[named[0]]}: key {named[1]} "
                                                     "is out of order"):
        table.entries(named[0])


def test_a_bundle_whose_index_keys_are_out_of_order_is_refused_in_one_line(tmp_path) -> None:
    """``ckpt verify`` of a bundle whose index holds two keys in the wrong order (the header, ``b``, ``a``): exit 3,
    one line naming the index and the first key out of order; the files as they were."""
    entry = craft.entry(1, [1], 0, 4, b"\0\0\0\0")
    index = craft.table([(b"", craft.header()), (b"b", entry), (b"a", entry)])
    (tmp_path / "model.index").write_bytes(index)
    (tmp_path / "model.data-00000-of-00001").write_bytes(b"\0\0\0\0")
    done = subprocess.run([sys.executable, str(LAUNCHER), "verify", str(tmp_path / "model")], capture_output=True,
                          text=True, timeout=120, env=child_env())
    assert done.returncode == 3, done
    assert done.stderr == (f"ckpt: error: {tmp_path / 'model.index'}: corrupt index: data block at offset 0: key 1 is "
                           "out of order\n"), done.stderr  # (``b`` above the block's separator, its last key ``a``)
    assert Path(tmp_path / "model.index").read_bytes() == index
