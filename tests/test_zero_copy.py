"""Writes that leave data bytes unchanged do not copy them through Python: input data files are copied by the
kernel or, with ``--link``, hard-linked - and never opened for writing."""
from __future__ import annotations

import builtins
import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest

import formats
from formats import open_checkpoint, write_checkpoint

DATA = ".data-00000-of-00001"


def _source(tmp_path: Path, name: str = "src") -> str:
    prefix = str(tmp_path / name / "model.ckpt-7")
    rng = np.random.default_rng(11)
    tensors = {f"dnn/layer_{i}/kernel": rng.standard_normal((64, 16 + i)).astype(np.float32) for i in range(6)}
    tensors["dnn/names"] = np.array([b"a", b"bc", b""], dtype=object)
    tensors["dnn/empty"] = np.zeros((0, 3), np.float32)
    tensors["global_step"] = np.int64(7)
    write_checkpoint(prefix, tensors.items(), verify=False)
    return prefix


def _values(prefix: str) -> dict[str, bytes]:
    with open_checkpoint(prefix) as ckpt:
        return {k: ckpt[k].read().tobytes() if ckpt[k].dtype != "string" else repr(ckpt[k].read()).encode()
                for k in ckpt}


def _inode(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino


def _read_only(prefix: str) -> None:
    for f in Path(prefix).parent.iterdir():
        f.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)


@pytest.fixture
def no_writes_to(monkeypatch):
    """Fail any attempt to open a file under the given folders with a flag or mode that could write."""
    folders: list[str] = []
    real_os_open, real_open = os.open, builtins.open

    def guarded(path: object) -> bool:
        return isinstance(path, (str, os.PathLike)) and any(
            os.path.abspath(os.fspath(path)).startswith(f + os.sep) for f in folders)

    def os_open(path, flags, *args, **kwargs):  # type: ignore[no-untyped-def]
        if guarded(path) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND):
            raise AssertionError(f"{path} opened for writing")
        return real_os_open(path, flags, *args, **kwargs)

    def open_(file, mode="r", *args, **kwargs):  # type: ignore[no-untyped-def]
        if guarded(file) and any(c in mode for c in "wax+"):
            raise AssertionError(f"{file} opened for writing ({mode})")
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(builtins, "open", open_)
    return lambda folder: folders.append(os.path.abspath(folder))


def test_rename_with_link_shares_the_data_file_and_writes_only_the_index(tmp_path, run_cli, no_writes_to):
    src = _source(tmp_path)
    _read_only(src)
    no_writes_to(os.path.dirname(src))
    out = str(tmp_path / "out" / "model.ckpt-7")
    result = run_cli("rename", src, "-o", out, "--map", "dnn=net", "--link", "--json")
    assert result.exit_code == 0, result.stderr
    written = json.loads(result.stdout)["written"]
    assert written["verified"] is True and written["warnings"] == []
    assert _inode(out + DATA) == _inode(src + DATA)  # one file, two names
    assert os.stat(src + DATA).st_nlink == 2
    assert _inode(out + ".index") != _inode(src + ".index")
    renamed = {k.replace("dnn/", "net/", 1): v for k, v in _values(src).items()}
    assert _values(out) == renamed
    assert run_cli("verify", out).exit_code == 0


def test_rename_copies_the_data_file_in_the_kernel_byte_for_byte(tmp_path, run_cli, no_writes_to):
    src = _source(tmp_path)
    _read_only(src)
    no_writes_to(os.path.dirname(src))
    out = str(tmp_path / "out" / "model.ckpt-7")
    result = run_cli("rename", src, "-o", out, "--add-prefix", "tower_0")
    assert result.exit_code == 0, result.stderr
    assert _inode(out + DATA) != _inode(src + DATA)
    assert Path(out + DATA).read_bytes() == Path(src + DATA).read_bytes()
    assert _values(out) == {f"tower_0/{k}": v for k, v in _values(src).items()}
    assert run_cli("verify", out).exit_code == 0


def test_convert_with_link_adds_a_shard_for_the_new_tensors(tmp_path, run_cli, no_writes_to):
    src = _source(tmp_path)
    _read_only(src)
    no_writes_to(os.path.dirname(src))
    out = str(tmp_path / "tf2" / "ckpt-1")
    result = run_cli("convert", src, "-o", out, "--to", "tf-object", "--link")
    assert result.exit_code == 0, result.stderr
    assert sorted(os.listdir(tmp_path / "tf2")) == ["ckpt-1.data-00000-of-00002", "ckpt-1.data-00001-of-00002",
                                                   "ckpt-1.index"]
    assert _inode(out + ".data-00000-of-00002") == _inode(src + DATA)
    assert run_cli("verify", out).exit_code == 0
    with open_checkpoint(out) as ckpt, open_checkpoint(src) as before:
        assert ckpt.format == "tf-object"
        by_name = {e.name: e for e in ckpt.values()}
        for key, entry in before.items():
            assert by_name[key].read().tolist() == entry.read().tolist()


