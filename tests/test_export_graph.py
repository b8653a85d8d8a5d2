"""An export of an object-based checkpoint carries its object graph, and ``convert EXPORT --to tf-object`` goes
back to the source: the same keys, the same bytes, the same graph. Without the graph (renamed keys, a tensor left
out, a file written before it was carried, a graph that does not fit the file) the objects are rebuilt from the
keys, with a warning saying so. (TensorFlow restoring and training from what goes back:
tests/interop/test_export_roundtrip_tf.py.)

Expected values are found independently: the npz member with ``numpy.load``, the safetensors header with
``struct`` and ``json``, a graph rebuilt from keys decoded by the protobuf runtime (tests/proto_oracle.py).
"""
from __future__ import annotations

import base64
import itertools
import json
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from ckpt_cli.main import cli
from formats import open_checkpoint
from formats.ops.convert.keys_to_object import parse_object_key

from .conftest import CORPUS
from .proto_oracle import oracle

GRAPH = "_CHECKPOINTABLE_OBJECT_GRAPH"
MEMBER = "__ckpt_object_graph__"
OBJECT_BASED = sorted(str(p)[:-len(".index")] for p in CORPUS.rglob("*.index")
                      if GRAPH in open_checkpoint(str(p)[:-len(".index")]))
LEFT_OUT = f"warning: unused: {GRAPH}: the object graph is not a tensor; left out"
REBUILT = f"warning: graph: {GRAPH}: not in the export: rebuilt from the keys"


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def _graph_of(prefix: str) -> bytes:
    with open_checkpoint(prefix) as ckpt:
        return bytes(ckpt[GRAPH].read().reshape(-1)[0])


def _bytes(value: np.ndarray) -> bytes:
    return b"".join(value.reshape(-1).tolist()) if value.dtype == object else value.tobytes()


def _tensors(prefix: str) -> dict[str, tuple[str, tuple[int, ...], bytes]]:
    with open_checkpoint(prefix) as ckpt:
        return {k: (e.dtype, tuple(e.shape), _bytes(e.read())) for k, e in ckpt.items()}


def _carried(path: Path) -> bytes | None:
    """The graph the file carries, read without ckpt."""
    if path.suffix == ".npz":
        with np.load(path) as z:
            if MEMBER not in z.files:
                return None
            member = z[MEMBER]
            assert member.dtype == np.uint8 and member.ndim == 1
            return member.tobytes()
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    text = json.loads(raw[8:8 + n]).get("__metadata__", {}).get("ckpt.object_graph")
    return None if text is None else base64.b64decode(text)


def _strip(npz: Path, out: Path, drop: set[str], replace: dict[str, bytes] | None = None) -> None:
    """A copy of ``npz`` without the members ``drop`` and with ``replace``'s members' bytes."""
    with zipfile.ZipFile(npz) as whole, zipfile.ZipFile(out, "w") as copy:
        for info in whole.infolist():
            if info.filename not in drop:
                copy.writestr(info, (replace or {}).get(info.filename, whole.read(info)))


@pytest.mark.parametrize("to", ["npz", "safetensors"])
@pytest.mark.parametrize("source", OBJECT_BASED, ids=lambda p: p.split("corpus/")[-1])
def test_an_export_carries_the_graph_and_goes_back_to_the_source(source: str, to: str, tmp_path: Path) -> None:
    out = tmp_path / f"out.{to}"
    code, text = _run("convert", source, "--to", to, "-o", str(out), "--skip-unreadable")
    assert code == 0, text
    want = _tensors(source)
    left_out = "left out" in text.replace(LEFT_OUT, "")  # (safetensors has no strings: those are left out)
    if left_out:
        assert LEFT_OUT in text
        assert _carried(out) is None
        return
    assert GRAPH not in text
    assert _carried(out) == _graph_of(source)
    code, text = _run("convert", str(out), "--to", "tf-object", "-o", str(tmp_path / "back" / "ckpt"))
    assert code == 0, text
    assert "warning" not in text, text
    assert _tensors(str(tmp_path / "back" / "ckpt")) == want


