"""The ``npz`` format's writer: an uncompressed ZIP64 ``.npz`` of ``<key>.npy`` members (the dtype policy
of :mod:`formats.io.npy_output`) plus, when given, the provenance record ``__ckpt_provenance__.npy``; guarded,
atomically, read back and compared. :func:`write` is the one signature of :mod:`formats.core.format`.
"""
from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Callable, Sequence

from formats.core.errors import InvalidOutputError
from formats.core.model import Checkpoint, FormatName
from formats.core.provenance import PROVENANCE_MEMBER, as_written
from formats.core.sources import CHUNK, Source
from formats.io.atomic import atomic_output, refuse_url
from formats.io.npy_output import Written, count_member, member_name, read_back, write_member
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
    with atomic_output(out, planned_bytes(s for _, s in items), replace=force) as temp:
        with zipfile.ZipFile(temp, "x", zipfile.ZIP_STORED, allowZip64=True) as zf:
            for name, (key, source) in zip(names, items):
                with zf.open(name, "w", force_zip64=True) as member:
                    written[name] = write_member(member, key, source, allow_pickle, chunk)
                count_member(report, key, name, source, written[name], progress)
            if provenance is not None:
                _write_record(zf, provenance)
        if verify:
            _verify_npz(temp, out, dict(zip(names, items)), written, provenance, report, chunk)
    return report


def _write_record(zf: zipfile.ZipFile, provenance: dict[str, Any]) -> None:
    import numpy as np

    with zf.open(PROVENANCE_MEMBER + ".npy", "w") as member:
        np.lib.format.write_array(member, np.array(json.dumps(provenance)), allow_pickle=False)


def _verify_npz(temp: str, out: str, expected: dict[str, tuple[str, Source]], written: dict[str, Written],
                record: dict[str, Any] | None, report: WriteReport, chunk: int) -> None:
    from formats.core.errors import VerificationError

    with zipfile.ZipFile(temp) as zf:
        members = sorted(zf.namelist())
        planned = sorted(list(expected) + ([PROVENANCE_MEMBER + ".npy"] if record is not None else []))
        if members != planned:
            raise VerificationError(out, "verification failed: the npz members are not the planned ones")
        if record is not None and _read_record(zf) != record:
            raise VerificationError(out, "verification failed: the provenance record does not read back")
        report.accept(read_back(out, expected, written, lambda name: lambda: zf.open(name), chunk))


def _read_record(zf: zipfile.ZipFile) -> Any:
    import numpy as np

    with zf.open(PROVENANCE_MEMBER + ".npy") as member:
        return json.loads(str(np.lib.format.read_array(member, allow_pickle=False)))


