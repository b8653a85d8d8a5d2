"""Issue 38: the writing commands on name-based bundles, per tensor. The object graph ``convert --to tf-object``
builds is held as columns (:class:`~formats.ops.convert.graph_columns.GraphColumns`): its bytes are checked
against :class:`~formats.ops.convert.graph_build.GraphBuilder` + :func:`encode_object_graph` (the object
encoder, itself checked against the protobuf runtime in ``tests/test_proto_messages.py``) on generated graphs;
and the commands' Python calls are counted (``tests/call_counts.py``) on bundles of 10,000 and 40,000 tiny
tensors: linear growth, and a budget per tensor that the code before this change exceeded."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formats.concepts.object_graph_codec import encode_object_graph
from formats.ops.convert.graph_build import GraphBuilder
from formats.ops.convert.graph_columns import GraphColumns
from formats.ops.convert.name_to_object import _tree

from tests.call_counts import python_calls
from tests.scale_bundles import name_based

SIZES = (10_000, 40_000)
SLACK = 1.15
"""Calls at 4N may be at most this many times four times those at N."""

_SEGMENT = st.text(st.sampled_from("ab.c/_é0"), min_size=1, max_size=4)


def _build(cls, names, moved, slots):  # type: ignore[no-untyped-def]
    """The steps of ``convert --to tf-object``: a tree grown from the root, an optimizer found by name, variables,
    optimizer state moved under it, slot variables, and the save counter found by its path."""
    builder = cls()
    everything = names + ["\0optimizer", "\0save_counter"]
    if cls is GraphColumns:
        nodes = builder.grow(everything)
    else:  # (the tree of names GraphBuilder grows, as the conversion makes it for names that are not UTF-8)
        tree, ends = _tree(everything)
        placed = builder.grow(tree)
        nodes = [placed[id(end)] for end in ends]
    optimizer = builder.object(["optimizer"])
    for name, node in zip(names, nodes):
        builder.variable(node, name)
    for name in moved:
        builder.variable(builder.child(optimizer, name), name)
    for i, slot in slots:
        builder.slot(optimizer, nodes[i % len(names)], slot, f"{names[i % len(names)]}/{slot}")
    counter = builder.find("save_counter")
    builder.variable(counter, "save_counter")
    return builder, [builder.child_ids(n) for n in nodes], builder.find("optimizer")


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_SEGMENT, min_size=1, max_size=3).map("/".join), min_size=1, max_size=25, unique=True),
       st.lists(st.sampled_from(["beta1_power", "beta2_power", "x.y"]), unique=True),
       st.lists(st.tuples(st.integers(0, 50), st.sampled_from(["m", "v", "accumulator"])), max_size=8, unique=True))
def test_the_graph_as_columns_encodes_as_the_object_graph_does(names, moved, slots):
    columns, children, optimizer = _build(GraphColumns, names, moved, slots)
    objects, expected_children, expected_optimizer = _build(GraphBuilder, names, moved, slots)
    assert columns.encode() == objects.encode() == encode_object_graph(objects.nodes)
    assert encode_object_graph(columns.to_nodes()) == objects.encode()
    assert children == expected_children and optimizer == expected_optimizer
    assert columns.paths == [objects.paths.get(i) for i in range(len(objects.nodes))]
    assert [columns.path(i) for i in range(len(columns))] == [objects.path(i) for i in range(len(objects.nodes))]


@pytest.mark.parametrize("names, moved, slots", [
    (["optimizer/a", "optimizer/z", "b/c", "b"], ["beta1_power", "a", "x.y"], [(0, "m"), (2, "v"), (3, "m")]),
    (["/".join(f"s{i}" for i in range(3000)), "x"], ["beta2_power"], [(0, "m")]),  # deeper than the recursion limit
    (["a.b/c.d", "a.b/e", "save_counter/x"], [], [(1, "accumulator")]),
    (["a\0b/c", "a/c", "a\0/d", "a", "a/\0"], [], [(0, "m")]),  # NUL inside a name: sorted as segments still
    ([f"layer_{i}/unit_{j}/w" for i in range(60) for j in range(90)], ["beta1_power"], [(7, "m"), (5000, "v")]),
])  # (the last: more paths than are kept made)
def test_children_added_after_the_grown_ones_and_deep_paths_encode_as_the_object_graph_does(names, moved, slots):
    columns, children, optimizer = _build(GraphColumns, names, moved, slots)
    objects, expected_children, expected_optimizer = _build(GraphBuilder, names, moved, slots)
    assert columns.encode() == objects.encode()
    assert children == expected_children and optimizer == expected_optimizer
    assert [columns.path(i) for i in range(len(columns))] == [objects.path(i) for i in range(len(objects.nodes))]
    assert [columns.child_ids(i) for i in range(len(columns))] == \
        [objects.child_ids(i) for i in range(len(objects.nodes))]


def test_grow_refuses_a_graph_that_has_nodes_already():
    builder = GraphColumns()
    builder.child(0, "a")
    with pytest.raises(ValueError, match="from its root"):
        builder.grow(["b"])


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    folder = tmp_path_factory.mktemp("name_writers_scale")
    return [name_based(folder, n) for n in SIZES]


def _check_linear(counts: list[int], per_tensor: float, what: str) -> None:
    """Linear growth, and at most ``per_tensor`` calls per tensor at 40k (the writers read back with ``--jobs 1``:
    every call on this thread, whatever the cores)."""
    small, large = counts
    assert large <= SLACK * 4 * small, f"{what}: calls {counts} grow faster than the tensors"
    assert large <= per_tensor * SIZES[1] + 20_000, f"{what}: {large} calls for {SIZES[1]} tensors"


COMMANDS = {  # command line -> Python calls per tensor allowed at 40k; e0f0047 (before this change) made the second
    "convert --to tf-object": (["convert", "{p}", "-o", "{o}/ckpt", "--to", "tf-object", "--jobs", "1"], 185),  # 221
    "edit": (["edit", "{p}", "-o", "{o}/ckpt", "--exclude", "model/layer_0/*", "--jobs", "1"], 160),  # e0f0047: 174
    "report": (["report", "{p}", "-o", "{o}/report.html"], 105),  # e0f0047: 117
    "rename": (["rename", "{p}", "-o", "{o}/ckpt", "--map", "model=net", "--jobs", "1"], 106),  # e0f0047: 112
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_writing_command_grows_linearly_within_its_budget(bundles, run_cli, tmp_path, command):
    args, per_tensor = COMMANDS[command]
    counts = []
    for i, prefix in enumerate(bundles):
        out = tmp_path / f"out{i}"
        counts.append(python_calls(run_cli, [a.format(p=prefix, o=out) for a in args]))
    _check_linear(counts, per_tensor, command)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.binary(min_size=1, max_size=40), st.binary(max_size=300), max_size=200),
       st.sampled_from([64, 256, 4096]))
def test_a_table_written_in_one_loop_is_the_table_written_entry_by_entry(entries, block_size):
    """``TableWriter.add_all`` (the bundle index's writer) gives the bytes ``add`` gives for each entry in turn
    (prefix sharing, restarts, blocks cut at ``block_size``, an entry too large for one), and they read back."""
    import io

    from formats.io.sstable.table import read_table
    from formats.io.sstable.writer import TableWriter

    pairs = sorted(entries.items())
    one, each = io.BytesIO(), io.BytesIO()
    table = TableWriter(one, block_size)
    table.add(b"", b"header")
    table.add_all(pairs)
    table.finish()
    table = TableWriter(each, block_size)
    table.add(b"", b"header")
    for key, value in pairs:
        table.add(key, value)
    table.finish()
    assert one.getvalue() == each.getvalue()
    assert [(k, bytes(v)) for k, v in read_table(one.getvalue(), "index")] == [(b"", b"header"), *pairs]


def test_a_table_refuses_keys_out_of_order_in_one_loop():
    import io

    from formats.io.sstable.writer import TableWriter

    table = TableWriter(io.BytesIO())
    with pytest.raises(ValueError, match="strictly increasing"):
        table.add_all([(b"b", b""), (b"a", b"")])
