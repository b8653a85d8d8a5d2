"""An object-based rename whose renamed edges keep their parents is planned on the graph's columns
(``rename_objects._InPlace``), each node made as it is encoded: the plan - the graph's bytes, every row and problem -
must be the one rebuilding every node gives (``ObjectRename``'s own path, the one TensorFlow's loads are tested on),
for every object-based checkpoint of the corpus and rules of every kind; what it cannot do it leaves to that path."""
from __future__ import annotations

import copy
import re

import pytest

from formats import open_checkpoint
from formats.ops.convert import rename_objects
from formats.ops.convert.conversion_source import is_object_based
from formats.ops.convert.plan import ConvertOptions
from formats.ops.convert.rename import plan_rename
from formats.ops.rules import build_rules

from tests.conftest import CORPUS


def _object_based() -> list[str]:
    found = []
    for index in sorted(CORPUS.rglob("*.index")):
        prefix = str(index)[: -len(".index")]
        with open_checkpoint(prefix) as ckpt:
            if is_object_based(ckpt) and ckpt.object_graph is not None:
                found.append(prefix)
    return found


OBJECT_BASED = _object_based()


def _plan(prefix: str, options: ConvertOptions, in_place: bool, monkeypatch) -> tuple:
    options = copy.deepcopy(options)  # (its rules remember which matched: each plan its own)
    with monkeypatch.context() as m:
        if not in_place:
            m.setattr(rename_objects._InPlace, "run", lambda self: False)
        with open_checkpoint(prefix) as ckpt:
            plan = plan_rename(ckpt, options)
            return (plan.object_graph, [(r.source, r.key, r.note, r.dtype, tuple(r.shape)) for r in plan.rows],
                    [(p.kind, p.key, p.message, p.severity) for p in plan.problems], options.rules.unused())


def _rule_sets(prefix: str) -> list[tuple[str, ConvertOptions]]:
    with open_checkpoint(prefix) as ckpt:
        graph = ckpt.object_graph
        top = [local for _, local in graph.children(0)]
        nested = [(graph.path(child) or "") for node, _ in graph.children(0) for child, _ in graph.children(node)]
    sets = [("add-prefix (moves every edge)", ConvertOptions(rules=build_rules(add_prefix="top"))),
            # a graft (every edge of the root moved under one new path) is planned in place too
            ("add-prefix of escaped segments: three new objects", ConvertOptions(rules=build_rules(add_prefix="a/b.Sc/d"))),
            ("add-prefix, full names too", ConvertOptions(rules=build_rules(add_prefix="top"), rename_full_names=True)),
            ("add-prefix to a reserved name", ConvertOptions(rules=build_rules(add_prefix=".ATTRIBUTES"))),
            ("add-prefix to an invalid segment", ConvertOptions(rules=build_rules(add_prefix="a.b")))]
    if top:
        # a lift (one object's edges moved to the root) is planned in place where the walk stays the same
        sets.append(("strip-prefix of a top object", ConvertOptions(rules=build_rules(strip_prefix=top[0]))))
        sets.append(("strip-prefix of a top object, full names too", ConvertOptions(
            rules=build_rules(strip_prefix=top[0]), rename_full_names=True)))
        sets.append(("strip-prefix of no object", ConvertOptions(rules=build_rules(strip_prefix="no/such"))))
    if nested:
        sets.append(("strip-prefix of a nested object", ConvertOptions(
            rules=build_rules(strip_prefix=nested[-1].rpartition("/")[0]))))
    if top:
        sets.append(("add-prefix naming a top edge", ConvertOptions(rules=build_rules(add_prefix=top[0]))))
        sets.append(("the root's edges moved under a new path, one renamed", ConvertOptions(rules=build_rules(
            regexes=[rf"^{re.escape(top[0])}(/|$)=x/{top[0]}_r\1", r"^=x/"]))))
        sets.append(("the root's edges moved under two new paths", ConvertOptions(rules=build_rules(
            regexes=[rf"^{re.escape(top[0])}(/|$)=y/{top[0]}\1", r"^=x/"]))))
        sets.append(("a top edge", ConvertOptions(rules=build_rules([f"{top[0]}={top[0]}_x"]))))
        sets.append(("a top edge alone, its children following it", ConvertOptions(
            rules=build_rules(regexes=[f"^{re.escape(top[0])}$=renamed"]))))
        sets.append(("a top edge, full names too", ConvertOptions(rules=build_rules([f"{top[0]}={top[0]}_x"]),
                                                                   rename_full_names=True)))
    if len(top) > 1:
        sets.append(("two edges to one name", ConvertOptions(rules=build_rules([f"{top[0]}={top[1]}"]))))
    if nested:
        path = nested[-1]
        head, _, last = path.rpartition("/")
        sets.append(("a nested edge", ConvertOptions(rules=build_rules([f"{path}={head}/{last}.Sv2"]))))
        sets.append(("a nested edge moved", ConvertOptions(rules=build_rules([f"{path}={last}_up"]))))
        # --map rules only: just the edges at a rule's OLD are asked about (_InPlace._ruled_edges)
        sets.append(("a nested edge and its parent, the nested rule first", ConvertOptions(
            rules=build_rules([f"{path}={head}/{last}_2", f"{head}={head}_x"]))))
        sets.append(("a nested edge's rule after its parent's (matching nothing first)", ConvertOptions(
            rules=build_rules([f"{head}={head}_x", f"{path}={head}/{last}_2"]))))
        sets.append(("a nested edge moved by a rule before its parent's", ConvertOptions(
            rules=build_rules([f"{path}={head}_x/{last}", f"{head}={head}_x"]))))
        sets.append(("a nested edge given its sibling's name", ConvertOptions(rules=build_rules(
            [f"{path}={head}/{nested[0].rpartition('/')[2]}"] if nested[0] != path and
            nested[0].rpartition("/")[0] == head else [f"{path}={path}"]))))
        sets.append(("slashes around a nested rule, and rules matching nothing", ConvertOptions(
            rules=build_rules([f"/{path}/=/{head}/{last}_3/", "no/such/object=x", f"{path}/nothing=y"]))))
    if top:
        sets.append(("a top edge renamed to a reserved name", ConvertOptions(
            rules=build_rules([f"{top[0]}=.ATTRIBUTES"]))))
        sets.append(("a top edge renamed to an empty segment", ConvertOptions(
            rules=build_rules([f"{top[0]}={top[0]}//x"]))))
        sets.append(("a top edge renamed to an escaped dot", ConvertOptions(rules=build_rules([f"{top[0]}=a..b"]))))
    sets.append(("a regex on every segment", ConvertOptions(rules=build_rules(regexes=[r"(^|/)([a-z])=\1\2\2"]))))
    sets.append(("a regex on every segment, full names too", ConvertOptions(
        rules=build_rules(regexes=[r"(^|/)([a-z])=\1\2\2"]), rename_full_names=True)))
    return sets