def test_the_corpus_has_graphs_that_go_back_and_graphs_left_out() -> None:
    assert len(OBJECT_BASED) >= 5
    assert any("seed_slots" in s for s in OBJECT_BASED)  # (a variant: left out of a safetensors file)


def test_an_export_of_renamed_keys_carries_no_graph(tmp_path: Path) -> None:
    source = next(s for s in OBJECT_BASED if "tf2_mixed" not in s and "seed_slots" not in s)
    with open_checkpoint(source) as ckpt:
        first = sorted(k for k in ckpt if k != GRAPH)[0]
    out = tmp_path / "renamed.npz"
    code, text = _run("convert", source, "--to", "npz", "-o", str(out), "--map", f"{first}=renamed/{first}")
    assert code == 0, text
    assert LEFT_OUT in text
    assert _carried(out) is None


@pytest.fixture
def exported(tmp_path: Path) -> tuple[str, Path]:
    source = str(CORPUS / "seed_slots" / "tf_ckpts" / "ckpt-5")
    out = tmp_path / "exported.npz"
    code, text = _run("convert", source, "--to", "npz", "-o", str(out))
    assert code == 0 and _carried(out) is not None, text
    return source, out


def test_without_the_graph_the_objects_are_rebuilt_from_the_keys(exported: tuple[str, Path], tmp_path: Path) -> None:
    source, out = exported
    bare = tmp_path / "bare.npz"
    _strip(out, bare, {MEMBER + ".npy"})
    code, text = _run("convert", str(bare), "--to", "tf-object", "-o", str(tmp_path / "back" / "ckpt"))
    assert code == 0, text
    assert REBUILT in text and "--template <a checkpoint of the program>" in text
    back = _tensors(str(tmp_path / "back" / "ckpt"))
    want = _tensors(source)
    assert set(back) == set(want)
    assert {k: v for k, v in back.items() if k != GRAPH} == {k: v for k, v in want.items() if k != GRAPH}
    rebuilt, original = oracle("TrackableObjectGraph")(), oracle("TrackableObjectGraph")()
    rebuilt.ParseFromString(back[GRAPH][2])
    original.ParseFromString(_graph_of(source))
    keys = sorted(a.checkpoint_key for n in rebuilt.nodes for a in n.attributes)
    assert keys == sorted(k for k in want if k != GRAPH)
    names = {a.checkpoint_key: (a.name, a.full_name) for n in rebuilt.nodes for a in n.attributes}
    was = {a.checkpoint_key: (a.name, a.full_name) for n in original.nodes for a in n.attributes}
    iterator = "iterator/.ATTRIBUTES/ITERATOR"  # (its one tensor stored as ..._STATE: the key cannot say the name)
    assert was.pop(iterator) == ("ITERATOR", "")
    assert names.pop(iterator + "_STATE") == ("ITERATOR_STATE", "")
    assert names == was and len(names) == 13
    assert (f"warning: graph: {iterator}_STATE: 1 attributes other than a variable's value (first "
            f"'{iterator}_STATE') named as their keys say") in text

    def slots(graph) -> set[tuple[str, str, str]]:  # (variable's key, slot name, slot's key), by keys not ids
        key = {i: n.attributes[0].checkpoint_key for i, n in enumerate(graph.nodes) if n.attributes}
        return {(key[s.original_variable_node_id], s.slot_name, key[s.slot_variable_node_id])
                for n in graph.nodes for s in n.slot_variables}

    assert slots(rebuilt) == slots(original) and len(slots(original)) == 4


