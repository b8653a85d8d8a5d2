"""Issue 14 #20: hangs - quadratic key mapping on one long key containing ``/.ATTRIBUTES/`` (``ls --tree``,
``graph``, ``ls --names``), and a run directory whose ``*.index`` is a symlink to ``/dev/zero`` (an
unbounded read) or a FIFO (blocks forever) during ``ls DIR``. Each runs in a child process with a
generous time limit: quadratic work on these inputs would take hours, the fixed code well under a second."""
from __future__ import annotations

import json
import os
import shutil

import pytest

import formats
from formats.core.errors import CorruptCheckpointError
from formats.io import storage

from ..conftest import CORPUS
from .craft import graph_node, object_bundle
from .limits import MiB, assert_clean, run_limited

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


def test_one_long_key_under_attributes_is_mapped_in_linear_time(tmp_path):
    long_key = "net/.ATTRIBUTES/VARIABLE_VALUE" + "x" * (1 << 20)  # 1 MiB: ~10**12 bytes hashed when quadratic
    nodes = [graph_node([(1, "net")]), graph_node(attributes=[("VARIABLE_VALUE", "net/w", "net/.ATTRIBUTES/VARIABLE_VALUE")])]
    prefix = object_bundle(tmp_path, "c", nodes, [(long_key.encode(), [1], b"\x00" * 4),
                                                  (b"net/.ATTRIBUTES/VARIABLE_VALUE", [1], b"\x00" * 4)])
    for args in (["ls", "--tree"], ["graph"], ["ls", "--names"]):
        assert_clean(run_limited(*args, prefix, seconds=120, memory=1024 * MiB), 0)
    listing = json.loads(run_limited("ls", "--names", "--json", prefix, seconds=120, memory=1024 * MiB).stdout)
    names = {t["key"]: t["name"] for t in listing["tensors"]}
    assert names["net/.ATTRIBUTES/VARIABLE_VALUE"] == "net/w"
    assert names[long_key] == "net/w"  # an attribute's key extended by a tensor name belongs to it (the longest)


def test_extended_attribute_keys_map_to_the_longest_checkpoint_key(tmp_path):
    nodes = [graph_node([(1, "it")]), graph_node(attributes=[("ITERATOR", "it", "it/.ATTRIBUTES/ITERATOR"),
                                                             ("ITERATOR_B", "itb", "it/.ATTRIBUTES/ITERATOR_B")])]
    keys = [b"it/.ATTRIBUTES/ITERATOR_STATE", b"it/.ATTRIBUTES/ITERATOR_BX", b"it/.ATTRIBUTES/OTHER"]
    prefix = object_bundle(tmp_path, "c", nodes, [(k, [1], b"\x00" * 4) for k in keys])
    with formats.open_checkpoint(prefix) as ckpt:
        mapping = ckpt.object_graph.map_keys(list(ckpt))
    assert {k: a.name for k, (_, a) in mapping.items()} == {
        "it/.ATTRIBUTES/ITERATOR_STATE": "ITERATOR", "it/.ATTRIBUTES/ITERATOR_BX": "ITERATOR_B"}


@needs_fifo
def test_index_that_is_a_fifo_or_dev_zero_in_a_run_directory(tmp_path):
    for f in (CORPUS / "tf1_adam").glob("model.ckpt-200.*"):
        shutil.copyfile(f, tmp_path / f.name)
    os.mkfifo(tmp_path / "ckpt-1.index")
    (tmp_path / "ckpt-1.data-00000-of-00001").write_bytes(b"")
    os.symlink("/dev/zero", tmp_path / "ckpt-2.index")
    (tmp_path / "ckpt-2.data-00000-of-00001").write_bytes(b"")
    outcome = run_limited("ls", "--json", tmp_path, seconds=60, memory=512 * MiB)
    assert_clean(outcome, 0)
    assert [row["path"] for row in json.loads(outcome.stdout)["checkpoints"]] == [str(tmp_path / "model.ckpt-200")]


@needs_fifo
def test_fifo_and_device_are_refused_without_reading(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    for path in (tmp_path / "fifo", "/dev/zero"):
        with pytest.raises(CorruptCheckpointError, match="not a regular file"):
            storage.open_regular(str(path))
        with pytest.raises(CorruptCheckpointError, match="not a regular file"):
            storage.read_bytes(str(path))
    with pytest.raises(IsADirectoryError):
        storage.open_regular(str(tmp_path))


@needs_fifo
def test_data_file_that_is_a_fifo(tmp_path, run_cli):
    for f in (CORPUS / "tf1_adam").glob("model.ckpt-200.*"):
        shutil.copyfile(f, tmp_path / f.name)
    data = tmp_path / "model.ckpt-200.data-00000-of-00001"
    data.unlink()
    os.mkfifo(data)
    outcome = run_limited("verify", tmp_path / "model.ckpt-200", seconds=60)
    assert_clean(outcome, 1)
    assert "model.ckpt-200.data-00000-of-00001: data file missing" in outcome.stdout


@needs_fifo
def test_a_prefix_whose_index_is_no_regular_file_is_named_for_what_it_is(tmp_path):
    """``ckpt ls PREFIX`` where ``PREFIX.index`` is a FIFO, a folder, a symlink loop or a link to nothing: one line
    naming the index and what it is, exit 3, nothing opened (and no "did you mean PREFIX?" for PREFIX itself)."""
    os.mkfifo(tmp_path / "fifo.index")
    (tmp_path / "dir.index").mkdir()
    os.symlink(tmp_path / "loop2.index", tmp_path / "loop.index")
    os.symlink(tmp_path / "loop.index", tmp_path / "loop2.index")
    os.symlink(tmp_path / "nothing", tmp_path / "gone.index")
    for name, what in [("fifo", "a FIFO"), ("dir", "a directory"), ("loop", "a symbolic link loop"),
                       ("gone", "a symbolic link to nothing")]:
        for extra in ([], ["--json"]):
            outcome = run_limited("ls", *extra, tmp_path / name, seconds=30, memory=512 * MiB)
            error = f"{tmp_path / name}.index: {what}, not a bundle index"
            if extra:
                assert outcome.code == 3 and json.loads(outcome.stdout)["error"] == error
            else:
                assert (outcome.code, outcome.stderr) == (3, f"ckpt: error: {error}\n")


def test_did_you_mean_never_names_the_path_itself(tmp_path, run_cli):
    (tmp_path / "ckpt-1").mkdir()  # a folder named like a prefix, and ckpt-1x (a typo of it) asked for
    result = run_cli("ls", str(tmp_path / "ckpt-1x"))
    assert result.exit_code == 3 and f"did you mean {tmp_path / 'ckpt-1'}?" in result.stderr
    from formats.discover.resolve import _did_you_mean

    assert _did_you_mean(str(tmp_path / "ckpt-1")) is None
