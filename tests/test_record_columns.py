"""An export's provenance record held as columns (``RecordColumns``: output keys and entries, no dict a tensor) is
the record each tensor's dict made: its text is ``json.dumps`` of the items, made a run at a time from the
columns; where a writer's rows are not the items as they are (a cast, a row left out or added, another order),
the record is written with each row's dtype and shape as before."""
from __future__ import annotations

import json
import random
import struct
from types import SimpleNamespace

import numpy as np
import pytest

from formats import open_checkpoint
from formats.core import provenance
from formats.core.model import KERAS3_LAYOUTS, OBJECT_GRAPH_KEY
from formats.core.provenance import (PROVENANCE_KEY, PackedTexts, RecordColumns, as_written, parse_provenance,
                                     record_pieces)
from formats.ops.convert.cross.export import plan_export
from formats.ops.convert.plan import ConvertOptions
from formats.ops.rules import build_rules

from .conftest import CORPUS
from .memory import every_item_listed
from .scale_bundles import name_based, object_based

SOURCES = sorted([str(p)[:-len(".index")] for p in CORPUS.rglob("*.index")]
                 + [str(p) for p in CORPUS.rglob("*.h5")] + [str(p) for p in CORPUS.rglob("*.keras")])


def _item(ckpt, key: str, out: str) -> dict:
    """A tensor's item as the record stores it (the module doc of ``formats.core.provenance``), found here from
    the checkpoint's entry and its key."""
    return _stored(_item_in_full(ckpt, key, out))


def _item_in_full(ckpt, key: str, out: str) -> dict:
    """A tensor's item with every field the record defines."""
    entry = ckpt[key]
    marker = "/.ATTRIBUTES/"
    if marker in key and (ckpt.format == "tf-object" or OBJECT_GRAPH_KEY in ckpt):
        path = key.split(marker, 1)[0]
    elif "/vars/" in key and ckpt.format in KERAS3_LAYOUTS:
        path = key.rsplit("/vars/", 1)[0]
    else:
        path = ""
    return {"key": out, "source_key": key, "object_path": path, "full_name": str(entry.name), "role": str(entry.role),
            "dtype": entry.dtype, "shape": list(entry.shape)}


def _stored(item: dict) -> dict:
    """An item as the record stores it: each field whose value is what a reader takes for a field left out
    (``source_key`` and ``full_name``: the key; ``object_path``: ""; ``role``: "variable") left out, the others in
    their order."""
    defaults = {"source_key": item["key"], "object_path": "", "full_name": item["key"], "role": "variable"}
    return {field: value for field, value in item.items() if field not in defaults or value != defaults[field]}


@pytest.mark.parametrize("to", ["safetensors", "npz"])
@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.split("corpus/")[-1])
def test_an_exports_record_is_each_tensors_item(source, to):
    with open_checkpoint(source) as ckpt:  # then every key renamed: the item's key is the output's
        for options in (ConvertOptions(), ConvertOptions(rules=build_rules(add_prefix="renamed"))):
            plan = plan_export(ckpt, options, to)
            record = plan.write_options["provenance"]
            items = record["tensors"]
            assert isinstance(items, RecordColumns)
            want = [_item(ckpt, row.source, row.key) for row in plan.rows]
            assert len(want) == len(items) > 0
            assert all("source_key" in w for w in want) == bool(options.rules)
            assert list(items) == want
            full = [{**_item_in_full(ckpt, row.source, row.key)} for row in plan.rows]
            text = "".join(record_pieces(record))
            assert len(text) <= len(json.dumps({**record, "tensors": full}))
            assert parse_provenance(text, "p") == parse_provenance(json.dumps({**record, "tensors": full}), "p")
            assert "".join(record_pieces(record)) == json.dumps({**record, "tensors": want})
            written = as_written(record, plan.rows)
            assert written["tensors"] is items  # the rows are the items as they are: the columns are written
            for at_once in (1, 3):
                provenance._ITEMS_AT_ONCE, was = at_once, provenance._ITEMS_AT_ONCE
                try:
                    assert "".join(record_pieces(written)) == json.dumps({**record, "tensors": want})
                finally:
                    provenance._ITEMS_AT_ONCE = was


_TEXTS = ["", "a", "model/dense/kernel", "caf\u00e9", 'say "hi"', "back\\slash", "tab\there", "\x00\x1f\x7f",
          "\u2603/snow", "\ud800lone", "\U0001f600", "<b>html</b>", "x/.ATTRIBUTES/VARIABLE_VALUE", "layer/vars/0"]


