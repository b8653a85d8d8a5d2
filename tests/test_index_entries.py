"""Issue 38: a bundle writer makes the index entries of the tensors of an input data file it took over whole (a
rename, a conversion of a bundle's tensors as they are) a run at a time with arrays, once numpy is imported:
the same bytes :meth:`_Placement.entry` makes a tensor at a time (at 10^6 tensors, a tenth of the write)."""
from __future__ import annotations

import random
from array import array
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from formats.tf_bundle import writer
from formats.tf_bundle.writer import _Placement
from tests.scale_bundles import name_based

KINDS = [(1, (), 0, 4), (1, (4,), 0, 16), (0, (3, 5), 0, 0), (19, (1 << 20, 3), 0, 6 << 20), (7, (), 0, 9),
         (2, (0,), 0, 0), (23, (128, 16384, 2), 0, 1 << 30)]


def _columns(rng: random.Random, rows: int) -> Any:
    """An index's columns in arrays: each row of one of :data:`KINDS`, at an offset from 0 to past 2**28, with a
    masked CRC32C or none."""
    offsets = [rng.choice([0, 1, 127, 128, 16383, 16384, (1 << 21) - 1, 1 << 21, (1 << 28) - 1, 1 << 28,
                           rng.randrange(1 << 34)]) for _ in range(rows)]
    return SimpleNamespace(kinds=KINDS, kind=array("I", [rng.randrange(len(KINDS)) for _ in range(rows)]),
                           offset=array("q", offsets),
                           crc=array("I", [rng.choice([0, 1, 0xFFFFFFFF, rng.randrange(1 << 32)]) for _ in range(rows)]))


def _one_at_a_time(placement: _Placement | writer._Copied, columns: Any, rows: list[int]) -> list[bytes]:
    return [placement.entry(SimpleNamespace(bundle=SimpleNamespace(entries=columns), row=row)) for row in rows]


@pytest.mark.parametrize("shard", [0, 1, 200])
@pytest.mark.parametrize("base", [0, 5, (1 << 28) - 3, 1 << 33])
def test_entries_with_arrays_are_the_entries_made_one_at_a_time(shard: int, base: int) -> None:
    rng = random.Random(f"{shard}-{base}")
    columns = _columns(rng, 3000)
    rows = sorted(rng.sample(range(3000), 2000))
    expected = _one_at_a_time(_Placement(base, shard, "copied"), columns, rows)
    got = _Placement(base, shard, "copied").entries(np, columns, np.array(rows, np.int64))
    assert got == expected
    assert len(set(expected)) > 100  # (the rows differ: offsets, checksums, kinds)


def test_an_offset_past_five_varint_bytes_is_left_to_the_entry_at_a_time() -> None:
    columns = _columns(random.Random(1), 10)
    placement = _Placement((1 << 35) - 1, 0, "copied")
    assert placement.entries(np, columns, np.arange(10)) is None
    assert _Placement((1 << 35) - 1 - (1 << 34), 0, "copied").entries(np, columns, np.arange(10)) is not None \
        or max(columns.offset) >= 1 << 34


def test_no_rows_make_no_entries() -> None:
    assert _Placement(0, 0, "copied").entries(np, _columns(random.Random(2), 3), np.zeros(0, np.int64)) == []


