"""Issue 38: what a bundle write holds per tensor. A plan's rows are written without a ``(key, value)`` pair made
and held for each, the write report's lines (:class:`~formats.io.writing.Stored`) are made when asked for, a
record keeps the key's text (the string given, not its bytes beside it), the read-back checks whole runs of rows
as ranges, and a tensor of a bundle holds no slot for labels it works out lazily. Memory is measured by
``tracemalloc`` (what Python allocates, not the machine's speed): the growth of a write's peak per tensor, between
two sizes, so what every write holds once (imports, buffers) does not count."""
from __future__ import annotations

import itertools
import random
from functools import partial

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from formats import open_checkpoint, write_checkpoint
from formats.core.model import Role, TensorEntry
from formats.io import writing
from formats.io.writing import Stored, StoredRows
from formats.tf_bundle import readback
from formats.tf_bundle.checkpoint import BundleTensor
from formats.tf_bundle.origins import sort_by_key
from formats.tf_bundle.output import write as write_rows
from formats.tf_bundle.reader import BundleReader
from formats.tf_bundle.writer import RowPairs

from tests.memory import traced
from tests.scale_bundles import name_based

SIZES = (5_000, 20_000)
PEAK_PER_TENSOR = 200
"""Bytes a rename's write may add to its peak per tensor (stop 50: 584; stop 51: about 350; with rows taken over
written as they are given, no record each: about 115)."""


class _Row:
    __slots__ = ("key", "value")

    def __init__(self, key: str, value: object) -> None:
        self.key, self.value = key, value


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    folder = tmp_path_factory.mktemp("write_per_tensor")
    return [name_based(folder, n) for n in SIZES]


def test_a_renamed_write_grows_its_peak_by_less_than_a_pair_a_line_and_a_key_per_tensor(bundles, tmp_path):
    peaks = []
    for n, prefix in zip(SIZES, bundles):
        with open_checkpoint(prefix) as source:
            rows = [_Row("net" + key[len("model"):], entry) for key, entry in source.items()]
            out = str(tmp_path / f"out{n}" / "ckpt-1")
            report, _, peak = traced(partial(write_rows, out, rows, layout="tf-name", inputs=[source], jobs=1))
        assert report.verified and report.tensors == n
        peaks.append(peak)
    per_tensor = (peaks[1] - peaks[0]) / (SIZES[1] - SIZES[0])
    assert per_tensor <= PEAK_PER_TENSOR, f"{per_tensor:.0f} bytes a tensor"
    with open_checkpoint(str(tmp_path / f"out{SIZES[0]}" / "ckpt-1")) as written:  # an independent read
        assert written["net/layer_42/unit_7/w"].read().tolist() == [4207.0] * 4


def test_the_report_lines_are_made_when_asked_for_and_say_what_was_written(bundles, tmp_path, monkeypatch):
    made = []
    original = Stored.__init__

    def counting(self, *args):  # type: ignore[no-untyped-def]
        made.append(args[0])
        original(self, *args)

    monkeypatch.setattr(Stored, "__init__", counting)
    with open_checkpoint(bundles[0]) as source:
        rows = [_Row("net" + key[len("model"):], entry) for key, entry in source.items()][:300]
        report = write_rows(str(tmp_path / "out" / "ckpt-1"), rows, layout="tf-name", inputs=[source])
    assert made == [] and isinstance(report.contents, StoredRows)
    contents = report.to_json()["contents"]
    assert len(made) == 300
    assert contents[0] == {"key": "net/layer_0/unit_0/w", "stored_as": "net/layer_0/unit_0/w", "dtype": "float32",
                           "stored_dtype": "float32", "shape": [4]}
    given = sorted(f"model/layer_{i // 100}/unit_{i % 100}/w".encode() for i in range(SIZES[0]))[:300]  # index order
    assert [line["key"] for line in contents] == ["net" + key.decode()[len("model"):] for key in given]
    last = "net" + given[299].decode()[len("model"):]
    assert report.contents[299] == Stored(last, last, "float32", "float32", (4,))
    assert report.contents == list(report.contents) and report.contents[1:3] == list(report.contents)[1:3]