@pytest.mark.parametrize("damage, why", [
    ("garbage", "the object graph the export carries is not written: "),
    ("float", "is not an object graph as ckpt writes it (a 1-D uint8 array"),
    ("missing tensor", "it names 1 keys the file does not hold"),
])
def test_a_graph_that_does_not_fit_the_file_is_not_written(exported: tuple[str, Path], tmp_path: Path,
                                                           damage: str, why: str) -> None:
    _, out = exported
    bad = tmp_path / "bad.npz"
    if damage == "missing tensor":
        with zipfile.ZipFile(out) as z:
            gone = sorted(n for n in z.namelist() if n.endswith("VARIABLE_VALUE.npy"))[0]
        _strip(out, bad, {gone})
    else:
        import io

        buf = io.BytesIO()
        np.save(buf, np.frombuffer(b"\xff\xff\xff\xff" * 4, np.uint8) if damage == "garbage"
                else np.zeros(3, np.float32))
        _strip(out, bad, set(), {MEMBER + ".npy": buf.getvalue()})
    code, text = _run("convert", str(bad), "--to", "tf-object", "-o", str(tmp_path / "back" / "ckpt"))
    assert code == 0, text
    assert f"warning: graph: {GRAPH}: the object graph the export carries is not written: " in text
    assert why in text
    assert REBUILT in text
    assert "Traceback" not in text


def test_a_safetensors_graph_that_is_not_base64(exported: tuple[str, Path], tmp_path: Path) -> None:
    source, _ = exported
    out = tmp_path / "x.safetensors"
    src = str(CORPUS / "tf2_mixed")
    prefix = next(s for s in OBJECT_BASED if s.startswith(src) and "all_dtypes" not in s)
    code, text = _run("convert", prefix, "--to", "safetensors", "-o", str(out))
    assert code == 0 and _carried(out) is not None, text
    raw = bytearray(out.read_bytes())
    (n,) = struct.unpack("<Q", raw[:8])
    header = raw[8:8 + n].decode()
    start = header.index('"ckpt.object_graph":"') + len('"ckpt.object_graph":"')
    raw[8 + start] = ord("*")  # (one character base64 does not have: the header's length unchanged)
    out.write_bytes(bytes(raw))
    code, text = _run("convert", str(out), "--to", "tf-object", "-o", str(tmp_path / "back" / "ckpt"))
    assert code == 0, text
    assert "ckpt.object_graph is not base64" in text
    assert REBUILT in text


@pytest.mark.parametrize("key, parsed", [
    ("a/b/.ATTRIBUTES/VARIABLE_VALUE", ("a/b", "VARIABLE_VALUE", "", "")),
    ("a/b/.ATTRIBUTES/OBJECT..CONFIG", ("a/b", "OBJECT.CONFIG", "", "")),
    ("a..b/c.Sd/.ATTRIBUTES/VARIABLE_VALUE", ("a..b/c.Sd", "VARIABLE_VALUE", "", "")),
    ("m/k/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE", ("m/k", "VARIABLE_VALUE", "optimizer", "m")),
    ("m/k/.OPTIMIZER_SLOT/o/p/a.Sb/.ATTRIBUTES/VARIABLE_VALUE", ("m/k", "VARIABLE_VALUE", "o/p", "a/b")),
    ("save_counter/.ATTRIBUTES/VARIABLE_VALUE", ("save_counter", "VARIABLE_VALUE", "", "")),
    ("dense/kernel", None),
    ("/.ATTRIBUTES/VARIABLE_VALUE", None),
    ("a//b/.ATTRIBUTES/VARIABLE_VALUE", None),
    ("a.x/.ATTRIBUTES/VARIABLE_VALUE", None),
    ("a/.ATTRIBUTES/", None),
    ("a/.ATTRIBUTES/b/.ATTRIBUTES/VARIABLE_VALUE", None),
    (".OPTIMIZER_SLOT/o/m/.ATTRIBUTES/VARIABLE_VALUE", None),
    ("v/.OPTIMIZER_SLOT/m/.ATTRIBUTES/VARIABLE_VALUE", None),
    ("v/.OPTIMIZER_SLOT/o/m/.OPTIMIZER_SLOT/o/v/.ATTRIBUTES/VARIABLE_VALUE", None),
    ("v/.OPTIMIZER_SLOT/o/m/.ATTRIBUTES/OTHER", None),
])
def test_parse_object_key(key: str, parsed: tuple[str, str, str, str] | None) -> None:
    assert parse_object_key(key) == parsed


