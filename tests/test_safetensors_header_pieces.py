"""Issue 38: ``convert --to safetensors`` writes its header a run of tensors at a time and the provenance record an
item at a time, spooled until its length is known (at 100k tensors a dict per tensor, the whole text and its
copies were 190 MB of a 282 MB peak). The header is still exactly the text ``json.dumps`` makes of the header as a
dict, which these tests build independently, and the data lies in an order that does not depend on which input
file happened to be opened first."""
from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from formats import open_checkpoint
from formats.core.provenance import PROVENANCE_KEY

from .conftest import CORPUS
from .memory import record_items_at_once
from .scale_bundles import name_based

ROWS = [("a/w", np.arange(6, dtype=np.float32).reshape(2, 3)), ('quote"d\\/é\n', np.arange(2, dtype=np.int64)),
        ("b/\u2603", np.zeros((), np.float16)), ("empty", np.zeros((0, 4), np.uint8)), ("c", np.ones(3, np.int32))]
NAMES = {"float32": "F32", "int64": "I64", "float16": "F16", "uint8": "U8", "int32": "I32"}


class Row:
    def __init__(self, key: str, value: np.ndarray) -> None:
        self.key, self.value, self.shape, self.dtype = key, value, value.shape, str(value.dtype)


def _record(listed: int) -> dict:
    """A provenance record listing the first ``listed`` rows (one with a dtype the row is not written with)."""
    items = [{"key": key, "source_key": f"src/{key}", "object_path": "", "full_name": key, "role": "variable",
              "dtype": str(value.dtype), "shape": list(value.shape)} for key, value in ROWS[:listed]]
    if items:
        items[0]["dtype"] = "bfloat16"  # an edit cast it: the record is made true
    return {"source": "in/ckpt-1", "format": "tf-name", "tensors": items}


def _expected(record: dict | None, metadata: dict) -> bytes:
    """The header as the writer once built it: one dict, ``json.dumps``'d (the record as a JSON string in it)."""
    meta = {}
    if record is not None:
        items = [dict(item) for item in record["tensors"]]
        for item in items:
            value = dict(ROWS)[item["key"]]
            item["dtype"], item["shape"] = str(value.dtype), list(value.shape)
        listed = {item["key"] for item in items}
        items += [{"key": k, "dtype": str(v.dtype), "shape": list(v.shape)} for k, v in ROWS if k not in listed]
        meta[PROVENANCE_KEY] = json.dumps({**record, "tensors": items})
    header: dict = {"__metadata__": {**meta, "format": "np", **metadata}}
    offset = 0
    for key, value in ROWS:
        header[key] = {"dtype": NAMES[str(value.dtype)], "shape": list(value.shape),
                       "data_offsets": [offset, offset + value.nbytes]}
        offset += value.nbytes
    return json.dumps(header, separators=(",", ":")).encode()


@pytest.mark.parametrize("listed", [None, 0, 3, len(ROWS)])
@pytest.mark.parametrize("metadata", [{}, {"format": "pt"}, {PROVENANCE_KEY: "mine", "x": "y"}, {"z": ["1", 2]}])
@pytest.mark.parametrize("small", [False, True])
def test_the_header_written_in_pieces_is_json_dumps_of_the_header(tmp_path, monkeypatch, listed, metadata, small):
    """Whatever the record (none, listing none, some or all rows), the metadata given (overriding ``format`` or
    the record itself) and the runs' length (``small``: two tensors and two record items a run, a spool of 64
    bytes that goes to disk), the header is ``json.dumps`` of the header dict, padded with spaces to 8 bytes, and
    each tensor's bytes lie at its offsets."""
    from formats.core import provenance
    from formats.safetensors import writer

    if small:
        monkeypatch.setattr(writer, "_AT_ONCE", 2)
        monkeypatch.setattr(writer, "_SPOOL_BYTES", 64)
        monkeypatch.setattr(provenance, "_ITEMS_AT_ONCE", 2)
    record = None if listed is None else _record(listed)
    out = tmp_path / "x.safetensors"
    options = {"metadata": metadata, **({"provenance": record} if record is not None else {})}
    report = writer.write(str(out), [Row(k, v) for k, v in ROWS], options=options)
    assert report.verified and report.roundtrip is not None and report.roundtrip.ok
    raw = out.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    want = _expected(record, metadata)
    assert raw[8:8 + length] == want + b" " * (-(8 + len(want)) % 8)
    start = 8 + length
    header = json.loads(raw[8:start])
    for key, value in ROWS:
        begin, end = header[key]["data_offsets"]
        assert raw[start + begin:start + end] == value.tobytes()
    assert [s.key for s in report.contents] == [k for k, _ in ROWS]