def test_rename_with_link_of_an_object_based_checkpoint_links_its_data_file(tmp_path, run_cli, no_writes_to):
    """Issue 24 #5: the object graph changes with the keys, so it goes to a second shard; the input's data
    file (its old graph last in it, which no entry of the output refers to) is linked, not copied."""
    src = str(tmp_path / "obj" / "ckpt-1")
    assert run_cli("convert", _source(tmp_path), "-o", src, "--to", "tf-object").exit_code == 0
    _read_only(src)
    no_writes_to(os.path.dirname(src))
    out = str(tmp_path / "out" / "ckpt-1")
    result = run_cli("rename", src, "-o", out, "--map", "dnn=net", "--link", "--json")
    assert result.exit_code == 0, result.stderr
    written = json.loads(result.stdout)["written"]
    assert written["verified"] is True and written["warnings"] == [] and written["format"] == "tf-object"
    assert sorted(os.listdir(tmp_path / "out")) == ["ckpt-1.data-00000-of-00002", "ckpt-1.data-00001-of-00002",
                                                   "ckpt-1.index"]
    assert _inode(out + ".data-00000-of-00002") == _inode(src + DATA)
    with open_checkpoint(src) as before:
        graph = before["_CHECKPOINTABLE_OBJECT_GRAPH"]
        assert graph.raw.offset + graph.raw.size == os.path.getsize(src + DATA)  # last: unreferenced at the end
    assert run_cli("verify", out).exit_code == 0
    old, new = _values(src), _values(out)
    del old["_CHECKPOINTABLE_OBJECT_GRAPH"], new["_CHECKPOINTABLE_OBJECT_GRAPH"]
    assert new == {k.replace("dnn/", "net/", 1): v for k, v in old.items()}
    with open_checkpoint(out) as ckpt:
        assert ckpt["_CHECKPOINTABLE_OBJECT_GRAPH"].raw.shard_id == 1
        assert sorted(c.local_name for c in ckpt.object_graph.nodes[0].children) == ["global_step", "net", "save_counter"]


def test_rename_of_an_object_based_checkpoint_copies_the_bytes_before_its_old_graph(tmp_path, run_cli,
                                                                                    no_writes_to, monkeypatch):
    """Copied, the data file holds only the output's tensors: the bytes before the old object graph (last in
    the file, as TensorFlow writes it) are copied in the kernel, and the new graph follows them."""
    src = str(tmp_path / "obj" / "ckpt-1")
    assert run_cli("convert", _source(tmp_path), "-o", src, "--to", "tf-object").exit_code == 0
    _read_only(src)
    no_writes_to(os.path.dirname(src))
    out = str(tmp_path / "out" / "ckpt-1")
    from formats.tf_bundle import writer

    copied: list[int] = []
    real = writer._copy_flushing
    monkeypatch.setattr(writer, "_copy_flushing", lambda *a: copied.append(a[2]) or real(*a))
    assert run_cli("rename", src, "-o", out, "--map", "dnn=net").exit_code == 0
    assert sorted(os.listdir(tmp_path / "out")) == ["ckpt-1.data-00000-of-00001", "ckpt-1.index"]
    with open_checkpoint(src) as before, open_checkpoint(out) as ckpt:
        old = before["_CHECKPOINTABLE_OBJECT_GRAPH"].raw
        new = ckpt["_CHECKPOINTABLE_OBJECT_GRAPH"].raw
        assert sum(e.raw.size for e in ckpt.values()) == os.path.getsize(out + DATA)
        assert new.offset == old.offset and copied == [old.offset]
    assert Path(out + DATA).read_bytes()[:old.offset] == Path(src + DATA).read_bytes()[:old.offset]
    assert run_cli("verify", out).exit_code == 0


def test_verify_flags_bytes_after_the_last_tensor_unless_they_are_one_string_scalar(tmp_path, run_cli):
    """Trailing bytes are a problem, but for one DT_STRING scalar as a bundle stores it (length, its masked
    CRC32C, the bytes): the object graph a linked rename leaves unreferenced."""
    from formats.tf_bundle.encode import string_layout

    pieces, _ = string_layout([b"x" * 300])
    for tail, problems in ((b"".join(pieces), 0), (b"".join(pieces)[:-1], 1), (b"\x00" * 7, 1)):
        src = _source(tmp_path, f"t{len(tail)}")
        with open(src + DATA, "ab") as f:
            f.write(tail)
        result = run_cli("verify", src)
        assert result.exit_code == problems, result.output
        assert ("bytes after the last tensor" in result.output) == bool(problems)


