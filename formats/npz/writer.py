"""The ``npz`` format's writer: an uncompressed ZIP64 ``.npz`` of ``<key>.npy`` members (the dtype policy
of :mod:`formats.io.npy_output`) plus, when given, the provenance record ``__ckpt_provenance__.npy``; guarded,
atomically, and read back: member names, the provenance record, each ``.npy`` header, the archive's CRC-32s and
every member's bytes against the CRC32C taken as they were written (the sources are not read again).
:func:`write` is the one signature of :mod:`formats.core.format`.
"""
from __future__ import annotations

import io
import json
import os
import zipfile
from collections.abc import Callable, Sequence

from formats.core.errors import InvalidOutputError
from formats.core.model import Checkpoint, FormatName
from formats.core.provenance import PROVENANCE_MEMBER, as_written
from formats.core.sources import CHUNK, Source
from formats.io.atomic import atomic_output, refuse_url
from formats.io.crc import crc32c
from formats.io.placed import PIPELINE_BYTES, ThreadedSink
from formats.core.roundtrip import Mismatch
from formats.io.npy_output import Written, count_member, member_name, write_member
from formats.io.writing import WriteReport, guard_output, planned_bytes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from formats.core.format import Row

__all__ = ["write", "write_npz"]


def write(output: str, rows: Sequence[Row], *, layout: str = FormatName.NPZ.value, force: bool = False,
          verify: bool = True, inputs: Sequence[Any] = (), progress: Callable[[int, int], None] | None = None,
          jobs: int | None = None, link: bool = False, options: Mapping[str, Any] | None = None) -> WriteReport:
    """Write ``rows`` as an ``.npz`` (``options["provenance"]``: the record to store, with each row's dtype and
    shape as written; one is made when a dtype numpy lacks is stored as its bits); ``jobs`` and ``link`` do not
    apply."""
    from formats.io.npy_output import stores_bits

    provenance = as_written((options or {}).get("provenance"), rows, any(stores_bits(r.dtype) for r in rows))
    return write_npz(output, [(r.key, r.value) for r in rows], provenance=provenance,
                     inputs=list(inputs), force=force, verify=verify, progress=progress)


def write_npz(path: str | os.PathLike[str], items: Sequence[tuple[str, Source]], *,
              provenance: dict[str, Any] | None = None, inputs: Sequence[str | Checkpoint] = (),
              force: bool = False, verify: bool = True, allow_pickle: bool = False, chunk: int = CHUNK,
              progress: Callable[[int, int], None] | None = None) -> WriteReport:
    """Write ``(key, source)`` pairs to an uncompressed ZIP64 ``.npz`` (member ``<key>.npy`` each, plus the
    provenance record when given), guarded, atomically, read back and compared; see the module doc."""
    out = os.fspath(path)
    refuse_url(out)
    names = [member_name(key, out) for key, _ in items]
    if len(set(names)) != len(names):
        raise InvalidOutputError(out, "two tensors would be stored under the same member name")
    guard_output(out, inputs=inputs, sources=[s for _, s in items], force=force)
    report = WriteReport(out, FormatName.NPZ.value, [out])
    written: dict[str, Written] = {}
    sums: dict[str, tuple[int, int]] = {}  # member -> (CRC32C of its bytes as written, zipfile's CRC-32 of them)
    with atomic_output(out, planned_bytes(s for _, s in items), replace=force) as temp:
        with zipfile.ZipFile(temp, "x", zipfile.ZIP_STORED, allowZip64=True) as zf:
            for name, (key, source) in zip(names, items):
                with zf.open(name, "w", force_zip64=True) as member:
                    summed = _Summing(member, planned_bytes([source]) >= PIPELINE_BYTES)
                    try:
                        written[name] = write_member(summed, key, source, allow_pickle, chunk)  # type: ignore[arg-type]
                        summed.finish()
                    finally:
                        summed.close()
                sums[name] = (summed.crc, zf.getinfo(name).CRC)
                count_member(report, key, name, source, written[name], progress)
            if provenance is not None:
                _write_record(zf, provenance)
        if verify:
            _verify_npz(temp, out, dict(zip(names, items)), written, provenance, report, sums)
    return report


