"""Issue 38: a command that has taken what it needs of an object-based checkpoint's decoded graph lets go of it
before it makes an entry and a row per key (at 10^6 objects the graph, its labels and a pruned copy were 170-190 MB
of a peak), and nothing asks for it again: the graph is decoded once and the output is the one keeping it writes.

- ``edit`` in the source's own format needs only the pruned graph's bytes: the source's labels go before pruning,
  its graph and the pruned one after. An edit that casts, or converts, asks for the labels and keeps them.
- ``convert --to tf-name`` needs every key's name: the graph and labels go once the names are made.
(``rename``'s in-place path: ``tests/test_rename_in_place.py``.)"""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

import formats
from formats import open_checkpoint
from formats.concepts import object_graph_codec
from formats.ops.convert.plan import ConversionPlan
from formats.ops.edit import build
from formats.tf_bundle.checkpoint import BundleCheckpoint

from tests.scale_bundles import name_based, object_based


@pytest.fixture(scope="module")
def prefix(tmp_path_factory) -> str:
    return object_based(name_based(tmp_path_factory.mktemp("edit_lets_go"), 300))


def _digest(prefix: Path) -> list[str]:
    return [hashlib.sha1(p.read_bytes()).hexdigest() for p in sorted(prefix.parent.iterdir())]


@pytest.fixture
def decoded(monkeypatch) -> list[int]:
    found: list[int] = []
    decode = object_graph_codec.decode_object_graph
    monkeypatch.setattr(object_graph_codec, "decode_object_graph", lambda *a: found.append(1) or decode(*a))
    return found


def _graphs_held_at_rows(monkeypatch) -> list[bool]:
    """Whether the source's bundle held a decoded graph or labels, or the view a pruned graph, as each row was
    added."""
    held: list[bool] = []
    add_row = ConversionPlan.add_row
    view = build._view

    def seen(source, *args, **kwargs):  # type: ignore[no-untyped-def]
        found = view(source, *args, **kwargs)
        labels = source._labels

        def row(plan, *a, **k):  # type: ignore[no-untyped-def]
            held.append(labels._graph is not None or labels._labels is not None or found.object_graph is not None)
            return add_row(plan, *a, **k)

        monkeypatch.setattr(ConversionPlan, "add_row", row)
        return found

    monkeypatch.setattr(build, "_view", seen)
    return held


def test_an_edit_in_its_own_format_lets_go_of_the_graphs_and_writes_the_same(prefix, tmp_path, monkeypatch, decoded):
    view = build._view
    with monkeypatch.context() as m:  # (the edit as it was: the graphs kept to the end)
        m.setattr(build, "_view", lambda source, selection, conversion, forget=False: view(source, selection, conversion))
        kept = formats.edit(prefix, tmp_path / "kept" / "ckpt", exclude=("model/layer_0/*",))
    assert kept.ok
    decoded.clear()
    held = _graphs_held_at_rows(monkeypatch)
    result = formats.edit(prefix, tmp_path / "let-go" / "ckpt", exclude=("model/layer_0/*",))
    assert result.ok and len(decoded) == 1
    assert len(held) == 200 + 1 and not any(held)  # (the variables of layers 1 and 2, and the save counter)
    assert _digest(tmp_path / "let-go" / "ckpt") == _digest(tmp_path / "kept" / "ckpt")
    with open_checkpoint(str(tmp_path / "let-go" / "ckpt")) as out:
        assert len(out) == 202 and "model/layer_1/unit_0/w/.ATTRIBUTES/VARIABLE_VALUE" in out


def test_an_edit_that_casts_keeps_the_labels_it_asks_for(prefix, tmp_path, monkeypatch, decoded):
    held = _graphs_held_at_rows(monkeypatch)
    result = formats.edit(prefix, tmp_path / "cast" / "ckpt", exclude=("model/layer_0/*",),
                          casts={"float32": "float16"})
    assert result.ok and len(decoded) == 1 and held and all(held)
    with open_checkpoint(str(tmp_path / "cast" / "ckpt")) as out:
        assert out["model/layer_1/unit_0/w/.ATTRIBUTES/VARIABLE_VALUE"].dtype == "float16"


