"""Issue 36: ``diff -q`` asks only "do they differ?", so it stops reading at the first difference (it read
everything before): a later tensor is never read, even one that is corrupt. Exit codes as documented."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import formats.core.comparison as comparison_module
import formats.ops.compare.diff as diff_module
from formats.api import open_checkpoint
from formats.ops.compare.diff import diff_checkpoints
from formats.tf_bundle.writer import write_checkpoint

from .conftest import CORPUS

KEYS = [f"layer_{i:02d}/kernel" for i in range(12)]


def _pair(tmp_path: Path, corrupt: str | None = None) -> tuple[Path, Path]:
    """Two bundles with the same 12 keys; only ``layer_00/kernel`` (the first in key order) differs, and in
    B the bytes of ``corrupt`` are flipped in its data file (its checksum then fails when read)."""
    rng = np.random.default_rng(5)
    values = {k: rng.standard_normal((64, 64)).astype(np.float32) for k in KEYS}
    a, b = tmp_path / "a" / "ckpt-1", tmp_path / "b" / "ckpt-1"
    write_checkpoint(a, values)
    write_checkpoint(b, {**values, KEYS[0]: values[KEYS[0]] + 1})
    if corrupt is not None:
        with open_checkpoint(str(b)) as ckpt:
            stored = ckpt[corrupt].stored_range()
            assert stored is not None
            at = stored[1] + 100
        data = Path(str(b) + ".data-00000-of-00001")
        raw = bytearray(data.read_bytes())
        raw[at] ^= 0xFF
        data.write_bytes(bytes(raw))
    return a, b


def test_the_pair_is_what_the_test_says(tmp_path: Path) -> None:
    """The oracle: read every tensor with numpy; the first differs, the corrupt one cannot be read."""
    a, b = _pair(tmp_path, corrupt=KEYS[7])
    with open_checkpoint(str(a)) as ca, open_checkpoint(str(b)) as cb:
        assert not np.array_equal(ca[KEYS[0]].read(), cb[KEYS[0]].read())
        for key in KEYS[1:7] + KEYS[8:]:
            assert np.array_equal(ca[key].read(), cb[key].read())
        with pytest.raises(Exception, match="checksum|CRC|crc"):
            cb[KEYS[7]].read()


@pytest.mark.parametrize("argv", [["diff", "-q"], ["diff", "--quiet"], ["-q", "diff"]])
def test_quiet_diff_stops_before_a_corrupt_later_tensor(run_cli, tmp_path: Path, argv: list[str]) -> None:
    a, b = _pair(tmp_path, corrupt=KEYS[7])
    result = run_cli(*argv, a, b)
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", "")  # "differ", the corrupt one untouched
    full = run_cli("diff", a, b)
    assert full.exit_code == 3  # a full diff reads it: an input cannot be read
    assert KEYS[7] in full.stderr


def test_quiet_diff_reads_one_pair_where_a_full_diff_reads_all(run_cli, tmp_path: Path, monkeypatch) -> None:
    """Counted at the one comparison engine and at the span reader of small equal pairs (issue 38): which pairs
    had their values compared. diff imports the engine when it first needs it, so it is counted where it lives."""
    a, b = _pair(tmp_path)
    compared: list[str] = []
    engine, spans = comparison_module.compare_values, diff_module.same_small

    def counting(ea, eb, **kw):
        if kw.get("values", True):
            compared.append(ea.key)
        return engine(ea, eb, **kw)

    def counting_spans(side_a, side_b, *args):
        same = spans(side_a, side_b, *args)
        compared.extend(side_a[i].key for i in same)
        return same

    monkeypatch.setattr(comparison_module, "compare_values", counting)
    monkeypatch.setattr(diff_module, "same_small", counting_spans)
    assert run_cli("diff", "-q", a, b).exit_code == 1
    assert compared == [KEYS[0]]
    compared.clear()
    assert run_cli("diff", a, b).exit_code == 1
    assert sorted(compared) == KEYS


def test_quiet_diff_of_equal_checkpoints_reads_everything_and_exits_0(run_cli, tmp_path: Path) -> None:
    a, _ = _pair(tmp_path)
    assert run_cli("diff", "-q", a, a).exit_code == 0
    same = CORPUS / "tf1_estimator/model.ckpt-200"
    assert (run_cli("diff", "-q", same, same).exit_code, run_cli("diff", "-q", same, same).stdout) == (0, "")


def test_quiet_diff_of_checkpoints_differing_late_or_in_keys(run_cli, tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    values = {k: rng.standard_normal((8,)).astype(np.float32) for k in KEYS}
    a, b, c = tmp_path / "a" / "ckpt-1", tmp_path / "b" / "ckpt-1", tmp_path / "c" / "ckpt-1"
    write_checkpoint(a, values)
    write_checkpoint(b, {**values, KEYS[-1]: -values[KEYS[-1]]})  # the last pair differs
    write_checkpoint(c, {k: v for k, v in values.items() if k != KEYS[3]})  # a key only in A
    assert run_cli("diff", "-q", a, b).exit_code == 1
    assert run_cli("diff", "-q", a, c).exit_code == 1
    assert run_cli("diff", "-q", tmp_path / "nope", a).exit_code == 3  # an input that cannot be read: 3, not 1


def test_the_library_says_the_result_stopped_early(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, corrupt=KEYS[7])
    found = diff_checkpoints(str(a), str(b), first_difference=True)
    assert not found.equal and not found.complete
    assert [(c.key, c.kind, c.stats) for c in found.changed] == [(KEYS[0], "value", {})]
    assert found.same == 0 and found.only_in_a == found.only_in_b == []
    whole = diff_checkpoints(str(a), str(a), first_difference=True)
    assert whole.equal and whole.complete and whole.same == len(KEYS)
