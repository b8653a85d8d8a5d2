"""Issue 38, the read side: ``diff A A``, ``stats A`` and ``ls --tree A`` cost a bounded number of operations per
tensor, name-based and object-based. Operations are Python calls counted by ``cProfile`` on one thread
(``--jobs 1``), which a loaded machine does not change as it changes time: the calls ``ckpt`` makes on 40,000
tiny tensors less those on 10,000 are the calls of 30,000 tensors, and they must stay within a budget per
tensor (about what the commands make now, well under what they made when each command made an object per
tensor, looked every key up by bisection and labelled every key one by one: see ``docs/benchmarks.md``). A
budget is per tensor, so the test also fails on work that grows faster than the tensors.

Beside them, the pieces the commands now go by are checked against independent oracles: the natural order of
keys, a table laid out from its columns, the stored bytes the index's columns give, and the roles of keys.
"""
from __future__ import annotations

import random
import re
from functools import cmp_to_key

import numpy as np
import pytest

from formats import write_checkpoint

from tests.call_counts import python_calls
from tests.memory import traced
from tests.scale_bundles import name_based, object_based

SMALL, LARGE = 10_000, 40_000

BUDGET = {  # Python calls per tensor, from SMALL to LARGE tensors: what the commands make now (diff 96, stats 66
    # and 82, ls --tree 82 and 206) and a little room; before issue 38's read-side work, 157, 76 and 92, 103 and 227
    ("name", "diff"): 104, ("name", "stats"): 71, ("name", "ls --tree"): 88,
    ("object", "diff"): 104, ("object", "stats"): 87, ("object", "ls --tree"): 215,
}

COMMANDS = {
    "diff": lambda p: ["diff", "--jobs", "1", p, p],
    "stats": lambda p: ["stats", "--jobs", "1", p],
    "ls --tree": lambda p: ["ls", "--tree", p],
}


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    """``{layout: {n: prefix}}`` for SMALL and LARGE tensors: name-based, and the same converted to object-based."""
    folder = tmp_path_factory.mktemp("read-scale")
    out: dict[str, dict[int, str]] = {"name": {}, "object": {}}
    for n in (SMALL, LARGE):
        prefix = out["name"][n] = name_based(folder, n)
        out["object"][n] = object_based(prefix)
    return out


