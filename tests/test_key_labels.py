"""``label_keys`` gives a :class:`~formats.concepts.object_graph.KeyLabels`: a model variable's label made when asked
for from its node and attribute, the others held. It must read as the dictionary of every key's label did - the
labels ``_label`` gives key by key (tests/test_graph_paths_unbuilt.py holds the corpus to that) - whatever the
order of the keys, and hold a few bytes a key."""
from __future__ import annotations

import fnmatch
from pathlib import Path
import random

import pytest

import formats
from formats.concepts import object_graph
from formats.concepts.object_graph import Attribute, ChildRef, ObjectGraph, ObjectNode, SlotVariableRef
from formats.core.model import OBJECT_GRAPH_KEY, OPTIMIZER_ROLES, Checkpoint, Role
from formats.ops.edit.selection import choose_tensors

from .conftest import CORPUS

V = "/.ATTRIBUTES/VARIABLE_VALUE"


def _hit(found: tuple | None) -> tuple | None:
    """What label_keys hands ``_label`` for a key: its attribute's node, name and full name (None: no attribute)."""
    return None if found is None else (found[0], found[1].name, found[1].full_name)


def _graph(n: int) -> tuple[ObjectGraph, list[str]]:
    """A model of ``n`` variables (one with no full name), an optimizer with a slot, the save counter."""
    nodes = [ObjectNode(0, [ChildRef(1, "model"), ChildRef(2, "optimizer"), ChildRef(3, "save_counter")]),
             ObjectNode(1, [ChildRef(5 + i, f"layer_{i}") for i in range(n)]),
             ObjectNode(2, [ChildRef(4, "iter")], slot_variables=[SlotVariableRef(5 + n, "m", 5 + 2 * n)]),
             ObjectNode(3, attributes=[Attribute("VARIABLE_VALUE", "save_counter", "save_counter" + V)]),
             ObjectNode(4, attributes=[Attribute("VARIABLE_VALUE", "iter", "optimizer/iter" + V)])]
    nodes += [ObjectNode(5 + i, [ChildRef(5 + n + i, "w")]) for i in range(n)]
    nodes += [ObjectNode(5 + n + i, attributes=[Attribute("VARIABLE_VALUE", f"w{i}" if i else "",
                                                          f"model/layer_{i}/w" + V)]) for i in range(n)]
    slot = "model/layer_0/w/.OPTIMIZER_SLOT/optimizer/m" + V
    nodes += [ObjectNode(5 + 2 * n, attributes=[Attribute("VARIABLE_VALUE", "w0/m", slot)])]
    keys = ["save_counter" + V, "optimizer/iter" + V, slot, "not/in/the/graph"]
    keys += [f"model/layer_{i}/w" + V for i in range(n)]
    return ObjectGraph(nodes), keys


def _expected(graph: ObjectGraph, keys: list[str]) -> dict:
    mapping = graph.map_keys(keys)
    var_keys = {n: k for k, (n, a) in mapping.items() if a.name == "VARIABLE_VALUE"}
    slots = object_graph._keras_slots(graph, mapping)
    return {k: object_graph._label(graph, k, _hit(mapping.get(k)), var_keys, slots) for k in keys}


def test_labels_read_as_the_dictionary_of_every_keys_label_in_any_order():
    graph, keys = _graph(50)
    for order in (sorted(keys), keys, random.Random(7).sample(keys, len(keys))):
        labels = object_graph.label_keys(graph, order)
        expected = _expected(graph, order)
        assert labels == expected and dict(labels) == expected
        assert list(labels) == order and len(labels) == len(order)
        assert all(k in labels for k in order)
        for absent in ("", "model", "model/layer_0/w", "zzz", 3, None):
            assert absent not in labels and labels.get(absent) is None
        assert labels["model/layer_0/w" + V] == object_graph.EntryLabel("model/layer_0/w" + V, "variable",
                                                                        5 + 50, "VARIABLE_VALUE")  # (no full name)
        assert labels["model/layer_7/w" + V].name == "w7"
        assert [labels[k].role for k in keys[:4]] == ["save_counter", "optimizer", "slot", "other"]
        assert len(labels.special) == 4  # the counter, the optimizer's iteration, the slot, the unknown key