def _entries(rng: random.Random, n: int) -> list[SimpleNamespace]:
    shapes = [(), (0,), (1,), (3, 4), [2, 2], (2**40, 1), (7,) * 8]
    return [SimpleNamespace(key=rng.choice(_TEXTS) + str(i) if rng.random() < 0.7 else rng.choice(_TEXTS),
                            name=rng.choice([None, rng.choice(_TEXTS)]),
                            role=rng.choice(["variable", "slot", "optimizer"]),
                            dtype=rng.choice(["float32", "bfloat16", "int64", "string"]), shape=rng.choice(shapes))
            for i in range(n)]


def _dicts(keys, entries, object_path) -> list[dict]:
    return [_stored({"key": k, "source_key": e.key, "object_path": object_path(e.key) if object_path else "",
                     "full_name": str(e.name), "role": str(e.role), "dtype": e.dtype, "shape": list(e.shape)})
            for k, e in zip(keys, entries)]


@pytest.mark.parametrize("seed", range(200))
def test_the_columns_text_is_json_dumps_of_their_items(seed, monkeypatch):
    rng = random.Random(seed)
    entries = _entries(rng, rng.choice([0, 1, 2, 5, 40, 300]))
    keys = [rng.choice(_TEXTS) + f"/{i}" for i in range(len(entries))]
    if rng.random() < 0.5:  # a name-based export's: the output keys the source keys, most full names the keys
        keys = [e.key for e in entries]
        if keys and rng.random() < 0.2:
            keys[-1] = "another/last"
        for e in entries:
            e.name = e.key if rng.random() < 0.9 else e.name
    object_path = rng.choice([None, lambda key: key[:3], lambda key: key.split("/")[0]])
    monkeypatch.setattr(provenance, "_TEXTS_KEPT", rng.choice([0, 1, 2, 4096]))
    columns = RecordColumns(object_path, keys, entries)
    want = _dicts(keys, entries, object_path)
    assert list(columns) == want
    at_once = rng.choice([1, 2, 7, 1024])
    assert ", ".join(columns.texts(at_once)) == json.dumps(want)[1:-1]
    record = {"source": rng.choice(_TEXTS), "tensors": columns, "format": "tf-name"}
    monkeypatch.setattr(provenance, "_ITEMS_AT_ONCE", at_once)
    assert "".join(record_pieces(record)) == json.dumps({**record, "tensors": want})


@pytest.mark.parametrize("seed", range(60))
def test_items_labelled_at_once_give_the_same_text_and_ask_no_label_again(seed, monkeypatch):
    """``label_now`` asks every entry's name and role at once (a run at a time) and keeps them: the items, their text
    and ``plain`` are then what they were, an item added after it is labelled as it is added, and no label is asked
    again while the record is written (the source's graph may be let go of)."""
    rng = random.Random(seed)
    entries = _entries(rng, rng.choice([0, 1, 3, 40, 300]))
    keys = [e.key for e in entries]
    object_path = rng.choice([None, lambda key: key.split("/")[0]])
    at_once = rng.choice([1, 7, 1024])
    monkeypatch.setattr(provenance, "_ITEMS_AT_ONCE", at_once)
    monkeypatch.setattr(provenance, "PACKED_RUN", rng.choice([1, 2, 5, 1024]))  # (the names kept packed)
    want = RecordColumns(object_path, list(keys), list(entries))
    columns = RecordColumns(object_path, list(keys), list(entries))
    columns.label_now()
    extra = _entries(rng, 2)
    for e in extra:
        want.add(e.key, e)
        columns.add(e.key, e)
    asked: list[int] = []
    monkeypatch.setattr(provenance, "_labels", lambda found: asked.append(len(found)) or ([], []))
    assert list(columns) == _dicts(keys + [e.key for e in extra], entries + extra, object_path)
    assert ", ".join(columns.texts(at_once)) == json.dumps(list(columns))[1:-1]
    assert columns.plain(lambda dtype: True) == (object_path is None and all(
        str(e.name) == e.key and str(e.role) == "variable" for e in entries + extra))
    assert asked == []
    monkeypatch.undo()
    assert ", ".join(columns.texts(at_once)) == ", ".join(want.texts(at_once))


