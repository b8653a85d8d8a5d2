"""Issue 14 #23: ``verify`` must not pass what is broken - slices that overlap although their sizes add
up, an object graph that does not parse or points at missing nodes - nor pass a reference-dtype (``string_ref``)
tensor, which TensorFlow's reader refuses (issue 24, item 4)."""
from __future__ import annotations

import json

import numpy as np
import pytest

import formats
from formats.concepts.slice_key import encode_slice_key
from formats.core.errors import CorruptCheckpointError

from .craft import bundle, entry, graph_node, object_bundle, string_tensor

FLOAT, STRING_REF = 1, 107


def _verify(run_cli, prefix) -> tuple[int, list[tuple[str, str]]]:
    result = run_cli("verify", "--json", prefix)
    doc = json.loads(result.stdout)
    return result.exit_code, [(p["where"], p["message"]) for p in doc["problems"]]


def _partitioned(tmp_path, slices):
    values = np.arange(4, dtype="<f4")
    entries, data = [(b"p", entry(FLOAT, [4], slices=[[s] for s in slices]))], b""
    for start, length in slices:
        raw = values[start:start + length].tobytes()
        entries.append((encode_slice_key("p", [(start, length)]), entry(FLOAT, [length], len(data), len(raw), raw)))
        data += raw
    return bundle(tmp_path, "c", entries, data)


def test_overlapping_slices_whose_sizes_add_up(tmp_path, run_cli):
    prefix = _partitioned(tmp_path, [(0, 3), (1, 1)])  # 3 + 1 elements for a shape of 4, [1:2] twice
    assert _verify(run_cli, prefix) == (1, [("p", "partitioned tensor 'p': slices [0:3] and [1:2] overlap")])
    with formats.open_checkpoint(prefix) as ckpt, pytest.raises(CorruptCheckpointError, match="overlap"):
        ckpt["p"].read()


def test_slices_that_tile_are_read_whole(tmp_path, run_cli):
    prefix = _partitioned(tmp_path, [(0, 3), (3, 1)])
    assert _verify(run_cli, prefix) == (0, [])
    with formats.open_checkpoint(prefix) as ckpt:
        assert ckpt["p"].read().tolist() == [0.0, 1.0, 2.0, 3.0]


def test_slices_leaving_a_gap(tmp_path, run_cli):
    prefix = _partitioned(tmp_path, [(0, 2), (3, 1)])
    assert _verify(run_cli, prefix) == (1, [("p", "partitioned tensor 'p': slices cover 3 of its 4 elements (a gap)")])


def test_object_graph_that_does_not_parse(tmp_path, run_cli):
    prefix = object_bundle(tmp_path, "c", b"\x0a\x05ab", [(b"w", [1], b"\x00" * 4)])
    assert _verify(run_cli, prefix) == (1, [("_CHECKPOINTABLE_OBJECT_GRAPH", "the object graph "
                                             "(_CHECKPOINTABLE_OBJECT_GRAPH) does not parse: length-delimited "
                                             "field runs past the message")])


def test_object_graph_pointing_at_missing_nodes(tmp_path, run_cli):
    prefix = object_bundle(tmp_path, "c", [graph_node([(7, "net")])], [(b"w", [1], b"\x00" * 4)])
    assert _verify(run_cli, prefix) == (1, [("_CHECKPOINTABLE_OBJECT_GRAPH",
                                             "object graph node 0 refers to node 7, but there are 1 nodes")])


REFUSED = "TensorFlow's checkpoint reader refuses it (a checkpoint stores values, never references)"


def _reference_bundle(tmp_path):
    data, crc = string_tensor([b"hello", b"world"])
    f32 = np.arange(2, dtype="<f4").tobytes()
    return bundle(tmp_path, "c", [(b"s", entry(STRING_REF, [2], 0, len(data), crc=crc)),
                                  (b"f", entry(FLOAT + 100, [2], len(data), len(f32), data=f32))], data + f32)


def test_reference_dtypes_are_refused_by_verify(tmp_path, run_cli):
    # TensorFlow's reader aborts on them ("Unexpected type: 107"; tests/interop/test_loader_refusals_tf.py)
    assert _verify(run_cli, _reference_bundle(tmp_path)) == (1, [
        ("f", f"reference dtype float32_ref (101): {REFUSED}"), ("s", f"reference dtype string_ref (107): {REFUSED}")])


@pytest.mark.parametrize("command", [("show", "{p}", "s"), ("show", "{p}", "f"), ("diff", "{p}", "{p}"),
                                     ("extract", "{p}", "s", "-o", "{o}")])
def test_reference_dtypes_are_refused_by_every_reading_command(tmp_path, run_cli, command):
    prefix = _reference_bundle(tmp_path)
    result = run_cli(*(a.format(p=prefix, o=tmp_path / "out") for a in command))
    assert result.exit_code == 3
    assert "reference dtype " in result.stderr and REFUSED in result.stderr
    with formats.open_checkpoint(prefix) as ckpt:
        assert [(k, e.dtype) for k, e in ckpt.items()] == [("f", "float32_ref"), ("s", "string_ref")]
        assert ckpt["s"].stored_range() is None and ckpt["f"].stored_range() is None
        with pytest.raises(formats.UnsupportedError, match="tensor 's': reference dtype string_ref"):
            ckpt["s"].read()


def test_reference_dtypes_are_left_out_of_a_conversion_only_when_asked(tmp_path, run_cli):
    prefix = _reference_bundle(tmp_path)
    result = run_cli("convert", prefix, "-o", tmp_path / "o.npz", "--to", "npz", "--json")
    assert result.exit_code == 1 and not (tmp_path / "o.npz").exists()
    problems = json.loads(result.stdout)["problems"]
    assert [(p["key"], p["severity"]) for p in problems] == [("f", "error"), ("s", "error")]
    result = run_cli("convert", prefix, "-o", tmp_path / "o.npz", "--to", "npz", "--json", "--skip-unreadable")
    assert result.exit_code == 0
    problems = json.loads(result.stdout)["problems"]
    assert [(p["key"], p["severity"]) for p in problems] == [("f", "warning"), ("s", "warning")]