def test_a_conversion_to_names_lets_go_of_the_graph_once_the_names_are_made(prefix, tmp_path, monkeypatch,
                                                                              decoded):
    with monkeypatch.context() as m:  # (the conversion as it was: the graph kept to the end)
        m.setattr(BundleCheckpoint, "forget_object_graph", lambda self: None)
        kept = formats.convert(prefix, tmp_path / "kept" / "ckpt", "tf-name")
    assert kept.ok
    decoded.clear()
    held: list[bool] = []
    add_row = ConversionPlan.add_row
    with open_checkpoint(prefix) as ckpt:
        labels = ckpt._labels

        def row(plan, *a, **k):  # type: ignore[no-untyped-def]
            held.append(labels._graph is not None or labels._labels is not None)
            return add_row(plan, *a, **k)

        monkeypatch.setattr(ConversionPlan, "add_row", row)
        result = formats.convert(ckpt, tmp_path / "let-go" / "ckpt", "tf-name")
    assert result.ok and len(decoded) == 1
    assert len(held) == 300 + 1 and not any(held)  # (the variables and the save counter)
    assert _digest(tmp_path / "let-go" / "ckpt") == _digest(tmp_path / "kept" / "ckpt")
    with open_checkpoint(str(tmp_path / "let-go" / "ckpt")) as out:
        assert sorted(out)[:2] == ["model/layer_0/unit_0/w", "model/layer_0/unit_1/w"] and len(out) == 301


def test_an_edit_of_a_graph_in_columns_does_not_decode_its_pruned_graph(prefix, tmp_path, monkeypatch, decoded):
    """A large graph (in columns) pruned for an edit in its own format has its paths checked on the arrays: the
    pruned bytes are written, not decoded again (at 10^6 objects 3 s and 110 MB); an edit that casts asks for the
    pruned graph, decoded; both write what the edit did when it always decoded it."""
    from formats.ops.edit import prune

    monkeypatch.setattr(object_graph_codec, "SMALL_GRAPH_BYTES", 0)
    run = prune._ColumnPrune.run
    with monkeypatch.context() as m:  # (as it was: the pruned graph decoded and its paths compared)
        m.setattr(prune._ColumnPrune, "run", lambda self, keys, dropped, decoded=True: run(self, keys, dropped))
        m.setattr(prune._ColumnPrune, "_paths_kept", lambda self: False)
        kept = formats.edit(prefix, tmp_path / "decoded" / "ckpt", exclude=("model/layer_0/*",))
    assert kept.ok
    decoded.clear()
    result = formats.edit(prefix, tmp_path / "bytes" / "ckpt", exclude=("model/layer_0/*",))
    assert result.ok and len(decoded) == 1  # (the source's graph)
    assert _digest(tmp_path / "bytes" / "ckpt") == _digest(tmp_path / "decoded" / "ckpt")
    decoded.clear()
    cast = formats.edit(prefix, tmp_path / "cast" / "ckpt", exclude=("model/layer_0/*",), casts={"float32": "float16"})
    assert cast.ok and len(decoded) == 2


