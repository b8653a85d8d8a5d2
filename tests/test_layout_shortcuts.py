"""What a write asks of the tensors of one bundle at once (``BundleTensor.rows_of_one``) is what it asks of each: the
data files taken over whole, the sources the output is guarded against, the bytes planned, where each tensor's stored
bytes lie (``stored_unchanged_all``)."""
from __future__ import annotations

import random

import numpy as np
import pytest

from formats import open_checkpoint
from formats.core.errors import OutputIsInputError
from formats.io.placed import stored_unchanged, stored_unchanged_all
from formats.io.writing import guard_output, planned_bytes
from formats.tf_bundle import writer
from formats.tf_bundle.checkpoint import BundleTensor
from formats.tf_bundle.layout import plan_layout
from formats.tf_bundle.reader import OBJECT_GRAPH_KEY

from .conftest import CORPUS

BUNDLES = sorted(str(p)[:-len(".index")] for p in CORPUS.rglob("*.index"))


def _subsets(keys: list[str], rng: random.Random) -> list[list[str]]:
    """Every key; every key but the object graph; every key but one other; random selections (in key order)."""
    others = [k for k in keys if k != OBJECT_GRAPH_KEY]
    picks = [keys, others, *(others[:i] + others[i + 1:] for i in [rng.randrange(len(others))] if others)]
    picks += [[k for k in keys if rng.random() < p] for p in (0.2, 0.9, 0.99)]
    return [p for p in picks if p]


def _files(layout) -> list[tuple]:
    return [(f.path, f.size, f.shard, list(f.positions), list(f.rows)) for f in layout.files]


@pytest.mark.parametrize("prefix", BUNDLES, ids=lambda p: p.split("corpus/")[-1])
def test_the_files_taken_over_are_those_found_tensor_by_tensor(prefix):
    rng = random.Random(prefix)
    with open_checkpoint(prefix) as ckpt:
        for keys in _subsets(sorted(ckpt), rng):
            sources = [ckpt[k] for k in keys]
            one = BundleTensor.rows_of_one(sources)
            assert one is not None and one[0] is sources[0].bundle and one[1] == [s.row for s in sources]
            for link in (False, True):
                fast, slow = plan_layout(sources, link, one), plan_layout(sources, link)
                assert _files(fast) == _files(slow), (prefix, len(keys), link)
                assert [p in fast.placed for p in range(len(sources))] == [p in slow.placed for p in range(len(sources))]
            placed = plan_layout(sources, False, one).placed
            unplaced = [s for p, s in enumerate(sources) if p not in placed]
            assert writer._planned_bytes(sources, placed, one) == writer._planned_bytes(sources, placed, None) == \
                sum(s.nbytes if s.partitions == 0 else planned_bytes([s]) for s in unplaced)
            # the sources guarded: one of each set of files read
            assert {s.files for s in writer._by_files(sources, one)} == {s.files for s in sources}


def test_tensors_of_two_bundles_or_other_values_are_asked_one_by_one():
    a, b = CORPUS / "tf1_adam" / "model.ckpt-200", CORPUS / "tf1_adam" / "model.ckpt-1"
    with open_checkpoint(str(a)) as first, open_checkpoint(str(b)) as second:
        mixed = [*first.values(), *second.values()]
        assert BundleTensor.rows_of_one(mixed) is None
        assert BundleTensor.rows_of_one([*first.values(), np.zeros(3)]) is None
        assert BundleTensor.rows_of_one([np.zeros(3), *first.values()]) is None
        assert BundleTensor.rows_of_one([]) is None
        assert writer._by_files(mixed, None) is mixed


def test_an_output_over_the_data_file_of_its_sources_is_refused_without_inputs_named(tmp_path):
    """The guard against the sources' files holds with one source a kind: the input's data file is refused."""
    prefix = str(CORPUS / "tf1_adam" / "model.ckpt-200")
    with open_checkpoint(prefix) as ckpt:
        sources = [ckpt[k] for k in sorted(ckpt)][1:]
        one = BundleTensor.rows_of_one(sources)
        guarded = writer._by_files(sources, one)
        assert len(guarded) < len(sources)
        with pytest.raises(OutputIsInputError, match="being read"):
            guard_output(str(tmp_path / "x"), [prefix + ".data-00000-of-00001"], sources=guarded, force=True)


@pytest.mark.parametrize("prefix", BUNDLES, ids=lambda p: p.split("corpus/")[-1])
def test_where_the_stored_bytes_lie_is_found_at_once_as_one_by_one(prefix):
    """Every tensor as it is, then asked for another dtype or size now and then (not stored so: None)."""
    rng = random.Random(prefix)
    with open_checkpoint(prefix) as ckpt:
        sources = [ckpt[k] for k in sorted(ckpt)]
        for changed in (0.0, 0.3):
            dtypes = [s.dtype if rng.random() >= changed else rng.choice(["float32", "int64", "uint8"])
                      for s in sources]
            sizes = [s.nbytes + (0 if rng.random() >= changed else rng.choice([-4, 4])) for s in sources]
            expected = list(map(stored_unchanged, sources, dtypes, sizes))
            assert stored_unchanged_all(sources, dtypes, sizes) == expected
            assert BundleTensor.stored_ranges(sources) == [s.stored_range() for s in sources]
            if not changed:
                assert any(where is not None for where in expected)


