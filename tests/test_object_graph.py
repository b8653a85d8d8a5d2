"""The object graph against the corpus manifest, key labels (name/role), escaping, name-based roles."""
from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from formats import open_checkpoint
from formats.core.errors import ChecksumError, CorruptCheckpointError
from formats.concepts.object_graph import (Attribute, ChildRef, ObjectGraph, ObjectNode, attribute_key,
                                           escape_local_name, split_path, unescape_local_name)
from formats.concepts.object_graph_codec import decode_object_graph
from formats.concepts.roles import Role, classify_name, classify_names, slot_key, slot_suffixes
from formats.concepts.variant import describe_variant

from .conftest import CORPUS, MANIFEST, entries_of

OBJECT_BASED = sorted(k for k in entries_of("tf-bundle") if MANIFEST[k]["object_graph"] is not None)
NAME_BASED = sorted(k for k in entries_of("tf-bundle") if MANIFEST[k]["object_graph"] is None)


def test_corpus_has_both_kinds() -> None:
    assert len(OBJECT_BASED) == 12 and "seed_slots/tf_ckpts/ckpt-5" in OBJECT_BASED
    assert len(NAME_BASED) == 6 and "tf1_adam/model.ckpt-200" in NAME_BASED


@pytest.mark.parametrize("rel", OBJECT_BASED)
def test_graph_equals_manifest_node_by_node(rel: str) -> None:
    with open_checkpoint(CORPUS / rel) as ckpt:
        graph = ckpt.object_graph
        assert ckpt.format == "tf-object"
        expected = MANIFEST[rel]["object_graph"]
        assert len(graph.nodes) == len(expected)
        for node, want in zip(graph.nodes, expected):
            assert [[c.local_name, c.node_id] for c in node.children] == want["children"]
            assert [[a.name, a.full_name, a.checkpoint_key] for a in node.attributes] == want["attributes"]
            assert [[s.original_variable_node_id, s.slot_name, s.slot_variable_node_id]
                    for s in node.slot_variables] == want["slot_variables"]


@pytest.mark.parametrize("rel", OBJECT_BASED)
def test_paths_rebuild_every_checkpoint_key(rel: str) -> None:
    # Breadth-first paths (first path wins) plus escaping give back TensorFlow's own keys.
    with open_checkpoint(CORPUS / rel) as ckpt:
        graph = ckpt.object_graph
        for node in graph.nodes:
            for attr in node.attributes:
                assert attribute_key(graph.path(node.id), attr.name) == attr.checkpoint_key


@pytest.mark.parametrize("rel", OBJECT_BASED)
def test_entry_name_is_full_name_for_every_variable_value(rel: str) -> None:
    with open_checkpoint(CORPUS / rel) as ckpt:
        attrs = [a for n in MANIFEST[rel]["object_graph"] for a in n["attributes"] if a[0] == "VARIABLE_VALUE"]
        assert attrs
        for _, full_name, key in attrs:
            assert ckpt[key].name == full_name
        assert set(ckpt.object_graph.map_keys(list(ckpt))) == set(ckpt) - {"_CHECKPOINTABLE_OBJECT_GRAPH"}


@pytest.mark.parametrize("rel", NAME_BASED)
def test_name_based_has_no_graph_and_names_are_keys(rel: str) -> None:
    with open_checkpoint(CORPUS / rel) as ckpt:
        assert ckpt.format == "tf-name" and ckpt.object_graph is None
        assert all(e.name == k for k, e in ckpt.items())


def test_iterator_key_extends_the_attribute_key() -> None:
    with open_checkpoint(CORPUS / "seed_slots/tf_ckpts/ckpt-5") as ckpt:
        key = "iterator/.ATTRIBUTES/ITERATOR_STATE"
        node_id, attr = ckpt.object_graph.map_keys([key])[key]
        assert (node_id, attr.name, attr.checkpoint_key) == (1, "ITERATOR", "iterator/.ATTRIBUTES/ITERATOR")
        assert ckpt[key].role == "iterator" and ckpt[key].name == key