@pytest.mark.parametrize("bound, calls", [(100, 1), (10**9, 0)])
def test_letting_go_of_a_large_graph_gives_its_memory_back(prefix, tmp_path, monkeypatch, bound, calls):
    """A graph of LARGE_GRAPH objects or more, let go of (``convert --to tf-name`` once the names are made), has its
    memory given back to the system (a graph decoded and freed stayed resident through the write: 13 MiB of 105
    at 10^5 tensors); a smaller one's is not worth the call. The output is the same either way."""
    from formats.io import c_library
    from formats.tf_bundle import checkpoint

    released: list[bool] = []
    release = c_library.release_freed_memory
    monkeypatch.setattr(c_library, "release_freed_memory", lambda: released.append(release()) or released[-1])
    monkeypatch.setattr(checkpoint, "LARGE_GRAPH", bound)
    with open_checkpoint(prefix) as ckpt:
        assert 100 < len(ckpt.object_graph) < 10**9
    result = formats.convert(prefix, tmp_path / "out" / "ckpt", "tf-name")
    assert result.ok and len(released) == calls and all(type(r) is bool for r in released)
    with monkeypatch.context() as m:
        m.setattr(BundleCheckpoint, "forget_object_graph", lambda self: None)
        assert formats.convert(prefix, tmp_path / "kept" / "ckpt", "tf-name").ok
    assert _digest(tmp_path / "out" / "ckpt") == _digest(tmp_path / "kept" / "ckpt")


def test_freed_memory_is_given_back_where_the_c_library_can():
    """``release_freed_memory``: glibc's ``malloc_trim(0)``, True when it gave memory back (here, 40 MB of heap blocks
    just freed); False, and nothing called, where the C library has no such function."""
    import platform

    from formats.io import c_library

    blocks = [bytearray(64 * 1024) for _ in range(640)]  # (under the allocator's map threshold: the heap's own)
    del blocks
    given = c_library.release_freed_memory()
    assert type(given) is bool
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert given is True
    assert c_library.c_function("no_such_function_x", "L") is None


@pytest.mark.parametrize("how", ["npz", "safetensors", "extract"])
def test_an_export_labels_its_items_then_lets_go_of_the_graph_before_the_write(prefix, tmp_path, monkeypatch,
                                                                                 decoded, how):
    """An export of an object-based bundle (``convert --to npz|safetensors``, ``extract`` to ``.npz``) asks every
    item's name and role once planned, then lets go of the graph and its labels: the graph is decoded once, not held
    while the tensors and the record are written (at 10^5 tensors it was decoded there, every row held: 42 MiB more),
    and the file is the same bytes as with the graph kept."""
    from formats.npz import writer as npz_writer
    from formats.safetensors import writer as st_writer

    def export(source, out: Path) -> bool:  # type: ignore[no-untyped-def]
        if how == "extract":
            return formats.extract(source, [], out).tensors > 0
        return formats.convert(source, out, how).ok

    name = "a.safetensors" if how == "safetensors" else "a.npz"
    with monkeypatch.context() as m:  # (as it was: the graph kept, and asked for while the record is written)
        m.setattr(BundleCheckpoint, "forget_object_graph", lambda self: None)
        assert export(prefix, tmp_path / "kept" / name)
    decoded.clear()
    held: list[tuple[int, bool]] = []  # (graphs decoded, the graph or labels held) as the record is written
    module, target = (st_writer, "_header_pieces") if how == "safetensors" else (npz_writer, "_write_record")
    original = getattr(module, target)
    with open_checkpoint(prefix) as ckpt:
        labels = ckpt._labels

        def writing(*a, **k):  # type: ignore[no-untyped-def]
            held.append((len(decoded), labels._graph is not None or labels._labels is not None))
            return original(*a, **k)

        monkeypatch.setattr(module, target, writing)
        assert export(ckpt, tmp_path / "let-go" / name)
    assert len(decoded) == 1 and held == [(1, False)]  # (decoded before the write, and let go of)
    assert _digest(tmp_path / "let-go" / name) == _digest(tmp_path / "kept" / name)
    if how != "extract":  # (a dry run plans the export alone: no graph decoded)
        decoded.clear()
        assert formats.convert(prefix, tmp_path / "dry" / name, how, dry_run=True).ok and decoded == []


