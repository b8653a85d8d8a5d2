"""Hostile ``saved_model.pb`` / ``.pbtxt`` files: each is one clean error line naming the file (exit 3),
never a hang, a traceback, deep recursion or an allocation beyond what the file holds."""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import formats
from formats.saved_model.objects import MAX_OBJECTS

from .craft_saved_model import (FLOAT, MODULE, field, meta_graph, module_graph, object_graph, saved_model,
                                saved_model_dir, user_object, variable)


def _error(result, path: Path) -> str:
    """The one error line (hints allowed after it), which must name ``path``."""
    assert result.exit_code == 3, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    assert lines and lines[0].startswith(f"ckpt: error: {path}: "), result.stderr
    assert all(line.startswith("  hint: ") for line in lines[1:])
    return lines[0][len(f"ckpt: error: {path}: "):]


@pytest.fixture
def model(tmp_path):
    """A SavedModel directory with corpus module/1's variables; write its saved_model.pb yourself."""
    d = saved_model_dir(tmp_path / "m", saved_model(meta_graph(graph=module_graph())))
    (d / "saved_model.pb").unlink()
    return d


def test_a_fifo_is_refused_without_opening_it(model, run_cli):
    os.mkfifo(model / "saved_model.pb")
    assert _error(run_cli("ls", model), model / "saved_model.pb") == "not a regular file (a device, pipe or directory)"


def test_a_symlink_to_dev_zero_is_refused(model, run_cli):
    os.symlink("/dev/zero", model / "saved_model.pb")
    assert _error(run_cli("verify", model), model / "saved_model.pb") == \
        "not a regular file (a device, pipe or directory)"


def test_a_sparse_file_beyond_protobufs_limit_is_not_read(model, run_cli):
    with open(model / "saved_model.pb", "wb") as f:
        f.truncate(2 << 30)
    assert _error(run_cli("ls", model), model / "saved_model.pb") == \
        "2,147,483,648 bytes: larger than protobuf's 2 GiB limit"


@pytest.mark.parametrize("data, message", [
    (b"", "the SavedModel holds no MetaGraph"),
    (b"\xff" * 64, "not a SavedModel protocol buffer (truncated or overlong varint)"),
    (field(2, b"\x3a\xff\xff\xff\xff\x0f"), "not a SavedModel protocol buffer (length-delimited field runs past "
                                            "the message)"),
    (field(1, b"x"), "not a SavedModel protocol buffer (field 1 is length-delimited where a number was expected)"),
    (b"\x12" + b"\x80" * 9 + b"\x01", "not a SavedModel protocol buffer (length-delimited field runs past the "
                                      "message)"),
])
def test_bytes_that_are_not_a_saved_model(model, run_cli, data, message):
    (model / "saved_model.pb").write_bytes(data)
    assert _error(run_cli("ls", model), model / "saved_model.pb") == message