def test_a_header_no_reader_would_accept_is_not_written(tmp_path, monkeypatch):
    """safetensors readers (the ``safetensors`` package's, ckpt's) refuse a header over 100,000,000 bytes: one of
    about 330,000 tensors with their provenance record. The writer says so before it writes anything."""
    from formats.core.errors import InvalidOutputError
    from formats.safetensors import writer

    out = tmp_path / "x.safetensors"
    monkeypatch.setattr(writer, "MAX_HEADER_BYTES", 200)
    with pytest.raises(InvalidOutputError) as caught:
        writer.write(str(out), [Row(k, v) for k, v in ROWS])
    assert caught.value.message.startswith("the safetensors header would be ")
    assert caught.value.message.endswith(" bytes for 5 tensors; safetensors readers accept at most 200")
    assert list(tmp_path.iterdir()) == []


def test_a_tensor_named_like_the_metadata_or_twice_is_refused(tmp_path, run_cli):
    """``__metadata__`` is the header's own key: the writer refuses a tensor of that name (and two tensors of one
    name) rather than write a header a reader would take otherwise, and ``convert`` says so before writing."""
    from formats.safetensors.writer import write

    for keys in (["__metadata__"], ["w", "w"]):
        with pytest.raises(ValueError, match="names each tensor once"):
            write(str(tmp_path / "x.safetensors"), [Row(k, np.zeros(2, np.float32)) for k in keys])
    assert not (tmp_path / "x.safetensors").exists()
    source = tmp_path / "in.npz"
    np.savez(source, __metadata__=np.zeros(2, np.float32), w=np.ones(2, np.float32))
    out = tmp_path / "out.safetensors"
    result = run_cli("convert", source, "--to", "safetensors", "-o", out)
    assert result.exit_code == 1, result.output
    assert "__metadata__: __metadata__ names the safetensors header's metadata, not a tensor" in result.output
    assert not out.exists()


@pytest.mark.parametrize("to", ["safetensors", "npz"])
def test_convert_makes_each_record_item_as_it_writes_it(tmp_path, monkeypatch, run_cli, to):
    """``convert --to safetensors|npz`` of N tensors made the provenance record's N dicts when it planned and held
    them until written; now each is made when the writer reaches it, a run at a time, and the record read back is
    the same."""
    prefix = name_based(tmp_path / "in", 300)
    most = record_items_at_once(monkeypatch, 16)
    out = tmp_path / f"all.{to}"
    result = run_cli("convert", prefix, "--to", to, "-o", out)
    assert result.exit_code == 0, result.output
    assert most[0] == 16, most[0]  # a run of 16 made and encoded at once (300 before)
    if to == "npz":
        with np.load(out) as npz:
            record = json.loads(str(npz["__ckpt_provenance__"]))
    else:
        raw = out.read_bytes()
        record = json.loads(json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])["__metadata__"][PROVENANCE_KEY])
    keys = sorted(f"model/layer_{i // 100}/unit_{i % 100}/w" for i in range(300))
    assert record == {"source": prefix, "format": "tf-name",
                      "tensors": [{"key": k, "dtype": "float32", "shape": [4]} for k in keys]}  # (the rest defaults)


