"""Issue 38: a bundle's data file copied by the kernel (rename, name <-> object conversion) has its tensors
checked against their CRC32Cs while the copy goes on (:mod:`formats.tf_bundle.copy_check`), not after it: the
read-back then reads none of them again, and a byte changed in the copy still fails the write. Oracle: the
values numpy wrote."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import formats
from formats.core.errors import VerificationError
from formats.tf_bundle import readback, writer
from formats.tf_bundle.copy_check import CopyCheck

VALUES = {f"dnn/layer_{i}/kernel": np.arange(i * 1000, i * 1000 + 3000, dtype=np.float32).reshape(30, 100)
          for i in range(6)}


def _source(tmp_path: Path) -> str:
    prefix = str(tmp_path / "src" / "ckpt-1")
    formats.write_checkpoint(prefix, VALUES)
    return prefix


def _renamed(ckpt: formats.Checkpoint) -> dict[str, formats.TensorEntry]:
    return {key.replace("dnn", "net"): ckpt[key] for key in VALUES}


def test_copied_tensors_are_checked_during_the_copy_and_not_read_again(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer._BackgroundSync, "EVERY", 4096)  # the copy goes in pieces of 4 KiB
    reached: list[int] = []
    real_copied = CopyCheck.copied
    monkeypatch.setattr(CopyCheck, "copied", lambda self, end: (reached.append(end), real_copied(self, end))[1])
    read_again: list[str] = []
    real_problem = readback._copied_problem
    monkeypatch.setattr(readback, "_copied_problem", lambda entry, source: (read_again.append(entry.key),
                                                                           real_problem(entry, source))[1])
    out = str(tmp_path / "out" / "ckpt-1")
    with formats.open_checkpoint(_source(tmp_path)) as ckpt:
        report = formats.write_checkpoint(out, _renamed(ckpt))
    assert report.verified and report.tensors == 6
    assert len(reached) == 18 and reached[-1] == 6 * 12000  # 72,000 bytes in 4 KiB pieces
    assert read_again == []
    with formats.open_checkpoint(out) as done:
        for key, value in VALUES.items():
            assert np.array_equal(done[key.replace("dnn", "net")].read(), value)


def test_a_byte_changed_in_the_copy_fails_the_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = writer._copy_flushing

    def copy_then_damage(path, dst_fd, size, dst_offset, copied=None):  # type: ignore[no-untyped-def]
        real(path, dst_fd, size, dst_offset, None)
        os.pwrite(dst_fd, b"\xff\xee", dst_offset + 12000 * 2 + 10)  # inside the third tensor
        if copied is not None:
            copied(dst_offset + size)

    monkeypatch.setattr(writer, "_copy_flushing", copy_then_damage)
    out = tmp_path / "out" / "ckpt-1"
    with formats.open_checkpoint(_source(tmp_path)) as ckpt:
        third = next(k for k in VALUES if ckpt[k].raw.offset == 24000)
        with pytest.raises(VerificationError) as info:
            formats.write_checkpoint(str(out), _renamed(ckpt))
    message = str(info.value)
    assert message.startswith(f"{out}: verification failed: '{third.replace('dnn', 'net')}': copied bytes do not "
                              "match their checksum: ")
    assert not (tmp_path / "out").exists() or os.listdir(tmp_path / "out") == []