def test_keys_whose_text_sorts_apart_from_their_bytes_are_written_in_byte_order(tmp_path):
    """U+E000 is three bytes from 0xEE; a key holding the byte 0xFF (not UTF-8) is read as the surrogate U+DCFF,
    which sorts before U+E000 as text but after it as bytes: TensorFlow's table is ordered by bytes."""
    prefix = str(tmp_path / "ckpt")
    report = write_checkpoint(prefix, [("\ue000", np.zeros(2, np.float32)), (b"a\xff", np.ones(2, np.float32)),
                                       ("a\ue000", np.full(2, 2, np.float32))])
    assert report.verified
    assert [line.key for line in report.contents] == ["\ue000", "a\udcff", "a\ue000"]  # in the order given
    reader = BundleReader(prefix)
    try:
        assert list(reader.entries.keys) == [b"a\xee\x80\x80", b"a\xff", b"\xee\x80\x80"]  # bytewise
    finally:
        reader.close()
    with open_checkpoint(prefix) as written:
        assert written["a\udcff"].read().tolist() == [1.0, 1.0]


def test_two_tensors_taken_over_under_one_key_are_refused_by_name(tmp_path):
    """Every tensor of a data file renamed to one key: the file would be taken over whole, and the key twice in the
    index; the write is refused, naming the key, and leaves nothing (the keys found twice once sorted, not in a set
    of every key held through the write)."""
    prefix = str(tmp_path / "in" / "ckpt")
    write_checkpoint(prefix, {"x": np.zeros(2, np.float32), "y": np.ones(2, np.float32)})
    out = tmp_path / "out"
    with open_checkpoint(prefix) as source:
        from formats.tf_bundle.layout import plan_layout

        assert len(plan_layout([source["x"], source["y"]]).placed) == 2  # both taken over: no fresh write
        with pytest.raises(ValueError, match="duplicate key 'same'"):
            write_checkpoint(str(out / "ckpt"), [("same", source["x"]), ("same", source["y"])], inputs=[source])
    assert not out.exists() or list(out.iterdir()) == []


class _Keyed:
    def __init__(self, key: str) -> None:
        self.key = key


@pytest.mark.parametrize("keys, expected", [
    (["b", "a", "ab"], ["a", "ab", "b"]),
    (["\ue000", "\udcff", "z"], ["z", "\ue000", "\udcff"]),  # the surrogate: a byte 0xFF, after 0xEE...
    (["\U0001f600", "\uffff"], ["\uffff", "\U0001f600"]),  # valid text: code points sort as UTF-8 bytes
])
def test_records_sort_by_their_keys_bytes(keys, expected):
    records = [_Keyed(k) for k in keys]
    sort_by_key(records)
    assert [r.key for r in records] == expected
    assert sorted(k.encode("utf-8", "surrogateescape") for k in keys) == [k.encode("utf-8", "surrogateescape")
                                                                          for k in expected]


def test_the_read_back_batches_a_range_of_rows_as_ranges():
    sizes = [300_000] * 7 + [10] * 5000
    batches = readback._batches(range(100, 100 + len(sizes)), sizes)
    assert all(type(rows) is range for rows, _ in batches)
    as_lists = readback._batches(list(range(100, 100 + len(sizes))), sizes)
    assert [(list(rows), total) for rows, total in batches] == as_lists
    expected, run, total = [], [], 0  # the batches written out: at most BATCH_BYTES or 4096 rows, one row at least
    for row, size in zip(range(100, 100 + len(sizes)), sizes):
        if run and (total + size > readback.BATCH_BYTES or len(run) >= 4096):
            expected.append((run, total))
            run, total = [], 0
        run.append(row)
        total += size
    expected.append((run, total))
    assert as_lists == expected
    every = readback._Hows(["copied"] * 4, 4).rows("copied", "linked")
    assert every == range(4) and type(every) is range
    assert readback._Hows(["fresh", "copied", "fresh", "linked"], 4).rows("copied", "linked") == [1, 3]
    assert readback._Hows("copied", 3).rows("copied") == range(3) and readback._Hows("fresh", 3).rows("copied") == ()


@pytest.mark.parametrize("numbers, compact", [([3, 4, 5], range(3, 6)), ([7], range(7, 8)), ([1, 2, 4], [1, 2, 4]),
                                              ([2, 4, 3, 5], [2, 4, 3, 5]), ([5, 4, 3], [5, 4, 3]), ([], [])])