def _asked_paths(monkeypatch) -> list[str]:  # type: ignore[no-untyped-def]
    """Every path the rename rules are asked about from now on (``RuleSet.apply`` watched)."""
    from formats.ops.rules import RuleSet

    paths: list[str] = []
    apply = RuleSet.apply
    monkeypatch.setattr(RuleSet, "apply", lambda self, name: paths.append(name) or apply(self, name))
    return paths


def _in_place_runs(monkeypatch) -> list[bool]:  # type: ignore[no-untyped-def]
    """Whether each rename from now on was planned in place (what each ``_InPlace.run`` returned)."""
    taken: list[bool] = []
    run = rename_objects._InPlace.run
    monkeypatch.setattr(rename_objects._InPlace, "run", lambda self: taken.append(run(self)) or taken[-1])
    return taken


@pytest.fixture
def in_columns(monkeypatch):
    """Every graph decoded into columns, as a large one is (a small one's nodes are built as it is read)."""
    from formats.concepts import object_graph_codec

    monkeypatch.setattr(object_graph_codec, "SMALL_GRAPH_BYTES", 0)


@pytest.mark.parametrize("prefix", OBJECT_BASED, ids=lambda p: p.split("corpus/")[-1])
def test_a_rename_in_place_plans_what_rebuilding_every_node_plans(prefix, monkeypatch, in_columns):
    taken = []
    run = rename_objects._InPlace.run

    def counted(self):  # type: ignore[no-untyped-def]
        done = run(self)
        taken.append(done)
        return done

    by_label = {}
    for label, options in _rule_sets(prefix):
        monkeypatch.setattr(rename_objects._InPlace, "run", counted)
        fast = _plan(prefix, options, True, monkeypatch)
        by_label[label] = taken[-1]
        monkeypatch.setattr(rename_objects._InPlace, "run", run)
        assert fast == _plan(prefix, options, False, monkeypatch), label
    assert True in taken  # (the in-place path is the one being compared at least once per checkpoint)
    # a graft is planned in place wherever renaming an edge where it is, is; a path that is not one is not
    grafts = ["add-prefix (moves every edge)", "add-prefix of escaped segments: three new objects",
              "add-prefix, full names too", "add-prefix naming a top edge",
              "the root's edges moved under a new path, one renamed"]
    assert [by_label[g] for g in grafts] == [by_label["a top edge"]] * len(grafts)
    assert not by_label["add-prefix to a reserved name"] and not by_label["add-prefix to an invalid segment"]
    with open_checkpoint(prefix) as ckpt:
        if len(ckpt.object_graph.children(0)) > 1:  # (the root's edges under two paths: made by rebuilding)
            assert not by_label["the root's edges moved under two new paths"]


