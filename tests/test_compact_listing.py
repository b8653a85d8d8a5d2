"""The compact listing of a bundle index (formats/tf_bundle/index_listing.py) and ``ckpt ls`` written from it
(ckpt_cli/render/listing.py): the same rows, totals, warnings, exit status and bytes of output as opening
the bundle, on the corpus and on generated indexes; None for what only opening handles."""
from __future__ import annotations

import io
import json
from array import array
from pathlib import Path

import pytest

from ckpt_cli.commands import ls as listing_command
from formats import open_checkpoint
from formats.core.compact_listing import CompactListing
from formats.ops.inspect.summary import summarise
from formats.tf_bundle import format as bundle_format
from formats.tf_bundle import index_listing as bundle_listing
from formats.tf_bundle.encode import encode_entry
from formats.tf_bundle.index_listing import compact_listing

from .bundle_index import make_entries, write_bundle
from .conftest import CORPUS

CORPUS_BUNDLES = sorted(str(p)[:-len(".index")] for p in CORPUS.rglob("*.index"))
RUN_DIR = CORPUS / "seed_slots" / "tf_ckpts"


def _partitioned(prefix: str) -> bool:
    from formats.tf_bundle.reader import BundleReader

    return any(e.slices for e in BundleReader(prefix).entries.values())


def _full(prefix: str, patterns: tuple[str, ...] = ()):
    with open_checkpoint(prefix) as ckpt:
        return summarise(ckpt, list(patterns)), list(ckpt.files)


def _rows(listing: CompactListing) -> list[tuple]:
    return [(key, kind.dtype, kind.shape, kind.nbytes) for key, kind in listing.rows()]


def _assert_same(listing: CompactListing | None, prefix: str, patterns: tuple[str, ...] = ()) -> None:
    summary, files = _full(prefix, patterns)
    assert listing is not None
    assert _rows(listing) == [(r.key, r.dtype, r.shape, r.nbytes) for r in summary.rows]
    assert (listing.path, listing.format, listing.files, listing.total_tensors, listing.unmatched) == \
        (summary.path, summary.format, files, summary.total_tensors, summary.unmatched)
    assert (listing.tensors, listing.nbytes, listing.parameters, listing.data_files) == \
        (summary.tensors, summary.nbytes, summary.parameters, summary.data_files)
    assert listing.key_width == max((len(r.key) for r in summary.rows), default=0)


@pytest.mark.parametrize("prefix", CORPUS_BUNDLES, ids=lambda p: str(Path(p).relative_to(CORPUS)))
def test_corpus_bundles_list_as_opened(prefix: str) -> None:
    listing = compact_listing(prefix)
    if _partitioned(prefix):
        assert listing is None  # slice keys are hidden from a listing: the bundle is opened
        return
    _assert_same(listing, prefix)
    _assert_same(compact_listing(prefix, ["*kernel*", "no-such-key", "*/m/*"]), prefix,
                 ("*kernel*", "no-such-key", "*/m/*"))


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> str:
    """5,000 tensors in about 100 blocks, 3 shards, the object graph key among them."""
    return write_bundle(tmp_path_factory.mktemp("gen") / "big" / "ckpt-7", make_entries(5000, object_graph=True))


def test_generated_index_lists_as_opened(generated: str) -> None:
    listing = compact_listing(generated)
    _assert_same(listing, generated)
    assert listing is not None and listing.format == "tf-object" and not listing.ascii
    assert len(listing.blocks) > 50 and len(listing.kinds) > 20
    for patterns in (("*caf\u00e9",), ("model/layer_0000?/*", "*/m", "nothing"), ("nothing",)):
        _assert_same(compact_listing(generated, patterns), generated, patterns)


def test_the_listing_is_held_compactly(generated: str) -> None:
    """One string and one array of kind numbers per block of the index, no object per tensor."""
    listing = compact_listing(generated)
    assert listing is not None
    assert all(type(text) is str and type(ids) is array and ids.typecode == "I" and
               text.count("\n") == len(ids) - 1 for text, ids in listing.blocks)
    assert sum(len(ids) for _, ids in listing.blocks) == listing.tensors == 5000
    assert len(listing.kinds) <= bundle_listing.MAX_KINDS


def test_more_kinds_than_allowed_opens_the_bundle(generated: str, monkeypatch) -> None:
    monkeypatch.setattr(bundle_listing, "MAX_KINDS", 10)
    assert compact_listing(generated) is None


@pytest.mark.parametrize("key", [b"model/new\nline", b"model/\xff\xfe", b"model/\xe9t\xe9"],
                         ids=["newline", "not-utf8", "latin1"])