def test_copied_tensors_lie_in_the_order_of_their_files_first_tensors(tmp_path, run_cli):
    """Tensors copied unchanged from an input's data files lie file by file, each file's tensors in their order
    there, the files in the order their first tensor is given: the output once depended on which data file had
    been opened first (TensorFlow's 7-shard checkpoint, whose object graph shares a shard with ``w/0`` and
    ``w/7``, put ``w/7`` first; the other shards' tensors are streamed after, as given)."""
    from formats.safetensors.writer import _data_order

    stored = [(9, 0, 4, 0), (5, 100, 4, 0), (9, 64, 4, 0), None, (5, 0, 4, 0), None]
    assert _data_order(stored) == [0, 2, 4, 1, 3, 5]
    out = tmp_path / "sharded.safetensors"
    result = run_cli("convert", CORPUS / "tf2_mixed/sharded/ckpt", "--to", "safetensors", "-o", out)
    assert result.exit_code == 0, result.output
    raw = out.read_bytes()
    header = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])
    header.pop("__metadata__")
    begins = [header[f"w/{i}/.ATTRIBUTES/VARIABLE_VALUE"]["data_offsets"][0] for i in range(8)]
    assert begins == [i * 256 * 256 * 4 for i in (0, 2, 3, 4, 5, 6, 7, 1)]


@pytest.mark.parametrize("limit", [0, 5, 1 << 20])
def test_a_spool_gives_back_what_was_written_in_chunks(limit):
    """:class:`formats.io.spool.Spool` keeps pieces in memory up to its limit, then in a temporary file, and gives
    back exactly the bytes written, in chunks of at most the size asked, as often as asked."""
    from formats.io.spool import Spool

    pieces = [b"abc", b"", b"defgh", bytes(range(256)), b"z"]
    with Spool(limit) as spool:
        assert [spool.write(p) for p in pieces] == [len(p) for p in pieces]
        assert spool.size == sum(map(len, pieces))
        for size in (1, 4, 1000):
            chunks = list(spool.chunks(size))
            assert b"".join(chunks) == b"".join(pieces) and all(0 < len(c) <= size for c in chunks)
        assert (spool._file is not None) == (limit < spool.size)


def test_runs_of_one_copied_tensor_are_found_without_copying_the_rest(tmp_path, monkeypatch, run_cli):
    """An output keeping every other tensor of an input copies each tensor as a run of its own: finding each run
    once copied the list of every item after it (quadratic: 50,000 of 100,000 tiny tensors to safetensors took
    9.3 s of CPU, 1.7 s now). The values written are the input's."""
    from formats.safetensors import writer

    sliced = [0]

    class Items(list):
        def __getitem__(self, index):
            if isinstance(index, slice):
                sliced[0] += len(range(*index.indices(len(self))))
            return super().__getitem__(index)

    real = writer.write_placed
    monkeypatch.setattr(writer, "write_placed", lambda out, items, *a, **k: real(out, Items(items), *a, **k))
    prefix = name_based(tmp_path / "in", 400)
    out = tmp_path / "half.safetensors"
    result = run_cli("edit", prefix, "--to", "safetensors", "-o", out, "--exclude", "model/*/unit_*[13579]/w")
    assert result.exit_code == 0, result.output
    assert sliced[0] == 0, sliced[0]  # about 200 * 200 / 2 before
    from safetensors.numpy import load_file

    written = load_file(out)
    keys = [f"model/layer_{i // 100}/unit_{i % 100}/w" for i in range(400) if i % 2 == 0]
    assert sorted(written) == sorted(keys)
    with open_checkpoint(prefix) as ckpt:
        assert all(written[k].tobytes() == ckpt[k].read().tobytes() for k in keys)


def test_a_key_that_is_not_utf8_is_refused_before_writing(tmp_path, run_cli):
    """A bundle key of bytes that are not UTF-8 (kept as ``surrogateescape`` keeps them) written into the JSON header
    as escaped lone surrogates made a file safetensors' own reader refuses ("lone leading surrogate"): ``convert``
    names the key and writes nothing (exit 1), and the writer itself refuses such a row."""
    from formats import write_checkpoint
    from formats.safetensors.writer import write

    bad = b"bad\xff\xfe".decode("utf-8", "surrogateescape")
    with pytest.raises(ValueError, match=r"key b'bad\\xff\\xfe' is not valid UTF-8, which a safetensors header \(JSON text\) must be$"):
        write(str(tmp_path / "x.safetensors"), [Row(bad, np.zeros(2, np.float32)), Row("w", np.ones(2, np.float32))])
    assert not (tmp_path / "x.safetensors").exists()
    prefix = tmp_path / "in" / "ckpt-1"
    write_checkpoint(str(prefix), {bad: np.zeros(2, np.float32), "é": np.ones(2, np.float32)})
    out = tmp_path / "out.safetensors"
    result = run_cli("convert", prefix, "--to", "safetensors", "-o", out)
    assert result.exit_code == 1, result.output
    assert "is not valid UTF-8, which a safetensors header (JSON text) must be" in result.output
    assert not out.exists()
    renamed = run_cli("convert", prefix, "--to", "safetensors", "-o", out, "--map", f"{bad}=good")
    assert renamed.exit_code == 0, renamed.output
    from safetensors.numpy import load_file

    assert sorted(load_file(str(out))) == ["good", "é"]