def test_the_corpus_has_object_based_checkpoints_to_compare():
    assert len(OBJECT_BASED) >= 8


@pytest.mark.parametrize("prefix", OBJECT_BASED, ids=lambda p: p.split("corpus/")[-1])
def test_the_nodes_with_values_are_marked_as_the_general_walk_finds_them(prefix, in_columns):
    """``checkpointed_nodes`` gives a byte a node (NodeMarks), the in-place rename its own from the columns: both
    say what the walk over node ids says."""
    from formats.concepts.object_graph_codec import NodeMarks, _checkpointed_nodes, checkpointed_nodes

    with open_checkpoint(prefix) as ckpt:
        graph = ckpt.object_graph
        nodes = graph.node_copies()
        expected = _checkpointed_nodes(nodes)
        marks = checkpointed_nodes(nodes)
        assert isinstance(marks, NodeMarks) and set(marks) == expected and len(marks) == len(expected)
        assert all((i in marks) == (i in expected) for i in range(-1, len(nodes) + 1)) and "0" not in marks
        assert set(rename_objects._valued(graph)) == expected


@pytest.mark.parametrize(("rules", "asked", "unused"), [
    (dict(maps=["model=net"]), 1, []),  # the one edge whose path is the rule's
    # (model/layer_2 is model=net's before its own rule's: that rule matches nothing first, as nothing=x)
    (dict(maps=["model/layer_1=net/first", "model=net", "model/layer_2=net/second", "nothing=x"]), 3, [2, 3]),
    (dict(regexes=["^model$=net"]), None, []),  # a regex: every edge's path is asked about
])
def test_map_rules_ask_only_about_the_edges_at_their_paths(rules, asked, unused, tmp_path, monkeypatch, in_columns):
    """``--map`` rules rename an edge only where its path is a rule's OLD; every other edge follows its parent, so
    an in-place rename asks the rules about those edges alone (it asked about all 2N + 1 of them), and plans what
    the rebuilding plans."""
    from formats.ops.rules import build_rules
    from tests.scale_bundles import name_based, object_based

    prefix = object_based(name_based(tmp_path, 300))
    with open_checkpoint(prefix) as ckpt:
        edges = len(ckpt.object_graph.table.child_id)
    assert edges == 605  # the root's model and save counter, 3 layers, 300 units, their 300 variables
    paths = _asked_paths(monkeypatch)
    fast = _plan(prefix, ConvertOptions(rules=build_rules(**rules)), True, monkeypatch)
    assert len(paths) == (asked if asked is not None else edges), paths[:5]
    assert fast == _plan(prefix, ConvertOptions(rules=build_rules(**rules)), False, monkeypatch)
    made = build_rules(**rules).rules
    assert fast[3] == [made[i] for i in unused]
    assert sum(key.startswith("net/") for _, key, *_ in fast[1]) == 300
    assert sum(key.startswith("net/first/") for _, key, *_ in fast[1]) == (100 if unused else 0)


def test_a_rename_in_place_keeping_few_paths_plans_the_same(tmp_path, monkeypatch, in_columns):
    """The new paths a rename in place makes are kept a few at a time (``PATHS_KEPT``; a path a parent was 100 MB
    at 10^6 objects): made again when asked for, the plan is the one keeping them all gives, and the paths held
    never pass the bound by more than one path's depth."""
    from tests.scale_bundles import name_based, object_based

    generated = object_based(name_based(tmp_path, 300))
    most = []
    path = rename_objects._InPlace.path

    def held(self, node):  # type: ignore[no-untyped-def]
        found = path(self, node)
        most.append(len(self.paths))
        return found

    for prefix in [generated, *OBJECT_BASED[:4]]:
        for label, options in _rule_sets(prefix):
            expected = _plan(prefix, options, True, monkeypatch)
            with monkeypatch.context() as m:
                m.setattr(rename_objects, "PATHS_KEPT", 3)
                m.setattr(rename_objects._InPlace, "path", held)
                assert _plan(prefix, options, True, monkeypatch) == expected, (prefix, label)
    assert most and max(most) <= 3 + 4  # (the deepest path made: model/layer_2/unit_9/w)
    assert max(most) > 3  # (the bound was reached, and paths made again past it)


