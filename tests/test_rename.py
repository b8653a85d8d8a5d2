"""ckpt rename: keys of name-based checkpoints, objects of object-based ones (graph rebuilt), problems before writing."""
from __future__ import annotations

import json

import formats

from .conftest import CORPUS
from .test_convert import VV, keras_like_template

ESTIMATOR = CORPUS / "tf1_estimator" / "model.ckpt-200"
SLOTS = CORPUS / "seed_slots" / "tf_ckpts" / "ckpt-5"
SLOT = "/.OPTIMIZER_SLOT/optimizer/"


def _open(prefix):
    return formats.open_checkpoint(prefix)


def _values(prefix) -> dict[str, str]:
    """Key -> sha256 of the value (variants and strings included)."""
    from formats.core.roundtrip import tensor_digest

    with _open(prefix) as ckpt:
        return {k: tensor_digest(ckpt[k]) for k in ckpt if k != "_CHECKPOINTABLE_OBJECT_GRAPH"}


# --- name-based -------------------------------------------------------------------------------

def test_name_based_keys_renamed(run_cli, tmp_path):
    out = tmp_path / "o" / "model.ckpt-200"
    result = run_cli("rename", ESTIMATOR, "-o", out, "--map", "dnn/logits=dnn/head", "--add-prefix", "v2")
    assert result.exit_code == 0, result.output
    source, got = _values(ESTIMATOR), _values(out)
    assert sorted(got) == sorted(["dnn/head/bias", "dnn/head/bias/Adagrad", "dnn/head/kernel", "dnn/head/kernel/Adagrad",
                                  *(f"v2/{k}" for k in source if not k.startswith("dnn/logits"))])
    assert got["dnn/head/kernel/Adagrad"] == source["dnn/logits/kernel/Adagrad"]
    assert got["v2/global_step"] == source["global_step"]
    with _open(out) as ckpt:
        assert ckpt.format == "tf-name"


def test_name_based_strip_prefix_and_unused_rule(run_cli, tmp_path):
    out = tmp_path / "o" / "ckpt"
    result = run_cli("rename", ESTIMATOR, "-o", out, "--strip-prefix", "dnn", "--map", "nothing=x", "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert [(p["kind"], p["key"], p["severity"]) for p in data["problems"]] == [
        ("unmatched-rule", "--map nothing=x", "warning")]
    assert "logits/kernel" in _values(out) and "global_step" in _values(out)


def test_name_based_collision_writes_nothing(run_cli, tmp_path):
    out = tmp_path / "o" / "ckpt"
    result = run_cli("rename", ESTIMATOR, "-o", out, "--regex", "hiddenlayer_[01]=hidden")
    assert result.exit_code == 1
    assert "collision" in result.stderr and "would both be written as 'dnn/hidden/bias'" in result.stderr
    assert result.stderr.splitlines()[-1] == "4 errors, 0 warnings; nothing written"
    assert not out.parent.exists()


def test_empty_or_reserved_key_is_refused(run_cli, tmp_path):
    for regex, message in (("^global_step$=", "empty key"), ("^global_step$=_CHECKPOINTABLE_OBJECT_GRAPH",
                                                             "the object graph's key")):
        result = run_cli("rename", ESTIMATOR, "-o", tmp_path / "o", "--regex", regex)
        assert result.exit_code == 1 and message in result.stderr, result.output
    assert not (tmp_path / "o").exists()


def test_no_rules_is_a_problem(run_cli, tmp_path):
    result = run_cli("rename", ESTIMATOR, "-o", tmp_path / "o")
    assert result.exit_code == 1 and "no rename rules given" in result.stderr


# --- object-based -----------------------------------------------------------------------------

def test_object_rename_edge_keys_and_slots(run_cli, tmp_path):
    out = tmp_path / "o" / "ckpt-5"
    result = run_cli("rename", SLOTS, "-o", out, "--map", "net/l1=net/dense")
    assert result.exit_code == 0, result.output
    source, got = _values(SLOTS), _values(out)
    renamed = {k.replace("net/l1/", "net/dense/"): v for k, v in source.items()}
    assert got == renamed
    with _open(out) as ckpt:
        graph = ckpt.object_graph
        net = graph.nodes[2]
        assert [(c.local_name, c.node_id) for c in net.children] == [("dense", 6)]
        kernel = graph.nodes[12]
        assert kernel.attributes[0].checkpoint_key == "net/dense/kernel" + VV
        assert kernel.attributes[0].full_name == "net/dense/kernel"
        assert graph.path(14) == "net/dense/kernel" + SLOT + "m"
        assert graph.nodes[14].attributes[0].checkpoint_key == "net/dense/kernel" + SLOT + "m" + VV
        assert ckpt["net/dense/bias" + SLOT + "v" + VV].role == "slot"
        assert len(graph.nodes) == 18


