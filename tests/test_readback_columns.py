"""Issue 38: the bundle writer's read-back of copied tiny tensors takes no Python step per tensor: a batch of one
data layout is read in windows, its CRC32Cs taken by ``map`` over C functions and masked at once
(:func:`formats.io.crc.mask_all`) - or, once numpy is imported, a byte of every tensor a step with arrays
(:mod:`formats.io.crc_arrays`); anything else, and a batch with a mismatch, is checked a tensor at a time, which
names what is wrong (tests/test_graph_writers.py: a byte damaged in the copy). Both ways are run here."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from formats.io.crc import mask, mask_all
from tests.scale_bundles import name_based


def test_crcs_of_pieces_with_arrays_are_the_c_functions():
    import numpy as np

    from formats.io.crc import crc32c
    from formats.io.crc_arrays import PIECE_BYTES, crc32c_pieces, mask_array

    rng = random.Random(24)
    data = rng.randbytes(20_000) + bytes(100) + b"\xff" * 100
    for size in [*range(0, 18), 31, 32, 33, PIECE_BYTES]:
        starts = [rng.randrange(0, len(data) - size + 1) for _ in range(500)] + [0, len(data) - size]
        got = crc32c_pieces(np, data, np.array(starts, np.int64), size)
        assert got.dtype == np.uint32 and got.tolist() == [crc32c(data[s:s + size]) for s in starts], size
        assert mask_array(np, got).tolist() == [mask(crc32c(data[s:s + size])) for s in starts]
    assert crc32c_pieces(np, data, np.zeros(0, np.int64), 4).tolist() == []


@pytest.fixture(params=["arrays", "listed", "calls"])
def crc_way(request, monkeypatch):
    """The read-back's CRC32Cs of tiny tensors with arrays (numpy imported) or a C call each (not), and how many
    tensors took arrays (``_sound_arrays``, whose batches the fixture's third item counts). ``arrays``: a run of
    rows of a large index is gathered from its columns as arrays; ``listed``: never (as a small index's), each
    row's offset and checksum listed into arrays."""
    from formats.tf_bundle import readback
    from formats.tf_bundle.columns import IndexColumns

    taken, gathered = [], []
    if request.param == "calls":
        monkeypatch.setattr(readback, "imported_numpy", lambda: None)
    if request.param == "listed":
        monkeypatch.setattr(IndexColumns, "arrays_of", lambda *a: None)
    real = readback.crc32c_pieces
    monkeypatch.setattr(readback, "crc32c_pieces", lambda *a: taken.append(len(a[2])) or real(*a))
    sound = readback._sound_arrays
    monkeypatch.setattr(readback, "_sound_arrays", lambda *a: gathered.append(len(a[3])) or sound(*a))
    return request.param, taken, gathered


def test_mask_all_is_mask_of_each():
    rng = random.Random(38)
    values = [0, 1, 0x7FFF, 0x8000, 0x1FFFF, 0x20000, 0x5D7D1527, 0xFFFFFFFF, 0xFFFFFFFE] + \
        [rng.getrandbits(32) for _ in range(5000)]
    assert list(mask_all(values)) == [mask(v) for v in values]
    assert list(mask_all([])) == []
    assert list(mask_all([0xFFFFFFFF] * 3)) == [mask(0xFFFFFFFF)] * 3  # every lane's sum past 2**32


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    return name_based(tmp_path_factory.mktemp("readback"), 3000)


@pytest.mark.parametrize("command", [("rename", "--map", "model=net"), ("edit", "--exclude", "model/layer_0/*"),
                                     ("convert", "--to", "tf-object")])
def test_copied_tiny_tensors_are_read_back_without_a_step_each(bundle, run_cli, tmp_path, monkeypatch, command,
                                                               crc_way):
    """Unmasking each stored checksum was the per-row loop's Python step (3,000 calls here, before)."""
    from formats.tf_bundle import readback

    calls = []
    unmask = readback.unmask
    monkeypatch.setattr(readback, "unmask", lambda value: calls.append(value) or unmask(value))
    rows = []
    sound = readback._sound_run
    monkeypatch.setattr(readback, "_sound_run", lambda reader, batch, whole: rows.extend(batch) or
                        sound(reader, batch, whole))
    result = run_cli(command[0], bundle, "-o", tmp_path / "out" / "ckpt-1", *command[1:])
    assert result.exit_code == 0, result.output
    assert "), verified" in result.output
    assert calls == [] and len(rows) == (2900 if command[0] == "edit" else 3000)
    way, taken, gathered = crc_way
    assert sum(taken) == (0 if way == "calls" else len(rows))
    assert sum(gathered) == (0 if way == "calls" else len(rows))  # (convert's rows listed, as a small index's)


def test_a_checksum_that_does_not_match_in_a_window_is_named(bundle, run_cli, tmp_path, monkeypatch, crc_way):
    """A tensor whose stored checksum is not its bytes' (the index's column changed under the read-back) fails the
    write naming that tensor, not its batch."""
    from formats.tf_bundle import readback

    real = readback._by_row

    def damaged(written, *rest):  # type: ignore[no-untyped-def]
        columns = written.reader.entries
        row = columns.find_text("net/layer_17/unit_5/w")
        columns.crc[row] ^= 1
        return real(written, *rest)

    monkeypatch.setattr(readback, "_by_row", damaged)
    result = run_cli("rename", bundle, "-o", tmp_path / "out" / "ckpt-1", "--map", "model=net")
    assert result.exit_code == 4, result.output
    assert "'net/layer_17/unit_5/w': copied bytes do not match their checksum" in result.output
    assert result.output.count("copied bytes do not match") == 1
    way, taken, gathered = crc_way
    assert (sum(taken) > 0) == (way != "calls") and (sum(gathered) > 0) == (way != "calls")


def test_a_copied_checksum_that_does_not_match_beside_linked_files_is_named(tmp_path, monkeypatch, crc_way):
    """A write with ``link`` whose second data file is linked whole and whose first is copied (a tensor of it left
    out): the copied rows are checked by batch, the linked ones by entry, and a copied tensor whose checksum does
    not match is named - the only one named, once."""
    import numpy as np

    from formats.core.errors import CheckpointError
    from formats.tf_bundle import readback
    from formats.tf_bundle.checkpoint import BundleCheckpoint
    from formats.tf_bundle.origins import COPIED, LINKED
    from formats.tf_bundle.writer import write_checkpoint

    src = str(tmp_path / "src" / "ckpt-1")
    write_checkpoint(src, ((f"model/layer_{i // 100}/unit_{i % 100}/w", np.full((4,), i, np.float32))
                           for i in range(300)), verify=False, shards=[0] * 150 + [1] * 150)
    hows, batches = [], []
    real, rows = readback._by_row, readback._copied_rows

    def damaged(written, records, how, *rest):  # type: ignore[no-untyped-def]
        hows.extend(how[i] for i in range(len(records)))
        columns = written.reader.entries
        columns.crc[columns.find_text("model/layer_0/unit_77/w")] ^= 1
        return real(written, records, how, *rest)

    monkeypatch.setattr(readback, "_by_row", damaged)
    monkeypatch.setattr(readback, "_copied_rows", lambda *a: batches.append(rows(*a)) or batches[-1])
    source = BundleCheckpoint(src)
    with pytest.raises(CheckpointError) as raised:
        write_checkpoint(tmp_path / "out" / "ckpt-1", [(k, v) for k, v in source.items()
                                                       if k != "model/layer_0/unit_5/w"], link=True)
    assert hows.count(COPIED) == 149 and hows.count(LINKED) == 150
    message = str(raised.value)
    assert "'model/layer_0/unit_77/w': copied bytes do not match their checksum" in message
    assert message.count("do not match") == 1
    copied = sorted(f"model/layer_{i // 100}/unit_{i % 100}/w" for i in range(150) if i != 5)  # in the index's order
    assert [None if batch is None else [i for i, p in enumerate(batch) if p is not None] for batch in batches] == \
        [[copied.index("model/layer_0/unit_77/w")]]
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


@pytest.mark.parametrize("shapes", [[(4,)], [(4,), (3,)], [(32,)]], ids=["one layout", "two", "not tiny"])
def test_a_sound_batch_holds_no_list(tmp_path, monkeypatch, crc_way, shapes):
    """Every copied tensor matching, each batch's result is None, not a list of as many Nones (a 10^6 rename held
    245 lists of 4,096 through its read-back): a batch of one layout checked at once, or of two one by one. A run
    of a large index's rows is gathered as arrays only when they are of one layout, and tiny."""
    import numpy as np

    import formats
    from formats.tf_bundle import readback
    from formats.tf_bundle.writer import write_checkpoint

    src = str(tmp_path / "src" / "ckpt-1")
    write_checkpoint(src, ((f"model/t{i:04}", np.full(shapes[i % len(shapes)], i, np.float32)) for i in range(4000)),
                     verify=False)
    batches, sound = [], []
    rows, run = readback._copied_rows, readback._sound_run
    monkeypatch.setattr(readback, "_copied_rows", lambda *a: batches.append(rows(*a)) or batches[-1])
    monkeypatch.setattr(readback, "_sound_run", lambda *a: sound.append(run(*a)) or sound[-1])
    formats.rename(src, tmp_path / "out" / "ckpt-1", ["model/=net/"], jobs=2)
    assert batches == [None] * len(batches) and sound == [len(shapes) == 1] * len(batches)
    way, _, gathered = crc_way
    assert sum(gathered) == (4000 if way != "calls" and shapes == [(4,)] else 0)


def test_windows_read_back_are_at_most_a_batch(bundle, run_cli, tmp_path, monkeypatch, crc_way):
    """The read-back reads copied tiny tensors in windows of at most BATCH_BYTES (here 2,000: a tensor's 16 bytes
    never past it)."""
    from formats.tf_bundle import readback

    monkeypatch.setattr(readback, "BATCH_BYTES", 2000)
    read = []
    real = readback.crc32c_pieces
    monkeypatch.setattr(readback, "crc32c_pieces", lambda *a: read.append(len(a[1])) or real(*a))
    result = run_cli("rename", bundle, "-o", tmp_path / "out" / "ckpt-1", "--map", "model=net")
    assert result.exit_code == 0, result.output
    way = crc_way[0]
    assert (way == "calls") == (read == []) and all(16 <= n <= 2000 for n in read)
    assert way == "calls" or max(read) == 2000


def test_a_copy_cut_short_is_named(bundle, run_cli, tmp_path, monkeypatch, crc_way):
    """A data file copied short of its last tensor's end fails the write, naming that tensor (the window read
    comes back short: the tensors are then checked one by one), with no traceback."""
    import os

    from formats.tf_bundle import writer

    copy = writer._copy_flushing

    def copy_short(path, dst_fd, size, dst_offset):  # type: ignore[no-untyped-def]
        copy(path, dst_fd, size, dst_offset)
        os.ftruncate(dst_fd, dst_offset + size - 3)

    monkeypatch.setattr(writer, "_copy_flushing", copy_short)
    result = run_cli("rename", bundle, "-o", tmp_path / "out" / "ckpt-1", "--map", "model=net")
    assert result.exit_code == 4, result.output
    assert "net/layer_29/unit_99/w" in result.output and "Traceback" not in result.output


def test_arrays_of_a_run_of_rows_are_the_columns(bundle):
    """A run of rows' kind, offset and CRC32C columns as arrays (a range of step 1 or an ``array("q")``) are the
    columns' own values; any other rows, or a small index's list columns, give None."""
    from array import array

    import numpy as np

    from formats.tf_bundle.reader import BundleReader

    columns = BundleReader(bundle).entries
    assert not isinstance(columns.offset, list)
    for rows in (range(0, 3000), range(17, 2049), range(5, 5), array("q", [2999, 0, 7, 7, 1500]), array("q")):
        got = columns.arrays_of(np, rows)
        assert [a.dtype for a in got] == [np.uint32, np.int64, np.uint32]
        assert [a.tolist() for a in got] == [[column[row] for row in rows]
                                             for column in (columns.kind, columns.offset, columns.crc)]
    for rows in (range(0, 10, 2), [0, 1, 2], array("i", [0, 1])):
        assert columns.arrays_of(np, rows) is None
    columns.crc.append(0)  # no buffer of a column left exported
    small = BundleReader(name_based(Path(bundle).parent.parent, 10)).entries
    assert isinstance(small.offset, list) and small.arrays_of(np, range(0, 10)) is None