def test_a_rename_in_place_lets_go_of_the_old_graph_before_its_rows(tmp_path, monkeypatch, in_columns):
    """Once the renamed graph is written, an in-place rename holds the old one no more (its bytes, columns and
    traversal were 190 MB of the peak at 10^6 objects) while it makes a row per key: the checkpoint decodes it again
    only if asked, to the same graph and labels; planning and writing the rename decode it once."""
    import formats
    from formats.concepts import object_graph_codec
    from formats.ops.convert.plan import ConversionPlan
    from tests.scale_bundles import name_based, object_based

    prefix = object_based(name_based(tmp_path, 300))
    decoded = []
    decode = object_graph_codec.decode_object_graph
    monkeypatch.setattr(object_graph_codec, "decode_object_graph", lambda *a: decoded.append(1) or decode(*a))
    held = []
    add_row = ConversionPlan.add_row
    with open_checkpoint(prefix) as ckpt:
        key = "model/layer_1/unit_7/w/.ATTRIBUTES/VARIABLE_VALUE"
        before = (ckpt[key].name, ckpt[key].role, ckpt.object_graph.table.data)
        assert len(decoded) == 1

        def row(plan, *args, **kwargs):  # type: ignore[no-untyped-def]
            held.append(ckpt._labels._graph is not None or ckpt._labels._labels is not None)
            return add_row(plan, *args, **kwargs)

        monkeypatch.setattr(ConversionPlan, "add_row", row)
        plan = plan_rename(ckpt, ConvertOptions(rules=build_rules(["model=net"])))
        monkeypatch.setattr(ConversionPlan, "add_row", add_row)
        assert len(held) == 300 + 1 and not any(held)  # (the variables and the save counter)
        assert plan.ok and sum(r.key.startswith("net/") for r in plan.rows) == 300
        assert len(decoded) == 1
        assert (ckpt[key].name, ckpt[key].role, ckpt.object_graph.table.data) == before
        assert len(decoded) == 2  # (asked again: decoded again)
    decoded.clear()
    result = formats.rename(prefix, tmp_path / "renamed" / "ckpt", ["model=net"])
    assert result.ok and len(decoded) == 1


def test_a_name_based_checkpoint_keeps_its_labels_when_told_to_forget_a_graph(tmp_path):
    from tests.scale_bundles import name_based

    with open_checkpoint(name_based(tmp_path, 30)) as ckpt:
        assert ckpt.object_graph is None
        assert ckpt["model/layer_0/unit_3/w"].role == "variable"
        labels = ckpt._labels._labels
        ckpt.forget_object_graph()
        assert ckpt._labels._labels is labels and labels is not None


def test_an_added_prefix_is_a_graft_asking_about_no_path(tmp_path, monkeypatch, in_columns):
    """``--add-prefix P`` first gives every path ``P/<path>``: planned in place as a graft without asking the rules
    about each edge's path (it asked about all 2N + 1), the same plan the rebuilding makes: one new object, every
    key under it."""
    from tests.scale_bundles import name_based, object_based

    prefix = object_based(name_based(tmp_path, 300))
    paths, taken = _asked_paths(monkeypatch), _in_place_runs(monkeypatch)
    for rules in [dict(add_prefix="top/a.Sb"), dict(add_prefix="top", maps=["model=net"])]:
        options = ConvertOptions(rules=build_rules(**rules))
        paths.clear()
        fast = _plan(prefix, options, True, monkeypatch)
        asked = len(paths)
        assert taken[-1] is (not rules.get("maps"))
        assert fast == _plan(prefix, options, False, monkeypatch)
        if "maps" not in rules:
            assert asked == 1  # (the rule marked used)
            assert fast[3] == []
            assert [p[:2] for p in fast[2]] == [("new-object", "top"), ("new-object", "top/a.Sb")]
            assert len(fast[1]) == 301 and all(key == "top/a.Sb/" + source for source, key, *_ in fast[1])


def test_a_stripped_prefix_is_a_lift_asking_about_no_path(tmp_path, monkeypatch, in_columns):
    """``--strip-prefix P`` alone, ``P`` an object's path: its edges move to the root, planned in place without
    asking the rules about each edge's path, the plan the rebuilding makes: every key under ``P`` without it, the
    save counter's as it was."""
    from tests.scale_bundles import name_based, object_based

    prefix = object_based(name_based(tmp_path, 300))
    paths, taken = _asked_paths(monkeypatch), _in_place_runs(monkeypatch)
    options = ConvertOptions(rules=build_rules(strip_prefix="model/"))
    fast = _plan(prefix, options, True, monkeypatch)
    assert taken == [True] and len(paths) == 1
    assert fast == _plan(prefix, options, False, monkeypatch)
    assert fast[2] == [] and fast[3] == []
    renamed = {source: key for source, key, *_ in fast[1]}
    assert len(renamed) == 301
    assert renamed["save_counter/.ATTRIBUTES/VARIABLE_VALUE"] == "save_counter/.ATTRIBUTES/VARIABLE_VALUE"
    assert all(key == source.removeprefix("model/") for source, key in renamed.items())
    assert renamed["model/layer_2/unit_9/w/.ATTRIBUTES/VARIABLE_VALUE"] == "layer_2/unit_9/w/.ATTRIBUTES/VARIABLE_VALUE"
