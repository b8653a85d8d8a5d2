"""Issue 38: every command's work grows linearly with the number of tensors. Operations are counted, not
seconds: the Python calls each command makes (``cProfile``'s call counts, on one thread: ``--jobs 1``) on
name-based and object-based bundles of N, 2N and 4N tiny tensors, and on object-based ones two thirds of whose
tensors are slot variables. Linear work adds as many calls from 2N to 4N as twice those from N to 2N (whatever the
start costs); work quadratic in the tensors adds four times as many (``convert --to tf-object`` once walked its
objects with ``list.pop(0)``, ``rename`` and ``ls --tree`` once scanned every sibling per child: see also
``test_object_graph_scale.py``)."""
from __future__ import annotations

import json

import pytest


from tests.call_counts import python_calls
from tests.scale_bundles import name_based, name_based_slots, object_based

N = 600
N_SLOTS = 1200
"""The slot variables' bundles start larger: their work rises in steps (a batch of spans, a unit of work) whose
places put a step between 2N and 4N at N = 600 (diff: calls from 2N to 4N 2.5 times those from N to 2N, and from
4N to 8N 1.8 times those from 2N to 4N); from 1,200 on, two steps of size double (1.96-2.18 times)."""
SLACK = 2.3
"""The calls from 2N to 4N may be at most this many times those from N to 2N (linear: 2; quadratic: 4)."""


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    """``{layout: [prefix of N, 2N, 4N tensors]}``: name-based, the same converted to object-based, and object-based
    with two thirds of the tensors Adam slot variables (labelling those was once quadratic)."""
    folder = tmp_path_factory.mktemp("scale")
    named = [name_based(folder, n) for n in (N, 2 * N, 4 * N)]
    slotted = [object_based(name_based_slots(folder, n)) for n in (N_SLOTS, 2 * N_SLOTS, 4 * N_SLOTS)]
    return {"name": named, "object": [object_based(prefix) for prefix in named], "slots": slotted}


def _calls(run_cli, args: list[str]) -> int:
    return python_calls(run_cli, args)


COMMANDS = {
    "ls": lambda p, out: ["ls", p],
    "ls --tree": lambda p, out: ["ls", "--tree", p],
    "verify": lambda p, out: ["verify", "--jobs", "1", p],
    "diff": lambda p, out: ["diff", "--jobs", "1", p, p],
    "stats": lambda p, out: ["stats", "--jobs", "1", p],
    "rename": lambda p, out: ["rename", "--jobs", "1", p, "-o", f"{out}/ckpt", "--map", "model=net"],
    "edit": lambda p, out: ["edit", "--jobs", "1", p, "-o", f"{out}/ckpt", "--exclude", "model/layer_0/*"],
    "convert --to tf-object": lambda p, out: ["convert", "--jobs", "1", p, "-o", f"{out}/ckpt", "--to", "tf-object"],
    "convert --to tf-name": lambda p, out: ["convert", "--jobs", "1", p, "-o", f"{out}/ckpt", "--to", "tf-name"],
    "convert --to safetensors": lambda p, out: ["convert", "--jobs", "1", p, "-o", f"{out}/all.safetensors", "--to",
                                                "safetensors"],
    "convert --to npz": lambda p, out: ["convert", p, "-o", f"{out}/all.npz", "--to", "npz"],
    "extract": lambda p, out: ["extract", p, "-o", f"{out}/all.npz"],
}