@pytest.mark.parametrize("seed", range(60))
def test_the_header_is_never_shorter_than_its_floor(tmp_path, seed):
    """``header_floor`` (the refusal made before a header is built) is a floor: for random rows - keys with quotes,
    backslashes, controls and characters JSON escapes, every dtype code, shapes of any rank, with a record or
    without - the header written is never shorter."""
    import random

    from formats.safetensors import writer

    rng = random.Random(seed)
    alphabet = "ab/_0\"\\\n\t\u00e9\u2603\U0001f642"
    dtypes = [np.bool_, np.int8, np.uint8, np.int16, np.float16, np.int32, np.float32, np.int64, np.float64]
    rows = []
    for i in range(rng.randrange(1, 40)):
        key = f"{i}" + "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12)))
        shape = tuple(rng.randrange(0, 3) for _ in range(rng.randrange(0, 4)))
        rows.append(Row(key, np.zeros(shape, rng.choice(dtypes))))
    with_record = seed % 2 == 0
    out = tmp_path / "x.safetensors"
    options = {"provenance": {"source": "s", "format": "tf-name", "tensors": []}} if with_record else None
    writer.write(str(out), rows, options=options)
    raw = out.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    assert ("ckpt.provenance" in json.loads(raw[8:8 + n])["__metadata__"]) is with_record
    floor = writer.header_floor(rows, with_record)
    assert floor <= len(raw[8:8 + n].rstrip(b" "))
    assert floor >= sum(len(r.key) for r in rows) * (2 if with_record else 1)


def test_too_many_tensors_are_refused_before_the_header_is_made(tmp_path, monkeypatch):
    """Where even the floor passes the readers' limit, the refusal comes before any of the header is made."""
    from formats.core.errors import InvalidOutputError
    from formats.safetensors import writer

    rows = [Row(k, v) for k, v in ROWS]
    floor = writer.header_floor(rows, False)
    monkeypatch.setattr(writer, "MAX_HEADER_BYTES", floor - 1)

    def made(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("the header was made")

    monkeypatch.setattr(writer, "_header_pieces", made)
    out = tmp_path / "x.safetensors"
    with pytest.raises(InvalidOutputError) as caught:
        writer.write(str(out), rows)
    assert caught.value.message == (f"the safetensors header would be at least {floor:,} bytes for 5 tensors; "
                                    f"safetensors readers accept at most {floor - 1:,}")
    assert caught.value.hint == "write fewer tensors a file (a selection of them), or an npz file, which has no " \
                                "such limit"
    assert list(tmp_path.iterdir()) == []


def test_the_floor_is_the_shortest_entry_and_item():
    """The floor is tight: a tensor's shortest entry (``,"k":{...}`` with the shortest dtype code, no dimension,
    one-digit offsets) and a record's shortest item, made here by ``json.dumps``."""
    from formats.safetensors import writer

    compact = {"separators": (",", ":")}
    entry = len("," + json.dumps({"k": {"dtype": "I8", "shape": [], "data_offsets": [0, 1]}}, **compact)[1:-1])
    item = len(json.dumps({"key": "k", "dtype": "bool", "shape": []}, **compact))
    rows = [Row("k", np.zeros((), np.int8)), Row("k2", np.zeros((), np.int8))]
    assert writer.header_floor(rows, False) == 2 * entry + 1
    assert writer.header_floor(rows, True) == 2 * entry + 1 + 2 * item + 1