def test_a_run_of_positions_or_rows_is_held_as_a_range(numbers, compact):
    from formats.tf_bundle.layout import _compact

    held = _compact(list(numbers))
    assert held == compact and type(held) is type(compact) and list(held) == numbers


def test_the_read_back_holds_the_written_keys_as_the_records_strings(bundles, tmp_path, monkeypatch):
    """The index read back decodes every key; one equal to the record's is held as the record's string."""
    opened = []
    original = readback.BundleCheckpoint

    def keeping(*args, **kwargs):  # type: ignore[no-untyped-def]
        opened.append(original(*args, **kwargs))
        return opened[-1]

    monkeypatch.setattr(readback, "BundleCheckpoint", keeping)
    with open_checkpoint(bundles[0]) as source:
        rows = [_Row("net" + key[len("model"):], entry) for key, entry in source.items()]
        report = write_rows(str(tmp_path / "out" / "ckpt-1"), rows, layout="tf-name", inputs=[source])
    assert report.verified
    (written,) = opened
    texts = written.reader.entries.texts
    by_text = {row.key: row.key for row in rows}
    assert len(texts) == len(rows) and all(text is by_text[text] for text in texts)


def test_row_pairs_are_the_rows_keys_and_values_then_the_graph():
    rows = [_Row("a", 1), _Row("b", 2)]
    pairs = RowPairs(rows)
    assert len(pairs) == 2 and list(pairs) == [("a", 1), ("b", 2)] and pairs[-1] == ("b", 2)
    assert pairs.and_graph(None) is pairs
    with_graph = pairs.and_graph(("_CHECKPOINTABLE_OBJECT_GRAPH", 3))
    assert list(with_graph) == [("a", 1), ("b", 2), ("_CHECKPOINTABLE_OBJECT_GRAPH", 3)]
    assert with_graph[2] == with_graph[-1] == ("_CHECKPOINTABLE_OBJECT_GRAPH", 3)
    assert with_graph[1:] == [("b", 2), ("_CHECKPOINTABLE_OBJECT_GRAPH", 3)]
    sources = writing.sources_of(with_graph)
    assert not isinstance(sources, list) and list(sources) == [1, 2, 3] and len(sources) == 3
    assert [sources[0], sources[2], sources[-1], sources[-3]] == [1, 3, 3, 1] and sources[1:] == [2, 3]


def test_a_bundle_tensor_holds_no_slot_for_the_labels_it_works_out(bundles):
    """Five label slots of the base class were 40 bytes a tensor that a bundle's tensor never filled."""
    assert BundleTensor.__basicsize__ <= object.__basicsize__ + 8 * 8
    with open_checkpoint(bundles[0]) as source:
        tensor = source["model/layer_0/unit_3/w"]
        assert (tensor.name, tensor.role, tensor.slot_of) == ("model/layer_0/unit_3/w", Role.VARIABLE, None)


def test_a_tensor_entry_keeps_the_labels_it_was_given_or_set():
    plain = TensorEntry("k", (2,), "float32", 8)
    assert (plain.name, plain.role, plain.slot_of, plain.optimizer, plain.slot_name) == ("k", Role.VARIABLE, None,
                                                                                       None, None)
    slot = TensorEntry("opt/w/m", (2,), "float32", 8, "w/Adam", Role.SLOT, slot_of="w", optimizer="opt",
                       slot_name="m")
    assert (slot.name, slot.role, slot.slot_of, slot.optimizer, slot.slot_name) == ("w/Adam", Role.SLOT, "w", "opt",
                                                                                    "m")
    plain.role, plain.slot_name = Role.OPTIMIZER, "v"
    assert (plain.name, plain.role, plain.slot_name) == ("k", Role.OPTIMIZER, "v")
    assert not hasattr(plain, "__dict__")


_KEY_TEXT = st.text(st.sampled_from(["a", "b", "/", "\x7f", "é", "\ue000", "\uffff", "\U0001f600", "\udcff", "\udc80"]),
                    min_size=1, max_size=5)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keys=st.lists(_KEY_TEXT, min_size=1, max_size=8, unique_by=lambda k: k.encode("utf-8", "surrogateescape")),
       prefix=st.sampled_from(["", "z", "\ue001", "\udcfe"]))