def test_verify_reads_the_carried_graph(exported: tuple[str, Path], tmp_path: Path) -> None:
    _, out = exported
    code, text = _run("verify", str(out))
    assert code == 0, text
    raw = bytearray(out.read_bytes())
    with zipfile.ZipFile(out) as z:
        info = z.getinfo(MEMBER + ".npy")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra) + 200  # (a byte of the graph)
    raw[start] ^= 0xFF
    bad = tmp_path / "bad.npz"
    bad.write_bytes(bytes(raw))
    code, text = _run("verify", str(bad))
    assert code == 1, text
    assert "object graph: cannot read __ckpt_object_graph__.npy from the archive (Bad CRC-32" in text
    assert "Traceback" not in text


@pytest.mark.parametrize("seed", range(40))
def test_any_bytes_as_the_carried_graph(exported: tuple[str, Path], tmp_path: Path, seed: int) -> None:
    """Fuzz: random bytes, a real graph cut short or with bytes changed, as the graph an npz carries: going back
    writes the carried graph only where it fits the file, else rebuilds the objects with a warning; never a
    traceback."""
    import io
    import random

    source, out = exported
    rng = random.Random(seed)
    graph = bytearray(_graph_of(source))
    if seed % 3 == 0:
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 400)))
    elif seed % 3 == 1:
        data = bytes(graph[:rng.randrange(len(graph))])
    else:
        for _ in range(rng.randrange(1, 6)):
            graph[rng.randrange(len(graph))] = rng.randrange(256)
        data = bytes(graph)
    buf = io.BytesIO()
    np.save(buf, np.frombuffer(data, np.uint8))
    bad = tmp_path / "fuzzed.npz"
    _strip(out, bad, set(), {MEMBER + ".npy": buf.getvalue()})
    result = CliRunner().invoke(cli, ["convert", str(bad), "--to", "tf-object", "-o", str(tmp_path / "b" / "ckpt")])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code in (0, 1, 3), result.output
    if result.exit_code == 0 and REBUILT not in result.output:  # (the graph written: it names the file's keys)
        back = _tensors(str(tmp_path / "b" / "ckpt"))
        assert back[GRAPH][2] == data


def test_a_graph_that_would_pass_the_safetensors_header_limit_is_left_out(tmp_path: Path, monkeypatch) -> None:
    """A header that fits without the graph, not with it: the file is written without the graph, and the output
    says so; one byte less room and the file is refused as any header past the limit is."""
    from formats.safetensors import writer

    source = str(CORPUS / "keras2_tagger" / "tagger_tf" / "ckpt")
    whole = tmp_path / "whole.safetensors"
    code, text = _run("convert", source, "--to", "safetensors", "-o", str(whole))
    assert code == 0 and _carried(whole) is not None, text
    raw = whole.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    text_with = raw[8:8 + n].rstrip(b" ")  # (the header's padding: to align the data, up to a page)
    piece = b',"ckpt.object_graph":"' + base64.b64encode(_carried(whole)) + b'"'
    assert text_with.count(piece) == 1 and len(piece) > 100
    text_without = text_with.replace(piece, b"")
    for limit, written in ((n - 1, True), (len(text_without) - 1, False)):
        monkeypatch.setattr(writer, "MAX_HEADER_BYTES", limit)
        out = tmp_path / f"at-{limit}.safetensors"
        code, text = _run("convert", source, "--to", "safetensors", "-o", str(out))
        if written:
            assert code == 0, text
            assert _carried(out) is None
            assert f"the object graph is left out: with its {len(piece):,} bytes the safetensors header would pass " \
                   f"{limit:,}" in " ".join(text.split()), text
            got = out.read_bytes()
            (m,) = struct.unpack("<Q", got[:8])
            assert m <= limit
            assert got[8:8 + m].rstrip(b" ") == text_without
        else:
            assert code == 4, text
            assert "safetensors readers accept at most" in text and not out.exists()


