"""``ckpt edit``: optimizer left out, subsets, casts and data files - exact keys, graphs, values and refusals."""
from __future__ import annotations

import json
import os

import ml_dtypes
import numpy as np
import pytest

from formats import edit, open_checkpoint
from formats.core.errors import UsageError
from formats.ops.edit import EditOptions, plan_edit

from .conftest import CORPUS

SLOTS = CORPUS / "seed_slots/tf_ckpts/ckpt-5"  # the guide's loop, legacy Adam: .OPTIMIZER_SLOT keys
KERAS_OPT = CORPUS / "seed_keras2/tf_ckpts/ckpt-10"  # the same loop, Keras Adam: slots in optimizer/_variables
TF1_ADAM = CORPUS / "tf1_adam/model.ckpt-200"
ALL_DTYPES = CORPUS / "tf2_mixed/all_dtypes/ckpt-1"
SHARDED = CORPUS / "tf2_mixed/sharded/ckpt"
GRAPH = "_CHECKPOINTABLE_OBJECT_GRAPH"
V = "/.ATTRIBUTES/VARIABLE_VALUE"


def graph_of(path) -> list[tuple[str, list[str], list[str], list[tuple[str, str, str]]]]:
    """Each node: its path, children's names, attribute keys, slot references (variable, slot, slot path)."""
    with open_checkpoint(path) as ckpt:
        g = ckpt.object_graph
        return [(g.path(n.id), [c.local_name for c in n.children], [a.checkpoint_key for a in n.attributes],
                 [(g.path(s.original_variable_node_id), s.slot_name, g.path(s.slot_variable_node_id))
                  for s in n.slot_variables]) for n in g.nodes]


def values_of(path) -> dict[str, tuple[str, tuple[int, ...], bytes]]:
    with open_checkpoint(path) as ckpt:
        out = {}
        for key, entry in ckpt.items():
            value = entry.read()
            data = b"".join(value.reshape(-1)) if value.dtype == object else value.tobytes()
            out[key] = (entry.dtype, tuple(entry.shape), data)
        return out


def stored_sizes(path) -> dict[str, int]:
    with open_checkpoint(path) as ckpt:
        return {k.decode(): raw.size for k, raw in ckpt.reader.entries.items() if k}


def test_drop_optimizer_of_the_guides_adam_checkpoint(tmp_path, run_cli):
    out = tmp_path / "model" / "ckpt-5"
    result = run_cli("edit", SLOTS, "-o", out, "--drop-optimizer")
    assert result.exit_code == 0, result.output
    assert result.stdout.endswith("verified; 6 keep, 9 drop\n")
    kept = [GRAPH, "iterator/.ATTRIBUTES/ITERATOR_STATE", "net/l1/bias" + V, "net/l1/kernel" + V,
            "save_counter" + V, "step" + V]
    written = values_of(out)
    assert sorted(written) == kept
    source = values_of(SLOTS)
    assert all(written[k] == source[k] for k in kept if k != GRAPH)
    assert graph_of(out) == [
        ("", ["iterator", "net", "step", "save_counter"], [], []),
        ("iterator", [], ["iterator/.ATTRIBUTES/ITERATOR"], []),  # stored as .../ITERATOR_STATE
        ("net", ["l1"], [], []),
        ("step", [], ["step" + V], []),
        ("save_counter", [], ["save_counter" + V], []),
        ("net/l1", ["kernel", "bias"], [], []),
        ("net/l1/kernel", [], ["net/l1/kernel" + V], []),
        ("net/l1/bias", [], ["net/l1/bias" + V], []),
    ]
    old, new = stored_sizes(SLOTS), stored_sizes(out)
    dropped = sum(size for key, size in old.items() if key not in new)
    data = [f for f in os.listdir(out.parent) if ".data-" in f]
    assert data == ["ckpt-5.data-00000-of-00001"]
    assert os.path.getsize(out.parent / data[0]) == (
        os.path.getsize(str(SLOTS) + ".data-00000-of-00001") - dropped - old[GRAPH] + new[GRAPH])