def test_keys_of_any_text_are_written_taken_over_and_read_back_as_given(tmp_path_factory, keys, prefix):
    """Keys of valid text, astral characters, and bytes that are not UTF-8 (given as ``surrogateescape`` text):
    written fresh, then every tensor taken over under a new key; the index is in byte order (TensorFlow's table
    reader checks it), each key reads back as given, with its value."""
    folder = tmp_path_factory.mktemp("keys")
    values = {key: np.full(3, i, np.int32) for i, key in enumerate(keys)}
    first = write_checkpoint(str(folder / "a" / "ckpt"), list(values.items()))
    assert first.verified and [line.key for line in first.contents] == keys
    with open_checkpoint(str(folder / "a" / "ckpt")) as source:
        assert sorted(source) == sorted(keys)
        renamed = [(prefix + key, source[key]) for key in source]
        second = write_checkpoint(str(folder / "b" / "ckpt"), renamed, inputs=[source])
    assert second.verified and [line.key for line in second.contents] == [key for key, _ in renamed]
    reader = BundleReader(str(folder / "b" / "ckpt"))
    try:
        raw = list(reader.entries.keys)
    finally:
        reader.close()
    expected = sorted((prefix + key).encode("utf-8", "surrogateescape") for key in keys)
    assert raw == expected
    with open_checkpoint(str(folder / "b" / "ckpt")) as written:
        assert {key: written[key].read().tolist() for key in written} == {
            prefix + key: value.tolist() for key, value in values.items()}


class _Columns:
    """Index columns of tensors at ``offsets`` of ``sizes`` (one kind a size), as IndexColumns holds them."""

    def __init__(self, offsets: list[int], sizes: list[int]) -> None:
        from array import array

        self.offset = array("q", offsets)
        self.kinds: list[tuple[int, tuple[int, ...], int, int]] = []
        kinds: dict[int, int] = {}
        for size in sizes:
            kinds.setdefault(size, len(kinds))
            if len(self.kinds) < len(kinds):
                self.kinds.append((1, (size,), 0, size))
        self.kind = array("I", [kinds[size] for size in sizes])


def _tile_by_sorting(offsets: list[int], sizes: list[int], size: int) -> bool:
    end = 0
    for offset, length in sorted(zip(offsets, sizes)):
        if offset != end:
            return False
        end += length
    return end == size


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([1, 2, 3, 4, 6, 8, 16]), min_size=1, max_size=9), st.randoms(use_true_random=False),
       st.sampled_from(["tiled", "moved", "longer", "resized"]), st.integers(-3, 4))