def test_where_values_of_other_kinds_lie_is_asked_one_by_one():
    prefix = str(CORPUS / "tf1_adam" / "model.ckpt-200")
    with open_checkpoint(prefix) as ckpt:
        sources = [np.zeros(3, np.float32), *ckpt.values()]
        dtypes, sizes = ["float32"] + [s.dtype for s in sources[1:]], [12] + [s.nbytes for s in sources[1:]]
        assert stored_unchanged_all(sources, dtypes, sizes) is None  # (asked one by one, as each is copied)
        assert stored_unchanged_all(sources[1:], dtypes[1:], sizes[1:]) == \
            list(map(stored_unchanged, sources[1:], dtypes[1:], sizes[1:]))
        assert stored_unchanged_all([], [], []) is None
        assert BundleTensor.stored_ranges([*ckpt.values(), np.zeros(3)]) is None


def test_where_the_tensors_of_a_bundle_of_more_files_than_stay_open_lie_is_asked_as_each_is_read(tmp_path):
    """Past OPEN_DATA_FILES data files a descriptor is closed for another's (and its number comes back for another
    file): ranges found up front would name the wrong file by the time they are copied."""
    from formats import write_checkpoint
    from formats.tf_bundle.reader import OPEN_DATA_FILES

    values = {f"v{i:03d}": np.full(2, i, np.float32) for i in range(OPEN_DATA_FILES + 2)}
    prefix = str(tmp_path / "many" / "ckpt-1")
    write_checkpoint(prefix, values, shards=list(range(len(values))))
    with open_checkpoint(prefix) as ckpt:
        sources = list(ckpt.values())
        assert len(ckpt.files) == len(values) + 1
        assert BundleTensor.stored_ranges(sources) is None
        assert BundleTensor.stored_ranges(sources[:3]) is None  # (the bundle's files, not those asked about)



def test_the_files_taken_over_when_every_tensor_of_one_file_is_found_at_once(monkeypatch):
    """Every tensor of a bundle, each of which can be taken over, from one data file: found by kind and by C
    functions over the rows (``_one_file``), with no loop over the tensors; the same files and placed positions as
    one by one, with a value written fresh after them (an object graph) or not. Where it does not apply (tensors
    of no bytes, partitioned variables, more data files), it says so and the loop decides."""
    from formats.tf_bundle import layout

    found: list[int] = []
    real = layout._one_file
    monkeypatch.setattr(layout, "_one_file", lambda *a: found.append(real(*a)) or found[-1])
    looped: list[int] = []
    grouped = layout._grouped
    monkeypatch.setattr(layout, "_grouped", lambda *a: looped.append(1) or grouped(*a))
    outcomes: dict[str, int] = {}
    for prefix in BUNDLES:
        with open_checkpoint(prefix) as ckpt:
            sources = list(ckpt.values())
            one = BundleTensor.rows_of_one(sources)
            assert one is not None
            for extra in ([], [np.zeros(3, np.float32)], sources[-1:]):  # (a tensor given twice: not one_of's)
                for link in (False, True):
                    given = [*sources, *extra]
                    del found[:], looped[:]
                    fast = plan_layout(given, link, one)
                    if not found:  # (too few stored tensors, or more than ``one``'s: the loop decides)
                        assert looped == [] or extra[:1] == sources[-1:], prefix
                    else:
                        assert len(found) == 1 and looped == ([1] if found[0] < 0 else []), (prefix, found, looped)
                        outcomes[prefix] = found[0]
                    slow = plan_layout(given, link)
                    assert _files(fast) == _files(slow), prefix
                    assert [p in fast.placed for p in range(len(given))] == \
                        [p in slow.placed for p in range(len(given))]
    applied = [p for p, shard in outcomes.items() if shard >= 0]
    assert len(applied) >= 5 and len(outcomes) - len(applied) >= 2, outcomes


@pytest.mark.parametrize("case", ["two files", "no bytes", "truncated", "taken"])
def test_one_file_says_where_it_does_not_apply(tmp_path, case):
    """``_one_file`` declines (-1) tensors in two data files, a tensor of no bytes, a tensor past a truncated data
    file's end; takes an intact one-file bundle; and plan_layout gives what the loop gives, each time."""
    from formats.tf_bundle import layout
    from formats.tf_bundle.writer import write_checkpoint

    prefix = str(tmp_path / "ckpt-1")
    values = [np.full((4,), i, np.float32) for i in range(20)]
    if case == "no bytes":
        values[7] = np.zeros((0, 3), np.float32)
    write_checkpoint(prefix, ((f"v/{i:02}", v) for i, v in enumerate(values)), verify=False,
                     shards=[i // 10 for i in range(20)] if case == "two files" else None)
    if case == "truncated":
        data = tmp_path / "ckpt-1.data-00000-of-00001"
        data.write_bytes(data.read_bytes()[:-3])
    with open_checkpoint(prefix) as ckpt:
        sources = list(ckpt.values())
        one = BundleTensor.rows_of_one(sources)
        assert one is not None
        assert layout._one_file(layout.WholeCheck(), *one) == (0 if case == "taken" else -1)
        for link in (False, True):
            fast, slow = plan_layout(sources, link, one), plan_layout(sources, link)
            assert _files(fast) == _files(slow)
            assert len(fast.files) == {"two files": 2, "no bytes": 1, "truncated": 0, "taken": 1}[case]
