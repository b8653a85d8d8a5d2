"""A safetensors export's data order (``_data_order``): those stored unchanged first, by file (in the order each file's
first tensor is given) and by place in it, then the others as given - found without a sort when that is the order
given."""
from __future__ import annotations

import random

import pytest

from formats.safetensors.writer import _data_order


def _reference(stored):
    """The order by its definition: a sort of the stored ones by (the first place their file is given, offset)."""
    rank: dict[int, int] = {}
    for i, where in enumerate(stored):
        if where is not None:
            rank.setdefault(where[0], i)
    copied = sorted((i for i, w in enumerate(stored) if w is not None), key=lambda i: (rank[stored[i][0]], stored[i][1]))
    return copied + [i for i, w in enumerate(stored) if w is None]


@pytest.mark.parametrize("seed", range(300))
def test_the_data_order_is_the_sorted_one(seed):
    rng = random.Random(seed)
    n = rng.randrange(0, 40)
    fds = rng.choice([[7], [7, 9], [3, 7, 9]])
    offsets = sorted(rng.sample(range(10_000), n)) if rng.random() < 0.6 else rng.sample(range(10_000), n)
    stored = [None if rng.random() < rng.choice([0, 0, 0.2]) else (rng.choice(fds), at, 4, 0) for at in offsets]
    order = _data_order(stored)
    assert list(order) == _reference(stored)


def test_tensors_lying_in_one_file_in_the_order_given_keep_it_without_a_sort():
    assert _data_order([(5, 0, 4, 0), (5, 4, 4, 0), (5, 100, 4, 0)]) == range(3)
    assert _data_order([(5, 4, 4, 0), (5, 0, 4, 0)]) == [1, 0]
    assert _data_order([(5, 0, 4, 0), None]) == [0, 1]
    assert _data_order([]) == []
