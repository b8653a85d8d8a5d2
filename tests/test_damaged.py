"""Damaged input: one line on stderr naming the file and the problem, the right exit code, no traceback."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

import formats


def _flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def _one_line(result) -> str:
    lines = result.stderr.splitlines()
    assert lines and lines[0].startswith("ckpt: error: "), result.stderr
    assert "Traceback" not in result.stderr
    assert all(line.startswith("  hint: ") for line in lines[1:])
    return lines[0]


def test_truncated_index(corpus_copy, run_cli):
    d = corpus_copy("tf1_adam")
    index = d / "model.ckpt-200.index"
    index.write_bytes(index.read_bytes()[:300])
    result = run_cli("ls", d / "model.ckpt-200")
    assert result.exit_code == 3
    assert _one_line(result) == f"ckpt: error: {index}: corrupt index: bad magic number (not a TensorFlow index " \
                                "file, or truncated)"


def test_flipped_byte_in_index_block(corpus_copy, run_cli):
    d = corpus_copy("tf1_adam")
    index = d / "model.ckpt-200.index"
    _flip(index, 40)
    result = run_cli("verify", d / "model.ckpt-200")
    assert result.exit_code == 3
    line = _one_line(result)
    assert line.startswith(f"ckpt: error: {index}: corrupt index: data block at offset 0: checksum mismatch")


def test_flipped_byte_in_data_file(corpus_copy, run_cli):
    d = corpus_copy("tf1_adam")
    prefix = d / "model.ckpt-200"
    with formats.open_checkpoint(prefix) as ckpt:
        raw = ckpt.reader.entries[b"dnn/logits/kernel"]
    _flip(Path(f"{prefix}.data-00000-of-00001"), raw.offset + 3)
    result = run_cli("verify", prefix)
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0].startswith(
        "problem dnn/logits/kernel: tensor 'dnn/logits/kernel': checksum mismatch (index says 0x")
    assert result.stdout.splitlines()[-1].startswith(f"1 problem {prefix}: tf-name, checked 21 tensors")
    # reading the tensor directly raises a ChecksumError naming the data file
    with formats.open_checkpoint(prefix) as ckpt:
        with pytest.raises(formats.ChecksumError) as info:
            ckpt["dnn/logits/kernel"].read()
    assert info.value.path == f"{prefix}.data-00000-of-00001"
    assert "dnn/logits/kernel" in info.value.message


def test_truncated_data_file(corpus_copy, run_cli):
    d = corpus_copy("tf1_estimator")
    data = d / "model.ckpt-200.data-00000-of-00001"
    data.write_bytes(data.read_bytes()[:1000])
    result = run_cli("verify", "--json", d / "model.ckpt-200")
    assert result.exit_code == 1
    import json

    problems = json.loads(result.stdout)["problems"]
    assert problems and all("run past the end of model.ckpt-200.data-00000-of-00001 (1000 bytes)"
                            in p["message"] for p in problems)


def test_missing_shard(corpus_copy, run_cli):
    d = corpus_copy("tf2_mixed")
    missing = d / "sharded/ckpt.data-00003-of-00007"
    os.remove(missing)
    result = run_cli("ls", d / "sharded/ckpt")  # the keys, from the index, with a warning
    assert result.exit_code == 0
    assert result.stderr == f"ckpt: warning: {missing}: missing; the keys are listed, their values cannot be read\n"
    assert f"{d / 'sharded/ckpt'}: tf-object, 9 tensors" in result.stdout
    with formats.open_checkpoint(d / "sharded/ckpt") as ckpt:
        lost = [k for k, e in ckpt.items() if e.raw.shard_id == 3]
    result = run_cli("show", d / "sharded/ckpt", lost[0])
    assert result.exit_code == 3
    assert _one_line(result) == f"ckpt: error: {missing}: data file missing (shard 4 of 7 of {d / 'sharded/ckpt'})"
    result = run_cli("verify", d / "sharded/ckpt")
    assert result.exit_code == 1
    assert f"problem ckpt.data-00003-of-00007: data file missing (shard 4 of 7 of {d / 'sharded/ckpt'})" in result.stdout
    assert f"problem {lost[0]}: data file missing" in result.stdout


def test_wrong_magic(corpus_copy, run_cli):
    d = corpus_copy("tf1_adam")
    index = d / "model.ckpt-1.index"
    data = bytearray(index.read_bytes())
    data[-1] ^= 0xFF
    index.write_bytes(bytes(data))
    result = run_cli("ls", d / "model.ckpt-1")
    assert result.exit_code == 3
    assert "bad magic number" in _one_line(result)


def test_empty_index_file(tmp_path, run_cli):
    (tmp_path / "x.index").write_bytes(b"")
    result = run_cli("ls", tmp_path / "x")
    assert result.exit_code == 3
    assert _one_line(result) == (f"ckpt: error: {tmp_path / 'x.index'}: corrupt index: file is 0 bytes, "
                                 "shorter than the 48-byte footer")


def test_empty_plain_file(tmp_path, run_cli):
    (tmp_path / "weights.bin").write_bytes(b"")
    result = run_cli("ls", tmp_path / "weights.bin")
    assert result.exit_code == 3
    assert _one_line(result) == f"ckpt: error: {tmp_path / 'weights.bin'}: file is empty"


def test_directory_without_checkpoint(tmp_path, run_cli):
    (tmp_path / "notes.txt").write_text("hello")
    result = run_cli("verify", tmp_path)
    assert result.exit_code == 3
    assert _one_line(result) == (f"ckpt: error: {tmp_path}: no checkpoint in this directory (no 'checkpoint' "
                                 "state file, no *.index, no Keras weights file)")


def test_missing_path_with_suggestion(run_cli):
    from .conftest import CORPUS

    result = run_cli("ls", CORPUS / "tf1_adam/model.ckpt")
    assert result.exit_code == 3
    assert result.stderr.splitlines() == [
        f"ckpt: error: {CORPUS / 'tf1_adam/model.ckpt'}: no such file, directory or checkpoint prefix",
        f"  hint: did you mean {CORPUS / 'tf1_adam/model.ckpt-1'}, {CORPUS / 'tf1_adam/model.ckpt-200'}?"]


@pytest.mark.parametrize("content,what", [
    (b"version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 12\n", "is a Git LFS pointer"),
    (b"<!DOCTYPE html><html><body>403</body></html>", "is an HTML/XML page"),
    (b"just some text", "not a checkpoint: unrecognised content"),
])
def test_foreign_files_are_named(tmp_path, run_cli, content, what):
    f = tmp_path / "model.h5"
    f.write_bytes(content)
    result = run_cli("ls", f)
    assert result.exit_code == 3
    assert _one_line(result).startswith(f"ckpt: error: {f}: {what}")


def test_usage_errors_keep_exit_2(run_cli):
    result = run_cli("ls", "--sort", "bogus", "x")
    assert result.exit_code == 2


def test_traceback_flag_shows_the_traceback(tmp_path, run_cli):
    result = run_cli("--traceback", "ls", tmp_path / "nope")
    assert result.exit_code == 3
    assert "Traceback" in result.stderr and "CheckpointNotFoundError" in result.stderr


def test_corrupt_entry_protos_and_shard_ids_are_errors(corpus_copy):
    from formats.tf_bundle.columns import IndexColumns
    from formats.core.errors import CorruptCheckpointError

    with pytest.raises(CorruptCheckpointError, match="not parseable"):
        IndexColumns([(b"k", b"\x08")], "x.index", 1)  # varint cut short
    with pytest.raises(CorruptCheckpointError, match="negative dimension"):
        IndexColumns([(b"k", b"\x12\x0d\x12\x0b\x08" + b"\xff" * 9 + b"\x01")], "x.index", 1)  # dim -1


def test_a_damaged_block_of_an_index_read_a_block_at_a_time_is_named_by_its_offset(tmp_path, run_cli, monkeypatch):
    """A large index is read a block at a time (each block and its trailer one piece): the message names the block's
    offset in the file, not its offset in the piece (it said 0 for every block)."""
    from formats.io.sstable.table import Table
    from formats.tf_bundle import datafile

    from tests.scale_bundles import name_based

    prefix = name_based(tmp_path, 30_000)
    index = Path(f"{prefix}.index")
    blocks = Table(index.read_bytes(), str(index)).blocks
    assert len(blocks) > 2
    _flip(index, blocks[2].offset + 100)
    monkeypatch.setattr(datafile, "STREAMED_INDEX", 0)
    result = run_cli("verify", prefix)
    assert result.exit_code == 3
    assert _one_line(result).startswith(f"ckpt: error: {index}: corrupt index: data block at offset "
                                        f"{blocks[2].offset}: checksum mismatch")
