"""Issue 24 #21: object graphs whose root has many children take linear work. ``convert --to tf-object``
of flat keys, ``rename`` and ``ls --tree`` each scanned the root's children once per child (40k children:
10.5 s to rename, 50k flat keys: 45 s to convert). Operations are counted here, not seconds: reads of an
edge's name (a scan reads every sibling's) and how often a node is asked whether it is an optimizer."""
from __future__ import annotations

import json
import struct

import pytest

from formats.concepts import object_graph
from formats.concepts.object_graph import ChildRef

N = 3000  # a scan per child reads N * N / 2 = 4.5 million names; linear work reads a few per edge


class _Counted(ChildRef):
    """A ChildRef counting how often its ``local_name`` is read."""

    reads = 0

    def __getattribute__(self, name: str):  # type: ignore[no-untyped-def]
        if name == "local_name":
            type(self).reads += 1
        return super().__getattribute__(name)


@pytest.fixture
def counted(monkeypatch):
    """Edges the graph builder and the rename create count the reads of their names."""
    from formats.ops.convert import graph_build, rename_objects

    _Counted.reads = 0
    monkeypatch.setattr(graph_build, "ChildRef", _Counted)
    monkeypatch.setattr(rename_objects, "ChildRef", _Counted)
    return _Counted


def _flat_safetensors(path, n: int) -> str:
    header = {f"k{i}": {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]} for i in range(n)}
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(4 * n))
    return str(path)


@pytest.fixture
def wide(tmp_path, run_cli):
    """A tf-object checkpoint whose root has N children (k0 .. k{N-1}), converted from flat keys."""
    out = tmp_path / "wide" / "ckpt"
    assert run_cli("convert", _flat_safetensors(tmp_path / "flat.safetensors", N), "--to", "tf-object",
                   "-o", out).exit_code == 0
    return out


def test_converting_flat_keys_looks_children_up_by_name(tmp_path, run_cli, counted):
    out = tmp_path / "o" / "ckpt"
    result = run_cli("convert", _flat_safetensors(tmp_path / "flat.safetensors", N), "--to", "tf-object", "-o", out)
    assert result.exit_code == 0, result.output
    assert counted.reads <= 4 * N, counted.reads
    assert len(json.loads(run_cli("ls", "--json", out).stdout)["tensors"]) == N + 2  # the graph, the save_counter


def test_renaming_under_a_wide_root_looks_children_up_by_name(wide, tmp_path, run_cli, counted):
    out = tmp_path / "r" / "ckpt"
    result = run_cli("rename", wide, "-o", out, "--map", "k7=seven")
    assert result.exit_code == 0, result.output
    assert counted.reads <= 4 * N, counted.reads
    keys = {t["key"] for t in json.loads(run_cli("ls", "--json", out).stdout)["tensors"]}
    assert "seven/.ATTRIBUTES/VARIABLE_VALUE" in keys and "k7/.ATTRIBUTES/VARIABLE_VALUE" not in keys
    assert len(keys) == N + 2  # the graph, the save_counter


def test_a_collision_among_many_children_is_still_found(wide, tmp_path, run_cli):
    result = run_cli("rename", wide, "-o", tmp_path / "c" / "ckpt", "--map", "k7=k8")
    assert result.exit_code == 1
    assert "'k7' and 'k8' would both become 'k8'" in result.stderr


def test_each_node_is_asked_once_whether_it_is_an_optimizer(wide, run_cli, monkeypatch):
    calls = []
    looks = object_graph._looks_like_optimizer
    monkeypatch.setattr(object_graph, "_looks_like_optimizer", lambda graph, node: calls.append(node) or looks(graph, node))
    result = run_cli("ls", "--tree", wide)
    assert result.exit_code == 0 and result.stdout.splitlines()[-1].startswith(f"{wide}: tf-object, {N + 2} tensors")
    assert len(calls) == len(set(calls)) <= N + 2
