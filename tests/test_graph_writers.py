"""Issue 38: the object-graph writers (``convert --to tf-object``, ``convert --to tf-name`` of an object-based
bundle, ``rename``, ``edit``) write the same bytes as before they were made cheaper per tensor: the SHA-256 of
every file each case of :mod:`tests.graph_writer_cases` writes, recorded at 68bca3f, and their work (Python
calls, not seconds) grows linearly with the objects of the graph."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.call_counts import calls_of
from tests.graph_writer_cases import CASES, argv, scale_bundles, written

GOLDEN = json.loads((Path(__file__).parent / "data" / "graph_writers" / "golden.json").read_text())


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    from click.testing import CliRunner

    from tests.conftest import SHIPPED

    def run(*args: str):
        return CliRunner().invoke(SHIPPED, [str(a) for a in args], catch_exceptions=False)

    return scale_bundles(tmp_path_factory.mktemp("graph_writers"), run)


@pytest.mark.parametrize("case", list(CASES))
def test_written_files_are_byte_for_byte_as_before(bundles, run_cli, tmp_path, case):
    out = str(tmp_path / "out")
    result = run_cli(*argv(case, bundles, out))
    assert result.exit_code == GOLDEN[case]["exit"], result.output
    assert written(out) == GOLDEN[case]["files"]


def _graph(n: int):
    """The graph ``convert --to tf-object`` builds for the scale bundle of ``n`` tensors (100 per layer)."""
    from formats.ops.convert.graph_build import GraphBuilder

    builder = GraphBuilder()
    tree: dict = {}
    for i in range(n):
        tree.setdefault("model", {}).setdefault(f"layer_{i // 100}", {}).setdefault(f"unit_{i % 100}", {})["w"] = {}
    placed = builder.grow(tree)
    for layer in tree["model"].values():
        for unit in layer.values():
            node = placed[id(unit["w"])]
            builder.variable(node, builder.paths[node])
    return builder


N = 2000
SLACK = 2.3
"""The calls from 2N to 4N may be at most this many times those from N to 2N (linear: 2; quadratic: 4)."""


@pytest.mark.parametrize("step", ["grow", "encode", "decode", "nodes", "paths", "small paths", "checkpointed"])
def test_graph_work_grows_linearly_and_costs_few_calls_per_object(step, monkeypatch):
    """Building, encoding, decoding and walking a graph of 2 objects per tensor: Python calls grow linearly (or
    not at all), and stay few per object (each once cost several calls per field: a tag, a varint, a frame).
    ``nodes`` builds the node objects of a decoded graph (built when asked for); ``paths`` and ``checkpointed``
    are given them built. Graphs as large as these are walked on arrays; a small one (at most
    ``SMALL_NODES``) in plain Python, which is measured here too."""
    from formats.concepts import object_graph_table
    from formats.concepts.object_graph import ObjectGraph
    from formats.concepts.object_graph_codec import checkpointed_nodes, decode_object_graph, encode_object_graph

    monkeypatch.setattr(object_graph_table, "SMALL_NODES", -1 if step != "small paths" else 1 << 30)
    counts = []
    for n in (N, 2 * N, 4 * N):
        builder = _graph(n)
        data = encode_object_graph(builder.nodes)
        graph = decode_object_graph(data)
        nodes = list(graph.nodes) if step in ("paths", "small paths", "checkpointed") else None
        function, arg = {"grow": (_graph, n), "encode": (encode_object_graph, builder.nodes),
                         "decode": (decode_object_graph, data), "nodes": (list, graph.nodes),
                         "paths": (ObjectGraph, nodes), "small paths": (ObjectGraph, nodes),
                         "checkpointed": (checkpointed_nodes, nodes)}[step]
        counts.append(calls_of(function, arg)[1])
        objects = len(builder.nodes)
    first, second = counts[1] - counts[0], counts[2] - counts[1]
    assert counts[0] > 0 and second <= SLACK * first + 200, counts
    per_object = {"grow": 18, "encode": 20, "decode": 22, "nodes": 6, "paths": 1, "small paths": 5,
                  "checkpointed": 4}[step]  # 68bca3f: encode 41, paths 3 (nodes built by decode)
    assert counts[2] <= per_object * objects + 400, (counts, objects)


def test_a_copied_tensor_damaged_on_its_way_is_named_and_nothing_is_written(bundles, run_cli, tmp_path, monkeypatch):
    """The read-back of data files copied whole: one read per run of tensors, a CRC per tensor; a byte changed
    in the copy (not in the input) fails the write, naming the tensor, and leaves no output."""
    from formats.tf_bundle import writer

    copy = writer._copy_flushing

    def copy_then_damage(path, dst_fd, size, dst_offset):  # type: ignore[no-untyped-def]
        copy(path, dst_fd, size, dst_offset)
        # tensor 4321 (16 bytes each, in the order generated) starts with float32(4321)'s low byte, 0x00
        os.pwrite(dst_fd, b"\xab", dst_offset + 16 * 4321)

    monkeypatch.setattr(writer, "_copy_flushing", copy_then_damage)
    out = tmp_path / "out"
    result = run_cli("rename", bundles["name"], "-o", out / "ckpt-1", "--map", "model=net")
    assert result.exit_code == 4, result.output
    assert "net/layer_43/unit_21/w" in result.output and "copied bytes do not match their checksum" in result.output
    assert not out.exists() or not any(out.iterdir())