def test_tensors_out_of_order_tile_a_file_as_a_sort_says(sizes, rnd, damage, by):
    """Whether a data file is taken over whole (its tensors lie end to end, in any order): the check by marks, with no
    sort, and the check as taken, agree with sorting the tensors by offset - tiled, or a tensor moved, the file
    longer, a tensor resized."""
    from formats.tf_bundle import layout

    offsets = [sum(sizes[:i]) for i in range(len(sizes))]
    size = sum(sizes)
    order = list(range(len(sizes)))
    rnd.shuffle(order)
    offsets, sizes = [offsets[i] for i in order], [sizes[i] for i in order]
    if damage == "moved":
        offsets[rnd.randrange(len(offsets))] += by
    elif damage == "longer":
        size += by
    elif damage == "resized":
        i = rnd.randrange(len(sizes))
        sizes[i] = max(1, sizes[i] + by)
    columns, rows = _Columns(offsets, sizes), range(len(sizes))
    expected = _tile_by_sorting(offsets, sizes, size)
    assert layout._tiles_by_marks(columns, rows, size) in (expected, None)
    assert layout._tiles(columns, rows, size) is expected
    assert layout._tiles(columns, list(rows), size) is expected


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("shuffled", [False, True])
@pytest.mark.parametrize("damage", ["tiled", "moved", "longer", "resized", "first moved", "huge"])
def test_a_large_run_of_rows_tiles_a_file_as_a_sort_says_with_arrays(seed, shuffled, damage):
    """A run of 4,096 rows or more of a large index (its columns arrays, numpy imported) is checked with arrays
    (sorted by offset where they are not in order, each offset the sum of the sizes before it): the answer is the
    sort's, in order or not, damaged or not, with no offset read a row (but a size past int64: walked)."""
    from array import array
    from unittest.mock import patch

    from formats.tf_bundle import layout
    from formats.tf_bundle.columns import IndexColumns

    class Counted(array):  # type: ignore[type-arg]
        reads = 0

        def __getitem__(self, i):  # type: ignore[no-untyped-def]
            Counted.reads += 1
            return super().__getitem__(i)

    class Columns(_Columns):
        arrays_of = IndexColumns.arrays_of

        def __init__(self, offsets: list[int], sizes: list[int]) -> None:
            super().__init__(offsets, sizes)
            self.offset = Counted("q", offsets)
            self.crc = array("I", bytes(4 * len(offsets)))

    rnd = random.Random(seed)
    n, by = rnd.randrange(4096, 4200), rnd.choice([-3, -2, -1, 1, 2, 3, 4])
    sizes = [rnd.choice([1, 2, 3, 4, 6, 8, 16]) for _ in range(n)]
    offsets = [0, *itertools.accumulate(sizes)][:-1]
    size = sum(sizes)
    if shuffled:
        order = list(range(n))
        rnd.shuffle(order)
        offsets, sizes = [offsets[i] for i in order], [sizes[i] for i in order]
    i = rnd.randrange(n)
    if damage == "moved":
        offsets[i] += by
    elif damage == "first moved":
        offsets[0] += by
    elif damage == "longer":
        size += by
    elif damage == "resized":
        sizes[i] = max(1, sizes[i] + by)
    elif damage == "huge":  # a size past int64 (an index may declare one): never taken into the arrays
        sizes[i] = (1 << 64) - 1
    columns = Columns(offsets, sizes)
    expected = _tile_by_sorting(offsets, sizes, size)
    Counted.reads = 0
    assert layout._tiles(columns, range(n), size) is expected
    assert (Counted.reads == 0) == (damage != "huge"), Counted.reads  # (the arrays decide, in order or not)
    assert layout._tiles(columns, list(range(n)), size) is expected  # (not a run: walked)
    with patch.object(layout, "imported_numpy", lambda: None):
        assert layout._tiles(columns, range(n), size) is expected


def test_marks_are_not_made_where_they_would_cost_more_than_a_sort():
    from formats.tf_bundle import layout

    columns = _Columns([4, 0], [1 << 20, 4])  # two tensors, 2^18 units of 4 bytes: sorted instead
    assert layout._tiles_by_marks(columns, range(2), 4 + (1 << 20)) is None
    assert layout._tiles(columns, range(2), 4 + (1 << 20)) is True


def test_a_tensor_taken_over_is_written_as_its_row_with_no_record(bundles, tmp_path, monkeypatch):
    """A rename takes every tensor over with its data file: no writer record is made for any (they were 130 MB at a
    million tensors), yet the index, the report and the read-back say what was written; a tensor written fresh
    beside them has its record."""
    from formats.tf_bundle import writer

    made = []
    original = writer._Record.__init__

    def counting(self, key, *args, **kwargs):  # type: ignore[no-untyped-def]
        made.append(key)
        original(self, key, *args, **kwargs)

    monkeypatch.setattr(writer._Record, "__init__", counting)
    with open_checkpoint(bundles[0]) as source:
        rows = [_Row("net" + key[len("model"):], entry) for key, entry in source.items()]
        rows.insert(7, _Row("extra", np.arange(3, dtype=np.int64)))
        report = write_rows(str(tmp_path / "out" / "ckpt-1"), rows, layout="tf-name", inputs=[source])
    assert made == ["extra"] and report.verified and report.tensors == SIZES[0] + 1
    assert report.bytes == SIZES[0] * 16 + 24
    assert [s.key for s in report.contents][:9] == [row.key for row in rows[:9]]  # in the order given
    written = BundleReader(str(tmp_path / "out" / "ckpt-1"))
    keys = [k for k, _ in written.entries.items() if k]
    assert keys == sorted(row.key.encode() for row in rows)
    assert written.entries.row(written.entries.find(b"net/layer_3/unit_5/w")).size == 16
    written.close()
    with open_checkpoint(str(tmp_path / "out" / "ckpt-1")) as out:
        assert out["extra"].read().tolist() == [0, 1, 2] and out["net/layer_3/unit_5/w"].read().tolist() == [305.0] * 4