def test_longest_attribute_key_wins_and_strangers_stay_unmapped() -> None:
    root = ObjectNode(0, children=[ChildRef(1, "it")])
    it = ObjectNode(1, attributes=[Attribute("X", "", "it/.ATTRIBUTES/X"), Attribute("X_Y", "", "it/.ATTRIBUTES/X_Y")])
    graph = ObjectGraph([root, it])
    keys = ["it/.ATTRIBUTES/X_Y_STATE", "it/.ATTRIBUTES/X_STATE", "it/.ATTRIBUTES/X", "other/.ATTRIBUTES/X"]
    got = {k: v[1].name for k, v in graph.map_keys(keys).items()}
    assert got == {"it/.ATTRIBUTES/X_Y_STATE": "X_Y", "it/.ATTRIBUTES/X_STATE": "X", "it/.ATTRIBUTES/X": "X"}


def test_roles_of_the_guide_checkpoint() -> None:
    with open_checkpoint(CORPUS / "seed_slots/tf_ckpts/ckpt-5") as ckpt:
        roles = {k: e.role for k, e in ckpt.items()}
        slots = {k: (e.slot_of, e.optimizer, e.slot_name) for k, e in ckpt.items() if e.role == "slot"}
    assert roles == {
        "_CHECKPOINTABLE_OBJECT_GRAPH": "object_graph",
        "iterator/.ATTRIBUTES/ITERATOR_STATE": "iterator",
        "net/l1/bias/.ATTRIBUTES/VARIABLE_VALUE": "variable",
        "net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE": "variable",
        "net/l1/bias/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE": "slot",
        "net/l1/bias/.OPTIMIZER_SLOT/optimizer/v/.ATTRIBUTES/VARIABLE_VALUE": "slot",
        "net/l1/kernel/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE": "slot",
        "net/l1/kernel/.OPTIMIZER_SLOT/optimizer/v/.ATTRIBUTES/VARIABLE_VALUE": "slot",
        "optimizer/beta_1/.ATTRIBUTES/VARIABLE_VALUE": "optimizer",
        "optimizer/beta_2/.ATTRIBUTES/VARIABLE_VALUE": "optimizer",
        "optimizer/decay/.ATTRIBUTES/VARIABLE_VALUE": "optimizer",
        "optimizer/iter/.ATTRIBUTES/VARIABLE_VALUE": "optimizer",
        "optimizer/learning_rate/.ATTRIBUTES/VARIABLE_VALUE": "optimizer",
        "save_counter/.ATTRIBUTES/VARIABLE_VALUE": "save_counter",
        "step/.ATTRIBUTES/VARIABLE_VALUE": "variable",
    }
    k, b = "net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE", "net/l1/bias/.ATTRIBUTES/VARIABLE_VALUE"
    assert slots == {
        "net/l1/kernel/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE": (k, "optimizer", "m"),
        "net/l1/kernel/.OPTIMIZER_SLOT/optimizer/v/.ATTRIBUTES/VARIABLE_VALUE": (k, "optimizer", "v"),
        "net/l1/bias/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE": (b, "optimizer", "m"),
        "net/l1/bias/.OPTIMIZER_SLOT/optimizer/v/.ATTRIBUTES/VARIABLE_VALUE": (b, "optimizer", "v"),
    }


def test_keras_optimizer_slots_found_from_full_names() -> None:
    with open_checkpoint(CORPUS / "seed_keras2/tf_ckpts/ckpt-10") as ckpt:
        slots = {k: (e.slot_of, e.optimizer, e.slot_name) for k, e in ckpt.items() if e.role == "slot"}
        opt = sorted(k for k, e in ckpt.items() if e.role == "optimizer")
    k, b = "net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE", "net/l1/bias/.ATTRIBUTES/VARIABLE_VALUE"
    assert slots == {
        "optimizer/_variables/1/.ATTRIBUTES/VARIABLE_VALUE": (k, "optimizer", "m"),
        "optimizer/_variables/2/.ATTRIBUTES/VARIABLE_VALUE": (k, "optimizer", "v"),
        "optimizer/_variables/3/.ATTRIBUTES/VARIABLE_VALUE": (b, "optimizer", "m"),
        "optimizer/_variables/4/.ATTRIBUTES/VARIABLE_VALUE": (b, "optimizer", "v"),
    }
    assert opt == ["optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE",
                   "optimizer/_learning_rate/.ATTRIBUTES/VARIABLE_VALUE"]


