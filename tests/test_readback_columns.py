"""Issue 38: the bundle writer's read-back of copied tiny tensors takes no Python step per tensor: a batch of one
data layout is read in windows, its CRC32Cs taken by ``map`` over C functions and masked at once
(:func:`formats.io.crc.mask_all`) - or, once numpy is imported, a byte of every tensor a step with arrays
(:mod:`formats.io.crc_arrays`); anything else, and a batch with a mismatch, is checked a tensor at a time, which
names what is wrong (tests/test_graph_writers.py: a byte damaged in the copy). Both ways are run here."""
from __future__ import annotations

import random

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


@pytest.fixture(params=["arrays", "calls"])
def crc_way(request, monkeypatch):
    """The read-back's CRC32Cs of tiny tensors with arrays (numpy imported) or a C call each (not), and how many
    batches took arrays."""
    from formats.tf_bundle import readback

    taken = []
    if request.param == "calls":
        monkeypatch.setattr(readback, "imported_numpy", lambda: None)
    real = readback.crc32c_pieces
    monkeypatch.setattr(readback, "crc32c_pieces", lambda *a: taken.append(len(a[2])) or real(*a))
    return request.param, taken


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
    way, taken = crc_way
    assert sum(taken) == (len(rows) if way == "arrays" else 0)


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
    way, taken = crc_way
    assert (sum(taken) > 0) == (way == "arrays")