@pytest.mark.parametrize("layout", ["name", "object", "slots"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_work_grows_linearly_with_the_tensors(bundles, run_cli, tmp_path, monkeypatch, layout, command):
    """Object-based graphs are decoded and walked as small ones are (lists, plain Python) at all three sizes: the
    sizes straddle the line to the large graphs' columns (64 KiB of graph), and the fixed cost of one side, paid at
    4N alone, is not growth (it made the oldest numpy's calls from 2N to 4N 2.2-2.3 times those from N to 2N). The
    columns' growth is counted from 10^4 to 4 x 10^4 tensors for `verify`, `ls --tree` and `ls --names`
    (tests/test_object_graph_columns.py)."""
    if command == ("convert --to tf-name" if layout == "name" else "convert --to tf-object"):
        pytest.skip("the checkpoint is already in that layout")
    if layout != "name":
        from formats.concepts import object_graph_codec, object_graph_table

        monkeypatch.setattr(object_graph_codec, "SMALL_GRAPH_BYTES", 1 << 30)
        monkeypatch.setattr(object_graph_table, "SMALL_NODES", 1 << 30)
    _calls(run_cli, COMMANDS[command](bundles[layout][0], str(tmp_path / "warm")))  # imports, caches: not counted
    counts = []
    for i, prefix in enumerate(bundles[layout]):
        counts.append(_calls(run_cli, COMMANDS[command](prefix, str(tmp_path / f"out{i}"))))
    first, second = counts[1] - counts[0], counts[2] - counts[1]
    assert first > 0, counts
    assert second <= SLACK * first, f"{command} ({layout}-based): calls {counts} grow faster than the tensors"


def test_the_bundles_hold_what_they_say(bundles, run_cli):
    """The inputs themselves: N, 2N, 4N tensors (plus the graph and save counter once object-based)."""
    from formats import open_checkpoint

    for layout, extra, first in (("name", 0, N), ("object", 2, N), ("slots", 5, N_SLOTS)):  # (the step, two betas)
        for n, prefix in zip((first, 2 * first, 4 * first), bundles[layout]):
            listed = json.loads(run_cli("ls", "--json", prefix).stdout)["tensors"]
            assert len(listed) == n + extra
            if layout == "slots":
                with open_checkpoint(prefix) as ckpt:
                    roles = [tensor.role for tensor in ckpt.values()]
                assert roles.count("slot") == 2 * n // 3 and roles.count("variable") == n // 3


def test_local_units_hold_many_small_tensors_or_one_big_one() -> None:
    """On local threads a unit is up to 1 MiB of small tensors, at most 512 of them, or one bigger tensor alone
    (a unit per tiny tensor cost a hand-over between threads each)."""
    from formats.discover.units import LOCAL_UNIT_BYTES, LOCAL_UNIT_ITEMS, group_keys

    assert (LOCAL_UNIT_BYTES, LOCAL_UNIT_ITEMS) == (1 << 20, 512)
    sizes = [(f"t{i}", 16) for i in range(1100)] + [("big", 4 << 20), ("after", 16)]
    units = list(group_keys(sizes, LOCAL_UNIT_BYTES, LOCAL_UNIT_ITEMS))
    assert [len(keys) for keys, _ in units] == [512, 512, 76, 1, 1]
    assert units[3] == (("big",), 4 << 20)
    assert [k for keys, _ in units for k in keys] == [k for k, _ in sizes]


def test_verify_reports_every_tensor_in_order_whatever_the_units(tmp_path, run_cli) -> None:
    """A damaged tiny tensor among 1,500 (three local units) is reported by key, once, and the count is whole."""
    prefix = name_based(tmp_path, 1500)
    data = next(p for p in (tmp_path / "name-1500").iterdir() if ".data-" in p.name)
    raw = bytearray(data.read_bytes())
    raw[16 * 700] ^= 0xFF  # the 701st tensor's first byte (16 bytes each, written in the order given)
    data.write_bytes(bytes(raw))
    result = run_cli("verify", "--json", prefix)
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    report = report[0] if isinstance(report, list) else report
    assert report["tensors"] == 1500
    assert [p["where"] for p in report["problems"]] == ["model/layer_7/unit_0/w"]


def test_natural_order_sorts_numbers_by_value() -> None:
    """The listing's sort key (now one split per key, each digit run worked out once) orders as before: numbers
    by value, keys equal but for leading zeros in text order, unicode digits as digits."""
    import random
    import re

    from formats.core.natural import natural_order

    keys = ["vars/10", "vars/2", "dense_10/kernel", "dense_2/kernel", "ckpt-3", "ckpt-10", "a7", "a007", "a07",
            "layer_99/w", "layer_100/w", "x", "x1y22z333", "x1y22z4"]
    assert sorted(keys, key=natural_order) == [
        "a007", "a07", "a7", "ckpt-3", "ckpt-10", "dense_2/kernel", "dense_10/kernel", "layer_99/w", "layer_100/w",
        "vars/2", "vars/10", "x", "x1y22z4", "x1y22z333"]

    def before(key: str) -> tuple[str, str]:  # the former key, one regex callback per digit run
        def number(m: re.Match[str]) -> str:
            digits = m.group().lstrip("0")
            return (chr(0x30 + len(digits)) if len(digits) <= 9 else "9" + chr(0x30 + len(digits))) + digits
        return re.sub(r"\d+", number, key), key

    rng = random.Random(38)
    alphabet = "ab/_-0123456789\u0663\u0660"
    for _ in range(3000):
        key = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        assert natural_order(key) == before(key), key