def test_keras_model_checkpoint_roles_count() -> None:
    with open_checkpoint(CORPUS / "keras2_tagger/tagger_tf/ckpt") as ckpt:
        counts: dict[str, int] = {}
        for e in ckpt.values():
            counts[e.role] = counts.get(e.role, 0) + 1
        assert counts == {"object_graph": 1, "variable": 12, "slot": 20, "optimizer": 2}
        assert ckpt.object_graph.aliases(0) == ["root"]  # the model tracks itself as "root"


def test_aliases_keep_the_other_paths() -> None:
    with open_checkpoint(CORPUS / "tf2_mixed/all_dtypes/ckpt-1") as ckpt:
        g = ckpt.object_graph
        assert (g.path(6), g.aliases(6)) == ("shared", ["nested/layers/1"])
        assert (g.path(24), split_path(g.path(24))) == ("nested/a.Sb", ["nested", "a/b"])
        assert (g.path(25), g.local_name(25)) == ("nested/c..d", "c.d")
    with open_checkpoint(CORPUS / "seed_keras2/tf_list_example-1") as ckpt:
        g = ckpt.object_graph
        assert [(g.path(i), g.aliases(i)) for i in (4, 5)] == [("listed/0", ["mapped/one"]),
                                                                ("listed/1", ["mapped/two"])]


def test_slot_nodes_get_tensorflows_slot_path() -> None:
    with open_checkpoint(CORPUS / "seed_slots/tf_ckpts/ckpt-5") as ckpt:
        g = ckpt.object_graph
        assert g.path(14) == "net/l1/kernel/.OPTIMIZER_SLOT/optimizer/m"
        assert g.local_name(14) == "m" and g.slot_of(14)[0] == 3 and g.parent(14) is None
        assert [i for i in range(len(g)) if g.is_optimizer(i)] == [3]
        assert g.nodes[0].has_checkpoint_values is True and g.nodes[0].registered_saver is None


def test_a_slot_variables_path_is_built_when_asked_for(monkeypatch) -> None:
    """Decoding a graph builds no slot variable's path (a string per slot was most of decoding a graph of slots);
    asking for one builds that one, once."""
    from formats.concepts import object_graph

    built: list[tuple[str, str, str]] = []
    real = object_graph.slot_variable_key
    monkeypatch.setattr(object_graph, "slot_variable_key", lambda *a: built.append(a) or real(*a))
    with open_checkpoint(CORPUS / "seed_slots/tf_ckpts/ckpt-5") as ckpt:
        g = ckpt.object_graph
        assert built == [] and len(g.table.slot_id) == 4
        assert g.path(14) == "net/l1/kernel/.OPTIMIZER_SLOT/optimizer/m"
        assert g.path(14) == "net/l1/kernel/.OPTIMIZER_SLOT/optimizer/m"
        assert built == [("net/l1/kernel", "optimizer", "m")]


def test_reached_among_leaves_out_the_slot_variables_no_edge_reaches() -> None:
    with open_checkpoint(CORPUS / "seed_slots/tf_ckpts/ckpt-5") as ckpt:
        g = ckpt.object_graph
        slots = {s.slot_variable_node_id for s in g.slot_variables(3)}
        assert len(slots) == 4 and all(g.parent(s) is None for s in slots)
        assert g.reached_among([*slots, 0, 3]) == {0, 3}