@pytest.mark.parametrize("layout", ["name", "object"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_calls_per_tensor_stay_within_the_budget(bundles, run_cli, layout, command):
    args = COMMANDS[command]
    expected_exit = (0,)
    python_calls(run_cli, args(bundles[layout][SMALL]), expected_exit)  # imports, caches: not counted
    small = python_calls(run_cli, args(bundles[layout][SMALL]), expected_exit)
    large = python_calls(run_cli, args(bundles[layout][LARGE]), expected_exit)
    per_tensor = (large - small) / (LARGE - SMALL)
    assert 0 < per_tensor <= BUDGET[layout, command], \
        f"{command} ({layout}-based): {per_tensor:.1f} calls per tensor ({small} on {SMALL:,}, {large} on {LARGE:,})"


def test_the_outputs_say_what_the_bundles_hold(bundles, run_cli):
    """The commands counted above do their work: every tensor compared, summarised and drawn."""
    import json

    for layout, extra in (("name", 0), ("object", 2)):
        prefix = bundles[layout][SMALL]
        doc = json.loads(run_cli("diff", "--json", prefix, prefix).stdout)
        assert (doc["same"], doc["changed"], doc["only_in_a"]) == (SMALL + extra, [], [])
        stats = json.loads(run_cli("stats", "--json", prefix).stdout)["tensors"]
        w = [t for t in stats if t["key"].endswith(("/w", "/w/.ATTRIBUTES/VARIABLE_VALUE"))]
        assert len(w) == SMALL and {t["mean"] for t in w} == {float(i) for i in range(SMALL)}
        tree = json.loads(run_cli("ls", "--tree", "--json", prefix).stdout)
        assert tree["parameters"] == 4 * SMALL + (1 if layout == "object" else 0)


# -- the pieces, against independent oracles --------------------------------------------------------------------
def _natural_compare(a: str, b: str) -> int:
    """An oracle of the natural order of keys without leading zeros: read side by side, two digit runs compare
    by value, anything else character by character."""
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i].isdigit() and b[j].isdigit():
            m = re.match(r"\d+", a[i:]).group()  # type: ignore[union-attr]
            n = re.match(r"\d+", b[j:]).group()  # type: ignore[union-attr]
            if int(m) != int(n):
                return -1 if int(m) < int(n) else 1
            i, j = i + len(m), j + len(n)
        elif a[i] != b[j]:
            return -1 if a[i] < b[j] else 1
        else:
            i, j = i + 1, j + 1
    return (len(a) - i > 0) - (len(b) - j > 0)


def test_natural_sorted_orders_numbers_by_value():
    from formats.core.natural import natural_sorted

    assert natural_sorted(["a/10", "a/2", "a/1/b", "b", "a/02"]) == ["a/1/b", "a/02", "a/2", "a/10", "b"]  # equal but for zeros: text order
    assert natural_sorted(["x\n10", "x\n9"]) == ["x\n9", "x\n10"]  # a key holding the separator
    keys = [f"model/layer_{i // 100}/unit_{i % 100}/w" for i in range(3000)]
    shuffled = random.Random(7).sample(keys, len(keys))
    assert natural_sorted(shuffled) == keys


def test_natural_sorted_rewrites_a_chunk_of_keys_at_a_time(monkeypatch):
    """The digit runs are rewritten a chunk of keys at a time, the order the same across the chunks' edges; what is
    held at once is about twice the keys (five times, when every key's parts were split at once: at 10^6 keys, about
    200 MB more for a moment of ``ls --tree``)."""
    import sys
    import tracemalloc

    from formats.core import natural

    keys = [f"model/layer_{i // 100}/unit_{i % 100}/w" for i in range(50_000)]
    shuffled = random.Random(3).sample(keys, len(keys))
    tracemalloc.start()
    try:
        assert natural.natural_sorted(shuffled) == keys
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2.5 * sum(map(sys.getsizeof, keys)), peak  # 5.5x before
    monkeypatch.setattr(natural, "_ORDERS_AT_ONCE", 3)
    rng = random.Random(13)
    for _ in range(100):
        some = list({"".join(rng.choice("ab109/_") for _ in range(rng.randint(1, 7))) for _ in range(rng.randint(1, 30))})
        assert natural.natural_sorted(some) == sorted(some, key=natural.natural_order)


def test_natural_sorted_is_the_natural_order_of_any_keys():
    from formats.core.natural import key_order, natural_sorted

    rng = random.Random(11)
    for _ in range(300):
        keys = list({"".join(rng.choice("ab19/_") for _ in range(rng.randint(0, 7))) for _ in range(rng.randint(1, 25))})
        assert natural_sorted(keys) == sorted(keys, key=key_order(keys))
        if not any("0" in k for k in keys):  # no leading zeros: the oracle's order is the whole order
            assert natural_sorted(keys) == sorted(keys, key=cmp_to_key(_natural_compare))


def test_natural_orders_rewrite_each_piece_once_and_past_the_bound_each_time(monkeypatch):
    """A listing's keys are rewritten a ``/``-piece at a time, each distinct piece once (remembered up to a bound):
    the texts are natural_text's of each whole key, whatever the bound (0, 2, the default) and whatever is
    remembered from before."""
    from formats.core import natural

    rng = random.Random(17)
    calls = []
    real = natural.natural_text
    monkeypatch.setattr(natural, "natural_text", lambda text: calls.append(text) or real(text))
    keys = [f"model/layer_{i // 100}/unit_{i % 100}/w" for i in range(20_000)]
    monkeypatch.setattr(natural, "_PIECES_DONE", {})
    assert natural.natural_orders("\n".join(keys)) == [real(k) for k in keys]
    assert len(calls) == 200 + 100 + 3  # layer_*, unit_*, "model" (the first key), "w\nmodel" (between keys), "w"
    for bound in (0, 2, 1 << 16):
        monkeypatch.setattr(natural, "_PIECES", bound)
        monkeypatch.setattr(natural, "_PIECES_DONE", {})
        for _ in range(50):
            some = ["".join(rng.choice("ab1090/_") for _ in range(rng.randint(0, 9))) for _ in range(rng.randint(1, 30))]
            assert natural.natural_orders("\n".join(some)) == [real(k) for k in some]
            assert len(natural._PIECES_DONE) <= bound


def test_blocks_in_natural_order_are_the_keys_sorted_by_natural_order():
    """A listing's blocks (keys in text order, as an index holds them) put in natural order: the order
    ``natural_order``'s (text, key) pairs give, leading zeros and keys without numbers included, in blocks of the
    same sizes with each key's kind beside it."""
    from array import array

    from formats.core.compact_listing import in_natural_order
    from formats.core.natural import natural_order

    rng = random.Random(5)
    for _ in range(200):
        keys = sorted({"".join(rng.choice("ab109/_") for _ in range(rng.randint(1, 8)))
                       for _ in range(rng.randint(1, 40))})
        cut = sorted(rng.sample(range(1, len(keys)), min(3, len(keys) - 1))) if len(keys) > 1 else []
        bounds = [0, *cut, len(keys)]
        blocks = [("\n".join(keys[a:b]), array("I", range(a, b))) for a, b in zip(bounds, bounds[1:])]
        out = in_natural_order(blocks)
        expected = sorted(keys, key=natural_order)
        assert [k for text, _ in out for k in text.split("\n")] == expected
        assert [keys[i] for _, ids in out for i in ids] == expected
        assert [len(ids) for _, ids in out] == [len(ids) for _, ids in blocks]


def test_blocks_in_natural_order_hold_no_pair_per_key():
    """Putting 100,000 keys in natural order holds, at its peak, under 190 bytes a key besides the blocks (the
    keys' order texts and then the keys; a (text, key) pair per key as well was over 250)."""
    from array import array

    from formats.core.compact_listing import in_natural_order

    keys = sorted(f"model/layer_{i // 100}/unit_{i % 100}/w" for i in range(100_000))
    blocks = [("\n".join(keys[a:a + 5000]), array("I", range(a, a + 5000))) for a in range(0, len(keys), 5000)]
    del keys
    out, _, peak = traced(lambda: in_natural_order(blocks))
    assert out[0][0].split("\n")[:3] == ["model/layer_0/unit_0/w", "model/layer_0/unit_1/w", "model/layer_0/unit_2/w"]
    assert peak / 100_000 < 190, peak / 100_000


def test_a_table_of_columns_lays_out_as_the_same_table_of_rows():
    from ckpt_cli.render.table import TextTable, plain_table, without_columns

    heads = [("key", "left"), ("n", "right"), ("note", "left")]
    cells = [["a", "bb\x1b", "ccc"], ["1", "22", "333"], ["", "x", "y y"]]
    by_columns = TextTable.of_columns(heads, cells, [None, "red", None])
    by_rows = TextTable(heads, [list(r) for r in zip(*cells)], [None, "red", None])
    assert plain_table(by_columns) == plain_table(by_rows) == [
        "key       n  note", "a         1", "bb\\x1b   22  x", "ccc     333  y y"]
    assert plain_table(without_columns(by_columns, ["n"])) == plain_table(without_columns(by_rows, ["n"]))
    assert by_columns.row_count() == 3 and by_columns.rows == by_rows.rows
    by_columns.rows[0][0] = "z"  # the rows, once made, are the table
    assert plain_table(by_columns)[1] == "z         1"
    assert plain_table(TextTable.of_columns(heads, [[], [], []], [])) == ["key  n  note"]


def test_stored_bytes_come_from_the_index_as_the_arrays_hold_them(tmp_path):
    from formats.api import open_checkpoint
    from formats.core.errors import TensorNotFoundError

    arrays = {"a": np.zeros((3, 5), np.float32), "b/c": np.arange(7, dtype=np.int64), "d": np.float16(1.5),
              "s": np.array([b"xy", b"z"], dtype=object)}
    prefix = str(tmp_path / "ckpt")
    write_checkpoint(prefix, arrays.items(), verify=False)
    with open_checkpoint(prefix) as ckpt:
        assert ckpt.nbytes_of(["d", "a", "b/c"]) == [2, 60, 56]
        strings = ckpt.nbytes_of(["s"])[0]
        assert ckpt.total_nbytes() == 60 + 56 + 2 + strings and strings == ckpt["s"].nbytes
        with pytest.raises(TensorNotFoundError):
            ckpt.nbytes_of(["a", "nope"])


def test_roles_of_many_keys_are_those_of_each_key():
    from formats.concepts.roles import classify_name, classify_names, may_not_be_variable
    from formats.core.model import Role

    keys = [f"dense_{i}/kernel" for i in range(50)] + [f"dense_{i}/kernel/Adam" for i in range(0, 50, 2)] + \
        ["global_step", "beta1_power", "it/ITERATOR_STATE", "save_counter", "orphan/Adam_1", "Adam/iter",
         "Adam/m/dense_3/kernel", "iteration"]
    roles = classify_names(keys)
    assert roles["dense_4/kernel/Adam"].role == Role.SLOT and roles["dense_4/kernel/Adam"].slot_of == "dense_4/kernel"
    assert roles["orphan/Adam_1"].role == Role.VARIABLE  # no variable orphan
    assert roles["Adam/m/dense_3/kernel"].role == Role.SLOT  # tf-keras: Adam/iter names the optimizer
    assert roles["dense_7/kernel"].role == Role.VARIABLE and roles["global_step"].role == Role.OPTIMIZER
    for key in keys:
        if classify_name(key, keys).role != Role.VARIABLE:
            assert may_not_be_variable(key), key


def test_keras_optimizer_state_among_many_variables_is_found_without_a_copy_per_key(monkeypatch):
    """tf-keras slots were once looked for with a copy of every variable per variable (quadratic work in C, which
    no count of Python calls sees): every key is now looked up in one and the same set of variables."""
    from formats.concepts import roles

    seen: list[int] = []
    real = roles.parse_keras_slot

    def parse(full_name, variables):
        seen.append(id(variables))
        return real(full_name, variables)

    monkeypatch.setattr(roles, "parse_keras_slot", parse)
    n = 2000
    keys = [f"d{i}/kernel" for i in range(n)] + [f"Adam/m/d{i}/kernel" for i in range(n)] + ["Adam/iter"]
    found = roles.classify_names(keys)
    assert found["Adam/m/d1999/kernel"].slot_of == "d1999/kernel" and found["Adam/m/d7/kernel"].slot_name == "m"
    assert found["d5/kernel"].role == "variable" and found["Adam/iter"].role == "optimizer"
    assert len(seen) == 2 * n and len(set(seen)) == 1