def _labelled(graph: ObjectGraph, keys: list[str]) -> tuple[object_graph.KeyLabels, int]:
    """The keys' labels and the bytes they hold (labelled once before: what the graph keeps once asked is not the
    labels')."""
    import tracemalloc

    object_graph.label_keys(graph, keys)
    tracemalloc.start()
    try:
        labels = object_graph.label_keys(graph, keys)
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return labels, held


def test_labels_hold_a_few_bytes_a_model_variable():
    graph, keys = _graph(20_000)
    keys.sort()
    labels, held = _labelled(graph, keys)
    assert len(labels) == len(keys)
    assert held / len(keys) < 40, held / len(keys)  # (a label and a dictionary entry a key: some 170)


def _in_columns(graph: ObjectGraph) -> ObjectGraph:
    """The graph as a checkpoint stores it, decoded again: into columns."""
    from formats.concepts.object_graph_codec import decode_object_graph, encode_object_graph
    from formats.concepts.object_graph_columns import GraphColumns

    decoded = decode_object_graph(encode_object_graph(graph.nodes), "ckpt.index")
    assert isinstance(decoded.table, GraphColumns)
    return decoded


def test_a_graph_in_columns_labels_its_keys_without_an_attribute_a_key():
    """Decoded into columns, the graph's attributes are made when asked for (AttributeRows): the labels and the key
    map read as those of the graph made of nodes, and labelling makes no attribute a key, nor keeps a full name."""
    from formats.concepts.object_graph_columns import AttributeRows

    nodes, keys = _graph(20_000)
    graph = _in_columns(nodes)
    mapping = graph.map_keys(keys)
    assert isinstance(mapping._attributes, AttributeRows)
    assert dict(mapping.items()) == dict(nodes.map_keys(keys).items())
    rows = mapping._attributes
    assert rows[5:8] == [rows[5], rows[6], rows[7]] and rows[-1] == rows[len(rows) - 1]
    assert [rows.full_name(k) for k in range(len(rows))] == [a.full_name for a in nodes.table.attributes()]
    keys.sort()
    labels, held = _labelled(graph, keys)
    assert graph.table._attributes is None  # no attribute made for every key
    assert labels == object_graph.label_keys(nodes, keys)
    assert held / len(keys) < 40, held / len(keys)  # (an attribute and its full name a key were 140 and 70 more)


def _runs(keys: list[str]) -> list[list[str]]:
    """Lists of keys a bundle's tensors may ask about at once: the whole run, runs at its ends and in its middle
    (its own strings, and equal copies), one key, none, and lists that are not a run (reversed, out of order, a
    key twice)."""
    middle = keys[3:len(keys) - 2]
    return [keys, keys[:1], keys[-3:], middle, [k.encode().decode() for k in middle], [], keys[::-1],
            keys[::2], [keys[0], keys[0]], random.Random(3).sample(keys, len(keys))]


@pytest.mark.parametrize("columns", [False, True], ids=["nodes", "columns"])
def test_names_and_facts_of_many_keys_are_each_keys_own(columns, monkeypatch):
    """``names_of`` and ``facts_of`` (a run of the labels' keys read by position) give what ``name_of`` and
    ``facts`` give key by key, for runs of model variables alone, runs with keys labelled one by one (the counter,
    the optimizer's, a slot, a key of no attribute) and lists that are no run; a key not among the labels' is a
    KeyError naming it for ``names_of``, None for ``facts_of``, as key by key."""
    from formats.concepts import object_graph_codec

    monkeypatch.setattr(object_graph_codec, "SMALL_GRAPH_BYTES", 0)  # (a graph this small: decoded into columns)
    nodes, keys = _graph(60)
    graph = _in_columns(nodes) if columns else nodes
    keys.sort()
    labels = object_graph.label_keys(graph, keys)
    variables = [k for k in keys if k.startswith("model/layer_") and "OPTIMIZER_SLOT" not in k]
    assert len(labels.special) == 4 and not labels.special.keys() & set(variables)
    for run in [*_runs(keys), *_runs(variables)]:
        assert labels.names_of(run) == [labels.name_of(k) for k in run], run
        assert labels.facts_of(run) == [labels.facts(k) for k in run], run
    assert labels.names_of(variables[:2]) == ["model/layer_0/w" + V, "w1"]  # (no full name: the key)
    assert labels.names_of(keys) == [labels[k].name for k in keys]
    assert [f.role for f in labels.facts_of(keys)] == [labels[k].role for k in keys]
    assert {"slot", "other", "variable"} <= {f.role for f in labels.facts_of(keys)}
    for run in ([*keys, "zzz"], ["zzz"], [*variables[:2], "model"]):
        with pytest.raises(KeyError, match=run[-1]):
            labels.names_of(run)
        assert labels.facts_of(run) == [labels.facts(k) for k in run] and labels.facts_of(run)[-1] is None