@pytest.mark.parametrize("seed", range(200))
def test_packed_texts_give_back_what_was_added(seed, monkeypatch):
    """``PackedTexts`` slices as a list of the same strings does, whatever was added how (one at a time or many,
    across runs), strings holding NUL (such a run stays a list), empty or not ASCII among them."""
    rng = random.Random(seed)
    monkeypatch.setattr(provenance, "PACKED_RUN", rng.choice([1, 2, 3, 16]))
    texts = [rng.choice(["", "a", "x\x00y", "\x00", "caf\u00e9", "\udcff", "model/layer_1/w"]) + str(i)[:rng.choice([0, 9])]
             for i in range(rng.choice([0, 1, 2, 3, 15, 16, 17, 50]))]
    packed = PackedTexts()
    at = 0
    while at < len(texts):
        n = rng.randint(1, 7)
        if rng.random() < 0.5:
            packed.extend(iter(texts[at:at + n]))
        else:
            for text in texts[at:at + n]:
                packed.append(text)
        at += n
    assert len(packed) == len(texts)
    for _ in range(30):
        first, stop = rng.randint(-3, len(texts) + 3), rng.randint(-3, len(texts) + 3)
        assert packed.slice(first, stop) == texts[first:stop]
    assert packed.slice(0, len(texts)) == texts
    positions = [rng.randrange(len(texts)) for _ in range(rng.choice([0, 1, 40]))] if texts else []
    assert packed.take(positions) == [texts[p] for p in positions]
    assert packed.take(range(len(texts))) == texts


def test_packed_texts_hold_a_run_as_one_string():
    """A run of ASCII names without NUL is one ``str`` (a byte a character and one for the NUL between them), not a
    ``str`` a name (an object-based export of 10^5 tensors held 8 MiB of names at its peak)."""
    import sys

    names = [f"model/layer_{i}/unit_{i % 100}/w" for i in range(3 * provenance.PACKED_RUN + 5)]
    packed = PackedTexts()
    packed.extend(names)
    runs = packed._runs
    assert len(runs) == 3 and all(type(run) is str for run in runs) and len(packed._tail) == 5
    held = sum(map(sys.getsizeof, runs))
    assert held <= sum(map(len, names)) + len(names) + 200 < sum(map(sys.getsizeof, names)) // 2
    assert packed.slice(0, len(names)) == names


def _row(key: str, dtype: str, shape) -> SimpleNamespace:
    return SimpleNamespace(key=key, dtype=dtype, shape=tuple(shape))


@pytest.mark.parametrize("seed", range(100))
def test_rows_other_than_the_items_are_written_as_they_are(seed):
    """A row cast, a row moved, left out or added: the columns are not the rows, and the record written is the
    items each with its row's dtype and shape, an item made for a row they lack, in the rows' order where the
    items follow them (as :func:`as_written` wrote every record)."""
    rng = random.Random(seed)
    entries = [e for e in _entries(rng, 30) if isinstance(e.shape, tuple)]
    keys = [f"t{i}" for i in range(len(entries))]
    rows = [_row(k, e.dtype, e.shape) for k, e in zip(keys, entries)]
    columns = RecordColumns(None, keys, entries)
    assert as_written({"tensors": columns}, rows)["tensors"] is columns
    change = rng.choice(["cast", "reshape", "drop", "add", "swap"])
    i = rng.randrange(len(rows) - 1)
    if change == "cast":
        rows[i] = _row(rows[i].key, "float16" if rows[i].dtype != "float16" else "float64", rows[i].shape)
    elif change == "reshape":
        rows[i] = _row(rows[i].key, rows[i].dtype, (*rows[i].shape, 1))
    elif change == "drop":
        del rows[i]
    elif change == "add":
        rows.insert(i, _row("new", "int8", (2,)))
    else:
        rows[i], rows[i + 1] = rows[i + 1], rows[i]
    written = as_written({"tensors": columns}, rows)
    assert written["tensors"] is not columns
    by_key = {r.key: r for r in rows}
    want = [{**d, "dtype": by_key[d["key"]].dtype, "shape": list(by_key[d["key"]].shape)} if d["key"] in by_key else d
            for d in _dicts(keys, entries, None)]
    want += [{"key": r.key, "dtype": r.dtype, "shape": list(r.shape)} for r in rows if r.key not in keys]
    assert json.loads("".join(record_pieces(written))) == {"tensors": want}