@pytest.mark.parametrize("to", ["npz", "safetensors"])
def test_the_graph_is_streamed_from_a_bundle_and_checked(to: str, tmp_path: Path, monkeypatch) -> None:
    """The npz and safetensors writers take a bundle's graph a block at a time (never whole), each block read into
    the same buffer, its CRC32C checked once read: a graph whose stored bytes are damaged fails the export (exit 3),
    and nothing is written."""
    from formats.tf_bundle import reader

    source = str(CORPUS / "keras2_tagger" / "tagger_tf" / "ckpt")
    blocks: list[int] = []
    buffers: set[int] = set()
    real = reader.BundleReader.string_pieces

    def small_blocks(self, e, block=reader.GRAPH_PIECE):  # type: ignore[no-untyped-def]
        size, pieces = real(self, e, 1000)  # (not a multiple of 3: the safetensors field carries bytes over)
        return size, (blocks.append(len(p)) or buffers.add(id(p.obj)) or p for p in pieces)

    monkeypatch.setattr(reader.BundleReader, "string_pieces", small_blocks)
    out = tmp_path / f"x.{to}"
    code, text = _run("convert", source, "--to", to, "-o", str(out))
    assert code == 0, text
    graph = _graph_of(source)
    assert _carried(out) == graph and len(graph) > 3000
    assert max(blocks) == 1000 and sum(blocks) == len(graph) and len(blocks) > 3
    assert len(buffers) == 1  # (a new bytes a piece: the C library kept 11 MiB of them at 10^5 objects)
    monkeypatch.undo()
    copy = tmp_path / "copy"
    copy.mkdir()
    for f in Path(source).parent.iterdir():
        (copy / f.name).write_bytes(f.read_bytes())
    with open_checkpoint(source) as ckpt:
        raw = ckpt[GRAPH].raw
    data = next(copy.glob("ckpt.data-*"))
    damaged = bytearray(data.read_bytes())
    damaged[raw.offset + raw.size - 10] ^= 0xFF  # (a byte of the graph, past what its decoder reads to label keys)
    data.write_bytes(bytes(damaged))
    code, text = _run("convert", str(copy / "ckpt"), "--to", to, "-o", str(tmp_path / f"y.{to}"))
    assert code == 3 and not (tmp_path / f"y.{to}").exists(), text
    assert "tensor '_CHECKPOINTABLE_OBJECT_GRAPH': checksum mismatch (index says" in text, text


@pytest.mark.parametrize("size", [0, 1, 2, 3, 4, 5, 1000, 3 << 18, (3 << 18) + 1, (6 << 18) + 2])
@pytest.mark.parametrize("cuts", [(), (1,), (2, 7), (5, 5, 1 << 18)])
def test_a_safetensors_graph_field_is_written_a_piece_at_a_time(size: int, cuts: tuple[int, ...]) -> None:
    """The header's ``,"ckpt.object_graph":"<base64>"`` field, from the graph's bytes or from its pieces (cut
    anywhere, as a bundle's blocks come), is base64's of the whole and the length it says; never encoded whole."""
    import base64
    import io
    import random

    from formats.core.provenance import OBJECT_GRAPH_METADATA, CarriedGraph
    from formats.safetensors.writer import _GraphPiece

    graph = random.Random(size).randbytes(size)
    want = b',"' + OBJECT_GRAPH_METADATA.encode() + b'":"' + base64.b64encode(graph) + b'"'
    bounds = sorted({0, size, *(min(c, size) for c in itertools.accumulate(cuts))})
    pieces = [graph[a:b] for a, b in zip(bounds, bounds[1:])] or [b""]

    class Entry:  # (a bundle's string entry: its size and its bytes a block at a time)
        def string_pieces(self):  # type: ignore[no-untyped-def]
            return size, iter(pieces)

    class Out(io.BytesIO):  # (each write's size kept)
        def __init__(self) -> None:
            super().__init__()
            self.sizes: list[int] = []

        def write(self, data) -> int:  # type: ignore[no-untyped-def, override]
            self.sizes.append(len(data))
            return super().write(data)

    for given in (graph, CarriedGraph(Entry())):
        field = _GraphPiece(given)
        out = Out()
        assert field.write_to(out) == len(field) == len(want)
        assert out.getvalue() == want
        assert max(out.sizes) <= 4 * _GraphPiece.PIECE // 3  # (a piece's base64 at most: never the whole's)