def _optimized(n: int) -> tuple[ObjectGraph, list[str]]:
    """A model of ``n`` variables, each with an optimizer's two slots (``m``, ``v``): as a checkpoint stores it,
    decoded into columns."""
    nodes = [ObjectNode(0, [ChildRef(1, "model"), ChildRef(2, "optimizer")]),
             ObjectNode(1, [ChildRef(3 + i, f"v{i}") for i in range(n)]),
             ObjectNode(2, slot_variables=[SlotVariableRef(3 + i, slot, 3 + n + 2 * i + j)
                                           for i in range(n) for j, slot in enumerate("mv")])]
    nodes += [ObjectNode(3 + i, attributes=[Attribute("VARIABLE_VALUE", f"v{i}", f"model/v{i}" + V)])
              for i in range(n)]
    nodes += [ObjectNode(3 + n + 2 * i + j, attributes=[
        Attribute("VARIABLE_VALUE", f"v{i}/{slot}", f"model/v{i}/.OPTIMIZER_SLOT/optimizer/{slot}" + V)])
        for i in range(n) for j, slot in enumerate("mv")]
    graph = _in_columns(ObjectGraph(nodes))
    return graph, sorted(a.checkpoint_key for node in nodes for a in node.attributes)


def test_labelling_slots_decodes_strings_in_proportion_to_the_graph(monkeypatch):
    """Each slot variable's label reads its one slot reference: the strings labelling decodes grow with the graph,
    not with its square (every slot name was decoded again for each slot: 4,000 slots took 18 s)."""
    from formats.concepts import object_graph_codec
    from formats.concepts.object_graph_columns import GraphColumns

    monkeypatch.setattr(object_graph_codec, "SMALL_GRAPH_BYTES", 0)  # (in columns, however small)
    texts = GraphColumns.texts
    decoded = [0]

    def counted(self, spans, lo=0, hi=None):  # type: ignore[no-untyped-def]
        out = texts(self, spans, lo, hi)
        decoded[0] += len(out)
        return out

    monkeypatch.setattr(GraphColumns, "texts", counted)
    counts = []
    for n in (100, 400):
        graph, keys = _optimized(n)
        decoded[0] = 0
        labels = object_graph.label_keys(graph, keys)
        assert [labels[k].role for k in keys].count("slot") == 2 * n
        assert labels["model/v7/.OPTIMIZER_SLOT/optimizer/v" + V].slot_name == "v"
        counts.append(decoded[0])
    assert counts[1] <= 4.5 * counts[0], counts  # (four times the graph: squared, sixteen)