def test_a_truncated_saved_model(model, run_cli):
    whole = (MODULE / "saved_model.pb").read_bytes()
    (model / "saved_model.pb").write_bytes(whole[:len(whole) // 2])
    assert _error(run_cli("ls", model), model / "saved_model.pb").startswith("not a SavedModel protocol buffer (")


def test_too_many_signatures_is_bounded(model, run_cli):
    entries = field(5, field(1, "s")) * 70_000  # 70,000 signature_def map entries in 420 KB
    (model / "saved_model.pb").write_bytes(saved_model(entries))
    assert _error(run_cli("ls", model), model / "saved_model.pb") == \
        "not a SavedModel protocol buffer (more than 65,536 fields in one message)"


def test_millions_of_empty_objects_are_refused_before_they_are_made(model, run_cli):
    graph = field(1, b"") * (MAX_OBJECTS + 1)  # 256 KiB of empty SavedObjects
    (model / "saved_model.pb").write_bytes(saved_model(meta_graph(graph=graph)))
    result = run_cli("ls", model)  # keys come from the variables: the graph is not decoded
    assert result.exit_code == 0
    assert _error(run_cli("ls", "--names", model), model / "saved_model.pb") == \
        f"the SavedObjectGraph holds more than {MAX_OBJECTS:,} objects"
    result = run_cli("verify", "--json", model)
    assert result.exit_code == 1 and '"where": "saved_model.pb"' in result.stdout


def test_millions_of_references_are_refused(model, run_cli):
    from formats.saved_model.objects import MAX_EDGES

    node = field(1, b"") * 1000  # an object with 1,000 empty children (node 0, no name), 2 KB
    (model / "saved_model.pb").write_bytes(saved_model(meta_graph(graph=field(1, node) * (MAX_EDGES // 1000 + 1))))
    assert _error(run_cli("ls", "--names", model), model / "saved_model.pb") == \
        f"the SavedObjectGraph holds more than {MAX_EDGES:,} references between objects"


def test_node_ids_out_of_range(model, run_cli):
    graph = object_graph([user_object([(1, "dense"), (7, "steps")]), user_object([(-1, "w")])])
    (model / "saved_model.pb").write_bytes(saved_model(meta_graph(graph=graph)))
    assert _error(run_cli("ls", "--tree", model), model / "saved_model.pb") == \
        "object graph node 0 refers to node 7, but there are 2 nodes"


def _chain(depth: int, name: str = "x") -> list[bytes]:
    """Objects root -> x -> x -> ... (``depth`` edges, each also pointing back to the root) -> a variable."""
    return [user_object([(i + 1, name), (0, "root_again")]) for i in range(depth)] + \
        [variable("deep/w", FLOAT, [2])]


def test_cycles_and_a_chain_as_deep_as_allowed(tmp_path, run_cli):
    from formats.concepts.object_graph import MAX_NESTING
    from formats.tf_bundle.writer import write_checkpoint

    d = saved_model_dir(tmp_path / "m", saved_model(meta_graph(graph=object_graph(_chain(MAX_NESTING)))), None)
    key = "/".join(["x"] * MAX_NESTING) + "/.ATTRIBUTES/VARIABLE_VALUE"
    write_checkpoint(str(d / "variables" / "variables"), {key: np.ones(2, np.float32)})
    for args in (["ls", "--names", "--json"], ["ls", "--tree", "--json"], ["verify"]):
        result = run_cli(*args, d)
        assert result.exit_code == 0, (args, result.output)
    assert json.loads(run_cli("ls", "--names", "--json", d).stdout)["tensors"][0]["name"] == "deep/w"


def test_a_chain_deeper_than_allowed(model, run_cli):
    from formats.concepts.object_graph import MAX_NESTING

    (model / "saved_model.pb").write_bytes(saved_model(meta_graph(graph=object_graph(_chain(3000)))))
    assert run_cli("ls", model).exit_code == 0  # the keys need no graph
    for args in (["ls", "--names"], ["ls", "--tree"]):
        assert _error(run_cli(*args, model), model / "saved_model.pb") == \
            f"the SavedObjectGraph nests objects more than {MAX_NESTING} deep"


def test_object_paths_far_larger_than_the_file(model, run_cli):
    from formats.concepts.object_graph import MAX_PATH_BYTES

    long = "n" * (1 << 20)  # one 1 MiB name, reached through 100 edges: 100 MiB of paths from a 1 MiB file
    graph = object_graph([user_object([(1, long)]), user_object([(2, f"a{i}") for i in range(100)]),
                          variable("v", FLOAT, [])])
    (model / "saved_model.pb").write_bytes(saved_model(meta_graph(graph=graph)))
    assert _error(run_cli("ls", "--names", model), model / "saved_model.pb") == \
        f"the SavedObjectGraph's object paths add up to more than {MAX_PATH_BYTES >> 20} MiB"


def test_a_function_signature_nested_beyond_the_limit(model, run_cli):
    value = field(33, field(1, "x") + field(3, FLOAT))
    for _ in range(200):
        value = field(52, field(1, value))  # tuple_value { values { ... } }
    function = field(3, value) + field(4, value)
    nodes = [user_object([(1, "f")]), field(6, field(1, "fn"))]
    (model / "saved_model.pb").write_bytes(saved_model(meta_graph(graph=object_graph(nodes, {"fn": function}))))
    assert _error(run_cli("ls", "--tree", model), model / "saved_model.pb") == \
        "concrete function 'fn' does not parse (a function signature nested too deeply)"


@pytest.mark.parametrize("text, message", [
    (b"meta_graphs { " * 5000, "messages nested too deeply"),
    (b"meta_graphs { meta_info_def { tags: \"serve\" ", "unexpected end of text"),
    (b"saved_model_schema_version: 1 \x00", "unexpected character at byte 30"),
    (b"saved_model_schema_version: one", "invalid literal for int() with base 0: 'one'"),
])
def test_hostile_text_format(model, run_cli, text, message):
    (model / "saved_model.pbtxt").write_bytes(text)
    assert _error(run_cli("ls", model), model / "saved_model.pbtxt") == \
        f"not a SavedModel in protobuf text format ({message})"


MUTATION_CASES = int(os.environ.get("CKPT_SAVED_MODEL_MUTATION_CASES", "150"))
MUTATION_SEED = int(os.environ.get("CKPT_MUTATION_SEED", "20261122"))


def _exercise(directory: Path) -> None:
    from formats.ops.inspect.tree import build_tree

    with formats.open_checkpoint(directory) as ckpt:
        _ = [(e.name, e.role, e.slot_of) for e in ckpt.values()]
        _ = ckpt.metadata, ckpt.problems()
        build_tree(ckpt)


@pytest.mark.skipif(not hasattr(signal, "SIGALRM"), reason="needs SIGALRM")
def test_mutated_saved_model_pbs_fail_cleanly(tmp_path):
    """Seeded truncations, flips and splices of each corpus saved_model.pb: success or a CheckpointError
    with a message, within 5 s and 16x the file's size in memory."""
    from formats.core.errors import CheckpointError

    from .test_mutation import _alarm, _mutate, _Timeout

    rng = random.Random(MUTATION_SEED)
    sources = [MODULE, MODULE.parents[2] / "saved_models" / "tf_keras_model",
               MODULE.parents[2] / "saved_models" / "tf1_builder" / "00000123"]
    outcomes = {"ok": 0, "error": 0}
    for src in sources:  # modules imported on first use are not the case's allocations
        _exercise(src)
    previous = signal.signal(signal.SIGALRM, _alarm)
    tracemalloc.start()
    try:
        for case in range(MUTATION_CASES):
            src = rng.choice(sources)
            work = tmp_path / f"c{case % 4}"
            shutil.rmtree(work, ignore_errors=True)
            data = _mutate((src / "saved_model.pb").read_bytes(), rng)
            saved_model_dir(work, data, src)
            budget = 16 * sum(f.stat().st_size for f in work.rglob("*") if f.is_file()) + (1 << 20)
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            signal.alarm(5)
            try:
                _exercise(work)
                outcomes["ok"] += 1
            except CheckpointError as exc:
                assert exc.message, f"case {case} (seed {MUTATION_SEED}): empty message"
                outcomes["error"] += 1
            except _Timeout:
                pytest.fail(f"case {case} (seed {MUTATION_SEED}, {src.name}): hang")
            except Exception as exc:  # noqa: BLE001 - the point of the test
                pytest.fail(f"case {case} (seed {MUTATION_SEED}, {src.name}): {type(exc).__name__}: {exc}")
            finally:
                signal.alarm(0)
            peak = tracemalloc.get_traced_memory()[1] - base
            assert peak <= budget, f"case {case} (seed {MUTATION_SEED}): allocated {peak} bytes, budget {budget}"
    finally:
        tracemalloc.stop()
        signal.signal(signal.SIGALRM, previous)
    assert outcomes["ok"] + outcomes["error"] == MUTATION_CASES
    assert outcomes["error"] > MUTATION_CASES // 10


# -- nesting TensorFlow's protobuf parser refuses (issue 24, item 23; tests/interop/test_loader_refusals_tf.py) ---

def serving_composite(depth: int) -> bytes:
    """A SavedModel (corpus module/1's graph) whose serving signature takes a composite tensor whose type state
    nests ``depth`` tuples: SavedModel > MetaGraphDef > entry > SignatureDef > entry > TensorInfo >
    CompositeTensor > TypeSpecProto > StructuredValue is 8 levels, each tuple 2 more, the spec 1."""
    value = field(33, field(3, FLOAT))
    for _ in range(depth):
        value = field(52, field(1, value))
    info = field(5, field(1, field(2, value)))
    sig = field(1, field(1, "x") + field(2, info)) + field(3, "tensorflow/serving/predict")
    return saved_model(meta_graph(signatures={"serving_default": sig}, graph=module_graph()))


def test_a_serving_signature_nested_5000_deep_is_a_loader_refusal(model, run_cli):
    (model / "saved_model.pb").write_bytes(serving_composite(5000))
    assert run_cli("ls", model).exit_code == 0  # ckpt reads it all the same
    result = run_cli("verify", "--json", model)
    assert result.exit_code == 1
    assert json.loads(result.stdout)["loader_refusals"] == [
        {"where": "saved_model.pb", "message": "messages nest more than 100 levels deep (function or serving "
                                               "signatures): TensorFlow's protobuf parser refuses the file"}]
    assert run_cli("verify", "--allow-loader-refusals", model).exit_code == 0


@pytest.mark.parametrize("depth, levels", [(45, 8 + 90 + 1), (46, 8 + 92 + 1)])
def test_nesting_is_counted_as_protobuf_counts_it(model, depth, levels):
    from formats.saved_model.nesting import nesting_depth

    data = serving_composite(depth)
    assert nesting_depth(data, stop=1000) == levels
    (model / "saved_model.pb").write_bytes(data)
    with formats.open_checkpoint(model) as ckpt:
        assert len(ckpt.loader_refusals()) == (levels > 100)
