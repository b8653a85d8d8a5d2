"""ConversionPlan.check_collisions: rows whose keys ascend strictly are checked without a dictionary a key; every
collision it reports is still found, whatever the order."""
from __future__ import annotations

import pytest

from formats.ops.convert.plan import RESERVED_KEY, ConversionPlan


def _plan(rows: list[tuple[str | None, str]]) -> ConversionPlan:
    plan = ConversionPlan("in", "tf-name")
    for source, key in rows:
        plan.add_row(source, key, b"", (), "string")
    plan.check_collisions()
    return plan


def _said(plan: ConversionPlan) -> list[tuple[str, str, str]]:
    return [(p.kind, p.key, p.message) for p in plan.problems]


@pytest.mark.parametrize("rows", [
    [("a", "a"), ("b", "b/c"), ("c", "b/d")],
    [("a", "X"), (RESERVED_KEY, RESERVED_KEY), ("z", "z")],  # the graph under its own key
    [("a", "a"), (None, RESERVED_KEY)],  # a made-up graph
    [],
], ids=["ascending", "the-graph", "a-made-graph", "none"])
def test_rows_without_collisions(rows: list[tuple[str | None, str]]) -> None:
    assert _plan(rows).problems == []


def test_ascending_keys_with_the_reserved_key_from_a_tensor() -> None:
    assert _said(_plan([("a", "A"), ("t", RESERVED_KEY), ("z", "z")])) == [  # (ascending)
        ("collision", RESERVED_KEY, f"'t' would be written as {RESERVED_KEY}, the object graph's key")]


def test_the_empty_key_first() -> None:
    assert _said(_plan([("a", ""), ("b", "b")])) == [
        ("collision", "a", "'a' would be written under the empty key, which is reserved for the bundle header")]


@pytest.mark.parametrize("rows", [[("a", "k"), ("b", "k")], [("b", "z"), ("a", "k"), ("c", "k")]],
                         ids=["adjacent", "out-of-order"])
def test_two_rows_to_one_key(rows: list[tuple[str | None, str]]) -> None:
    first, second = (source for source, key in rows if key == "k")
    assert _said(_plan(rows)) == [("collision", "k", f"{first!r} and {second!r} would both be written as 'k'")]


def _reference(rows: list[tuple[str | None, str]]) -> list[tuple[str, str, str]]:
    """What every row checked against a dictionary of the keys says (the check without its shortcuts)."""
    said: list[tuple[str, str, str]] = []
    seen: dict[str, tuple[int, str | None]] = {}
    for i, (source, key) in enumerate(rows):
        if not key:
            said.append(("collision", source or "", f"{source!r} would be written under the empty key, which is "
                                                    "reserved for the bundle header"))
            continue
        if key == RESERVED_KEY and source not in (None, RESERVED_KEY):
            said.append(("collision", key, f"{source!r} would be written as {RESERVED_KEY}, the object graph's key"))
        at, first = seen.setdefault(key, (i, source))
        if at != i:
            said.append(("collision", key, f"{first!r} and {source!r} would both be written as {key!r}"))
    return said


@pytest.mark.parametrize("seed", range(300))
def test_any_rows_say_what_a_dictionary_of_the_keys_says(seed: int) -> None:
    """Rows in any order (most of them out of order: their keys sorted, not a dictionary, when none collide)."""
    import random

    rng = random.Random(seed)
    pool = ["", "a", "b", "b/c", "k", "z", RESERVED_KEY] + [f"u{i}" for i in range(rng.randrange(1, 12))]
    count = rng.randrange(0, 9)
    keys = rng.sample(pool, min(count, len(pool))) if rng.random() < 0.6 else [rng.choice(pool) for _ in range(count)]
    rows = [(rng.choice([None, RESERVED_KEY]) if key == RESERVED_KEY and rng.random() < 0.5 else f"s{i}", key)
            for i, key in enumerate(keys)]
    assert _said(_plan(rows)) == _reference(rows)


def test_rows_out_of_order_without_collisions() -> None:
    assert _plan([("z", "z"), ("a", "a"), (None, RESERVED_KEY), ("m", "b/c")]).problems == []
