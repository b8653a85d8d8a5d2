"""An edit's action counts (``EditPlan.counts``, the summary line and ``--json``'s ``counts``) are those of its actions
one by one, in the order each action is first met - whether counted key by key or over the keys at once."""
from __future__ import annotations

import random

import pytest

import formats
from formats.core.model import OBJECT_GRAPH_KEY
from formats.ops.edit import EditOptions, plan_edit
from formats.ops.edit.build import KeyActions
from formats.ops.edit.values import CastTensor

from .conftest import CORPUS


def _walked(actions) -> dict[str, int]:
    """The counts of the actions made one by one (the reference: the order each is first met)."""
    out: dict[str, int] = {}
    for action in actions:
        out[action.action] = out.get(action.action, 0) + 1
    return out


class _Row:
    def __init__(self, source, value=None):
        self.source, self.key, self.value, self.dtype, self.note = source, source or "made", value, "float32", ""


class _Conversion:
    def __init__(self, rows, graph):
        self.rows, self.object_graph = rows, graph


class _Plan:
    def __init__(self, rows, graph, operation="edit"):
        self.conversion, self.operation = _Conversion(rows, graph), operation


def _random_case(rng: random.Random):
    keys = sorted({rng.choice("abcdefgh") + str(rng.randrange(40)) for _ in range(rng.randrange(0, 30))})
    if rng.random() < 0.3:
        keys = sorted([*keys, OBJECT_GRAPH_KEY])
    dropped = {k: "left out" for k in keys if rng.random() < 0.3}
    if rng.random() < 0.2 and keys:  # a dropped key a row is written from all the same
        dropped[rng.choice(keys)] = "dropped"
    rows = [_Row(k) for k in keys if rng.random() < 0.7]
    rows += [_Row(None) for _ in range(rng.randrange(3))]  # made-up values: no source key
    rows += [_Row(rng.choice(keys)) for _ in range(rng.randrange(3)) if keys]  # a key written twice
    rows += [_Row("not-an-input") for _ in range(rng.randrange(2))]
    if rng.random() < 0.2 and rows:  # a cast: every action from the rows themselves
        row = rng.choice(rows)
        row.value = CastTensor.__new__(CastTensor)  # (its action is told by its type alone)
    rng.shuffle(rows)
    graph = rng.choice([None, b"", b"graph"])
    operation = "average" if rng.random() < 0.1 else "edit"
    return _Plan(rows, graph, operation), {k: object() for k in keys}, dropped


@pytest.mark.parametrize("seed", range(300))
def test_counts_are_the_actions_counted_one_by_one(seed):
    plan, source, dropped = _random_case(random.Random(seed))
    actions = KeyActions(plan, source, dropped)
    counted = actions.counts()
    assert counted == _walked(actions)
    assert list(counted) == list(_walked(actions))  # the same order


@pytest.mark.parametrize("prefix, options", [
    (CORPUS / "tf1_adam" / "model.ckpt-200", EditOptions(drop_optimizer=True)),
    (CORPUS / "tf1_adam" / "model.ckpt-200", EditOptions(exclude=("dense/*",))),
    (CORPUS / "seed_slots" / "tf_ckpts" / "ckpt-5", EditOptions(drop_optimizer=True)),
    (CORPUS / "seed_slots" / "tf_ckpts" / "ckpt-5", EditOptions(select=("save_counter/*",))),
    (CORPUS / "seed_slots" / "tf_ckpts" / "ckpt-5", EditOptions()),
    (CORPUS / "tf1_partitioned" / "model.ckpt-200", EditOptions(casts={"float32": "bfloat16"})),
])
def test_counts_of_corpus_edits(prefix, options):
    with formats.open_checkpoint(prefix) as source:
        plan = plan_edit(source, options)
        assert plan.counts() == _walked(plan.actions)
        assert list(plan.counts()) == list(_walked(plan.actions))
        assert sum(plan.counts().values()) == len(source)