def test_drop_optimizer_with_a_keras_optimizer_removes_its_variables_list(tmp_path):
    out = tmp_path / "ckpt"
    result = edit(KERAS_OPT, out, drop_optimizer=True)
    assert result.ok and result.written.verified
    assert sorted(values_of(out)) == [GRAPH, "iterator/.ATTRIBUTES/ITERATOR_STATE", "net/l1/bias" + V,
                                      "net/l1/kernel" + V, "save_counter" + V, "step" + V]
    assert [node[0] for node in graph_of(out)] == ["", "iterator", "net", "step", "save_counter", "net/l1",
                                                   "net/l1/kernel", "net/l1/bias"]
    dropped = {a.key: a.detail for a in result.plan.actions if a.action == "drop"}
    assert dropped == {"optimizer/_iterations" + V: "optimizer state", "optimizer/_learning_rate" + V: "optimizer state",
                       **{f"optimizer/_variables/{i}" + V: "optimizer slot" for i in range(1, 5)}}


def test_drop_optimizer_of_a_name_based_checkpoint(tmp_path, run_cli):
    out = tmp_path / "model.ckpt-200"
    assert run_cli("edit", TF1_ADAM, "-o", out, "--drop-optimizer").exit_code == 0
    with open_checkpoint(TF1_ADAM) as src:
        variables = sorted(k for k, e in src.items() if e.role == "variable")
    assert sorted(values_of(out)) == variables
    assert {k for k in variables if "Adam" in k or "power" in k or "global_step" in k} == set()


def test_select_keeps_the_net_and_its_slots_with_the_graph_pruned(tmp_path, run_cli):
    out = tmp_path / "net" / "ckpt-5"
    result = run_cli("edit", SLOTS, "-o", out, "--select", "net/*")
    assert result.exit_code == 0, result.output
    slots = [f"net/l1/{v}/.OPTIMIZER_SLOT/optimizer/{s}" for v in ("bias", "kernel") for s in ("m", "v")]
    assert sorted(values_of(out)) == sorted([GRAPH, "net/l1/bias" + V, "net/l1/kernel" + V, "save_counter" + V]
                                            + [s + V for s in slots])
    graph = graph_of(out)
    assert [n[0] for n in graph[:4]] == ["", "net", "optimizer", "save_counter"]
    assert graph[0][1] == ["net", "optimizer", "save_counter"]
    optimizer = graph[2]
    assert optimizer[1] == [] and optimizer[2] == []  # hyperparameters and iter left out
    assert sorted(optimizer[3]) == sorted((f"net/l1/{v}", s, f"net/l1/{v}/.OPTIMIZER_SLOT/optimizer/{s}")
                                          for v in ("kernel", "bias") for s in ("m", "v"))


def test_select_by_name_and_exclude_leave_slots_with_their_variables(tmp_path):
    out = tmp_path / "ckpt"
    result = edit(SLOTS, out, exclude=("net/dense/kernel",), by="name")
    assert result.ok
    keys = set(values_of(out))
    assert not any(k.startswith("net/l1/kernel") for k in keys) and "net/l1/bias" + V in keys
    warning = [p for p in result.plan.problems if p.kind == "selection"]
    assert [(p.severity, p.key, sorted(p.candidates)) for p in warning] == [
        ("warning", "net/l1/kernel" + V, [f"net/l1/kernel/.OPTIMIZER_SLOT/optimizer/{s}" + V for s in ("m", "v")])]
    graph = graph_of(out)
    assert [n[0] for n in graph if n[0].startswith("net")] == ["net", "net/l1", "net/l1/bias",
                                                               "net/l1/bias/.OPTIMIZER_SLOT/optimizer/m",
                                                               "net/l1/bias/.OPTIMIZER_SLOT/optimizer/v"]