def test_a_key_map_reads_as_the_dictionary_of_positions_in_any_order():
    """The key map holds each key's attribute's position by the key's position (KeyPositions), found by bisection
    for keys in order, by a dictionary otherwise: it reads as a dictionary key -> (node, attribute) in the order
    of the keys given, a key extending an attribute's own (``.../ITERATOR_STATE``) included."""
    made, keys = _graph(20_000)
    made.nodes.append(ObjectNode(len(made.nodes), attributes=[Attribute("ITERATOR", "", "it/.ATTRIBUTES/ITERATOR")]))
    made.nodes[0].children.append(ChildRef(len(made.nodes) - 1, "it"))
    nodes = ObjectGraph(made.nodes)
    keys.append("it/.ATTRIBUTES/ITERATOR_STATE")
    by_key = {a.checkpoint_key: (n, a) for n, node in enumerate(nodes.nodes) for a in node.attributes}
    by_key["it/.ATTRIBUTES/ITERATOR_STATE"] = by_key["it/.ATTRIBUTES/ITERATOR"]
    for graph, order in [(g, o) for g in (nodes, _in_columns(nodes))
                         for o in (sorted(keys), keys, random.Random(3).sample(keys, len(keys)))]:
        attributes = graph.table.attributes()
        mapping = graph.map_keys(order)
        expected = {k: by_key[k] for k in order if k in by_key}
        assert list(mapping) == list(expected) and len(mapping) == len(expected) == len(order) - 1
        assert {k: (n, a.checkpoint_key) for k, (n, a) in mapping.items()} == \
            {k: (n, a.checkpoint_key) for k, (n, a) in expected.items()}
        assert [(k, attributes[p].checkpoint_key) for k, p in mapping.positions()] == \
            [(k, a.checkpoint_key) for k, (_, a) in expected.items()]
        for key, p in zip(order, mapping.by_position, strict=True):
            assert (p >= 0) == (key in expected) and mapping.position(key) == (p if p >= 0 else None)
        for absent in ("", "not/in/the/graph", "zzz", "model", 3, None):
            assert absent not in mapping and mapping.get(absent) is None and mapping.position(absent) is None


def test_a_key_map_holds_a_few_bytes_a_key():
    """No dictionary of every key (some 70 bytes a key: 70 MB at 10^6 keys) when the keys ascend."""
    import tracemalloc

    nodes, keys = _graph(20_000)
    graph = _in_columns(nodes)
    keys.sort()
    graph.map_keys(keys)
    tracemalloc.start()
    try:
        mapping = graph.map_keys(keys)
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(mapping) == len(keys) - 1
    assert held / len(keys) < 40, held / len(keys)  # (74 with a dictionary key -> position)


CORPUS_BUNDLES = sorted(str(p)[:-len(".index")] for p in CORPUS.rglob("*.index"))


@pytest.mark.parametrize("prefix", CORPUS_BUNDLES, ids=lambda p: str(Path(p).relative_to(CORPUS)))
def test_the_tensors_maybe_not_variables_hold_every_tensor_whose_role_is_another(prefix):
    """A bundle's ``items_maybe_not_variables`` (its labels' special keys) holds every tensor whose role is not
    ``variable``, each the checkpoint's own entry; the generic answer is every tensor."""
    with formats.open_checkpoint(prefix) as ckpt:
        others = {k for k, e in ckpt.items() if str(e.role) != Role.VARIABLE}
        special = dict(ckpt.items_maybe_not_variables())
        assert others <= set(special) <= set(ckpt)
        assert all(ckpt[k] is e for k, e in special.items())
        assert len(special) < len(ckpt) or not any(str(e.role) == Role.VARIABLE for e in ckpt.values())
        assert [k for k, _ in Checkpoint.items_maybe_not_variables(ckpt)] == list(ckpt)


@pytest.mark.parametrize("prefix", CORPUS_BUNDLES, ids=lambda p: str(Path(p).relative_to(CORPUS)))
def test_a_bundles_names_and_roles_asked_at_once_are_each_tensors_own(prefix):
    """``BundleTensor.labels_of`` (the names and roles a provenance record asks of a run of tensors at once) gives
    each tensor's own ``name`` and ``role``, for runs of the bundle's tensors and for lists that are no run."""
    from formats.tf_bundle.checkpoint import BundleTensor

    with formats.open_checkpoint(prefix) as ckpt:
        tensors = [ckpt[k] for k in ckpt]
        if not tensors or type(tensors[0]) is not BundleTensor:
            pytest.skip("not a bundle's tensors")
        if BundleTensor.labels_of(tensors) is None:  # (partitioned variables: each asked, not a run)
            assert any(t.partitions > 1 for t in tensors)
            pytest.skip("a tensor of several slices")
        for run in filter(None, (tensors, tensors[1:-1], tensors[-2:], tensors[::-1], tensors[::2])):
            names, roles = BundleTensor.labels_of(run)
            assert names == [t.name for t in run] and roles == [t.role for t in run]
        labels = tensors[0]._labels
        if labels.object_based:  # a key it does not hold: a KeyError, as asking the key alone
            for ask in (labels.names, labels.roles):
                with pytest.raises(KeyError, match="zzz"):
                    ask([tensors[0].key, "zzz"])