class _Columns1:
    kinds = [(1, (4,), 0, 16)]
    kind = [0, 0]


class _Reader:
    entries = _Columns1


class _Source:
    def __init__(self, bundle: _Reader) -> None:
        self.bundle, self.row = bundle, 1


def test_how_each_tensor_got_there_is_one_text_when_it_is_one_way():
    """What the read-back is told: one text when every tensor got there one way (no list a tensor), else each's,
    a tensor taken over looked up by its data file where files went two ways (a link that failed: copied)."""
    from formats.tf_bundle import writer

    fresh = writer._Record("a", b"", 0, "float32", ())
    first, second = _Reader(), _Reader()
    linked, copied = _Row("d", _Source(first)), _Row("c", _Source(second))
    taken = writer._Taken()
    assert taken.hows([], set()) == "fresh" and taken.hows([fresh], {"fresh"}) == "fresh"
    taken.add(first, 0, writer._Placement(0, 0, "linked"))
    assert taken.hows([linked], set()) == "linked"
    assert taken.hows([fresh, linked], {"fresh"}) == ["fresh", "linked"]
    taken.add(second, 0, writer._Placement(0, 1, "copied"))
    assert taken.hows([linked, fresh, copied], {"fresh"}) == ["linked", "fresh", "copied"]
    assert taken.placement(copied.value).shard == 1 and taken.placement(linked.value).shard == 0
    assert taken.copied(first, 0) is None  # a file taken over whole: a tensor of it copied again gets a record
    third = _Reader()
    runs = taken.copied(third, 0)
    assert runs is not None and taken.copied(third, 0) is runs and runs.how == "copied"
    assert taken.hows([linked, _Row("e", _Source(third))], set()) == ["linked", "copied"]


def test_the_rows_taken_over_go_back_to_the_order_given_wherever_they_were():
    from formats.tf_bundle import writer
    from formats.tf_bundle.layout import Layout, Placed, Reused

    files = [Reused("a", 0, None, 0, [4, 0, 2]), Reused("b", 0, None, 0, range(5, 7))]  # type: ignore[arg-type]
    fresh = writer._Record("f", b"", 0, "float32", ())
    other = writer._Record("g", b"", 0, "float32", ())
    layout = Layout(files, Placed(7, [4, 0, 2, 5, 6]))
    assert writer._in_order(layout, ["a4", "a0", "a2", "b5", "b6"], [fresh, other]) == \
        ["a0", fresh, "a2", other, "a4", "b5", "b6"]
    alone = [fresh, "copied", other]
    assert writer._in_order(Layout([]), [], alone) is alone  # nothing taken over: the very list


def test_a_data_file_is_taken_over_only_for_each_of_its_tensors_once(bundles):
    """The layout takes an input data file over whole only when the sources are its every tensor, each once: a
    tensor given twice (its second copy needs bytes of its own) or one left out keeps the file from being taken."""
    from formats.tf_bundle.layout import plan_layout

    with open_checkpoint(bundles[0]) as source:
        tensors = list(source.values())
        whole = plan_layout(tensors)
        assert len(whole.files) == 1 and list(whole.files[0].positions) == list(range(len(tensors)))
        assert list(whole.files[0].rows) == [t.row for t in tensors] and whole.files[0].size == 16 * len(tensors)
        assert plan_layout([*tensors, tensors[5]]).files == []
        assert plan_layout([tensors[5], *tensors]).files == []
        assert plan_layout(tensors[1:]).files == []
        shuffled = tensors[::-1]  # every tensor once, in another order: taken over, positions as given
        again = plan_layout(shuffled)
        assert len(again.files) == 1 and list(again.files[0].rows) == [t.row for t in shuffled]