def test_unchanged_rename_keeps_the_graph_bytes(tmp_path):
    from formats.ops.convert.plan import ConvertOptions
    from formats.ops.convert.rename import plan_rename
    from formats.ops.rules import build_rules

    for prefix in (SLOTS, keras_like_template(tmp_path / "t", 5)):
        with _open(prefix) as ckpt, plan_rename(ckpt, ConvertOptions(rules=build_rules(["zzz=y"]))) as plan:
            assert plan.object_graph == ckpt["_CHECKPOINTABLE_OBJECT_GRAPH"].read().item()
            assert [p.kind for p in plan.problems] == ["unmatched-rule"]


def test_object_move_to_new_parent(run_cli, tmp_path):
    out = tmp_path / "o" / "ckpt"
    result = run_cli("rename", SLOTS, "-o", out, "--map", "net/l1=model/dense", "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert [(p["kind"], p["key"]) for p in data["problems"]] == [("new-object", "model")]
    keys = set(_values(out))
    assert "model/dense/kernel" + VV in keys and "model/dense/bias" + SLOT + "m" + VV in keys
    assert not any(k.startswith("net/") for k in keys)
    with _open(out) as ckpt:
        graph = ckpt.object_graph
        model = next(n for n in graph.nodes if graph.path(n.id) == "model")
        assert [c.local_name for c in model.children] == ["dense"]
        assert graph.nodes[2].children == [] and graph.nodes[2].has_checkpoint_values is False
        assert model.has_checkpoint_values is True


def test_rename_full_names(run_cli, tmp_path):
    out = tmp_path / "o" / "ckpt"
    assert run_cli("rename", SLOTS, "-o", out, "--map", "net=model", "--rename-full-names").exit_code == 0
    with _open(out) as ckpt:
        assert ckpt["model/l1/kernel" + VV].name == "model/dense/kernel"
        assert ckpt["optimizer/iter" + VV].name == "Adam/iter"
        assert ckpt["model/l1/kernel" + SLOT + "m" + VV].name == "Adam/net/dense/kernel/m"
    out2 = tmp_path / "o2" / "ckpt"
    assert run_cli("rename", SLOTS, "-o", out2, "--map", "net=model").exit_code == 0
    with _open(out2) as ckpt:
        assert ckpt["model/l1/kernel" + VV].name == "net/dense/kernel"


def test_regex_on_a_leaf_edge_keeps_children(run_cli, tmp_path):
    out = tmp_path / "o" / "ckpt"
    assert run_cli("rename", SLOTS, "-o", out, "--regex", "^net/l1$=net/first").exit_code == 0
    keys = set(_values(out))
    assert "net/first/kernel" + VV in keys and "net/first/kernel" + SLOT + "v" + VV in keys


def test_object_strip_prefix_moves_children_to_the_root(run_cli, tmp_path):
    out = tmp_path / "o" / "ckpt-5"
    result = run_cli("rename", SLOTS, "-o", out, "--strip-prefix", "net")
    assert result.exit_code == 0, result.output
    source, got = _values(SLOTS), _values(out)
    assert got == {k.removeprefix("net/"): v for k, v in source.items()}
    regex_out = tmp_path / "r" / "ckpt-5"
    assert run_cli("rename", SLOTS, "-o", regex_out, "--regex", r"^net/(.*)=\1").exit_code == 0
    with _open(out) as ckpt, _open(regex_out) as same:
        assert ckpt["_CHECKPOINTABLE_OBJECT_GRAPH"].read() == same["_CHECKPOINTABLE_OBJECT_GRAPH"].read()
        graph = ckpt.object_graph
        assert graph.path(6) == "l1" and graph.nodes[2].children == []
        assert ckpt["l1/kernel" + SLOT + "m" + VV].role == "slot"


def test_object_collision_reported(run_cli, tmp_path):
    result = run_cli("rename", SLOTS, "-o", tmp_path / "o", "--map", "net/l1=step", "--json")
    assert result.exit_code == 1
    problems = json.loads(result.stdout)["problems"]
    assert problems[0]["kind"] == "collision" and problems[0]["key"] == "step"
    assert not (tmp_path / "o").exists()


def test_graph_breaking_renames_reported(run_cli, tmp_path):
    for rule, why in (("net/l1=net/.ATTRIBUTES", ".ATTRIBUTES is reserved"),
                      ("net/l1=net/a.b", "is not a valid escaped name"),
                      ("net/l1=net//x", "empty segment")):
        result = run_cli("rename", SLOTS, "-o", tmp_path / "o", "--map", rule, "--json")
        assert result.exit_code == 1, rule
        problems = json.loads(result.stdout)["problems"]
        assert problems[0]["kind"] == "graph" and why in problems[0]["message"], (rule, problems)
    assert not (tmp_path / "o").exists()


def test_keras_aliases_follow(run_cli, tmp_path):
    template = keras_like_template(tmp_path / "t" / "ckpt", 5)
    out = tmp_path / "o" / "ckpt"
    result = run_cli("rename", template, "-o", out, "--regex", "^layer_with_weights-0=first")
    assert result.exit_code == 0, result.output
    with _open(out) as ckpt:
        graph = ckpt.object_graph
        root = [(c.local_name, c.node_id) for c in graph.root.children]
        assert root[:2] == [("first", 1), ("layer-0", 1)] and root[-1] == ("root", 0)
        assert "first/kernel" + VV in ckpt and "layer_with_weights-1/bias" + VV in ckpt
    assert _values(out)["first/kernel" + VV] == _values(template)["layer_with_weights-0/kernel" + VV]


def test_dry_run_table(run_cli, tmp_path):
    result = run_cli("rename", SLOTS, "-o", tmp_path / "o", "--map", "net/l1=net/dense", "--dry-run", "--all")
    assert result.exit_code == 0
    rows = [line.split() for line in result.stdout.splitlines()]
    assert ["net/l1/kernel" + SLOT + "m" + VV, "net/dense/kernel" + SLOT + "m" + VV, "[1,", "5]", "float32"] in rows
    assert ["step" + VV, "step" + VV, "[]", "int32", "unchanged"] in rows
    assert rows[-1][:2] == ["dry", "run:"]
    assert not (tmp_path / "o").exists()


def test_dry_run_lists_the_renamed_tensors_and_all_with_all(tmp_path):
    """Issue 24, item 14: a dry run listed every unchanged key too. Through the shipped entry point."""
    import subprocess
    import sys

    def dry_run(*extra: str) -> list[str]:
        done = subprocess.run([sys.executable, "-m", "ckpt_cli", "rename", str(SLOTS), "-o", str(tmp_path / "o"),
                               "--map", "net/l1=net/dense", "--dry-run", *extra], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()

    with _open(SLOTS) as ckpt:
        renamed = sorted(k for k in ckpt if k.startswith("net/l1/"))
        total = len(ckpt)
    lines = dry_run()
    assert [line.split()[0] for line in lines[1:-2]] == renamed
    assert lines[-2:] == [f"{total - 1 - len(renamed)} unchanged tensors not shown (--all lists them)",
                          f"dry run: {total} tensors would be written (tf-object); 0 errors, 0 warnings"]
    lines = dry_run("--all")
    assert len(lines) == 1 + (total - 1) + 1 and lines[-1].startswith("dry run: ")  # the object graph is no row
    assert not (tmp_path / "o").exists()


def test_a_refused_path_is_reported_once_for_the_objects_that_follow_it(run_cli, tmp_path):
    """A rule giving an object a path that cannot be one is reported at that object, counting those under it that
    follow it (a model of 10^5 variables printed a line for each of its 2 * 10^5 objects); an object under it that
    a rule sends elsewhere is reported on its own."""
    result = run_cli("rename", SLOTS, "-o", tmp_path / "o", "--map", "net=.ATTRIBUTES")
    assert result.exit_code == 1
    assert result.stderr == ("error: graph: net: 'net' -> '.ATTRIBUTES': .ATTRIBUTES is reserved (and 3 objects "
                             "under it)\n1 error, 0 warnings; nothing written\n")
    result = run_cli("rename", SLOTS, "-o", tmp_path / "o", "--map", "net/l1=net/.ATTRIBUTES", "--json")
    problems = json.loads(result.stdout)["problems"]
    assert [(p["key"], p["message"]) for p in problems] == [
        ("net/l1", "'net/l1' -> 'net/.ATTRIBUTES': .ATTRIBUTES is reserved (and 2 objects under it)")]
    result = run_cli("rename", SLOTS, "-o", tmp_path / "o", "--map", "net/l1=.ATTRIBUTES/x", "--map", "net=.ATTRIBUTES")
    assert result.exit_code == 1 and result.stderr.splitlines()[:2] == [
        "error: graph: net: 'net' -> '.ATTRIBUTES': .ATTRIBUTES is reserved",
        "error: graph: net/l1: 'net/l1' -> '.ATTRIBUTES/x': .ATTRIBUTES is reserved (and 2 objects under it)"]
    assert not (tmp_path / "o").exists()


def test_a_checkpoint_whose_keys_are_not_in_order_is_planned_in_key_order():
    """A bundle's keys come in order (planned as they come, no list of pairs made); any other checkpoint's are
    sorted first, as before."""
    from formats.core.model import Checkpoint, TensorEntry
    from formats.ops.convert.plan import ConvertOptions
    from formats.ops.convert.rename import plan_rename
    from formats.ops.rules import build_rules

    keys = ["b/x", "a/y", "c/z", "a/b"]
    source = Checkpoint("mem", "tf-name", {k: TensorEntry(k, (2,), "float32", 8) for k in keys})
    plan = plan_rename(source, ConvertOptions(rules=build_rules(["a=q"])))
    assert [(row.source, row.key) for row in plan.rows] == [("a/b", "q/b"), ("a/y", "q/y"), ("b/x", "b/x"),
                                                            ("c/z", "c/z")]