def test_a_subset_is_copied_tensor_by_tensor_in_the_kernel(tmp_path, no_writes_to):
    src = _source(tmp_path)
    no_writes_to(os.path.dirname(src))
    out = str(tmp_path / "out" / "part")
    with open_checkpoint(src) as ckpt:
        keys = [k for k in ckpt if k.endswith(("_1/kernel", "_4/kernel", "names"))]
        report = write_checkpoint(out, [(k, ckpt[k]) for k in keys], inputs=[ckpt])
    assert report.verified and sorted(_values(out)) == sorted(keys)
    assert {k: v for k, v in _values(src).items() if k in keys} == _values(out)


def test_a_damaged_input_is_named_not_the_output(tmp_path, run_cli):
    src = _source(tmp_path)
    with open_checkpoint(src) as ckpt:
        offset = ckpt["dnn/layer_3/kernel"].raw.offset
    with open(src + DATA, "r+b") as f:
        f.seek(offset + 10)
        f.write(b"\xff\xee")
    out = str(tmp_path / "out" / "ckpt")
    result = run_cli("rename", src, "-o", out, "--map", "dnn=net")
    assert result.exit_code == 3, result.stderr
    assert result.stderr.startswith(f"ckpt: error: {src}{DATA}: tensor 'dnn/layer_3/kernel': checksum mismatch")
    assert not os.path.exists(tmp_path / "out") or os.listdir(tmp_path / "out") == []


def test_jobs_do_not_change_the_write_report(tmp_path):
    src = _source(tmp_path)
    reports = []
    for jobs in (1, 2):
        with open_checkpoint(src) as ckpt:
            pairs = [(f"x/{k}", ckpt[k]) for k in ckpt] + [("extra", np.arange(5.0))]
            report = write_checkpoint(str(tmp_path / f"out{jobs}" / "ckpt"), pairs, jobs=jobs)
        doc = report.to_json()
        doc["path"] = doc["files"] = None
        reports.append((doc, report.roundtrip.tensors, report.roundtrip.bytes))
    assert reports[0] == reports[1]


def test_link_across_file_systems_falls_back_to_a_copy(tmp_path, monkeypatch):
    import errno

    from formats.io import zerocopy

    def refuse(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(zerocopy.os, "link", refuse)
    src = _source(tmp_path)
    out = str(tmp_path / "out" / "ckpt")
    with open_checkpoint(src) as ckpt:
        report = formats.write_checkpoint(out, [(k, ckpt[k]) for k in ckpt], link=True)
    assert report.warnings == [f"{os.path.basename(src)}{DATA} copied, not linked: the output is on another "
                               "file system"]
    assert _inode(out + DATA) != _inode(src + DATA)
    assert _values(out) == _values(src)


def test_ls_of_a_directory_opens_no_data_file(tmp_path, run_cli, record_opens):
    """A directory listing shows counts, sizes and dates: it reads indexes, never a data file."""
    for step in range(1, 6):
        write_checkpoint(str(tmp_path / f"ckpt-{step}"), {"w": np.full((4,), step, np.float32)}.items())
    opened = record_opens()
    doc = json.loads(run_cli("ls", "--json", tmp_path).stdout)
    assert [c["tensors"] for c in doc["checkpoints"]] == [1] * 5
    assert sorted(p for p in opened if str(tmp_path) in p) == sorted(str(tmp_path / f"ckpt-{s}.index")
                                                                     for s in range(1, 6))


def test_a_copied_data_file_goes_to_disk_piece_by_piece_while_it_is_copied(tmp_path, monkeypatch):
    """The kernel copy of a data file taken over goes in ``EVERY``-byte pieces, each handed to the background
    flusher as it is copied; the data file and the index are flushed before the output is published."""
    from formats.tf_bundle import files as files_module
    from formats.tf_bundle import writer as writer_module

    src = _source(tmp_path)
    size = os.path.getsize(src + DATA)
    monkeypatch.setattr(writer_module._BackgroundSync, "EVERY", 4096)
    events: list[object] = []
    real_wrote, real_fsync, real_publish = writer_module._BackgroundSync.wrote, os.fsync, files_module.publish
    monkeypatch.setattr(writer_module._BackgroundSync, "wrote", lambda self, n: (events.append(n), real_wrote(self, n))[1])
    monkeypatch.setattr(os, "fsync", lambda fd: (events.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(files_module, "publish", lambda *a, **k: (events.append("publish"), real_publish(*a, **k))[1])
    out = str(tmp_path / "out" / "model.ckpt-7")
    with open_checkpoint(src) as source:
        formats.write_checkpoint(out, source)
    assert Path(out + DATA).read_bytes() == Path(src + DATA).read_bytes()
    pieces = [4096] * (size // 4096) + ([size % 4096] if size % 4096 else [])
    # data file and index, then the directory twice: the data files' names, then the index's
    assert events == [*pieces, "fsync", "fsync", "publish", "fsync", "fsync"]