def _files_of(prefix: str) -> dict[str, bytes]:
    import pathlib

    folder = pathlib.Path(prefix).parent
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _same_as_a_fresh_write(tmp_path, name: str, pairs: list, monkeypatch, shards=None) -> list[str]:
    """Write ``pairs`` (key, bundle tensor or array) as given, and the same keys with every value read into an array
    (written fresh, no copy): the two bundles' index and data bytes must be equal - TensorFlow's writer packs the
    tensors in the order given, so where a copied one lies and what its entry says has one right answer. The keys
    that got a writer record in the first write."""
    from formats.tf_bundle import writer

    made: list[str] = []
    original = writer._Record.__init__

    def counting(self, key, *args, **kwargs):  # type: ignore[no-untyped-def]
        made.append(key)
        original(self, key, *args, **kwargs)

    monkeypatch.setattr(writer._Record, "__init__", counting)
    copied = write_checkpoint(str(tmp_path / name / "ckpt"), pairs, shards=shards)
    monkeypatch.setattr(writer._Record, "__init__", original)
    arrays = [(k, v if isinstance(v, np.ndarray) else v.read()) for k, v in pairs]
    fresh = write_checkpoint(str(tmp_path / (name + "-fresh") / "ckpt"), arrays, shards=shards)
    assert copied.verified and fresh.verified and copied.tensors == fresh.tensors == len(pairs)
    assert copied.bytes == fresh.bytes == sum(np.asarray(v).nbytes for _, v in arrays)
    assert [s.key for s in copied.contents] == [k for k, _ in pairs]  # in the order given
    assert _files_of(str(tmp_path / name / "ckpt")) == _files_of(str(tmp_path / (name + "-fresh") / "ckpt"))
    return made


def test_tensors_copied_as_they_lie_are_written_as_their_rows_with_no_record(bundles, tmp_path, monkeypatch):
    """An edit's selection (a tensor in ten left out, so no data file is taken over whole): every tensor copied as it
    lies, with no writer record (250 MB at a million), its entry made from its run's place as the index is written;
    a tensor written fresh among them keeps its record, and the runs after it their places."""
    with open_checkpoint(bundles[0]) as source:
        kept = [(k, v) for i, (k, v) in enumerate(source.items()) if i % 10 != 3]
        kept.insert(40, ("fresh/a", np.arange(5, dtype=np.int32)))
        kept.insert(900, ("fresh/b", np.arange(3, dtype=np.float64)))
        assert _same_as_a_fresh_write(tmp_path, "kept", kept, monkeypatch) == ["fresh/a", "fresh/b"]


def test_tensors_copied_in_any_order_have_their_places_and_one_copied_twice_a_record(tmp_path, monkeypatch):
    """Where a copied tensor went is kept by its row in its input's index, whatever the order: tensors given out of
    their file's order, a large one (a kernel copy of its own) and tensors of two inputs interleaved (a look-up of
    the file a tensor) are written with no record; a tensor given a second time needs bytes of its own and has a
    record, as has an empty one (nothing to copy: written fresh)."""
    first, second = str(tmp_path / "in1" / "ckpt"), str(tmp_path / "in2" / "ckpt")
    write_checkpoint(first, [(f"t{i}", np.full(3, i, np.float32)) for i in range(20)]
                     + [("big", np.arange(40_000, dtype=np.float32)), ("empty", np.zeros((0, 4), np.float32)),
                        ("after", np.ones(2, np.int64))])
    write_checkpoint(second, [(f"u{i}", np.full(2, i, np.int16)) for i in range(10)])
    with open_checkpoint(first) as one, open_checkpoint(second) as two:
        pairs = [("a", one["t0"]), ("b", one["t1"]), ("c", two["u3"]), ("d", one["t5"]), ("e", one["t2"]),
                 ("f", one["t5"]), ("g", one["big"]), ("h", one["empty"]), ("i", two["u4"]), ("j", one["after"]),
                 ("k", one["t19"]), ("l", two["u3"])]
        assert _same_as_a_fresh_write(tmp_path, "mixed", pairs, monkeypatch) == ["f", "h", "l"]
        assert _same_as_a_fresh_write(tmp_path, "reversed", [(f"r{i}", one[f"t{i}"]) for i in range(19, -1, -1)],
                                      monkeypatch) == []
        spread = [0, 0, 1, 1, 1, 3, 3, 3, 3, 3, 5, 5]  # data files of the pairs in turn: those of a file's tensors vary
        assert _same_as_a_fresh_write(tmp_path, "sharded", pairs, monkeypatch, shards=spread) == ["f", "h", "l"]