def test_an_export_exported_again_carries_the_graph_on(exported: tuple[str, Path], tmp_path: Path) -> None:
    source, out = exported  # (seed_slots: its variant left out of a safetensors file, so the graph with it)
    prefix = str(CORPUS / "keras2_tagger" / "tagger_tf" / "ckpt")
    first = tmp_path / "first.npz"
    assert _run("convert", prefix, "--to", "npz", "-o", str(first))[0] == 0
    again = tmp_path / "again.safetensors"
    code, text = _run("convert", str(first), "--to", "safetensors", "-o", str(again))
    assert code == 0 and "warning" not in text, text
    assert _carried(again) == _graph_of(prefix)
    code, text = _run("convert", str(again), "--to", "tf-object", "-o", str(tmp_path / "back" / "ckpt"))
    assert code == 0 and "warning" not in text, text
    assert _tensors(str(tmp_path / "back" / "ckpt")) == _tensors(prefix)
    bad = tmp_path / "bad.npz"  # (a carried graph that does not read: the next export says it is left out)
    _strip(first, bad, set(), {MEMBER + ".npy": b"not an npy member"})
    code, text = _run("convert", str(bad), "--to", "npz", "-o", str(tmp_path / "third.npz"))
    assert code == 0, text
    assert f"warning: graph: {GRAPH}: the object graph the source carries is left out: " in text
    assert _carried(tmp_path / "third.npz") is None


@pytest.mark.parametrize("limit", [10, 1 << 30])
def test_a_spool_cut_leaves_out_exactly_those_bytes(limit: int) -> None:
    """``Spool.cut`` (the header without its graph), held in memory or in its file, a cut across the chunks."""
    import random

    from formats.io.spool import Spool

    rng = random.Random(limit)
    for _ in range(30):
        data = rng.randbytes(rng.randrange(0, 3_000_000, 997))
        at = rng.randrange(len(data) + 1)
        size = rng.randrange(len(data) - at + 1)
        with Spool(limit) as spool:
            for i in range(0, len(data), 65_537):
                spool.write(data[i:i + 65_537])
            spool.cut(at, size)
            assert spool.size == len(data) - size
            assert b"".join(spool.chunks(1 << 20)) == data[:at] + data[at + size:]


def test_a_compressed_graph_member_is_not_read(exported: tuple[str, Path], tmp_path: Path) -> None:
    """ckpt stores the graph uncompressed: a deflated member (200 MB of zeros in 200 KB, a bomb) is refused before
    a byte of it is inflated, by verify (exit 1) and by going back (a warning, the objects rebuilt)."""
    import io

    _, out = exported
    buf = io.BytesIO()
    np.save(buf, np.zeros(200_000_000, np.uint8))
    bomb = tmp_path / "bomb.npz"
    with zipfile.ZipFile(out) as whole, zipfile.ZipFile(bomb, "w") as copy:
        for info in whole.infolist():
            if info.filename == MEMBER + ".npy":
                copy.writestr(info.filename, buf.getvalue(), compress_type=zipfile.ZIP_DEFLATED)
            else:
                copy.writestr(info, whole.read(info))
    assert bomb.stat().st_size < 1_000_000
    refused = "__ckpt_object_graph__.npy is not an object graph as ckpt writes it (a 1-D uint8 array of at most " \
              "1,073,741,824 bytes, stored uncompressed)"
    code, text = _run("verify", str(bomb))
    assert code == 1 and f"problem object graph: {refused}" in text, text
    code, text = _run("convert", str(bomb), "--to", "tf-object", "-o", str(tmp_path / "b" / "ckpt"))
    assert code == 0 and refused in text and REBUILT in text, text