class _Summing:
    """A write-only member that takes the CRC32C of what goes through it (the member's bytes as written).
    ``threaded``: a second thread writes (zipfile's CRC-32 included) and checksums while the caller reads the
    next chunk from its source (:class:`~formats.io.placed.ThreadedSink`); :meth:`finish` waits for it."""

    def __init__(self, f: Any, threaded: bool = False) -> None:
        self.f, self.crc = f, 0
        self.sink = ThreadedSink(self) if threaded else None

    def piece(self, item: Any, data: Any) -> None:
        """Write and checksum ``data`` (on the writing thread when there is one)."""
        self.crc = crc32c(data, self.crc)
        self.f.write(data)

    def write(self, data: Any) -> int:
        if self.sink is not None:
            self.sink.piece(None, data)
        else:
            self.piece(None, data)
        return memoryview(data).nbytes

    def finish(self) -> None:
        """Everything handed over is written (an error of the writing thread is raised here)."""
        if self.sink is not None:
            self.sink.finish()

    def close(self) -> None:
        """Stop the writing thread (after an error too)."""
        if self.sink is not None:
            self.sink.close()


def _write_record(zf: zipfile.ZipFile, provenance: dict[str, Any]) -> None:
    import numpy as np

    with zf.open(PROVENANCE_MEMBER + ".npy", "w") as member:
        np.lib.format.write_array(member, np.array(json.dumps(provenance)), allow_pickle=False)


def _verify_npz(temp: str, out: str, expected: dict[str, tuple[str, Source]], written: dict[str, Written],
                record: dict[str, Any] | None, report: WriteReport, sums: dict[str, tuple[int, int]]) -> None:
    """Read the archive back: its member names, the provenance record, each member's ``.npy`` header (dtype and
    shape), the CRC-32 its central directory holds (the one zipfile computed while writing), and every member's
    bytes against the CRC32C of the bytes written (taken on the way out); the sources are not read again."""
    from formats.core.errors import VerificationError
    from formats.io.npy_output import check_headers
    from formats.io.placed import Placed, check_placed
    from formats.io.zipped import ByteRange, stored_member_start

    size = os.path.getsize(temp)
    with zipfile.ZipFile(temp) as zf:
        members = sorted(zf.namelist())
        planned = sorted(list(expected) + ([PROVENANCE_MEMBER + ".npy"] if record is not None else []))
        if members != planned:
            raise VerificationError(out, "verification failed: the npz members are not the planned ones")
        if record is not None and _read_record(zf) != record:
            raise VerificationError(out, "verification failed: the provenance record does not read back")
        infos = {name: zf.getinfo(name) for name in expected}
    items = {name: Placed(key, None, stored_member_start(temp, infos[name], size), infos[name].file_size, "")
             for name, (key, _) in expected.items()}
    # headers parsed from the file itself: the checksums below judge the bytes (zipfile would raise at the end
    # of a small member whose CRC-32 does not match)
    found = check_headers(out, expected, written, lambda name: lambda: io.BufferedReader(
        ByteRange(temp, items[name].offset, items[name].size)))
    for name, (key, _) in expected.items():
        if infos[name].CRC != sums[name][1]:
            found.mismatches.append(Mismatch(key, "value", f"the archive's CRC-32 {infos[name].CRC:08x} is not the "
                                             f"{sums[name][1]:08x} of the bytes written"))
        items[name].crc = sums[name][0]
    found.mismatches += [Mismatch(key, "value", problem) for key, problem in check_placed(temp, list(items.values()))]
    report.accept(found)


def _read_record(zf: zipfile.ZipFile) -> Any:
    import numpy as np

    with zf.open(PROVENANCE_MEMBER + ".npy") as member:
        return json.loads(str(np.lib.format.read_array(member, allow_pickle=False)))