def test_bad_graph_bytes_are_a_corrupt_checkpoint() -> None:
    with pytest.raises(CorruptCheckpointError, match="does not parse"):
        decode_object_graph(b"\x0a\xff\xff", "x.index")
    with pytest.raises(CorruptCheckpointError, match="no nodes"):
        decode_object_graph(b"", "x.index")
    with pytest.raises(CorruptCheckpointError, match="node 0 refers to node 7, but there are 1 nodes"):
        ObjectGraph([ObjectNode(0, children=[ChildRef(7, "a")])], "x.index")


def test_damaged_graph_tensor_fails_cleanly_in_the_cli(corpus_copy, run_cli) -> None:
    folder = corpus_copy("seed_slots")
    prefix = folder / "tf_ckpts/ckpt-5"
    with open_checkpoint(prefix) as ckpt:
        raw = ckpt["_CHECKPOINTABLE_OBJECT_GRAPH"].raw
    data = folder / "tf_ckpts/ckpt-5.data-00000-of-00001"
    blob = bytearray(data.read_bytes())
    blob[raw.offset + raw.size // 2] ^= 0xFF
    data.write_bytes(bytes(blob))
    assert run_cli("ls", prefix).exit_code == 0  # the plain listing never reads the graph
    with open_checkpoint(prefix) as ckpt, pytest.raises(ChecksumError):
        _ = ckpt["step/.ATTRIBUTES/VARIABLE_VALUE"].name
    result = run_cli("ls", "--names", prefix)
    assert result.exit_code == 3
    assert result.stderr.startswith(f"ckpt: error: {data}: tensor '_CHECKPOINTABLE_OBJECT_GRAPH': checksum")


def test_variant_iterator_state_is_described() -> None:
    with open_checkpoint(CORPUS / "seed_slots/tf_ckpts/ckpt-5") as ckpt:
        entry = ckpt["iterator/.ATTRIBUTES/ITERATOR_STATE"]
        summary = describe_variant(entry)
        values = entry.read().reshape(-1)
    assert summary.type_names == ["tensorflow::Iterator"]
    assert [e.nbytes for e in summary.elements] == [len(v) for v in values] == [127, 258, 141, 176, 313]
    assert summary.text() == "5 x tensorflow::Iterator, 1015 B serialized"
    assert summary.to_json() == {"type_names": ["tensorflow::Iterator"], "elements": 5, "nbytes": 1015}


def test_listing_does_not_decode_the_graph_and_nothing_imports_protobuf() -> None:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from ckpt_cli.main import cli\n"
        f"p = {str(CORPUS / 'seed_slots/tf_ckpts/ckpt-5')!r}\n"
        "for args in (['ls', p], ['ls', '--json', p]):\n"
        "    assert CliRunner().invoke(cli, args).exit_code == 0\n"
        "print('formats.concepts.proto.messages' in sys.modules)\n"
        "from formats import open_checkpoint\n"
        "open_checkpoint(p)['step/.ATTRIBUTES/VARIABLE_VALUE'].name\n"
        "print('formats.concepts.proto.messages' in sys.modules)\n"
        "print('google.protobuf' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True", "False"]


# --- escaping -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name, escaped", [
    ("a/b", "a.Sb"), ("c.d", "c..d"), ("..", "...."), (".S", "..S"), ("/", ".S"), ("a./b", "a...Sb"),
    ("ünï/cødé.ß", "ünï.Scødé..ß"), ("", ""),
])
def test_escape_examples(name: str, escaped: str) -> None:
    assert escape_local_name(name) == escaped
    assert unescape_local_name(escaped) == name


@pytest.mark.parametrize("bad", ["a.b", "trailing.", ".x", "...", "a.s"])
def test_unescape_rejects_lone_dots(bad: str) -> None:
    with pytest.raises(ValueError, match="bad escape"):
        unescape_local_name(bad)


_NAMES = st.text(alphabet=st.sampled_from(["a", "/", ".", "S", "s", "é", "語", "\U0001f600", "_", "0"]), max_size=12) \
    | st.text(max_size=12)


@given(_NAMES)
def test_escape_round_trips(name: str) -> None:
    escaped = escape_local_name(name)
    assert "/" not in escaped
    assert unescape_local_name(escaped) == name


