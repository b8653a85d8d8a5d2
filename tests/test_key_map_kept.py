"""Issue 38: ``ls --tree`` of an object-based checkpoint maps its keys to the graph's attributes once, not once to
label them and again to place them (at 10^6 keys, 1.2 s each): the graph keeps the map its labels made for the
tree's own call with the same keys, and only when the tree asks it to."""
from __future__ import annotations

from typing import Any

import pytest

from formats.concepts.object_graph import ObjectGraph
from formats.tf_bundle.checkpoint import BundleCheckpoint
from tests.scale_bundles import name_based, object_based


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> str:
    return object_based(name_based(tmp_path_factory.mktemp("kept"), 3_000))


def _graph_and_keys(bundle: str) -> tuple[ObjectGraph, list[str]]:
    ckpt = BundleCheckpoint(bundle)
    graph = ckpt.object_graph
    assert graph is not None
    return graph, list(ckpt)


def test_a_map_is_kept_only_when_asked_and_taken_once(bundle: str) -> None:
    graph, keys = _graph_and_keys(bundle)
    assert graph.map_keys(keys) is not graph.map_keys(keys)  # not asked: none kept
    graph.keep_next_key_map()
    first = graph.map_keys(keys)
    assert graph.map_keys(list(keys)) is first  # equal keys (other list, same strings): the kept map
    assert graph.map_keys(keys) is not first  # taken once
    graph.keep_next_key_map()
    first = graph.map_keys(keys)
    other = graph.map_keys(keys[1:])
    assert other is not first and len(other.key_index.keys) == len(keys) - 1  # other keys: mapped anew
    assert graph.map_keys(keys) is not first  # (and the kept one let go)
    graph.keep_next_key_map()
    first = graph.map_keys(keys)
    graph.keep_next_key_map(False)
    assert graph.map_keys(keys) is not first
    assert dict(first.items()) == dict(graph.map_keys(keys).items())


@pytest.mark.parametrize("args", [[], ["--json"], ["--filter", "model/layer_1*"], ["--no-optimizer"]])
def test_ls_tree_maps_its_keys_once_and_prints_the_same(bundle: str, run_cli: Any, monkeypatch: pytest.MonkeyPatch,
                                                        args: list[str]) -> None:
    calls: list[int] = []
    original = ObjectGraph._map_keys
    monkeypatch.setattr(ObjectGraph, "_map_keys", lambda self, keys: calls.append(len(keys)) or original(self, keys))
    kept = run_cli("ls", "--tree", bundle, *args)
    assert kept.exit_code == 0, kept.output
    assert len(calls) == (2 if "--filter" in args else 1), calls
    monkeypatch.setattr(ObjectGraph, "keep_next_key_map", lambda self, keep=True: None)
    calls.clear()
    again = run_cli("ls", "--tree", bundle, *args)
    assert len(calls) == 2
    assert again.exit_code == 0 and again.output == kept.output
    assert "unit_99" in kept.output


def test_the_tree_lets_go_of_a_map_it_kept(bundle: str) -> None:
    from formats.ops.inspect.tree import build_tree

    ckpt = BundleCheckpoint(bundle)
    roles = {entry.role for entry in ckpt.entries_by_batch(list(ckpt))}  # labelled before the tree: the tree's own
    assert "variable" in roles  # call keeps its map (asked to), which the tree then lets go
    build_tree(ckpt)
    graph = ckpt.object_graph
    assert graph is not None and graph._kept_map is None and not graph._keep_map