@pytest.mark.parametrize("model_only", [False, True])
def test_cast_float32_to_bfloat16_rounds_to_nearest_even_and_reports_the_error(tmp_path, run_cli, model_only):
    out = tmp_path / "bf16" / "ckpt-5"
    args = ["--cast-model-only"] if model_only else []
    result = run_cli("edit", SLOTS, "-o", out, "--cast", "float32=bfloat16", "--json", *args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    with open_checkpoint(SLOTS) as src, open_checkpoint(out) as dst:
        for key, entry in src.items():
            cast = entry.dtype == "float32" and (entry.role == "variable" or (entry.role == "slot" and not model_only))
            assert dst[key].dtype == ("bfloat16" if cast else entry.dtype), key
            if cast:
                value = entry.read()
                expected = value.astype(ml_dtypes.bfloat16)
                np.testing.assert_array_equal(dst[key].read().view(np.uint16), expected.view(np.uint16))
                stats = next(c for c in report["casts"] if c["key"] == key)
                error = float(np.max(np.abs(expected.astype(np.float64) - value.astype(np.float64))))
                assert stats == {"key": key, "from": "float32", "to": "bfloat16", "lossless": False,
                                 "max_error": error, "overflow": 0}
    assert len(report["casts"]) == (2 if model_only else 6)


def test_cast_between_several_dtypes_and_widening_is_exact(tmp_path):
    out = tmp_path / "ckpt"
    result = edit(ALL_DTYPES, out, casts={"bfloat16": "float32", "float64": "bfloat16", "float16": "float32"})
    assert result.ok
    with open_checkpoint(ALL_DTYPES) as src, open_checkpoint(out) as dst:
        for name, to in (("bfloat16", "float32"), ("float16", "float32")):
            key = f"typed/{name}" + V
            assert dst[key].dtype == to
            np.testing.assert_array_equal(dst[key].read(), src[key].read().astype(np.float32))
        key = "typed/float64" + V
        wide = src[key].read()
        np.testing.assert_array_equal(dst[key].read().view(np.uint16),
                                      wide.astype(np.float32).astype(ml_dtypes.bfloat16).view(np.uint16))
        assert dst["typed/float32" + V].dtype == "float32"
    assert {c.key: c.lossless for c in result.plan.casts} == {
        "typed/bfloat16" + V: True, "typed/float16" + V: True, "typed/float64" + V: False}
    assert result.lossy_casts == [c for c in result.plan.casts if c.key == "typed/float64" + V]


def test_reshard_to_four_data_files_and_back_to_one(tmp_path, run_cli):
    four, one = tmp_path / "four" / "ckpt", tmp_path / "one" / "ckpt"
    assert run_cli("edit", SLOTS, "-o", four, "--shards", "4").exit_code == 0
    assert sorted(os.listdir(four.parent)) == [f"ckpt.data-0000{k}-of-00004" for k in range(4)] + ["ckpt.index"]
    assert all(os.path.getsize(four.parent / f"ckpt.data-0000{k}-of-00004") > 0 for k in range(4))
    assert run_cli("edit", four, "-o", one, "--shards", "1").exit_code == 0
    assert sorted(os.listdir(one.parent)) == ["ckpt.data-00000-of-00001", "ckpt.index"]
    assert values_of(four) == values_of(one) == values_of(SLOTS)
    with open_checkpoint(four) as ckpt:
        assert ckpt.metadata["num_shards"] == 4


def test_a_sharded_checkpoint_keeps_its_data_files_unless_asked(tmp_path):
    kept, merged = tmp_path / "kept" / "ckpt", tmp_path / "merged" / "ckpt"
    assert edit(SHARDED, kept).ok and edit(SHARDED, merged, shards=1).ok
    assert len([f for f in os.listdir(kept.parent) if ".data-" in f]) == 7
    assert os.listdir(merged.parent) and len([f for f in os.listdir(merged.parent) if ".data-" in f]) == 1
    assert values_of(kept) == values_of(merged) == values_of(SHARDED)


def test_max_shard_size(tmp_path):
    out = tmp_path / "ckpt"
    result = edit(SHARDED, out, max_shard_size=1 << 20)
    assert result.ok
    sizes = [os.path.getsize(out.parent / f) for f in sorted(os.listdir(out.parent)) if ".data-" in f]
    with open_checkpoint(SHARDED) as src:
        big = [e for e in src.values() if e.nbytes > 1 << 20]
    assert all(s <= 1 << 20 for s in sizes if s not in [e.nbytes for e in big])
    assert values_of(out) == values_of(SHARDED)


def test_dry_run_writes_nothing_and_lists_every_key(tmp_path, run_cli):
    out = tmp_path / "out" / "ckpt"
    result = run_cli("edit", SLOTS, "-o", out, "--drop-optimizer", "--dry-run", "--json")
    assert result.exit_code == 0 and not out.parent.exists()
    report = json.loads(result.stdout)
    assert [k["key"] for k in report["keys"]] == sorted(values_of(SLOTS))
    assert report["counts"] == {"keep": 6, "drop": 9} and report["dry_run"] and report["written"] is None
    text = run_cli("edit", SLOTS, "-o", out, "--drop-optimizer", "--dry-run").stdout
    assert "optimizer/iter/.ATTRIBUTES/VARIABLE_VALUE" in text and "dry run: 6 keep, 9 drop (tf-object)" in text


def test_update_state_and_other_formats(tmp_path, run_cli):
    out = tmp_path / "run" / "ckpt-5"
    assert run_cli("edit", SLOTS, "-o", out, "--drop-optimizer", "--update-state").exit_code == 0
    assert "model_checkpoint_path: \"ckpt-5\"" in (tmp_path / "run" / "checkpoint").read_text()
    npz = tmp_path / "model.npz"
    assert run_cli("edit", SLOTS, "-o", npz, "--to", "npz", "--drop-optimizer").exit_code == 0
    with np.load(npz) as data:
        assert sorted(k for k in data.files if not k.startswith("__")) == sorted(
            k for k in values_of(SLOTS) if k != GRAPH and "optimizer" not in k.split("/")[0] and "SLOT" not in k)


def test_v1_and_keras_files_are_written_in_their_own_format(tmp_path):
    v1 = tmp_path / "v1" / "model.ckpt"
    result = edit(CORPUS / "tf1_v1_adam/model.ckpt-30", v1, drop_optimizer=True)
    assert result.ok and result.written.format == "tf-name"
    keras2 = tmp_path / "k2.h5"
    result = edit(CORPUS / "keras2_tagger/tagger_weights.h5", keras2, exclude=("*lstm*",))
    assert result.ok and result.written.format == "keras2-h5"
    with open_checkpoint(keras2) as ckpt:
        assert not any("lstm" in k for k in ckpt) and len(ckpt) == 9
    keras3 = tmp_path / "k3.weights.h5"
    result = edit(CORPUS / "keras3_tagger/tagger.keras", keras3, drop_optimizer=True)
    assert result.ok
    with open_checkpoint(keras3) as ckpt:
        assert ckpt.format == "keras3-h5" and not any(k.startswith("optimizer") for k in ckpt)


# -- refusals --------------------------------------------------------------------------------------
def test_patterns_that_match_nothing_are_listed_and_nothing_is_written(tmp_path, run_cli):
    out = tmp_path / "out" / "ckpt"
    result = run_cli("edit", SLOTS, "-o", out, "--select", "nope*", "--exclude", "zip")
    assert result.exit_code == 1 and not out.parent.exists()
    assert "no key matches 'nope*'" in result.stderr and "try '*zip*'" in result.stderr
    assert result.stderr.endswith("2 errors, 0 warnings; nothing written\n")


def test_everything_left_out_is_an_error(tmp_path, run_cli):
    result = run_cli("edit", SLOTS, "-o", tmp_path / "o", "--exclude", "*")
    assert result.exit_code == 1 and "nothing would be left to write" in result.stderr


@pytest.mark.parametrize("args, message", [
    (["--cast", "float32"], "is not FROM=TO"),
    (["--cast", "float32=int8"], "int8 is not one of"),
    (["--cast", "float32=float32"], "changes nothing"),
    (["--cast", "float32=bfloat16", "--cast", "float32=float16"], "cast twice"),
    (["--shards", "2", "--max-shard-size", "1MB"], "not both"),
    (["--shards", "0"], "0 is not in the range"),
])
def test_usage_errors_exit_2(tmp_path, run_cli, args, message):
    result = run_cli("edit", SLOTS, "-o", tmp_path / "o", *args)
    assert result.exit_code == 2 and message in result.output
    assert not (tmp_path / "o.index").exists()


def test_data_files_for_a_single_file_format_are_a_plan_error(tmp_path, run_cli):
    result = run_cli("edit", SLOTS, "-o", tmp_path / "x.npz", "--to", "npz", "--shards", "2")
    assert result.exit_code == 1 and "a npz output is not spread over data files" in result.stderr


def test_outputs_are_guarded(tmp_path, run_cli, corpus_copy):
    run = corpus_copy("seed_slots")
    src = run / "tf_ckpts" / "ckpt-5"
    result = run_cli("edit", src, "-o", src, "--drop-optimizer", "--force")
    assert result.exit_code == 4 and "being read" in result.stderr
    out = tmp_path / "out"
    assert run_cli("edit", src, "-o", out).exit_code == 0
    again = run_cli("edit", src, "-o", out)
    assert again.exit_code == 4 and "exists" in again.stderr
    assert run_cli("edit", src, "-o", out, "--force", "--drop-optimizer").exit_code == 0


def test_library_options_are_checked():
    with open_checkpoint(SLOTS) as ckpt:
        with pytest.raises(UsageError, match="'key' or 'name'"):
            plan_edit(ckpt, EditOptions(by="path"))
        plan = plan_edit(ckpt, EditOptions(drop_optimizer=True))
        assert plan.ok and plan.target == "tf-object" and plan.counts() == {"keep": 6, "drop": 9}


def test_pruning_keeps_weightless_objects_and_drops_what_only_an_alias_reached():
    from formats.concepts.object_graph import Attribute, ChildRef, ObjectGraph, ObjectNode, SlotVariableRef
    from formats.ops.edit.prune import prune_graph

    kernel, it, slot = "net/dense/kernel" + V, "optimizer/iter" + V, "net/dense/kernel/.OPTIMIZER_SLOT/optimizer/m" + V
    nodes = [ObjectNode(0, [ChildRef(1, "net"), ChildRef(2, "optimizer"), ChildRef(3, "extra")]),
             ObjectNode(1, [ChildRef(4, "dense"), ChildRef(5, "dropout")]),
             ObjectNode(2, [ChildRef(7, "iter"), ChildRef(9, "refs")], slot_variables=[SlotVariableRef(6, "m", 8)]),
             ObjectNode(3), ObjectNode(4, [ChildRef(6, "kernel")]), ObjectNode(5),
             ObjectNode(6, attributes=[Attribute("VARIABLE_VALUE", "dense/kernel", kernel)]),
             ObjectNode(7, attributes=[Attribute("VARIABLE_VALUE", "iter", it)]),
             ObjectNode(8, attributes=[Attribute("VARIABLE_VALUE", "dense/kernel/m", slot)]),
             ObjectNode(9, [ChildRef(6, "k")])]  # a second path to the kernel, under the optimizer
    graph = ObjectGraph(nodes)
    assert graph.path(6) == "net/dense/kernel" and graph.aliases(6) == ["optimizer/refs/k"]
    pruned, _, problems = prune_graph(graph, [kernel, it, slot], {it, slot})  # (the keys left out)
    assert problems == [] and pruned is not None
    assert [pruned.path(n.id) for n in pruned.nodes] == ["", "net", "extra", "net/dense", "net/dropout",
                                                         "net/dense/kernel"]
    assert [n.slot_variables for n in pruned.nodes] == [[]] * 6
    pruned, _, _ = prune_graph(graph, [kernel, it, slot], {it})
    assert [pruned.path(n.id) for n in pruned.nodes] == ["", "net", "optimizer", "extra", "net/dense",
                                                         "net/dropout", "net/dense/kernel",
                                                         "net/dense/kernel/.OPTIMIZER_SLOT/optimizer/m"]
    assert pruned.nodes[2].slot_variables == [SlotVariableRef(6, "m", 7)]
    assert pruned.nodes[2].children == []  # refs kept no value of its own: it goes, and the alias with it


def test_the_pruned_graph_marks_every_node_with_values():
    from formats.ops.edit.view import KeptView

    with open_checkpoint(SLOTS) as ckpt:
        plan = plan_edit(ckpt, EditOptions(drop_optimizer=True))
        from formats.concepts.object_graph_codec import decode_object_graph

        graph = decode_object_graph(plan.conversion.object_graph)
        assert all(n.has_checkpoint_values for n in graph.nodes) and len(graph.nodes) == 8
        assert isinstance(KeptView(ckpt, ["step" + V]), KeptView)


def test_a_truncated_input_is_an_input_error_and_leaves_nothing(tmp_path, run_cli, corpus_copy):
    src = corpus_copy("seed_slots") / "tf_ckpts" / "ckpt-5"
    data = str(src) + ".data-00000-of-00001"
    os.truncate(data, os.path.getsize(data) // 2)
    out = tmp_path / "out" / "ckpt"
    result = run_cli("edit", src, "-o", out, "--drop-optimizer")
    assert result.exit_code == 3 and result.stderr.startswith("ckpt: error: ")
    assert not out.parent.exists()


def test_keras3_weights_sharded_by_size(tmp_path, run_cli):
    src = CORPUS / "keras3_tagger/tagger.weights.h5"
    bad = run_cli("edit", src, "-o", tmp_path / "t.weights.h5", "--max-shard-size", "4KB")
    assert bad.exit_code == 2 and "name OUT *.weights.json" in bad.output
    out = tmp_path / "sharded" / "t.weights.json"
    result = run_cli("edit", src, "-o", out, "--max-shard-size", "4KB", "--drop-optimizer")
    assert result.exit_code == 0, result.output
    assert len([f for f in os.listdir(out.parent) if f.endswith(".weights.h5")]) > 1
    with open_checkpoint(src) as a, open_checkpoint(out) as b:
        assert sorted(b) == sorted(k for k in a if not k.startswith("optimizer"))
        for key in b:
            np.testing.assert_array_equal(b[key].read(), a[key].read())


def test_the_actions_are_made_as_they_are_read_one_per_input_key(tmp_path):
    """An edit's actions are not held with its plan (a KeyAction per key: 77 MB at a million keys); read, they are
    one per input key in key order, each as the plan says - kept under its key, or dropped and why."""
    from formats.ops.edit.build import KeyActions
    from formats.ops.edit.plan import KeyAction

    result = edit(TF1_ADAM, tmp_path / "model.ckpt-200", drop_optimizer=True, dry_run=True)
    actions = result.plan.actions
    assert isinstance(actions, KeyActions)
    with open_checkpoint(TF1_ADAM) as src:
        keys = sorted(src)
        roles = {k: e.role for k, e in src.items()}
    assert len(actions) == len(keys) == 21 and [a.key for a in actions] == keys
    kept = [a for a in actions if a.action == "keep"]
    assert [a.key for a in kept] == [k for k in keys if roles[k] == "variable"]
    assert all(a.output == a.key and a.dtype == "float32" for a in kept)
    assert {a.key for a in actions if a.action == "drop"} == {k for k in keys if roles[k] != "variable"}
    assert keys[-1] == "global_step" and actions[-1] == KeyAction("global_step", "drop", detail="optimizer state")
    assert actions == list(actions) and result.plan.counts() == {"keep": len(kept), "drop": 21 - len(kept)}
    assert result.plan.to_json()["keys"] == [a.to_json() for a in list(actions)]


@pytest.mark.parametrize("source, options", [(TF1_ADAM, {"drop_optimizer": True}), (SLOTS, {"drop_optimizer": True}),
                                             (SLOTS, {"exclude": ["net/*"]})])
def test_the_actions_are_counted_without_making_them_as_they_are_made(tmp_path, source, options):
    """``counts()`` (what the summary and --json say) counts the actions as it decides them, no action made a key:
    the same as counting the actions made, the object graph's included."""
    from collections import Counter

    result = edit(source, tmp_path / "out" / "ckpt", dry_run=True, **options)
    actions = list(result.plan.actions)
    assert result.plan.counts() == dict(Counter(a.action for a in actions)) == result.plan.actions.counts()
    if source == SLOTS:
        graph = next(a for a in actions if a.key == "_CHECKPOINTABLE_OBJECT_GRAPH")
        assert (graph.action, graph.output, graph.dtype) == ("keep", "_CHECKPOINTABLE_OBJECT_GRAPH", "string")