def test_keys_only_the_reader_lists_make_it_decline(tmp_path: Path, key: bytes) -> None:
    pairs = sorted(make_entries(300) + [(key, encode_entry(1, (2,), 8, 8, 5))])
    prefix = write_bundle(tmp_path / "odd" / "ckpt-1", pairs)
    assert compact_listing(prefix) is None
    assert _full(prefix)[0].tensors == 301


@pytest.mark.parametrize("value", [
    encode_entry(1, (2,), 8, 8, 5, shard_id=7),  # a shard the header does not declare
    encode_entry(1, (2,), 8, 8, 5)[:-2],  # truncated
    encode_entry(1, (2,), 8, 8, 5) + b"\x3a\x00",  # a slice: a partitioned variable
    b"\x12\x02\x18\x01" + encode_entry(1, (), 8, 8, 5)[4:],  # unknown rank
], ids=["shard", "truncated", "partitioned", "unknown-rank"])
def test_entries_the_reader_rejects_or_hides_make_it_decline(tmp_path: Path, value: bytes) -> None:
    pairs = sorted(make_entries(300) + [(b"model/zz", value)])
    assert compact_listing(write_bundle(tmp_path / "bad" / "ckpt-1", pairs, data_files=False)) is None


# -- the command line ----------------------------------------------------------------------------------------

@pytest.fixture
def compact_taken(monkeypatch) -> list[object]:
    """Every index listed compactly (whatever its size); the results of each try, in order."""
    results: list[object] = []
    real = bundle_listing.compact_listing

    def spy(prefix, patterns=()):
        results.append(real(prefix, patterns))
        return results[-1]

    monkeypatch.setattr(bundle_format, "COMPACT_FROM", 0)
    monkeypatch.setattr(bundle_listing, "compact_listing", spy)
    return results


def _both(run_cli, monkeypatch, compact_taken, *argv: str):
    """``ckpt ARGV`` with every bundle opened, then listed compactly: through the format's ``compact_listing``,
    and through ``ls PREFIX``'s start-up path (``_bundle_listing``), which lists any local prefix compactly."""
    with monkeypatch.context() as opening:
        opening.setattr(bundle_format, "COMPACT_FROM", 1 << 62)
        opening.setattr(listing_command, "_bundle_listing", lambda path, patterns: None)
        opened = run_cli(*argv)
    assert compact_taken == []
    monkeypatch.setattr(bundle_format, "COMPACT_FROM", 0)
    compact = run_cli(*argv)
    return opened, compact


LS_CASES = [
    ["ls", "{b}"], ["ls", "--json", "{b}"], ["ls", "-f", "*kernel*", "-f", "nothing*", "{b}"],
    ["ls", "-f", "nothing*", "{b}"], ["ls", "--json", "-f", "nothing", "{b}"], ["ls", "{b}", "{g}"],
    ["ls", "--json", str(RUN_DIR), "{b}", "{g}"], ["ls", "{g}"], ["ls", "--json", "{g}"],
    ["--no-color", "ls", "-f", "*caf\u00e9", "{g}"], ["ls", str(RUN_DIR / "ckpt-5"), str(RUN_DIR / "ckpt-4")],
]


@pytest.mark.parametrize("argv", LS_CASES, ids=lambda a: " ".join(a))
def test_ls_prints_the_same_bytes(argv, generated, run_cli, monkeypatch, compact_taken) -> None:
    bundle = str(CORPUS / "tf2_mixed" / "all_dtypes" / "ckpt-1")
    args = [a.format(b=bundle, g=generated) for a in argv]
    opened, compact = _both(run_cli, monkeypatch, compact_taken, *args)
    assert compact_taken and all(isinstance(r, CompactListing) for r in compact_taken)
    assert (compact.exit_code, compact.stdout, compact.stderr) == (opened.exit_code, opened.stdout, opened.stderr)
    if "--json" in args:
        json.loads(compact.stdout)


def test_missing_data_files_warn_the_same(tmp_path, run_cli, monkeypatch, compact_taken) -> None:
    prefix = write_bundle(tmp_path / "gone" / "ckpt-1", make_entries(400), data_files=False)
    opened, compact = _both(run_cli, monkeypatch, compact_taken, "ls", prefix)
    assert compact_taken and compact_taken[0] is not None
    assert (compact.exit_code, compact.stdout, compact.stderr) == (opened.exit_code, opened.stdout, opened.stderr)
    assert compact.stderr.count("missing; the keys are listed") == 3


@pytest.mark.parametrize("argv", [["ls", "--sort", "size"], ["ls", "--names"], ["ls", "--no-optimizer"],
                                  ["ls", "--tree"]], ids=" ".join)
def test_options_that_need_the_checkpoint_open_it(argv, run_cli, monkeypatch, compact_taken) -> None:
    bundle = str(CORPUS / "seed_slots" / "tf_ckpts" / "ckpt-5")
    opened, compact = _both(run_cli, monkeypatch, compact_taken, *argv, bundle)
    assert compact_taken == []
    assert (compact.exit_code, compact.stdout) == (opened.exit_code, opened.stdout)