@given(st.lists(_NAMES.filter(bool), min_size=1, max_size=5))
def test_paths_of_escaped_segments_split_back(names: list[str]) -> None:
    assert split_path("/".join(escape_local_name(n) for n in names)) == names


# --- name-based roles ---------------------------------------------------------------------------

def test_tf1_adam_roles() -> None:
    with open_checkpoint(CORPUS / "tf1_adam/model.ckpt-200") as ckpt:
        got = {k: (e.role, e.slot_of, e.optimizer, e.slot_name) for k, e in ckpt.items()}
    assert got["dnn/logits/kernel"] == ("variable", None, None, None)
    assert got["dnn/logits/kernel/Adam"] == ("slot", "dnn/logits/kernel", "Adam", "m")
    assert got["dnn/logits/kernel/Adam_1"] == ("slot", "dnn/logits/kernel", "Adam", "v")
    assert got["beta1_power"] == got["beta2_power"] == ("optimizer", None, "Adam", None)
    assert got["global_step"] == ("optimizer", None, None, None)
    counts = {r: sum(v[0] == r for v in got.values()) for r in ("variable", "slot", "optimizer")}
    assert counts == {"variable": 6, "slot": 12, "optimizer": 3}


def test_tf1_estimator_adagrad_roles() -> None:
    with open_checkpoint(CORPUS / "tf1_estimator/model.ckpt-200") as ckpt:
        slots = sorted((k, e.slot_of, e.slot_name) for k, e in ckpt.items() if e.role == "slot")
        assert ckpt["global_step"].role == "optimizer"
    assert len(slots) == 6
    assert slots[0] == ("dnn/hiddenlayer_0/bias/Adagrad", "dnn/hiddenlayer_0/bias", "accumulator")
    assert all(k == f"{var}/Adagrad" for k, var, _ in slots)


def test_classify_name_table() -> None:
    assert classify_name("w/Momentum") == classify_name("w/Momentum", {"w"})
    assert classify_name("w/Momentum").slot_name == "momentum"
    assert classify_name("w/Momentum", {"x"}).role is Role.VARIABLE  # no such variable: not a slot
    assert classify_name("Adam").role is Role.VARIABLE  # a bare name is not a slot of nothing
    assert classify_name("scope/beta2_power").role == "optimizer"
    assert str(classify_name("_CHECKPOINTABLE_OBJECT_GRAPH").role) == "object_graph"
    assert (classify_name("w/Ftrl_1").optimizer, classify_name("w/Ftrl_1").slot_name) == ("Ftrl", "linear")


def test_rmsprop_centered_and_plain() -> None:
    plain = classify_names(["w", "w/RMSProp", "w/RMSProp_1"])
    assert [plain[k].slot_name for k in ("w/RMSProp", "w/RMSProp_1")] == ["rms", "momentum"]
    centered = classify_names(["w", "w/RMSProp", "w/RMSProp_1", "w/RMSProp_2"])
    assert [centered[k].slot_name for k in ("w/RMSProp", "w/RMSProp_1", "w/RMSProp_2")] == ["rms", "mg", "momentum"]


def test_slot_key_inverts_the_table() -> None:
    assert slot_suffixes("Adam") == {"Adam": "m", "Adam_1": "v"}
    assert slot_key("dense/kernel", "Adam", "v") == "dense/kernel/Adam_1"
    assert slot_key("w", "RMSProp", "momentum") == "w/RMSProp_1"
    assert slot_key("w", "RMSProp", "momentum", centered=True) == "w/RMSProp_2"
    for suffix, (opt, slot) in [("Adagrad", ("Adagrad", "accumulator")), ("Ftrl_1", ("Ftrl", "linear"))]:
        assert slot_key("v", opt, slot) == f"v/{suffix}"
        assert classify_name(f"v/{suffix}").slot_name == slot
    with pytest.raises(KeyError, match="no name-based convention"):
        slot_key("w", "Adam", "vhat")