def test_records_and_taken_rows_interleave_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run holding tensors written fresh (records) among those taken over gives each its own entry, in order."""
    columns = _columns(random.Random(3), 50)
    placement = _Placement(7, 0, "copied")
    taken = writer._Taken()
    taken.add(SimpleNamespace(), 0, placement)
    source = SimpleNamespace(entries=columns)
    records: list[Any] = []
    for row in range(50):
        if row % 7 == 3:
            records.append(writer._Record(f"k{row:03}", b"fresh-%d" % row, 0, "float32", ()))
        else:
            records.append(SimpleNamespace(key=f"k{row:03}", value=SimpleNamespace(bundle=source, row=row)))
    expected = [r.entry if type(r) is writer._Record else placement.entry(r.value) for r in records]
    monkeypatch.setattr(writer, "ENTRIES_AT_ONCE", 16)
    calls = []
    monkeypatch.setattr(_Placement, "entry", lambda self, s: calls.append(s) or b"")
    assert list(writer._entries(records, taken)) == expected
    assert not calls  # every taken row's entry made with arrays


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> str:
    return name_based(tmp_path_factory.mktemp("entries"), 10_000)


def _index_both_ways(run_cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, made_by: type, count: int,
                     *argv: str) -> None:
    """``ckpt ARGV -o OUT`` writes the same index bytes with the entries made with arrays (``made_by.entries``: all
    ``count`` of them) and made one at a time (numpy taken as not imported); the first output verifies."""
    made = []
    entries = made_by.entries
    monkeypatch.setattr(made_by, "entries", lambda self, *a: made.append(len(a[2])) or entries(self, *a))
    result = run_cli(*argv, "-o", str(tmp_path / "a" / "ckpt"))
    assert result.exit_code == 0, result.output
    assert sum(made) == count
    monkeypatch.setattr(writer, "imported_numpy", lambda: None)
    result = run_cli(*argv, "-o", str(tmp_path / "b" / "ckpt"))
    assert result.exit_code == 0, result.output
    assert sum(made) == count  # (not asked again)
    assert (tmp_path / "a" / "ckpt.index").read_bytes() == (tmp_path / "b" / "ckpt.index").read_bytes()
    assert run_cli("verify", str(tmp_path / "a" / "ckpt")).exit_code == 0


def test_a_renamed_bundle_index_is_the_same_either_way(bundle: str, run_cli: Any, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """``ckpt rename`` of 10,000 tensors: its index, byte for byte, with the entries made with arrays and made one
    at a time; the arrays' way made every entry (none one at a time)."""
    _index_both_ways(run_cli, tmp_path, monkeypatch, _Placement, 10_000, "rename", bundle, "--map", "model=net")
    from formats.tf_bundle.checkpoint import BundleCheckpoint

    renamed = BundleCheckpoint(str(tmp_path / "a" / "ckpt"))
    assert renamed["net/layer_99/unit_99/w"].read().tolist() == [9999.0] * 4


@pytest.mark.parametrize("shard", [0, 1, 200])
def test_entries_of_copied_rows_with_arrays_are_the_entries_made_one_at_a_time(shard: int) -> None:
    """An input data file some of whose tensors were copied (an edit leaving some out): their entries made with
    arrays where they went to one output data file, as :meth:`_Copied.entry` makes each."""
    rng = random.Random(f"copied-{shard}")
    columns = _columns(rng, 3000)
    rows = sorted(rng.sample(range(3000), 2000))
    copied = writer._Copied(3000)
    at = 0
    for row in rng.sample(rows, len(rows)):  # (placed in any order, at offsets from 0 to past 2**28)
        assert copied.place(row, at, shard)
        at += rng.choice([0, 4, 16, 1 << 20, 1 << 21])  # (up to about 2**31)
    expected = _one_at_a_time(copied, columns, rows)
    assert copied.entries(np, columns, np.array(rows, np.int64)) == expected
    assert len(set(expected)) > 100
    missing = [r for r in range(3000) if r not in set(rows)][:3]
    assert copied.entries(np, columns, np.array(rows[:5] + missing, np.int64)) is None  # (a row not copied)
    copied.place(missing[0], 8, shard + 1)  # (a second output data file: one at a time)
    assert copied.entries(np, columns, np.array(rows, np.int64)) is None


def test_an_edited_bundle_index_is_the_same_either_way(bundle: str, run_cli: Any, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """``ckpt edit --exclude`` of 10,000 tensors copies the rest: its index, byte for byte, with their entries made
    with arrays and made one at a time."""
    _index_both_ways(run_cli, tmp_path, monkeypatch, writer._Copied, 9_900, "edit", bundle, "--exclude",
                     "model/layer_0/*")
