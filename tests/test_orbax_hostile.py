"""Hostile Orbax and T5X checkpoints: each damaged copy of a sample Orbax or T5X wrote gets one line and its
documented exit code (3: the input cannot be read; 1: ``verify`` found problems), and nothing outside the
checkpoint's directory is read (a link or a name pointing outside is refused, never followed)."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).parent / "data" / "orbax"

pytest.importorskip("tensorstore")


def copy(sample: str, tmp_path: Path) -> Path:
    out = tmp_path / Path(sample).name
    shutil.copytree(DATA / sample, out)
    return out


def one_line_error(result: Any, code: int, *words: str) -> str:
    assert result.exit_code == code, result.output
    line = result.stderr.strip()
    assert line.count("\n") == 0, line
    for word in words:
        assert word in line, line
    return line


def edit_tree(path: Path, change: Any) -> None:
    meta = json.loads((path / "_METADATA").read_text())
    change(meta)
    (path / "_METADATA").write_text(json.dumps(meta))


def test_a_leaf_naming_a_path_outside_is_refused(run_cli: Any, tmp_path: Path) -> None:
    ckpt = copy("pytree_zarr", tmp_path)

    def escape(meta: dict[str, Any]) -> None:
        first = next(iter(meta["tree_metadata"].values()))
        first["key_metadata"] = [{"key": "x/../../../outside", "key_type": 2}]

    edit_tree(ckpt, escape)
    one_line_error(run_cli("ls", ckpt), 3, "outside the checkpoint directory", "refused")


def test_a_link_out_of_the_directory_is_refused_not_followed(run_cli: Any, tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_bytes(b"\x28\xb5\x2f\xfd" + b"x" * 40)
    ckpt = copy("pytree_zarr", tmp_path)
    chunk = ckpt / "params.dense.bias" / "0"
    chunk.unlink()
    chunk.symlink_to(secret)
    before = os.stat(secret).st_atime_ns
    for command in ("ls", "verify"):
        one_line_error(run_cli(command, ckpt), 3, "is a link to", "refused, not followed")
    assert os.stat(secret).st_atime_ns == before


def test_a_t5x_spec_naming_a_path_outside_is_refused(run_cli: Any, tmp_path: Path) -> None:
    import msgpack

    ckpt = copy("t5x/checkpoint_3", tmp_path)
    top = msgpack.unpackb((ckpt / "checkpoint").read_bytes(), raw=False, strict_map_key=False)
    top["optimizer"]["target"]["token_embedder"]["embedding"]["kvstore"]["path"] = "../../elsewhere"
    (ckpt / "checkpoint").write_bytes(msgpack.packb(top, use_bin_type=True))
    one_line_error(run_cli("ls", ckpt), 3, "'../../elsewhere'", "outside the checkpoint directory")
    top["optimizer"]["target"]["token_embedder"]["embedding"]["kvstore"]["path"] = "/etc"
    (ckpt / "checkpoint").write_bytes(msgpack.packb(top, use_bin_type=True))
    one_line_error(run_cli("ls", ckpt), 3, "'/etc'", "outside the checkpoint directory")


def test_a_truncated_chunk_fails_verify(run_cli: Any, tmp_path: Path) -> None:
    ckpt = copy("pytree_zarr", tmp_path)
    chunk = ckpt / "params.dense.kernel" / "0.0"
    chunk.write_bytes(chunk.read_bytes()[:5])
    result = run_cli("verify", ckpt)
    assert result.exit_code == 1, result.output
    assert "problem params/dense/kernel:" in result.stdout and "Truncated" in result.stdout
    assert run_cli("show", ckpt, "params/dense/kernel").exit_code == 3


def test_a_missing_chunk_fails_verify_without_reading(run_cli: Any, tmp_path: Path) -> None:
    ckpt = copy("pytree_zarr", tmp_path)
    (ckpt / "params.dense.kernel" / "0.0").unlink()
    result = run_cli("verify", ckpt)
    assert result.exit_code == 1, result.output
    assert "params/dense/kernel: 1 of its 1 chunks are missing ('0.0' first)" in result.stdout


def test_a_huge_declared_shape_is_a_problem_not_an_allocation(run_cli: Any, tmp_path: Path) -> None:
    ckpt = copy("pytree_zarr", tmp_path)
    zarray = ckpt / "params.dense.bias" / ".zarray"
    meta = json.loads(zarray.read_text())
    meta.update(shape=[1 << 40], chunks=[1 << 20])
    zarray.write_text(json.dumps(meta))
    result = run_cli("verify", ckpt)
    assert result.exit_code == 1 and "1,048,575 of its 1,048,576 chunks are missing" in result.stdout, result.output
    meta.update(shape=[1 << 62, 1 << 10], chunks=[1, 1])
    zarray.write_text(json.dumps(meta))
    result = run_cli("verify", ckpt)
    assert result.exit_code == 1 and "too large for any numpy array" in result.stdout, result.output
    meta.update(shape=[1 << 40], chunks=[1 << 40])
    zarray.write_text(json.dumps(meta))
    result = run_cli("verify", ckpt)
    assert result.exit_code == 1 and "declares chunks of" in result.stdout, result.output


def test_deep_trees_are_refused(run_cli: Any, tmp_path: Path) -> None:
    ckpt = copy("pytree_zarr", tmp_path)
    (ckpt / "_METADATA").write_text('{"tree_metadata": ' + "[" * 500 + "]" * 500 + "}")
    one_line_error(run_cli("ls", ckpt), 3, "nests deeper than 64 levels")
    deep = copy("standard", tmp_path / "b")
    edit_tree(deep, lambda m: next(iter(m["tree_metadata"].values())).update(
        key_metadata=[{"key": "k", "key_type": 2}] * 100))
    one_line_error(run_cli("ls", deep), 3, "100 levels deep")
    t5x = copy("t5x/checkpoint_3", tmp_path)
    (t5x / "checkpoint").write_bytes(b"\x81\xa9optimizer" + b"\x81\xa1a" * 100 + b"\xc0")
    one_line_error(run_cli("ls", t5x), 3, "deeper than 64")


def test_a_truncated_t5x_file_is_one_line(run_cli: Any, tmp_path: Path) -> None:
    t5x = copy("t5x/checkpoint_3", tmp_path)
    (t5x / "checkpoint").write_bytes((t5x / "checkpoint").read_bytes()[:100])
    one_line_error(run_cli("ls", t5x), 3, "not a T5X checkpoint", "truncated")


def test_a_t5x_spec_disagreeing_with_its_array_fails_verify(run_cli: Any, tmp_path: Path) -> None:
    t5x = copy("t5x/checkpoint_3", tmp_path)
    zarray = t5x / "target.token_embedder.embedding" / ".zarray"
    meta = json.loads(zarray.read_text())
    meta["shape"] = [16, 8]
    zarray.write_text(json.dumps(meta))
    result = run_cli("verify", t5x)
    assert result.exit_code == 1, result.output
    assert "target/token_embedder/embedding: the checkpoint's tree says float32[32, 8] but the array stores " \
           "float32[16, 8]" in result.stdout


def test_damaged_ocdbt_data_is_one_line(run_cli: Any, tmp_path: Path) -> None:
    ckpt = copy("standard", tmp_path)
    for data in (ckpt / "d").iterdir():
        data.write_bytes(data.read_bytes()[:100])
    one_line_error(run_cli("ls", ckpt), 3, "OCDBT")


def test_a_name_that_is_not_utf8_is_one_line(run_cli: Any, tmp_path: Path) -> None:
    ckpt = copy("pytree_zarr", tmp_path)
    try:
        os.mkdir(os.path.join(os.fsencode(ckpt), b"bad\xff"))
    except OSError:
        pytest.skip("this file system refuses names that are not UTF-8")
    one_line_error(run_cli("ls", ckpt), 3, "not a UTF-8 name")


def test_msgpack_bounds() -> None:
    from formats.orbax.msgpack import MsgpackError, unpack

    for bad, words in ((b"\xdd\xff\xff\xff\xff", "declares"), (b"\xc1", "not a msgpack type"),
                       (b"\xa3ab", "truncated"), (b"\x91" * 100 + b"\xc0", "deeper"), (b"\xc0\xc0", "follow"),
                       (b"\xa2\xff\xfe", "not UTF-8")):
        with pytest.raises(MsgpackError, match=words):
            unpack(bad)
    assert unpack(b"\x82\xa1a\x01\xa1b\x92\xc3\xcb" + bytes(8)) == {"a": 1, "b": [True, 0.0]}


def test_deeply_nested_folders_are_refused(run_cli: Any, tmp_path: Path) -> None:
    ckpt = copy("pytree_zarr", tmp_path)
    deep = ckpt / "params.q4"
    for _ in range(40):
        deep = deep / "d"
    deep.mkdir(parents=True)
    one_line_error(run_cli("ls", ckpt), 3, "nest deeper than 32 levels")


def test_an_ocdbt_manifest_naming_a_file_outside_is_refused(run_cli: Any, tmp_path: Path) -> None:
    """The root manifest's data file ``d/<hash>`` rewritten as ``.../../secret`` (same length, in the zstd frame's raw
    literals; the manifest's CRC32C recomputed): tensorstore refuses the key, and nothing outside is read."""
    import struct

    import crc32c

    (tmp_path / "secret").write_bytes(b"not a checkpoint")
    ckpt = copy("standard", tmp_path / "in")
    manifest = ckpt / "manifest.ocdbt"
    raw = manifest.read_bytes()
    old = next(b"d/" + p.name.encode() for p in (ckpt / "d").iterdir())
    assert old in raw
    escape = b"../../secret"
    new = b"/" * ((len(old) - len(escape)) % 2) + b"./" * ((len(old) - len(escape)) // 2) + escape
    raw = raw.replace(old, new)
    manifest.write_bytes(raw[:-4] + struct.pack("<I", crc32c.crc32c(raw[:-4])))
    line = one_line_error(run_cli("verify", ckpt), 3, "OCDBT", "Invalid key")
    assert "not a checkpoint" not in line


def test_a_missing_zarr3_chunk_fails_verify_when_orbax_promised_every_chunk(run_cli: Any, tmp_path: Path) -> None:
    """Orbax's ``store_array_data_equal_to_fill_value`` promises every chunk; without the promise a zarr v3 array
    with a fill value may lack chunks equal to it (zarr reads them as the fill value), so none is a problem."""
    ckpt = copy("pytree_zarr3", tmp_path)
    shutil.rmtree(ckpt / "params.dense.kernel" / "c")
    result = run_cli("verify", ckpt)
    assert result.exit_code == 1, result.output
    assert "params/dense/kernel: 1 of its 1 chunks are missing ('c/0/0' first)" in result.stdout
    edit_tree(ckpt, lambda m: m.update(store_array_data_equal_to_fill_value=False))
    assert run_cli("verify", ckpt).exit_code == 0


def test_fuzzed_msgpack_never_escapes_as_another_error() -> None:
    """Random bytes and mutated T5X files: the decoder returns a value or raises MsgpackError, nothing else."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from formats.orbax.msgpack import MsgpackError, unpack

    original = (DATA / "t5x/checkpoint_3/checkpoint").read_bytes()

    @settings(max_examples=300, deadline=None)
    @given(st.one_of(st.binary(max_size=200), st.tuples(st.integers(0, len(original) - 1), st.binary(min_size=1,
                                                                                                   max_size=8))))
    def check(case: Any) -> None:
        data = case if isinstance(case, bytes) else original[:case[0]] + case[1] + original[case[0] + len(case[1]):]
        try:
            unpack(data)
        except MsgpackError:
            pass

    check()


def test_fuzzed_t5x_files_are_one_line_or_read(tmp_path: Path) -> None:
    """Bytes of the T5X file overwritten at random: opening gives a CheckpointError or a checkpoint, never a crash."""
    import random

    import formats
    from formats.core.errors import CheckpointError

    ckpt = copy("t5x/checkpoint_3", tmp_path)
    original = (ckpt / "checkpoint").read_bytes()
    rng = random.Random(39)
    for _ in range(60):
        at = rng.randrange(len(original))
        (ckpt / "checkpoint").write_bytes(original[:at] + bytes([rng.randrange(256)]) + original[at + 1:])
        try:
            with formats.open_checkpoint(ckpt) as opened:
                for entry in opened.values():
                    entry.problem()
        except CheckpointError:
            pass


def test_a_damaged_checkpoint_metadata_file_is_a_problem_not_a_refusal(run_cli: Any, tmp_path: Path) -> None:
    ckpt = copy("run/2", tmp_path)
    (ckpt / "_CHECKPOINT_METADATA").write_bytes(b"{not json")
    assert run_cli("ls", ckpt).exit_code == 0
    result = run_cli("verify", ckpt)
    assert result.exit_code == 1 and "_CHECKPOINT_METADATA is not valid JSON" in result.stdout, result.output