def _chosen_one_by_one(ckpt, select, exclude, drop_optimizer):
    """What an edit keeps, every tensor's role asked (the rule of formats.ops.edit.selection, written out)."""
    keys = sorted(k for k in ckpt if k != OBJECT_GRAPH_KEY)
    role = {k: str(ckpt[k].role) for k in keys}
    chosen = {k for k in keys if not select or any(fnmatch.fnmatchcase(k, p) for p in select)}
    dropped = {}
    for k in keys:
        if k not in chosen and role[k] != Role.SAVE_COUNTER:
            dropped[k] = "not selected"
        elif any(fnmatch.fnmatchcase(k, p) for p in exclude):
            dropped[k] = "excluded"
        elif drop_optimizer and role[k] in OPTIMIZER_ROLES:
            dropped[k] = "optimizer slot" if role[k] == Role.SLOT else "optimizer state"
    for k in keys:
        if k not in dropped and role[k] == Role.SLOT and ckpt[k].slot_of in dropped:
            dropped[k] = f"slot of {ckpt[k].slot_of}, which is left out"
    return [k for k in keys if k not in dropped], dropped


@pytest.mark.parametrize("prefix", CORPUS_BUNDLES, ids=lambda p: str(Path(p).relative_to(CORPUS)))
def test_an_edits_selection_is_what_asking_every_tensors_role_gives(prefix):
    """``choose_tensors`` asks only the tensors maybe not variables about roles and slots: what it keeps and why it
    leaves each other out is what asking every tensor gives, a variable with slots left out taking them along."""
    with formats.open_checkpoint(prefix) as ckpt:
        slotted = sorted({str(e.slot_of) for e in ckpt.values() if str(e.role) == Role.SLOT and e.slot_of})
        keys = sorted(k for k in ckpt if k != OBJECT_GRAPH_KEY)
        cases = [((), (keys[len(keys) // 2],), False), ((), (), True), ((keys[0],), (), False), ((), ("*kernel*",), True)]
        cases += [((), (v,), False) for v in slotted[:3]] + [(("*bias*",), (), False)]
        for select, exclude, drop in cases:
            got = choose_tensors(ckpt, select, exclude, drop_optimizer=drop)
            kept, dropped = _chosen_one_by_one(ckpt, select, exclude, drop)
            assert (got.kept, got.dropped) == (kept, dropped), (select, exclude, drop)
            if slotted and exclude == (slotted[0],):
                assert any(why.startswith("slot of ") for why in got.dropped.values())


@pytest.mark.parametrize("source", ["seed_slots/tf_ckpts/ckpt-5", "keras2_tagger/tagger_tf/ckpt", "scale slots"])
def test_the_slot_ref_reader_answers_as_slot_of(source, tmp_path) -> None:
    """``slot_ref_reader`` (what labelling asks of every slot, with no dictionary a slot) gives each node what
    ``slot_of`` gives it: its optimizer, its variable and slot name for a slot variable, None for any other (every
    node of the Keras 2 tagger's graph, whose optimizer's slots are no slot variables of the graph)."""
    from tests.conftest import CORPUS
    from tests.scale_bundles import name_based_slots, object_based

    prefix = object_based(name_based_slots(tmp_path, 3000)) if source == "scale slots" else str(CORPUS / source)
    with formats.open_checkpoint(prefix) as ckpt:
        graph = ckpt.object_graph
        read = graph.slot_ref_reader()
        found = 0
        for node in range(len(graph)):
            want = graph.slot_of(node)
            got = read(node)
            assert got == (None if want is None else (want[0], want[1].original_variable_node_id, want[1].slot_name))
            found += want is not None
        assert (found > 0) == (source != "keras2_tagger/tagger_tf/ckpt")