def test_a_declined_index_is_opened_and_its_error_reported(tmp_path, run_cli, monkeypatch, compact_taken) -> None:
    pairs = sorted(make_entries(300) + [(b"model/zz", encode_entry(1, (2,), 8, 8, 5, shard_id=7))])
    prefix = write_bundle(tmp_path / "bad" / "ckpt-1", pairs, data_files=False)
    opened, compact = _both(run_cli, monkeypatch, compact_taken, "ls", prefix)
    assert compact_taken == [None]
    assert compact.exit_code == opened.exit_code == 3
    assert compact.stderr == opened.stderr and "in data file 7, but the header declares 3" in compact.stderr


def test_small_indexes_are_opened(run_cli, monkeypatch) -> None:
    """Below COMPACT_FROM the bundle is opened as before (its index is not read twice)."""
    bundle = str(CORPUS / "tf2_mixed" / "all_dtypes" / "ckpt-1")
    assert bundle_format.FORMAT.compact_listing(bundle) is None
    monkeypatch.setattr(bundle_format, "COMPACT_FROM", 0)
    assert isinstance(bundle_format.FORMAT.compact_listing(bundle), CompactListing)


# -- rendering -----------------------------------------------------------------------------------------------

class _Recorder(io.StringIO):
    def __init__(self, tty: bool = False) -> None:
        super().__init__()
        self.writes: list[int] = []
        self.tty = tty

    def write(self, text: str) -> int:
        self.writes.append(len(text))
        return super().write(text)

    def isatty(self) -> bool:
        return self.tty


def test_rows_are_written_a_block_at_a_time(generated, monkeypatch) -> None:
    from ckpt_cli.render.listing import render_compact_table

    listing = compact_listing(generated)
    out = _Recorder()
    monkeypatch.setattr("sys.stdout", out)
    render_compact_table(listing)
    assert len(out.writes) >= len(listing.blocks) + 2
    widest = max(len(ids) for _, ids in listing.blocks) * (len(out.getvalue().split("\n", 1)[0]) + 1)
    assert max(out.writes) <= widest < sum(out.writes) / 20  # no more than one block's rows at a time


@pytest.mark.parametrize("width", [400, 60], ids=["fits", "too-narrow"])
def test_a_terminal_gets_what_it_would_get(generated, monkeypatch, width) -> None:
    """On a terminal: rows that fit are written with rich's escape codes as the opened listing's are;
    rows that do not are laid out by rich from the rows of the whole listing (the same text either way)."""
    from ckpt_cli.render import listing as render
    from ckpt_cli.render import table

    from formats.ops.inspect import summary

    listing = compact_listing(generated, ["*/kernel", "*/bias"])  # ASCII keys
    expanded = []
    monkeypatch.setattr(summary, "expand", lambda listing: expanded.append(1) or summary.CheckpointSummary(
        listing.path, listing.format, [summary.TensorRow(k, *kind) for k, kind in listing.rows()],
        listing.total_tensors, listing.data_files, listing.unmatched))
    monkeypatch.setattr(table, "_terminal_width", lambda stream: width)
    monkeypatch.setattr(table.os, "get_terminal_size", lambda fd: __import__("os").terminal_size((width, 50)))
    monkeypatch.setenv("COLUMNS", str(width))
    outputs = []
    for draw in (lambda: render.render_compact_table(listing),
                 lambda: render.render_tensor_table(_full(generated, ("*/kernel", "*/bias"))[0])):
        out = _Recorder(tty=True)
        out.fileno = lambda: 1  # type: ignore[method-assign]
        monkeypatch.setattr("sys.stdout", out)
        draw()
        outputs.append(out.getvalue())
    assert outputs[0] == outputs[1]
    assert expanded == ([] if width == 400 else [1])  # rich lays out only the rows that do not fit


def test_repeated_values_are_decoded_once_per_block(tmp_path, monkeypatch) -> None:
    """Values differing only in offset and checksum are recognised by their bytes, not decoded again."""
    pairs = make_entries(3000, seed=3, odd_every=10**9)
    same = [(key, encode_entry(1, (3, 4), 48 * i, 48, 0x9E3779B9 + i)) for i, (key, _) in enumerate(pairs)]
    prefix = write_bundle(tmp_path / "same" / "ckpt-1", same, shards=1)
    learned = []
    real = bundle_listing._Lister._learn
    monkeypatch.setattr(bundle_listing._Lister, "_learn", lambda self, k, v: learned.append(k) or real(self, k, v))
    listing = compact_listing(prefix)
    _assert_same(listing, prefix)
    assert listing is not None and len(listing.kinds) == 1
    assert len(learned) <= len(listing.blocks) + 1  # the first of each block (and the one at offset 0)
