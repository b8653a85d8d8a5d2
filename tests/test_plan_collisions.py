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