def test_a_selection_grows_its_peak_by_less_than_a_record_per_tensor(bundles, tmp_path):
    """``edit --exclude``'s write: no data file taken over whole, every tensor copied as it lies; the peak grows by
    the rows given and the index, not a record and an entry a tensor (about 305 bytes a tensor before, 128 after)."""
    peaks = []
    for n, prefix in zip(SIZES, bundles):
        with open_checkpoint(prefix) as source:
            rows = [_Row(key, entry) for i, (key, entry) in enumerate(source.items()) if i != 7]
            out = str(tmp_path / f"out{n}" / "ckpt-1")
            report, _, peak = traced(partial(write_rows, out, rows, layout="tf-name", inputs=[source], jobs=1))
        assert report.verified and report.tensors == n - 1
        peaks.append(peak)
    per_tensor = (peaks[1] - peaks[0]) / (SIZES[1] - SIZES[0])
    assert per_tensor <= PEAK_PER_TENSOR, f"{per_tensor:.0f} bytes a tensor"


class _TypedRow(_Row):
    __slots__ = ("dtype",)

    def __init__(self, key: str, value: BundleTensor) -> None:
        super().__init__(key, value)
        self.dtype = value.dtype  # (what a plan's row says besides its key and value)


NPZ_PEAK_PER_TENSOR = 460
"""Bytes an ``.npz`` write of plan rows may add to its peak per tensor (stop 52: about 675, a member name, a pair, a
described tuple and a report line a tensor among them; now about 395: the central directory and the archive's
columns, mostly)."""


def test_an_npz_write_grows_its_peak_by_its_central_directory_and_little_else(bundles, tmp_path):
    """The npz writer holds, a tensor, its central directory entry and a shared member's result: its name, pair and
    report line are made when used (the report's lines on access, the same as before), its dtype and shape shared."""
    from formats.npz.writer import write as write_npz_rows

    peaks = []
    for n, prefix in zip(SIZES, bundles):
        with open_checkpoint(prefix) as source:
            rows = [_TypedRow(key, entry) for key, entry in source.items()]
            out = str(tmp_path / f"out{n}.npz")
            report, _, peak = traced(partial(write_npz_rows, out, rows, inputs=[source]))
        assert report.verified and report.tensors == n and report.bytes == 16 * n
        peaks.append(peak)
    per_tensor = (peaks[1] - peaks[0]) / (SIZES[1] - SIZES[0])
    assert per_tensor <= NPZ_PEAK_PER_TENSOR, f"{per_tensor:.0f} bytes a tensor"
    assert report.contents[3] == Stored(rows[3].key, rows[3].key + ".npy", "float32", "float32", (4,))
    with np.load(out) as npz:  # an independent read
        assert npz["model/layer_42/unit_7/w"].tolist() == [4207.0] * 4


def test_the_bytes_planned_for_copied_tensors_are_read_from_the_columns(bundles):
    """The space a write asks for: a bundle tensor's stored size from its index's columns, what
    :func:`planned_bytes` would say of it (no description made a tensor), anything else described."""
    from formats.io.writing import planned_bytes
    from formats.tf_bundle import writer
    from formats.tf_bundle.checkpoint import BundleTensor
    from formats.tf_bundle.layout import Placed

    with open_checkpoint(bundles[0]) as source:
        tensors = list(source.values())
        mixed = [*tensors[:50], np.zeros((3, 5), np.float64), *tensors[50:100]]
        none = Placed(len(mixed))
        assert BundleTensor.rows_of_one(mixed) is None
        assert writer._planned_bytes(mixed, none, None) == planned_bytes(mixed) == 100 * 16 + 120
        others = Placed(len(mixed), [p for p in range(len(mixed)) if p not in (0, 50, 99)])
        assert writer._planned_bytes(mixed, others, None) == 16 + 120 + 16
        one = BundleTensor.rows_of_one(tensors[:100])  # every tensor of one bundle: summed over its columns
        assert one is not None and one[1] == [t.row for t in tensors[:100]]
        assert writer._planned_bytes(tensors[:100], Placed(100), one) == planned_bytes(tensors[:100]) == 100 * 16
        assert writer._planned_bytes(tensors[:100], Placed(100, range(3, 100)), one) == 3 * 16