@pytest.mark.parametrize("layout", ["name", "object"])
@pytest.mark.parametrize("command", [("convert", "--to", "safetensors"), ("convert", "--to", "npz"), ("extract",)])
def test_a_command_writes_the_record_without_a_dict_a_tensor(tmp_path, monkeypatch, run_cli, layout, command):
    """``convert --to safetensors|npz`` and ``extract`` to ``.npz`` write the record from its columns: its items'
    dicts are never made (iterating the columns is refused here), and the record read back is each tensor's."""
    prefix = name_based(tmp_path / "in", 300)
    if layout == "object":
        prefix = object_based(prefix)
    every_item_listed(monkeypatch)  # (a name-based one's items say nothing its file does not: none listed)

    def refused(self):
        raise AssertionError("a dict made for each item")

    monkeypatch.setattr(RecordColumns, "__iter__", refused)
    out = tmp_path / ("out.safetensors" if "safetensors" in command else "out.npz")
    result = run_cli(*command, prefix, "-o", out)
    assert result.exit_code == 0, result.output
    if out.suffix == ".npz":
        with np.load(out) as npz:
            record = json.loads(str(npz["__ckpt_provenance__"]))
    else:
        raw = out.read_bytes()
        record = json.loads(json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])["__metadata__"][PROVENANCE_KEY])
    with open_checkpoint(prefix) as ckpt:
        want = [_item(ckpt, k, k) for k in ckpt if k != OBJECT_GRAPH_KEY]
    assert record["tensors"] == want
    assert {"object_path" in item for item in want} == {layout == "object"}
    assert {tuple(item) for item in want} == {("key", "dtype", "shape")} if layout == "name" else \
        {("key", "object_path", "full_name", "dtype", "shape"), ("key", "object_path", "full_name", "role", "dtype",
                                                                 "shape")}


def _record_oracle(item):
    """An item's record as the reader took it before it kept the dtypes it had found good (the code of 5bd30d5):
    every field of every item asked."""
    from formats.core.dtypes import by_name

    if not isinstance(item, dict):
        return None
    key, dtype, shape = item.get("key"), item.get("dtype"), item.get("shape")
    if not isinstance(key, str) or not isinstance(dtype, str) or not isinstance(shape, list):
        return None
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        return None
    try:
        by_name(dtype)
    except (KeyError, ValueError):
        return None
    role = item.get("role")
    texts = [item.get(k) for k in ("source_key", "object_path", "full_name")]
    return (key, texts[0] if isinstance(texts[0], str) else key, texts[1] if isinstance(texts[1], str) else "",
            texts[2] if isinstance(texts[2], str) else key,
            role if role in ("variable", "slot", "optimizer", "iterator", "save_counter", "object_graph", "other")
            else "variable", dtype, tuple(shape))


@pytest.mark.parametrize("seed", range(20))
def test_an_items_record_is_what_every_field_checked_gives(seed):
    """Reading a record, the dtypes found good are kept (each asked once) and a shape's dimensions are checked by
    their types at once: every item gets the record, or the refusal, it got when every field was asked of it."""
    rng = random.Random(seed)
    dims = [0, 1, 4, 2**70, -1, True, False, 4.0, "4", None, [4], float("nan")]
    values = ["float32", "bfloat16", "int64", "string", "bogus", "", 5, None, "float32 ", "\ud800", ["x"]]
    fields = ("key", "source_key", "object_path", "full_name", "role", "dtype", "shape")
    items = []
    for i in range(400):
        item = {"key": rng.choice([f"k{i}", f"k{i}", None, 3]), "dtype": rng.choice(values),
                "shape": rng.choice([[rng.choice(dims) for _ in range(rng.randint(0, 4))], (4,), None, "x"])}
        for field in fields[1:5]:
            if rng.random() < 0.5:
                item[field] = rng.choice(["a/b", "", None, 7, "slot", "variable", "other", "nonsense"])
        items.append(item if rng.random() < 0.95 else rng.choice([None, 5, ["k"], "k"]))
    dtypes: set[str] = set()
    got = [provenance._record(item, dtypes) for item in items]
    assert [None if r is None else tuple(r) for r in got] == list(map(_record_oracle, items))
    assert all(r is None or type(r.shape) is tuple for r in got)
    assert "bogus" not in dtypes and dtypes <= {"float32", "bfloat16", "int64", "string"}
