"""Issue 38: what a writer asks of every tensor, asked of all of them at once, gives what asking each gave.

An export of 100,000 tiny tensors asked each its ``.npy`` member name, its description (dtype and shape), whether
ckpt can read it, its name and role for the record, and each plan how many rows it transforms, one Python call at
a time. These are now asked of all at once (C functions over the keys joined or the entries' columns, one call a
distinct kind); each test here holds the bulk answer to the per-tensor one (the oracle: the function asked a
tensor at a time, as before), on keys and entries made to trip every shortcut.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

import formats
from formats.core import dtypes
from formats.core.errors import InvalidOutputError, UnsupportedError
from formats.core.model import TensorEntry
from formats.core.provenance import PROVENANCE_MEMBER
from formats.core.sources import TensorValue, describe, describe_all
from formats.io.npy_output import check_member_names, member_name, member_names_fine
from formats.npz.format import FORMAT as NPZ
from formats.ops.convert.plan import ConversionPlan, PlanRow
from formats.tf_bundle.checkpoint import BundleTensor
from formats.tf_bundle.reader import reference_dtype_problem

from .conftest import CORPUS
from .hostile.craft import bundle, entry, string_tensor

BUNDLES = sorted(str(p)[:-len(".index")] for p in CORPUS.rglob("*.index"))
_PIECES = ["a", "model/w", "/", "\x00", "caf\u00e9", "\U0001f600", "", "x" * 70_000, PROVENANCE_MEMBER, "\ud800",
           "b/", ".npy", " "]


def _refusal(key: str) -> str | None:
    try:
        member_name(key, "out.npz")
    except InvalidOutputError as exc:
        return exc.message
    return None


def _keys(rng: random.Random) -> list[str]:
    n = rng.choice([0, 1, 2, 5, 30])
    keys = [f"model/layer_{i}/w" for i in range(n)]
    for _ in range(rng.choice([0, 0, 1, 2])):  # (most sets fine: the shortcut's answer is the one taken)
        if keys:
            at = rng.randrange(len(keys))
            keys[at] = rng.choice([keys[at], ""]) + rng.choice(_PIECES) + rng.choice(["", "x", "/"])
    if keys and rng.random() < 0.1:
        keys.append(rng.choice(keys))  # the same key twice
    return keys


@pytest.mark.parametrize("seed", range(300))
def test_member_names_are_checked_at_once_as_a_key_at_a_time(seed):
    keys = _keys(random.Random(seed))
    refusals = [r for r in map(_refusal, keys) if r is not None]
    # (fine: no key is refused; not fine: one may be, or one is not ASCII, which the loop then asks about)
    assert member_names_fine(keys) == (bool(keys) and not refusals and all(k.isascii() for k in keys))
    if refusals:
        with pytest.raises(InvalidOutputError) as caught:
            check_member_names(keys, "out.npz")
        assert caught.value.message == refusals[0]  # the first key refused, as the loop named it
    elif len(set(keys)) != len(keys):
        with pytest.raises(InvalidOutputError, match="two tensors would be stored under the same member name"):
            check_member_names(keys, "out.npz")
    else:
        check_member_names(keys, "out.npz")
    assert NPZ.key_problems(keys) == {k: m for k, m in ((k, _refusal(k)) for k in keys) if m is not None}


def test_each_refusal_of_one_key_among_many_is_found():
    """Wherever the key is: the keys are joined a few thousand at a time (``_JOINED``), the first run or a later."""
    from formats.io.npy_output import _JOINED

    keys = [f"model/layer_{i}/w" for i in range(2 * _JOINED + 10)]
    for bad in ["", PROVENANCE_MEMBER, "x/", "a\x00b", "caf\u00e9", "\ud800", "x" * 65_532, "x" * 65_531]:
        for at in (0, 500, _JOINED - 1, _JOINED, 2 * _JOINED + 9):
            given = keys[:at] + [bad] + keys[at + 1:]
            assert member_names_fine(given) == (_refusal(bad) is None and bad.isascii()), (bad[:10], at)
    assert member_names_fine(keys[:-1] + ["x" * 65_531])  # (65,531 + ".npy": 65,535 bytes, the most a name holds)


def test_a_bundle_tensor_is_unreadable_exactly_when_its_dtype_is_a_reference():
    for enum in range(0, 400):  # (every DataType number and past them: unknown ones are read as unknown(N))
        name = dtypes.name_of(enum)
        assert name.endswith("_ref") == (reference_dtype_problem(enum) is not None), enum


def _reference_bundle(tmp_path):
    data, crc = string_tensor([b"hello", b"world"])
    f32 = np.arange(2, dtype="<f4").tobytes()
    return bundle(tmp_path, "c", [(b"f", entry(101, [2], len(data), len(f32), data=f32)),
                                  (b"g", entry(1, [2], len(data), len(f32), data=f32)),
                                  (b"s", entry(107, [2], 0, len(data), crc=crc))], data + f32)


def test_a_reference_bundles_tensors_say_why_they_cannot_be_read(tmp_path):
    with formats.open_checkpoint(_reference_bundle(tmp_path)) as ckpt:
        assert {k: e.unreadable for k, e in ckpt.items()} == {
            "f": reference_dtype_problem(101), "g": None, "s": reference_dtype_problem(107)}
        entries = list(ckpt.values())
        with pytest.raises(UnsupportedError) as one:
            describe(entries[0])
        with pytest.raises(UnsupportedError) as all_:
            describe_all(entries[1:] + entries[:1])  # (g, s, f: the first that cannot be written is named)
        assert all_.value.message == "tensor 's': " + reference_dtype_problem(107)
        assert one.value.message == "tensor 'f': " + reference_dtype_problem(101)


class _Entry(TensorEntry):
    __slots__ = ()


@pytest.mark.parametrize("source", BUNDLES, ids=lambda p: p.split("corpus/")[-1])
def test_describe_all_is_describe_of_each(source):
    with formats.open_checkpoint(source) as ckpt:
        entries = [e for e in ckpt.values() if e.unreadable is None]
        got = describe_all(entries)
        assert got == [describe(e) for e in entries]
        shared = {}
        for d in got:  # one tuple for every tensor described alike
            assert shared.setdefault(d, d) is d
        mixed = entries[:3] + [np.zeros((2, 3), np.float16), TensorValue([b"a"], "string"),
                               _Entry("k", (4,), "int32", 16)] + entries[3:]
        assert describe_all(mixed) == [describe(s) for s in mixed]


def test_describe_all_of_entries_whose_dtype_cannot_be_written_names_the_first():
    entries = [_Entry("a", (2,), "float32", 8), _Entry("b", (1,), "resource", 8), _Entry("c", (1,), "resource", 8)]
    with pytest.raises(UnsupportedError) as caught:
        describe_all(entries)
    with pytest.raises(UnsupportedError) as oracle:
        describe(entries[1])
    assert caught.value.message == oracle.value.message and "'b'" in caught.value.message
    assert describe_all([]) == []


@pytest.mark.parametrize("source", BUNDLES, ids=lambda p: p.split("corpus/")[-1])
def test_a_bundles_names_and_roles_asked_at_once_are_each_tensors(source):
    with formats.open_checkpoint(source) as ckpt, formats.open_checkpoint(source) as again:
        tensors = list(ckpt.values())
        assert BundleTensor.labels_of(tensors) == ([str(t.name) for t in tensors], [str(t.role) for t in tensors])
        other = list(again.values())[:1]
        assert BundleTensor.labels_of(tensors[:2] + other) is None  # (two bundles' labels: asked a tensor at a time)
        assert BundleTensor.labels_of([]) is None
        kinds = BundleTensor.kinds_of(tensors)
        assert len(kinds) == len(tensors) and BundleTensor.kinds_of(tensors[:2] + other) is None
        alike: dict[int, tuple] = {}
        for kind, t in zip(kinds, tensors):  # (one kind: one dtype, shape, data file and size)
            assert alike.setdefault(kind, (t.dtype, t.shape, t.files, t.nbytes)) == (t.dtype, t.shape, t.files,
                                                                                       t.nbytes)


def test_a_plan_counts_its_transformed_rows():
    plan = ConversionPlan("s", "t")
    plan.rows += [PlanRow("a", "a", (1,), "float32"), PlanRow("b", "b", (1,), "float32", transform="x (-0.05)"),
                  PlanRow("c", "c", (1,), "float32", transform=""), PlanRow("d", "d", (), "int64",
                                                                           transform="= global_step")]
    assert plan.transformed == 2 == sum(1 for row in plan.rows if row.transform)
    assert ConversionPlan("s", "t").transformed == 0


def test_key_problems_of_an_empty_plan_and_of_fine_keys():
    assert NPZ.key_problems([]) == {}
    assert NPZ.key_problems(["a", "b/c"]) == {}


def _plan(source: str, to: str, at_once: bool, monkeypatch) -> tuple:
    from formats.ops.convert.cross import export
    from formats.ops.convert.plan import ConvertOptions

    taken: list[bool] = []
    real = export._rows_at_once

    def spy(*args):
        taken.append(at_once and real(*args))
        return taken[-1]

    monkeypatch.setattr(export, "_rows_at_once", spy)
    with formats.open_checkpoint(source) as ckpt:
        plan = export.plan_export(ckpt, ConvertOptions(), to)
        records = plan.write_options["provenance"]["tensors"]
        try:
            items = list(records) if to == "npz" else None
        except formats.CheckpointError as exc:  # (a graph that is not one: refused when the record is made)
            items = [exc.message]
        made = ([row.to_json() for row in plan.rows], [row.value is ckpt[row.source] for row in plan.rows],
                [p.to_json() for p in plan.problems], items)
    monkeypatch.undo()
    return made, taken


def _made(kind: str, tmp_path) -> str:
    """A bundle of ``kind``: fixed-width tensors alone (among them a bfloat16, stored as its bits, and a complex64,
    which safetensors cannot store), strings (one that an npz cannot hold faithfully), reference dtypes, or an object
    graph stored as a float."""
    import ml_dtypes

    prefix = str(tmp_path / "ckpt-1")
    if kind == "fixed-width":
        formats.write_checkpoint(prefix, {f"m/{i}": np.full((i % 3,), i, ["float32", "int64"][i % 2]) for i in range(50)}
                                 | {"global_step": np.int64(3), "m/c": np.ones(2, np.complex64),
                                    "m/h": TensorValue(np.ones(2, ml_dtypes.bfloat16), "bfloat16")})
    elif kind == "strings":
        formats.write_checkpoint(prefix, {"a": TensorValue([b"x\x00"], "string"), "b": TensorValue([b"y"], "string"),
                                          "c": np.float32(1)})
    elif kind == "reference":
        return str(_reference_bundle(tmp_path))
    else:
        f32 = np.arange(2, dtype="<f4").tobytes()
        return str(bundle(tmp_path, "g", [(b"_CHECKPOINTABLE_OBJECT_GRAPH", entry(1, [2], 0, 8, data=f32)),
                                          (b"w", entry(1, [2], 0, 8, data=f32))], f32))
    return prefix


@pytest.mark.parametrize("to", ["npz", "safetensors"])
@pytest.mark.parametrize("source", BUNDLES + ["fixed-width", "strings", "reference", "graph-as-float"],
                         ids=lambda p: p.split("corpus/")[-1])
def test_an_export_planned_at_once_is_the_one_planned_a_tensor_at_a_time(source, to, monkeypatch, tmp_path):
    if "/" not in source:  # (made here: planned at once only where every tensor is fixed-width and readable)
        source = _made(source, tmp_path)
    at_once, taken = _plan(source, to, True, monkeypatch)
    one_by_one, _ = _plan(source, to, False, monkeypatch)
    assert at_once == one_by_one
    from formats.core.registry import writer_of
    from formats.ops.convert.cross.export import _storable

    with formats.open_checkpoint(source) as ckpt:
        fit = all(by_fixed(e.dtype) and e.unreadable is None and _storable(writer_of(to), e) is None
                  for k, e in ckpt.items() if k != "_CHECKPOINTABLE_OBJECT_GRAPH")  # (the graph: left out)
        assert taken == [fit]
    if "fixed" in str(tmp_path) and to == "npz":
        assert taken == [True]


def by_fixed(dtype: str) -> bool:
    try:
        return dtypes.by_name(dtype).fixed_width
    except ValueError:
        return False


@pytest.mark.parametrize("source", BUNDLES[:6], ids=lambda p: p.split("corpus/")[-1])
def test_small_ranges_of_entries_of_several_classes_are_each_ones(source, tmp_path):
    from formats.io.spans import small_range, small_ranges

    prefix = str(tmp_path / "ckpt-1")
    formats.write_checkpoint(prefix, {f"w{i}": np.full((i % 3 + 1,), i, np.float32) for i in range(5)})
    with formats.open_checkpoint(source) as ckpt, formats.open_checkpoint(prefix) as other:
        entries = list(ckpt.values())
        mixed = entries[:2] + [_Entry("k", (4,), "int32", 16)] + entries[2:] + [_Entry("j", (), "int64", 8)]
        mixed += list(other.values())  # (two bundles' tensors: one class, asked of each bundle's columns)
        for most in (4, 1 << 20):
            assert small_ranges(mixed, most) == [small_range(e, most) for e in mixed]
        assert None not in small_ranges(list(other.values()), 1 << 20)  # (the oracle finds ranges: not all None)