@pytest.mark.parametrize("how", ["npz", "safetensors", "extract"])
def test_an_export_asks_its_labels_before_it_holds_an_entry_a_key(prefix, tmp_path, monkeypatch, decoded, how):
    """The names and roles an export's record needs are asked, and the graph let go of, before an entry is made a
    key (and so before a row is planned a key): at 10^5 tensors the entries and rows were 21 MiB under the graph
    and its labels. The file is the same bytes as when they were asked at the write."""
    from formats.tf_bundle import checkpoint as bundle

    made: list[int] = []
    at_decode: list[int] = []
    init = bundle.BundleTensor.__init__

    def counted(self, *a, **k):  # type: ignore[no-untyped-def]
        made.append(1)
        init(self, *a, **k)

    def export(out: Path) -> bool:
        if how == "extract":
            return formats.extract(prefix, [], out).tensors > 0
        return formats.convert(prefix, out, how).ok

    from formats.ops.inspect import extract

    monkeypatch.setattr(extract, "KEEP_LABELS", 300)  # (this bundle's 300 tensors: as many as an extraction keeps for)
    name = "a.safetensors" if how == "safetensors" else "a.npz"
    with monkeypatch.context() as m:  # (as it was: asked as the write begins)
        m.setattr(BundleCheckpoint, "keep_names_and_roles", lambda self: None)
        assert export(tmp_path / "late" / name)
    decoded.clear()
    decode = object_graph_codec.decode_object_graph
    monkeypatch.setattr(object_graph_codec, "decode_object_graph",
                        lambda *a: at_decode.append(len(made)) or decode(*a))
    monkeypatch.setattr(bundle.BundleTensor, "__init__", counted)
    assert export(tmp_path / "early" / name)
    assert at_decode == [0] and len(made) >= 300
    assert _digest(tmp_path / "early" / name) == _digest(tmp_path / "late" / name)


@pytest.mark.parametrize("source", ["seed_slots/tf_ckpts/ckpt-5", "keras2_tagger/tagger_tf/ckpt",
                                    "tf2_mixed/all_dtypes/ckpt-1"])
def test_kept_names_and_roles_are_the_labels(source) -> None:
    """What ``keep_names_and_roles`` keeps is what the graph's labels give each key, in any order asked, after the
    graph is let go of (not decoded again)."""
    import random

    from tests.conftest import CORPUS

    prefix = str(CORPUS / source)
    with open_checkpoint(prefix) as ckpt:
        entries = list(ckpt.values())
        want = [(e.name, e.role) for e in entries]
    with open_checkpoint(prefix) as ckpt:
        ckpt.keep_names_and_roles()
        assert ckpt._labels._graph is None and ckpt._labels._kept is not None
        entries = list(ckpt.values())
        order = list(range(len(entries)))
        random.Random(0).shuffle(order)
        names, roles = type(entries[0]).labels_of([entries[i] for i in order])
        assert list(zip(names, roles)) == [want[i] for i in order]
        names, roles = type(entries[0]).labels_of(entries)
        assert list(zip(names, roles)) == want and ckpt._labels._graph is None


@pytest.mark.parametrize("selected, kept", [(["model/layer_0/*"], False), ([], True)])
def test_an_extraction_of_a_few_tensors_asks_only_their_labels(prefix, tmp_path, monkeypatch, selected, kept):
    """An extraction to ``.npz`` of fewer tensors than ``KEEP_LABELS`` asks their labels as they are written, not
    every key's first (its entries are few); one of as many or more asks every key's first."""
    from formats.ops.inspect import extract

    monkeypatch.setattr(extract, "KEEP_LABELS", 300)
    asked: list[int] = []
    keep = BundleCheckpoint.keep_names_and_roles
    monkeypatch.setattr(BundleCheckpoint, "keep_names_and_roles", lambda self: asked.append(1) or keep(self))
    report = formats.extract(prefix, selected, tmp_path / "a.npz")
    assert report.tensors == (100 if selected else 301) and bool(asked) == kept  # (and the save counter)
